/** trainTagger / predict / evaluate on a tiny corpus (exact behaviour); once on the shared dataset in tagger.dataset.test.ts. */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../src/model/args.js';
import { encodeModel } from '../../src/model/artifact.js';
import type { SgdTagModel } from '../../src/model/classifiers/sgd/sgd-model.js';
import { ensembleSeeds } from '../../src/model/classifiers/sgd/train-sgd.js';
import { chooseThreshold } from '../../src/model/classifiers/thresholds.js';
import { ModelInputError } from '../../src/model/errors.js';
import { evaluate } from '../../src/model/evaluation/evaluate.js';
import { type EpochReport, type LabelledText, type TagModel, trainTagger } from '../../src/model/tagger.js';
import { LEGACY_CLEANUP } from '../../src/model/text/preprocess.js';
import { SGD, TRAIN, VALIDATION } from './fixtures.js';

// Pinned apart from the defaults (which may change): one char_wb vectorizer, the validated fit as the model.
const ARGS = parseTrainingArgs({
  ...SGD,
  min_freq: 2,
  num_epochs: 20,
  analyzer: 'char_wb',
  ngram_max_range: 4,
  threshold: 'argmax',
  refit: false,
});

describe('trainTagger', () => {
  const { model, history, threshold } = trainTagger(TRAIN, VALIDATION, ARGS, { seed: 42 });

  it('folds rare tags into other and sorts the classes', () => {
    expect(model.tags).toEqual(['computer-vision', 'mlops', 'natural-language-processing', 'other']);
    expect(threshold).toBeNull();
    expect(model.threshold).toBeNull();
  });

  it('reports every epoch with falling training loss', () => {
    expect(history.map((h) => h.epoch)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(history.every((h) => h.epochs === 20 && Number.isFinite(h.valLoss))).toBe(true);
    expect(history[19]!.trainLoss).toBeLessThan(history[0]!.trainLoss);
  });

  it('predicts the clear topics and gives a probability for every tag', () => {
    const [nlp, cv, ops] = model.predict([
      'bert language model for text',
      'segmenting images',
      'kubernetes serving',
    ]);
    expect(nlp!.predicted_tag).toBe('natural-language-processing');
    expect(cv!.predicted_tag).toBe('computer-vision');
    expect(ops!.predicted_tag).toBe('mlops');
    expect(Object.keys(nlp!.probabilities).sort()).toEqual([...model.tags]);
  });

  it('is identical for the same seed and data, and different for another seed', () => {
    const texts = VALIDATION.map((r) => r.text);
    const again = trainTagger(TRAIN, VALIDATION, ARGS, { seed: 42 });
    expect(again.model.predict(texts)).toEqual(model.predict(texts));
    expect(again.history).toEqual(history);
    expect(encodeModel(again.model)).toEqual(encodeModel(model));
    const other = trainTagger(TRAIN, VALIDATION, ARGS, { seed: 43 });
    expect(other.model.predict(texts)).not.toEqual(model.predict(texts));
  });

  it('calls onEpoch as training progresses', () => {
    const seen: EpochReport[] = [];
    trainTagger(TRAIN, VALIDATION, { ...ARGS, num_epochs: 3 }, { seed: 1, onEpoch: (r) => seen.push(r) });
    expect(seen.map((r) => `${r.epoch}/${r.epochs}`)).toEqual(['1/3', '2/3', '3/3']);
  });

  it('tuned threshold is a probability, and predictions below it fall back to other', () => {
    const tuned = trainTagger(TRAIN, VALIDATION, { ...ARGS, threshold: 'tuned' }, { seed: 42 });
    expect(tuned.threshold).not.toBeNull();
    expect(tuned.threshold!).toBeGreaterThanOrEqual(0);
    expect(tuned.threshold!).toBeLessThan(1);
    const texts = ['graph neural networks', 'images', 'zzzz', 'text'];
    const plain = model.predict(texts);
    tuned.model.predict(texts).forEach((p, i) => {
      expect(p.probabilities).toEqual(plain[i]!.probabilities);
      const top = Math.max(...Object.values(p.probabilities));
      expect(p.predicted_tag).toBe(top < tuned.threshold! ? 'other' : plain[i]!.predicted_tag);
    });
  });

  it('auto keeps argmax unless a threshold beats it on validation', () => {
    const auto = trainTagger(TRAIN, VALIDATION, { ...ARGS, threshold: 'auto' }, { seed: 42 });
    const argmaxF1 = evaluate(model, VALIDATION).overall.f1;
    if (auto.threshold === null) {
      expect(evaluate(auto.model, VALIDATION).overall.f1).toBe(argmaxF1);
    } else {
      expect(evaluate(auto.model, VALIDATION).overall.f1).toBeGreaterThan(argmaxF1);
    }
  });

  it('without oversampling and shuffling still trains deterministically', () => {
    const args = { ...ARGS, oversample: false, shuffle: false };
    const a = trainTagger(TRAIN, VALIDATION, args, { seed: 1 });
    const b = trainTagger(TRAIN, VALIDATION, args, { seed: 2 });
    expect(a.model.predict(['text'])).toEqual(b.model.predict(['text']));
  });

  it.each(['ovr', 'softmax'] as const)(
    'the %s classifier learns the topics; probabilities sum to 1',
    (classifier) => {
      for (const average of [false, true]) {
        const { model: m } = trainTagger(TRAIN, VALIDATION, { ...ARGS, classifier, average }, { seed: 42 });
        const out = m.predict([
          'bert language model for text',
          'segmenting images',
          'kubernetes serving',
          '',
        ]);
        expect(out.slice(0, 3).map((p) => p.predicted_tag)).toEqual([
          'natural-language-processing',
          'computer-vision',
          'mlops',
        ]);
        for (const p of out) {
          expect(Math.abs(Object.values(p.probabilities).reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-12);
        }
      }
    },
  );

  it('rejects an empty training split', () => {
    expect(() => trainTagger([], VALIDATION, ARGS, { seed: 1 })).toThrow(ModelInputError);
  });

  it('predicts one distribution summing to 1 for any string', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 300 }), { maxLength: 5 }), (texts) => {
        const out = model.predict(texts);
        expect(out).toHaveLength(texts.length);
        for (const p of out) {
          const values = Object.values(p.probabilities);
          expect(values).toHaveLength(4);
          expect(values.every((v) => v >= 0 && v <= 1)).toBe(true);
          expect(Math.abs(values.reduce((s, v) => s + v, 0) - 1)).toBeLessThan(1e-9);
          expect(model.tags).toContain(p.predicted_tag);
        }
      }),
      { numRuns: 200 },
    );
    const huge = 'image '.repeat(50_000) + '😀'.repeat(1000);
    expect(model.predict(['', huge, '\u0000\ud800'])).toHaveLength(3);
  });
});

