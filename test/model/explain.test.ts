/** Explanations of the linear tagger: exact (bias + contributions + rest = score), and about the predicted tag. */
import { describe, expect, it } from 'vitest';
import { splitScore } from '../../src/model/explain.js';
import { cleanText, createRng } from '../../src/model/index.js';
import { shuffleInPlace } from '../../src/model/rng.js';
import { sampleTexts, trainModel } from '../support/fixtures.js';
import { linearExplanation, SGD } from './fixtures.js';

const texts = sampleTexts()
  .slice(0, 40)
  .map((row) => row.text);

describe('model.explain', () => {
  it.each([
    ['char_wb+word union, one-vs-rest', { analyzer: 'char_wb+word', classifier: 'ovr' }],
    ['word n-grams, softmax', { analyzer: 'word', ngram_max_range: 2, classifier: 'softmax' }],
    ['char_wb n-grams, stemmed', { analyzer: 'char_wb', ngram_max_range: 4, stem: true }],
  ] as const)(
    '%s: the explained tag is the predicted one, and bias + contributions + rest = score',
    (_, args) => {
      const { model } = trainModel({ ...SGD, ...args });
      const predictions = model.predict(texts);
      for (const [i, text] of texts.entries()) {
        const explanation = linearExplanation(model.explain(text, 5));
        expect(explanation.tag).toBe(predictions[i]!.predicted_tag);
        const shown = explanation.contributions.reduce((sum, c) => sum + c.contribution, 0);
        expect(explanation.bias + shown + explanation.rest).toBeCloseTo(explanation.score, 9);
        expect(explanation.contributions.length).toBe(Math.min(5, explanation.features));
        const sizes = explanation.contributions.map((c) => Math.abs(c.contribution));
        expect(sizes).toEqual([...sizes].sort((a, b) => b - a));

        // Every feature listed: nothing left over, and the same score.
        const all = linearExplanation(model.explain(text, Number.MAX_SAFE_INTEGER));
        expect(all.rest).toBe(0);
        expect(all.contributions).toHaveLength(all.features);
        expect(all.score).toBe(explanation.score);
        // Features are n-grams of the cleaned text the model saw.
        const clean = cleanText(text, model.args);
        for (const { feature, analyzer } of all.contributions) {
          // Word n-grams skip one-letter tokens (scikit-learn's token pattern), so check word by word.
          if (analyzer === 'word') for (const word of feature.split(' ')) expect(clean).toContain(word);
          else expect(` ${clean} `).toContain(feature);
        }
      }
    },
  );

  it('a text with no known feature is explained by the bias alone', () => {
    const { model } = trainModel({ ...SGD, analyzer: 'word', ngram_max_range: 2 });
    const explanation = linearExplanation(model.explain('zzzzqx vvvvqk', 10));
    expect(explanation).toMatchObject({ features: 0, contributions: [], rest: 0 });
    expect(explanation.score).toBe(explanation.bias);
    // Never throws for any string.
    expect(model.explain('', 3).features).toBe(0);
    expect(linearExplanation(model.explain('🙂'.repeat(1000), 0)).contributions).toEqual([]);
  });

  it('splitScore lists the largest |contributions| as a full sort would (ties: lower column first), the rest summed', () => {
    const rng = createRng(3);
    const names = { name: (c: number) => `f${c}`, analyzer: () => 'word' as const };
    for (let round = 0; round < 50; round++) {
      const n = Math.floor(rng() * 60);
      // Columns in no particular order, so ties cannot follow the features' order by chance.
      const indices = Int32Array.from({ length: n }, (_, j) => j * 3 + 1);
      shuffleInPlace(indices, rng);
      // Few distinct magnitudes of both signs: many ties.
      const weights = new Map(Array.from(indices, (c) => [c, (Math.floor(rng() * 7) - 3) / 4] as const));
      const values = Float64Array.from({ length: n }, () => (rng() < 0.5 ? 1 : 2));
      for (const top of [0, 1, 5, 10, n, n + 3, 2.7, Number.POSITIVE_INFINITY]) {
        const split = splitScore({ indices, values }, (c) => weights.get(c)!, 0.5, top, names);
        const all = Array.from(indices, (c, j) => ({ c, contribution: weights.get(c)! * values[j]! }));
        const sorted = [...all].sort(
          (a, b) => Math.abs(b.contribution) - Math.abs(a.contribution) || a.c - b.c,
        );
        const k = Math.min(n, Math.trunc(top));
        expect(split.contributions.map((x) => x.feature)).toEqual(sorted.slice(0, k).map((x) => `f${x.c}`));
        const rest = sorted.slice(k).reduce((sum, x) => sum + x.contribution, 0);
        expect(split.rest).toBeCloseTo(rest, 12);
        expect(split.features).toBe(n);
      }
    }
  });
});
