import { describe, expect, it } from 'vitest';
import {
  confusionAndMistakes,
  MISTAKE_TEXT_CHARS,
  MISTAKES_KEPT,
} from '../../../src/model/evaluation/confusion-and-mistakes.js';
import { evaluateWithErrors } from '../../../src/model/index.js';
import { sampleTexts, trainModel } from '../../support/fixtures.js';

const predicted = (tag: string, confidence: number) => ({ tag, confidence });

describe('confusionAndMistakes', () => {
  it('counts true × predicted tags in the labels order and lists the mistakes, most confident first', () => {
    const errors = confusionAndMistakes(
      ['a', 'b', 'c', 'd', 'e'],
      ['x', 'x', 'y', 'y', 'y'],
      [
        predicted('x', 0.9),
        predicted('y', 0.6),
        predicted('y', 0.8),
        predicted('x', 0.7),
        predicted('x', 0.95),
      ],
      ['x', 'y'],
    );
    expect(errors.confusion!).toEqual({
      labels: ['x', 'y'],
      matrix: [
        [1, 1],
        [2, 1],
      ],
    });
    expect(errors.mistakes.total).toBe(3);
    expect(errors.mistakes.mistakes.map((m) => [m.text, m.true_tag, m.predicted_tag, m.confidence])).toEqual([
      ['e', 'y', 'x', 0.95],
      ['d', 'y', 'x', 0.7],
      ['b', 'x', 'y', 0.6],
    ]);
  });

  it('appends tags missing from the labels, so no row is lost from the matrix', () => {
    const errors = confusionAndMistakes(
      ['a', 'b'],
      ['x', 'z'],
      [predicted('w', 0.5), predicted('z', 0.5)],
      ['x'],
    );
    expect(errors.confusion!.labels).toEqual(['x', 'w', 'z']);
    const total = errors.confusion!.matrix.flat().reduce((a, b) => a + b, 0);
    expect(total).toBe(2);
    expect(errors.confusion!.matrix[0]).toEqual([0, 1, 0]);
    expect(errors.confusion!.matrix[2]).toEqual([0, 0, 1]);
  });

  it('keeps at most MISTAKES_KEPT mistakes and cuts long texts, but counts every mistake', () => {
    const n = MISTAKES_KEPT + 50;
    const texts = Array.from({ length: n }, (_, i) => (i === 0 ? 'w'.repeat(5000) : `text ${i}`));
    const errors = confusionAndMistakes(
      texts,
      texts.map(() => 'x'),
      texts.map((_, i) => predicted('y', i === 0 ? 1 : 0.5 - i / (4 * n))),
      ['x', 'y'],
    );
    expect(errors.mistakes.total).toBe(n);
    expect(errors.mistakes.mistakes).toHaveLength(MISTAKES_KEPT);
    const first = errors.mistakes.mistakes[0]!;
    expect(first.text).toHaveLength(MISTAKE_TEXT_CHARS);
    expect(first.text.endsWith('…')).toBe(true);
    // The least confident were dropped.
    expect(errors.mistakes.mistakes.at(-1)!.text).toBe(`text ${MISTAKES_KEPT - 1}`);
  });

  it('agrees with the performance report of the same evaluation', () => {
    const { model } = trainModel({ analyzer: 'char_wb', ngram_max_range: 3 });
    const data = sampleTexts();
    const { performance, errors } = evaluateWithErrors(model, data);
    const { labels, matrix } = errors.confusion!;
    const correct = labels.reduce((sum, _, i) => sum + matrix[i]![i]!, 0);
    expect(errors.mistakes.total).toBe(data.length - correct);
    for (const [i, tag] of labels.entries()) {
      const rowSum = matrix[i]!.reduce((a, b) => a + b, 0);
      expect(rowSum).toBe(performance.class[tag]?.num_samples ?? 0);
      const column = matrix.reduce((sum, row) => sum + row[i]!, 0);
      const recall = rowSum === 0 ? 0 : matrix[i]![i]! / rowSum;
      const precision = column === 0 ? 0 : matrix[i]![i]! / column;
      expect(performance.class[tag]?.recall ?? 0).toBeCloseTo(recall, 12);
      expect(performance.class[tag]?.precision ?? 0).toBeCloseTo(precision, 12);
    }
    for (const mistake of errors.mistakes.mistakes) {
      expect(mistake.predicted_tag).not.toBe(mistake.true_tag);
      expect(model.predict([mistake.text])[0]!.predicted_tag).toBe(mistake.predicted_tag);
    }
  });
});