describe.each([
  ['hinge', { loss: 'hinge' as const }],
  ['modified_huber', { loss: 'modified_huber' as const }],
  [
    'hinge with balanced class weights',
    { loss: 'hinge' as const, class_weight: 'balanced' as const, oversample: false },
  ],
])('trainTagger with %s', (_name, patch) => {
  const { model } = trainTagger(TRAIN, VALIDATION, { ...ARGS, ...patch }, { seed: 3 });

  it('predicts the top-scoring tag with a valid distribution for any string', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 200 }), { maxLength: 5 }), (texts) => {
        model.predict(texts).forEach((p, i) => {
          const values = Object.values(p.probabilities);
          expect(values.every((v) => v >= 0 && v <= 1)).toBe(true);
          expect(Math.abs(values.reduce((s, v) => s + v, 0) - 1)).toBeLessThan(1e-9);
          // explain() names the tag with the highest linear score; argmax prediction must be that tag.
          expect(p.predicted_tag).toBe(model.explain(texts[i]!).tag);
        });
      }),
      { numRuns: 100 },
    );
  });

  it('learns the clear topics', () => {
    const f1 = evaluate(model, VALIDATION).overall.f1;
    expect(f1).toBeGreaterThan(0.5);
  });
});

describe('trainTagger with a seed ensemble', () => {
  const linear = (m: TagModel) => (m as SgdTagModel).linear;
  const weightsHash = (m: TagModel) =>
    createHash('sha256').update(encodeModel(m)['weights.bin']!).digest('hex');

  it('ensemble 1 is bit for bit the single model trained before ensembles existed', () => {
    // That model always applied tagifai's clean-up, which is now the arguments LEGACY_CLEANUP.
    // sha256 of weights.bin from the pre-ensemble trainTagger (commit 6d56ea8^) on this corpus, seed 42, run
    // on Node 24. The bits depend on V8's Math.exp/log: the same code on Node 20 gave d40ce4de… and 6c3fbd11….
    const single = {
      ovr: '1dd4ac17741d4cdc8e1385ee50bbe9c9ea95a8f230a82870b85aee34b47f77dd',
      softmax: '4170b50d7ae952e54b10e80437b5f3befdd7d5c9a65a1632c7ae43ccfb14d8b9',
    };
    for (const classifier of ['ovr', 'softmax'] as const) {
      const { model: m, history } = trainTagger(
        TRAIN,
        VALIDATION,
        { ...ARGS, ...LEGACY_CLEANUP, classifier, ensemble: 1 },
        { seed: 42 },
      );
      expect(weightsHash(m)).toBe(single[classifier]);
      expect(history).toHaveLength(20);
    }
  });

  it('derives distinct member seeds from the training seed, the first being the seed itself', () => {
    expect(ensembleSeeds(42, 1)).toEqual([42]);
    const five = ensembleSeeds(42, 5);
    expect(five[0]).toBe(42);
    expect(new Set(five).size).toBe(5);
    expect(ensembleSeeds(42, 3)).toEqual(five.slice(0, 3));
    expect(ensembleSeeds(42, 5)).toEqual(five);
    // Not seed + 1, …: nearby training seeds share no members.
    expect(ensembleSeeds(43, 5).filter((s) => five.includes(s))).toEqual([]);
  });

  it('is the mean of its members (each the single model of one member seed): weights, bias and losses', () => {
    const k = 3;
    const { model: m, history } = trainTagger(TRAIN, VALIDATION, { ...ARGS, ensemble: k }, { seed: 42 });
    const members = ensembleSeeds(42, k).map((seed) =>
      trainTagger(TRAIN, VALIDATION, { ...ARGS, ensemble: 1 }, { seed }),
    );
    const w = members.map((r) => linear(r.model).weights);
    const b = members.map((r) => linear(r.model).bias);
    const expectedW = Float64Array.from(w[0]!, (_, j) => (w[0]![j]! + w[1]![j]! + w[2]![j]!) / k);
    const expectedB = Float64Array.from(b[0]!, (_, j) => (b[0]![j]! + b[1]![j]! + b[2]![j]!) / k);
    expect(linear(m).weights).toEqual(expectedW);
    expect(linear(m).bias).toEqual(expectedB);
    // The members really differ (different shuffles), so the mean is not any one of them.
    expect(w[1]).not.toEqual(w[0]);
    expect(linear(m).weights).not.toEqual(w[0]);
    expect(history.map((h) => h.epoch)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    history.forEach((h, e) => {
      const mean = (key: 'trainLoss' | 'valLoss') =>
        members.reduce((sum, r) => sum + r.history[e]![key], 0) / k;
      expect(h.trainLoss).toBeCloseTo(mean('trainLoss'), 12);
      expect(h.valLoss).toBeCloseTo(mean('valLoss'), 12);
    });
  });

  it('is deterministic per seed, differs across seeds, and predicts distributions summing to 1', () => {
    const args = { ...ARGS, ensemble: 3 };
    const texts = [...VALIDATION.map((r) => r.text), 'bert language model for text', '', '😀'];
    const a = trainTagger(TRAIN, VALIDATION, args, { seed: 42 });
    const again = trainTagger(TRAIN, VALIDATION, args, { seed: 42 });
    expect(encodeModel(again.model)).toEqual(encodeModel(a.model));
    expect(again.history).toEqual(a.history);
    const other = trainTagger(TRAIN, VALIDATION, args, { seed: 43 });
    expect(weightsHash(other.model)).not.toBe(weightsHash(a.model));
    for (const classifier of ['ovr', 'softmax'] as const) {
      const { model: m } = trainTagger(TRAIN, VALIDATION, { ...args, classifier }, { seed: 42 });
      expect(m.args.ensemble).toBe(3);
      const out = m.predict(texts);
      expect(out[VALIDATION.length]!.predicted_tag).toBe('natural-language-processing');
      for (const p of out) {
        expect(Math.abs(Object.values(p.probabilities).reduce((x, y) => x + y, 0) - 1)).toBeLessThan(1e-12);
      }
    }
  });

  it('reports every epoch once, from the last member', () => {
    const seen: EpochReport[] = [];
    trainTagger(
      TRAIN,
      VALIDATION,
      { ...ARGS, num_epochs: 3, ensemble: 4 },
      { seed: 1, onEpoch: (r) => seen.push(r) },
    );
    expect(seen.map((r) => `${r.epoch}/${r.epochs}`)).toEqual(['1/3', '2/3', '3/3']);
  });
});

describe('trainTagger with the char_wb+word analyzer and sublinear_tf', () => {
  const UNION = parseTrainingArgs({ ...ARGS, analyzer: 'char_wb+word', sublinear_tf: true });
  const { model } = trainTagger(TRAIN, VALIDATION, UNION, { seed: 42 });
  const texts = [...VALIDATION.map((r) => r.text), 'bert language model for text', 'segmenting images'];

  it('is deterministic for a seed', () => {
    const again = trainTagger(TRAIN, VALIDATION, UNION, { seed: 42 }).model;
    expect(again.predict(texts)).toEqual(model.predict(texts));
    expect(encodeModel(again)).toEqual(encodeModel(model));
  });

  it('predicts the clear topics with probabilities summing to 1', () => {
    const [nlp, cv] = model.predict(['bert language model for text', 'segmenting images']);
    expect(nlp!.predicted_tag).toBe('natural-language-processing');
    expect(cv!.predicted_tag).toBe('computer-vision');
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const [p] = model.predict([text]);
        const values = Object.values(p!.probabilities);
        expect(values).toHaveLength(model.tags.length);
        expect(Math.abs(values.reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-9);
      }),
      { numRuns: 100 },
    );
  });

  it('differs from plain char_wb (the options reach the features)', () => {
    const plain = trainTagger(TRAIN, VALIDATION, ARGS, { seed: 42 }).model;
    const sublinearOnly = trainTagger(TRAIN, VALIDATION, { ...ARGS, sublinear_tf: true }, { seed: 42 }).model;
    const plainP = plain.predict(texts).map((p) => p.probabilities);
    expect(model.predict(texts).map((p) => p.probabilities)).not.toEqual(plainP);
    expect(sublinearOnly.predict(texts).map((p) => p.probabilities)).not.toEqual(plainP);
  });
});

