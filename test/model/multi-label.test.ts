/**
 * Multi-label models: the metrics against scikit-learn's numbers, the per-tag thresholds, the model's
 * predictions and the `top_k` / `threshold` selection of tags (on the shared multi-label data:
 * multi-label.dataset.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../src/model/args.js';
import { chooseTagThresholds } from '../../src/model/classifiers/thresholds.js';
import { evaluateWithErrors } from '../../src/model/evaluation/evaluate.js';
import {
  multiLabelMetrics,
  multiLabelReport,
  performanceReport,
} from '../../src/model/evaluation/metrics.js';
import { compileSlices } from '../../src/model/evaluation/slices.js';
import { selectTags } from '../../src/model/select.js';
import { type Prediction, tagSetKey, trainTagger } from '../../src/model/tagger.js';
import { readDataset } from '../../src/train/data.js';
import { splitData } from '../../src/train/pipeline.js';
import { REPO_ROOT } from '../support/components.js';

const SAMPLE = `${REPO_ROOT}/samples/projects-multilabel.csv`;

describe('multi-label metrics', () => {
  // Expected values from scikit-learn 1.9 precision_recall_fscore_support(zero_division=0) on the
  // MultiLabelBinarizer matrices of these lists.
  const yTrue = [['a', 'b'], ['a'], ['c'], ['b', 'c'], ['a', 'c']];
  const yPred = [['a'], ['a', 'b'], [], ['b', 'c'], ['c']];

  it('match scikit-learn micro, macro, weighted and per-tag numbers', () => {
    const { perTag, averages } = multiLabelMetrics(yTrue, yPred);
    expect(averages.micro.precision).toBeCloseTo(0.8333333333333334, 12);
    expect(averages.micro.recall).toBeCloseTo(0.625, 12);
    expect(averages.micro.f1).toBeCloseTo(0.7142857142857143, 12);
    expect(averages.macro.precision).toBeCloseTo(0.8333333333333334, 12);
    expect(averages.macro.recall).toBeCloseTo(0.611111111111111, 12);
    expect(averages.macro.f1).toBeCloseTo(0.7, 12);
    expect(averages.weighted.precision).toBeCloseTo(0.875, 12);
    expect(averages.weighted.recall).toBeCloseTo(0.625, 12);
    expect(averages.weighted.f1).toBeCloseTo(0.725, 12);
    expect(averages.micro.num_samples).toBe(5);
    expect(perTag.get('a')).toEqual({ precision: 1, recall: 2 / 3, f1: 0.8, num_samples: 3 });
    expect(perTag.get('b')).toEqual({ precision: 0.5, recall: 0.5, f1: 0.5, num_samples: 2 });
  });

  it('report per model tag, the three averages, and slices over texts with the tag', () => {
    const texts = ['one two', 'a long text with many words in it indeed', 'cnn', 'x', 'y'];
    const slices = compileSlices([
      { name: 'has_b', where: { tag: 'b' } },
      { name: 'short', where: { words_below: 3 } },
      { name: 'none', where: { tag: 'zzz' } },
    ]);
    const report = multiLabelReport(texts, yTrue, yPred, ['a', 'b', 'c', 'other'], slices);
    expect(report.overall).toEqual(report.averages!.weighted);
    expect(report.class.other).toEqual({ precision: 0, recall: 0, f1: 0, num_samples: 0 });
    expect(Object.keys(report.slices)).toEqual(['has_b', 'short']);
    // has_b: rows 0 and 3 — true {a,b},{b,c}; predicted {a},{b,c}: tp 3, predicted 3, actual 4.
    expect(report.slices.has_b).toEqual({ precision: 1, recall: 0.75, f1: 6 / 7, num_samples: 2 });
    expect(report.slices.short!.num_samples).toBe(4);
  });

  it('single-label reports carry the averages too (macro over the tags present, like scikit-learn)', () => {
    const truth = ['nlp', 'nlp', 'other', 'cv'];
    const pred = ['nlp', 'cv', 'other', 'cv'];
    const { averages, overall } = performanceReport(['a', 'b', 'c', 'd'], truth, pred, [
      'cv',
      'nlp',
      'other',
    ]);
    expect(averages!.weighted).toEqual(overall);
    expect(averages!.micro.f1).toBeCloseTo(0.75, 12);
    expect(averages!.macro.f1).toBeCloseTo((2 / 3 + 2 / 3 + 1) / 3, 12);
  });
});

describe('chooseTagThresholds', () => {
  // One tag; probabilities of 6 validation rows, the first three positive.
  const probabilities = [0.9, 0.45, 0.4, 0.42, 0.2, 0.1].map((p) => Float64Array.of(p));
  const labels = Uint8Array.of(1, 1, 1, 0, 0, 0);

  it('keeps 0.5 for argmax', () => {
    expect(chooseTagThresholds('argmax', probabilities, labels, 1)).toEqual([0.5]);
  });

  it('tuned takes the f1-best midpoint: here below 0.4, all three positives and one negative', () => {
    // At 0.5: 1 of 3 found (f1 0.5). Between 0.2 and 0.4: 4 predicted, 3 right (f1 6/7).
    expect(chooseTagThresholds('tuned', probabilities, labels, 1)[0]).toBeCloseTo(0.3, 12);
  });

  it('auto takes it too when it beats 0.5, and keeps 0.5 for a tag with no positive row', () => {
    const two = probabilities.map((p) => Float64Array.of(p[0]!, 0.7));
    const both = Uint8Array.from([1, 1, 1, 0, 0, 0].flatMap((y) => [y, 0]));
    const [first, second] = chooseTagThresholds('auto', two, both, 2);
    expect(first).toBeCloseTo(0.3, 12);
    expect(second).toBe(0.5);
  });

  it('auto keeps 0.5 when nothing beats it strictly', () => {
    const clean = [0.9, 0.8, 0.1].map((p) => Float64Array.of(p));
    expect(chooseTagThresholds('auto', clean, Uint8Array.of(1, 1, 0), 1)).toEqual([0.5]);
  });
});

describe('selectTags (top_k and threshold)', () => {
  const single: Prediction = {
    predicted_tag: 'b',
    predicted_tags: ['b'],
    probabilities: { a: 0.2, b: 0.5, c: 0.3 },
  };
  const multi: Prediction = {
    predicted_tag: 'b',
    predicted_tags: ['b', 'a'],
    probabilities: { a: 0.6, b: 0.9, c: 0.3, d: 0.3 },
  };

  it('gives the model’s own list without options', () => {
    expect(selectTags(single, {}, false)).toEqual(['b']);
    expect(selectTags(multi, {}, true)).toEqual(['b', 'a']);
  });

  it('top_k alone: the k most probable of a single-label model, at most k predicted of a multi-label one', () => {
    expect(selectTags(single, { topK: 2 }, false)).toEqual(['b', 'c']);
    expect(selectTags(multi, { topK: 1 }, true)).toEqual(['b']);
    expect(selectTags(multi, { topK: 5 }, true)).toEqual(['b', 'a']);
  });

  it('threshold: every tag reaching it, most probable first, ties in tag order; with top_k cut to k', () => {
    expect(selectTags(single, { threshold: 0.25 }, false)).toEqual(['b', 'c']);
    expect(selectTags(multi, { threshold: 0.3 }, true)).toEqual(['b', 'a', 'c', 'd']);
    expect(selectTags(multi, { threshold: 0.3, topK: 3 }, true)).toEqual(['b', 'a', 'c']);
    expect(selectTags(multi, { threshold: 0.95 }, true)).toEqual([]);
  });
});

describe('a multi-label model trained on the sample data', async () => {
  const rows = await readDataset(SAMPLE);
  const { train, validation, test } = splitData(rows, false, 42);
  const args = parseTrainingArgs({ multi_label: true, threshold: 'tuned', num_epochs: 20 });
  const trained = trainTagger(train, validation, args, { seed: 42 });
  const model = trained.model;

  it('has one threshold per tag and independent probabilities', () => {
    expect(model.tags).toEqual([
      'computer-vision',
      'graph-learning',
      'mlops',
      'natural-language-processing',
      'other',
      'pytorch',
      'reinforcement-learning',
      'time-series',
      'transformers',
    ]);
    expect(model.tagThresholds).toHaveLength(model.tags.length);
    expect(trained.tagThresholds).toEqual(model.tagThresholds);
    expect(trained.threshold).toBeNull();
    const [p] = model.predict(['Fine-tuning BERT with PyTorch to classify customer reviews']);
    const sum = Object.values(p!.probabilities).reduce((a, b) => a + b, 0);
    expect(Math.abs(sum - 1)).toBeGreaterThan(1e-3);
  });

  it('predicts every tag over its threshold, most probable first, and the top one as predicted_tag', () => {
    const texts = [...test.map((row) => row.text), '', 'zzzz qqqq'];
    for (const p of model.predict(texts)) {
      const expected = model.tags
        .filter((tag, k) => p.probabilities[tag]! >= model.tagThresholds![k]!)
        .sort((a, b) => p.probabilities[b]! - p.probabilities[a]!);
      expect(p.predicted_tags).toEqual(expected);
      expect(p.predicted_tag).toBe(expected[0] ?? 'other');
    }
  });

  it('finds several tags for a text that has them', () => {
    const [p] = model.predict([
      'Fine-tuning a BERT transformer in PyTorch for sentiment analysis of product reviews and text classification',
    ]);
    expect(p!.predicted_tags).toEqual(
      expect.arrayContaining(['natural-language-processing', 'pytorch', 'transformers']),
    );
  });

  it('scores far better than the tag frequencies alone on its test split, and its mistakes list tag sets', () => {
    const { performance, errors } = evaluateWithErrors(model, test);
    expect(performance.averages!.micro.f1).toBeGreaterThan(0.6);
    expect(errors.confusion).toBeNull();
    expect(errors.mistakes.multi_label).toBe(true);
    for (const mistake of errors.mistakes.mistakes) {
      expect(mistake.true_tag).toBe(mistake.true_tags!.join('|'));
      expect(tagSetKey(mistake.true_tags!)).not.toBe(tagSetKey(mistake.predicted_tags!));
    }
  });

  it('refuses to score a single-label model on rows with several tags', () => {
    const single = trainTagger(
      train.map((row) => ({ text: row.text, tag: row.tags![0]! })),
      validation.map((row) => ({ text: row.text, tag: row.tags![0]! })),
      parseTrainingArgs({ num_epochs: 5 }),
      { seed: 1 },
    ).model;
    const several = test.filter((row) => row.tags!.length > 1);
    expect(() => evaluateWithErrors(single, several)).toThrow(/gives one tag per text/);
  });
});
