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
  const rows = (groups: [count: number, top: number, argmax: string, truth: string][]) => ({
    top: Float64Array.from(groups.flatMap(([n, p]) => Array.from({ length: n }, () => p))),
    argmax: groups.flatMap(([n, , tag]) => Array.from({ length: n }, () => tag)),
    truth: groups.flatMap(([n, , , tag]) => Array.from({ length: n }, () => tag)),
  });

  it('catches ten texts of other at the cost of thirty tagged ones, which the weighted f1 refuses', () => {
    // 200 sure, right answers; 30 unsure right ones (0.4); ten texts that fit no tag, answered a tag at 0.45.
    const { top, argmax, truth } = rows([
      [200, 0.9, 'a', 'a'],
      [30, 0.4, 'a', 'a'],
      [10, 0.45, 'b', 'other'],
    ]);
    expect(chooseThreshold('tuned', top, argmax, truth)).toBe(0);
    const balanced = chooseThreshold('balanced', top, argmax, truth)!;
    expect(balanced).toBeCloseTo(0.675, 12);
    const predicted = argmax.map((tag, i) => (top[i]! < balanced ? 'other' : tag));
    expect(balancedOtherScore(truth, predicted)).toBeCloseTo((200 / 230 + 1) / 2, 12);
    expect(weightedF1Score(truth, predicted)).toBeLessThan(weightedF1Score(truth, argmax));
  });

  it('keeps the lowest threshold within one row of other of the best: the last one is not bought with four tagged', () => {
    const { top, argmax, truth } = rows([
      [200, 0.95, 'a', 'a'],
      [4, 0.8, 'a', 'a'],
      [9, 0.45, 'b', 'other'],
      [1, 0.85, 'b', 'other'],
    ]);
    // The best balanced score catches all ten (0.9: 0.990); 0.625 catches nine and loses no tagged row
    // (0.950), within 1/20 of it.
    expect(chooseThreshold('balanced', top, argmax, truth)).toBeCloseTo(0.625, 12);
    // With one row of other the tolerance is half the score: nothing beats argmax by that much.
    const one = rows([
      [20, 0.9, 'a', 'a'],
      [3, 0.4, 'a', 'a'],
      [1, 0.45, 'b', 'other'],
    ]);
    expect(chooseThreshold('balanced', one.top, one.argmax, one.truth)).toBe(0);
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