describe('trainTagger with refit', () => {
  const TUNED = { ...ARGS, threshold: 'tuned' as const };
  const validated = trainTagger(TRAIN, VALIDATION, TUNED, { seed: 42 });
  const refitEpochs: EpochReport[] = [];
  const refitted = trainTagger(
    TRAIN,
    VALIDATION,
    { ...TUNED, refit: true },
    { seed: 42, onRefitEpoch: (r) => refitEpochs.push(r) },
  );
  const weights = (m: TagModel) => createHash('sha256').update(encodeModel(m)['weights.bin']!).digest('hex');

  it('returns the model fitted on train + validation with the same args and seed', () => {
    const direct = trainTagger([...TRAIN, ...VALIDATION], [], TUNED, { seed: 42 }).model as SgdTagModel;
    const model = refitted.model as SgdTagModel;
    expect(weights(model)).toBe(weights(direct));
    expect(model.vectorizer.size).toBe(direct.vectorizer.size);
    expect(model.vectorizer.size).toBeGreaterThan((validated.model as SgdTagModel).vectorizer.size);
    expect(weights(model)).not.toBe(weights(validated.model));
  });

  it("keeps the validated fit's history, threshold and validation f1, and applies that threshold", () => {
    expect(refitted.history).toEqual(validated.history);
    expect(refitted.threshold).toBe(validated.threshold);
    expect(refitted.threshold).not.toBeNull();
    expect(refitted.model.threshold).toBe(validated.threshold);
    expect(refitted.validationF1).toBe(validated.validationF1);
    expect(validated.validationF1).toBe(evaluate(validated.model, VALIDATION).overall.f1);
  });

  it('reports the refit epochs separately, without a validation loss', () => {
    expect(refitEpochs.map((r) => r.epoch)).toEqual(Array.from({ length: ARGS.num_epochs }, (_, i) => i + 1));
    expect(refitEpochs.every((r) => Number.isNaN(r.valLoss) && r.trainLoss > 0)).toBe(true);
  });

  it('is a no-op without validation rows, and never runs when refit is off', () => {
    const calls: EpochReport[] = [];
    const noValidation = trainTagger(
      TRAIN,
      [],
      { ...ARGS, refit: true },
      { seed: 42, onRefitEpoch: (r) => calls.push(r) },
    );
    const plain = trainTagger(TRAIN, [], ARGS, { seed: 42 });
    expect(weights(noValidation.model)).toBe(weights(plain.model));
    expect(Number.isNaN(noValidation.validationF1)).toBe(true);
    trainTagger(TRAIN, VALIDATION, ARGS, { seed: 42, onRefitEpoch: (r) => calls.push(r) });
    expect(calls).toEqual([]);
  });
});

