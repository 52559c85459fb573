import { describe, expect, it } from 'vitest';
import {
  CURVE_THRESHOLDS,
  cascadeCurve,
  chooseThreshold,
  curvePoint,
  type OutOfFoldAnswers,
  ruleOf,
} from '../../../src/model/cascade/threshold-curve.js';

/**
 * Ten rows: the fast model is right on its six surest (confidence ≥ 0.8) and wrong on the four others
 * (0.35–0.65), which the encoder model gets right except the least sure one (0.35).
 */
const answers: OutOfFoldAnswers = {
  confidence: [0.99, 0.95, 0.9, 0.9, 0.85, 0.8, 0.65, 0.5, 0.45, 0.35],
  fast: ['a', 'b', 'a', 'b', 'a', 'b', 'b', 'a', 'b', 'b'].map((t) => [t]),
  encoder: ['a', 'b', 'a', 'b', 'a', 'a', 'a', 'b', 'a', 'b'].map((t) => [t]),
  truth: ['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b', 'a', 'a'].map((t) => [t]),
  multiLabel: false,
};

describe('cascade threshold curve', () => {
  const curve = cascadeCurve(answers);

  it('has one point per τ of the fixed grid, the routed share rising with τ', () => {
    expect(CURVE_THRESHOLDS).toHaveLength(100);
    expect(CURVE_THRESHOLDS[0]).toBe(0.01);
    expect(CURVE_THRESHOLDS.at(-1)).toBe(1);
    expect(curve.points.map((p) => p.threshold)).toEqual(CURVE_THRESHOLDS);
    for (let i = 1; i < curve.points.length; i++) {
      expect(curve.points[i]!.routed).toBeGreaterThanOrEqual(curve.points[i - 1]!.routed);
    }
    expect(curve.rows).toBe(10);
    expect(curvePoint(answers, 0.66).routed).toBe(0.4);
    expect(curvePoint(answers, 0.35).routed).toBe(0);
    expect(curvePoint(answers, 0.36).routed).toBe(0.1);
  });

  it("scores each τ by the combined answers: the encoder's for routed rows, the fast model's for the others", () => {
    // τ 0.66: rows 6–9 routed; the encoder gets 6, 7, 8 right and 9 wrong, the fast model 0–5 right: 9 of 10.
    expect(curvePoint(answers, 0.66).f1).toBeGreaterThan(curvePoint(answers, 0.01).f1);
    // τ 0.81 also routes row 5, which the fast model had right and the encoder gets wrong.
    expect(curvePoint(answers, 0.81).f1).toBeLessThan(curvePoint(answers, 0.66).f1);
    expect(curve.encoder_f1).toBeLessThan(curvePoint(answers, 0.66).f1);
  });

  it('tolerance rule: the fewest rows routed within the tolerance of the encoder model', () => {
    const choice = chooseThreshold(curve, { kind: 'tolerance', tolerance: 0.002 });
    const floor = curve.encoder_f1 - 0.002;
    expect(choice.point.f1).toBeGreaterThanOrEqual(floor);
    for (const point of curve.points)
      if (point.routed < choice.point.routed) expect(point.f1).toBeLessThan(floor);
    expect(choice.reason).toMatch(/fewest training rows routed/);
  });

  it('budget rule: the best f1 routing at most the budget, and the lowest τ when none fits', () => {
    const choice = chooseThreshold(curve, { kind: 'budget', maxRouted: 0.4 });
    expect(choice.point.routed).toBeLessThanOrEqual(0.4);
    expect(choice.point.f1).toBe(Math.max(...curve.points.filter((p) => p.routed <= 0.4).map((p) => p.f1)));
    const allRouted = cascadeCurve({ ...answers, confidence: answers.confidence.map(() => 0) });
    const none = chooseThreshold(allRouted, { kind: 'budget', maxRouted: 0.5 });
    expect(none.point.threshold).toBe(0.01);
    expect(none.reason).toMatch(/more than the budget/);
  });

  it('fixed rule: the τ given, off the grid too', () => {
    const choice = chooseThreshold(curve, { kind: 'fixed', threshold: 0.655 }, answers);
    expect(choice.point).toEqual(curvePoint(answers, 0.655));
    expect(choice.reason).toMatch(/as given/);
  });

  it('takes the best point when none comes within the tolerance', () => {
    // The fast model's surest answers wrong: no τ reaches the encoder model's f1.
    const wrongWhenSure = {
      ...answers,
      fast: answers.truth.map(([t]) => [t === 'a' ? 'b' : 'a']),
      confidence: answers.confidence.map(() => 1),
    };
    const flat = cascadeCurve(wrongWhenSure);
    const choice = chooseThreshold(flat, { kind: 'tolerance', tolerance: 0 });
    expect(choice.reason).toMatch(/no threshold came within/);
  });

  it('multi-label rows are scored by the weighted f1 over tags', () => {
    const multi: OutOfFoldAnswers = {
      confidence: [0.9, 0.1],
      fast: [['a'], ['a']],
      encoder: [['b'], ['a', 'b']],
      truth: [['a'], ['a', 'b']],
      multiLabel: true,
    };
    expect(curvePoint(multi, 0.5).f1).toBe(1);
    expect(curvePoint(multi, 0.01).f1).toBeLessThan(1);
  });

  it('the args choose the rule: a fixed τ, else a budget, else the tolerance', () => {
    expect(ruleOf({ cascade_threshold: 0.7, cascade_max_routed: null, cascade_tolerance: 0.002 })).toEqual({
      kind: 'fixed',
      threshold: 0.7,
    });
    expect(ruleOf({ cascade_threshold: null, cascade_max_routed: 0.2, cascade_tolerance: 0.002 })).toEqual({
      kind: 'budget',
      maxRouted: 0.2,
    });
    expect(ruleOf({ cascade_threshold: null, cascade_max_routed: null, cascade_tolerance: 0.01 })).toEqual({
      kind: 'tolerance',
      tolerance: 0.01,
    });
  });
});
