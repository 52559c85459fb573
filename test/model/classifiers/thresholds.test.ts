/**
 * The fallback threshold's objectives and evidence (src/model/classifiers/thresholds.ts): the weighted f1
 * (`tuned`) and the balanced score of the tags' accuracy and other's recall (`balanced`), and the
 * cross-fitted evidence the model choice takes a threshold on.
 */
import { describe, expect, it } from 'vitest';
import {
  balancedOtherScore,
  chooseThreshold,
  thresholdEvidence,
  weightedF1Score,
} from '../../../src/model/classifiers/thresholds.js';

describe('balancedOtherScore', () => {
  it("is the mean of the tags' accuracy and other's recall, whatever their rows' counts", () => {
    const truth = ['a', 'a', 'a', 'b', 'other'];
    expect(balancedOtherScore(truth, ['a', 'a', 'a', 'b', 'a'])).toBeCloseTo(0.5, 12);
    expect(balancedOtherScore(truth, ['a', 'a', 'b', 'b', 'other'])).toBeCloseTo((3 / 4 + 1) / 2, 12);
    // No rows of other: that share counts as met, the tags' accuracy decides.
    expect(balancedOtherScore(['a', 'b'], ['a', 'a'])).toBeCloseTo(0.75, 12);
  });
});

describe("chooseThreshold('balanced')", () => {
  // 20 sure, right answers; 3 unsure right ones (0.4); one text that fits no tag, answered a tag at 0.45.
  const top = Float64Array.from([...Array.from({ length: 20 }, () => 0.9), 0.4, 0.4, 0.4, 0.45]);
  const argmax = [...Array.from({ length: 23 }, () => 'a'), 'b'];
  const truth = [...Array.from({ length: 23 }, () => 'a'), 'other'];

  it('catches the one text of other at the cost of three tagged ones, which the weighted f1 refuses', () => {
    expect(chooseThreshold('tuned', top, argmax, truth)).toBe(0);
    const balanced = chooseThreshold('balanced', top, argmax, truth)!;
    expect(balanced).toBeCloseTo(0.675, 12);
    const predicted = argmax.map((tag, i) => (top[i]! < balanced ? 'other' : tag));
    expect(balancedOtherScore(truth, predicted)).toBeCloseTo((20 / 23 + 1) / 2, 12);
    expect(weightedF1Score(truth, predicted)).toBeLessThan(weightedF1Score(truth, argmax));
  });
});

describe('thresholdEvidence', () => {
  // 40 rows of a sure tag, 20 of other the model is unsure of (0.3) and answers with a tag.
  const top = Float64Array.from([
    ...Array.from({ length: 40 }, () => 0.95),
    ...Array.from({ length: 20 }, () => 0.3),
  ]);
  const argmax = Array.from({ length: 60 }, (_, i) => (i < 40 ? 'a' : 'b'));
  const truth = Array.from({ length: 60 }, (_, i) => (i < 40 ? 'a' : 'other'));

  it.each(['tuned', 'balanced'] as const)(
    '%s: each half predicted by the threshold of the other half (both hold rows of other)',
    (mode) => {
      const evidence = thresholdEvidence(top, argmax, truth, 7, mode);
      expect(evidence.crossFittedPredictions).toEqual(truth);
      expect(evidence.crossFitted).toBeCloseTo(1, 12);
      expect(evidence.argmax).toBeLessThan(evidence.crossFitted);
      expect(evidence.threshold).toBeCloseTo(0.625, 12);
    },
  );

  it('where a threshold cannot help, the cross-fitted score is no better than argmax', () => {
    const evidence = thresholdEvidence(top, truth, truth, 7, 'balanced');
    expect(evidence.crossFitted).toBeLessThanOrEqual(evidence.argmax);
  });
});