describe('chooseThreshold', () => {
  const top = Float64Array.from([0.9, 0.8, 0.3]);
  const argmax = ['a', 'b', 'a'];

  it('finds the midpoint that turns an unsure prediction into other', () => {
    const truth = ['a', 'b', 'other'];
    expect(chooseThreshold('tuned', top, argmax, truth)).toBeCloseTo(0.55, 12);
    expect(chooseThreshold('auto', top, argmax, truth)).toBeCloseTo(0.55, 12);
    expect(chooseThreshold('argmax', top, argmax, truth)).toBeNull();
  });

  it('keeps argmax (auto) or 0 (tuned) when no threshold helps', () => {
    expect(chooseThreshold('auto', top, argmax, argmax)).toBeNull();
    expect(chooseThreshold('tuned', top, argmax, argmax)).toBe(0);
    expect(chooseThreshold('auto', new Float64Array(0), [], [])).toBeNull();
  });
});

describe('evaluate', () => {
  it('maps unknown true tags to other and reports classes and slices', () => {
    const { model } = trainTagger(TRAIN, VALIDATION, ARGS, { seed: 42 });
    const data: LabelledText[] = [
      { text: 'bert language model for text', tag: 'natural-language-processing' },
      {
        text: 'a cnn for text classification of sentences in many documents',
        tag: 'natural-language-processing',
      },
      { text: 'segmenting images', tag: 'computer-vision' },
      { text: 'zzzz', tag: 'never-seen' },
    ];
    const perf = evaluate(model, data);
    const pred = model.predict(data.map((r) => r.text)).map((p) => p.predicted_tag);
    const truth = ['natural-language-processing', 'natural-language-processing', 'computer-vision', 'other'];
    expect(perf.overall.num_samples).toBe(4);
    expect(perf.class.other!.num_samples).toBe(1);
    expect(perf.slices.nlp_cnn!.num_samples).toBe(1);
    expect(perf.slices.nlp_cnn!.f1).toBe(pred[1] === truth[1] ? 1 : 0);
    expect(perf.slices.short_text!.num_samples).toBe(3);
    expect(Object.keys(perf.class).sort()).toEqual([...model.tags]);
  });
});
