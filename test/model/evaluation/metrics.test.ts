/** Metrics with sklearn's definitions on a hand-checked example, and the {overall, class, slices} report. */
import { describe, expect, it } from 'vitest';
import {
  microMetrics,
  performanceReport,
  perLabelMetrics,
  weightedMetrics,
} from '../../../src/model/evaluation/metrics.js';
import { compileSlices } from '../../../src/model/evaluation/slices.js';

// Hand-checked against sklearn.metrics.precision_recall_fscore_support(zero_division=0).
const yTrue = ['a', 'a', 'b', 'c'];
const yPred = ['a', 'b', 'b', 'a'];

describe('metrics', () => {
  it('per label', () => {
    const m = perLabelMetrics(yTrue, yPred);
    expect(m.get('a')).toEqual({ precision: 0.5, recall: 0.5, f1: 0.5, num_samples: 2 });
    expect(m.get('b')!.precision).toBe(0.5);
    expect(m.get('b')!.recall).toBe(1);
    expect(m.get('b')!.f1).toBeCloseTo(2 / 3, 12);
    expect(m.get('c')).toEqual({ precision: 0, recall: 0, f1: 0, num_samples: 1 });
  });

  it('weighted average', () => {
    const m = weightedMetrics(yTrue, yPred);
    expect(m.precision).toBeCloseTo(0.375, 12);
    expect(m.recall).toBeCloseTo(0.5, 12);
    expect(m.f1).toBeCloseTo((0.5 * 2 + 2 / 3) / 4, 12);
    expect(m.num_samples).toBe(4);
  });

  it('micro average equals accuracy for single-label data; empty gives zeros', () => {
    expect(microMetrics(yTrue, yPred)).toEqual({ precision: 0.5, recall: 0.5, f1: 0.5, num_samples: 4 });
    expect(microMetrics([], [])).toEqual({ precision: 0, recall: 0, f1: 0, num_samples: 0 });
  });

  it('builds the report with classes and the nlp_cnn / short_text slices', () => {
    const texts = [
      'A CNN for sentence classification with many many words here',
      'Convolutional text models explained in quite a few words here',
      'short one',
      'Image segmentation with a CNN backbone and some more words',
    ];
    const truth = ['natural-language-processing', 'natural-language-processing', 'other', 'computer-vision'];
    const pred = ['natural-language-processing', 'computer-vision', 'other', 'computer-vision'];
    const report = performanceReport(texts, truth, pred, [
      'computer-vision',
      'mlops',
      'natural-language-processing',
      'other',
    ]);
    expect(report.slices.nlp_cnn).toEqual({ precision: 0.5, recall: 0.5, f1: 0.5, num_samples: 2 });
    expect(report.slices.short_text).toEqual({ precision: 1, recall: 1, f1: 1, num_samples: 1 });
    expect(report.class.mlops).toEqual({ precision: 0, recall: 0, f1: 0, num_samples: 0 });
    expect(report.class['computer-vision']).toEqual({ precision: 0.5, recall: 1, f1: 2 / 3, num_samples: 1 });
    expect(report.overall.num_samples).toBe(4);
    expect(Object.keys(report)).toEqual(['overall', 'class', 'slices', 'averages']);
  });

  it('leaves out a slice no row falls into instead of reporting f1 0 for 0 rows', () => {
    const report = performanceReport(['short one'], ['other'], ['other'], ['other']);
    expect(report.slices).toEqual({ short_text: { precision: 1, recall: 1, f1: 1, num_samples: 1 } });
  });

  it('uses the slices it is given', () => {
    const slices = compileSlices([{ name: 'mentions yolo', where: { text_matches: 'yolo' } }]);
    const report = performanceReport(
      ['YOLO v8', 'bert'],
      ['cv', 'nlp'],
      ['nlp', 'nlp'],
      ['cv', 'nlp'],
      slices,
    );
    expect(report.slices).toEqual({ 'mentions yolo': { precision: 0, recall: 0, f1: 0, num_samples: 1 } });
  });
});
