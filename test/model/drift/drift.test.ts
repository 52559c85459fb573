/**
 * Drift statistics and live quality (src/model/drift/drift.ts): the χ² tail against scipy's values, PSI's
 * behaviour on equal, shifted and small samples, and live metrics computed exactly as training's.
 */
import { describe, expect, it } from 'vitest';
import {
  chiSquareSurvival,
  compareCategories,
  compareCounts,
  DEFAULT_DRIFT_OPTIONS,
  liveQuality,
} from '../../../src/model/drift/drift.js';
import { multiLabelReport, performanceReport } from '../../../src/model/evaluation/metrics.js';
import { createRng } from '../../../src/model/rng.js';

describe('chiSquareSurvival', () => {
  // scipy.stats.chi2.sf(x, k), SciPy 1.17.
  it.each([
    [3.841, 1, 0.050013683763956804],
    [21.666, 9, 0.009999979883498333],
    [0.5, 3, 0.9188914116546758],
    [100, 4, 9.836624224615988e-21],
    [1e-3, 2, 0.9995001249791693],
    [50, 50, 0.47339846855634937],
    [7.5, 12, 0.822882827017686],
  ])('P(χ²(%d) ≥ %d) as scipy computes it', (x, k, expected) => {
    expect(chiSquareSurvival(x, k)).toBeCloseTo(expected, 10);
    expect(Math.abs(chiSquareSurvival(x, k) - expected) / expected).toBeLessThan(1e-8);
  });

  it('is 1 at 0 and for nonsense degrees of freedom', () => {
    expect(chiSquareSurvival(0, 3)).toBe(1);
    expect(chiSquareSurvival(5, 0)).toBe(1);
  });
});

describe('compareCounts (PSI with a significance check)', () => {
  const options = DEFAULT_DRIFT_OPTIONS;

  it('finds no drift between identical shapes, and drift in a large shift', () => {
    const same = compareCounts([100, 200, 300], [200, 400, 600], options);
    expect(same.value).toBeCloseTo(0, 3);
    expect(same.drifted).toBe(false);
    const shifted = compareCounts([300, 200, 100], [50, 150, 1000], options);
    expect(shifted.value!).toBeGreaterThan(0.5);
    expect(shifted.pValue!).toBeLessThan(1e-6);
    expect(shifted.drifted).toBe(true);
  });

  it('is finite when a bin is empty on one side (smoothed), and symmetric', () => {
    const a = compareCounts([0, 100, 100], [150, 50, 0], options);
    const b = compareCounts([150, 50, 0], [0, 100, 100], options);
    expect(Number.isFinite(a.value)).toBe(true);
    expect(a.value!).toBeCloseTo(b.value!, 1);
  });

  it('judges nothing below the minimum window, and says why', () => {
    const result = compareCounts([10, 10], [5, 80], { ...options, minLive: 100 });
    expect(result).toMatchObject({ value: null, drifted: false, live: 85, reference: 20 });
    expect(result.reason).toMatch(/85 predictions in the window; drift is judged from 100/);
    expect(compareCounts([0, 0], [100, 100], options).reason).toMatch(/reference profile is empty/);
  });

  it('rarely flags drift between two samples of one population, even where PSI alone would', () => {
    // A 40-row reference (a small test split) and 300-row windows of the same 10-bin distribution: PSI
    // exceeds 0.2 often by chance alone; with the significance check it is (almost) never drift.
    const rng = createRng(7);
    const shares = [0.05, 0.1, 0.15, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05, 0.05];
    const draw = (n: number): number[] => {
      const counts = new Array<number>(shares.length).fill(0);
      for (let i = 0; i < n; i++) {
        let u = rng();
        let bin = 0;
        while (bin < shares.length - 1 && u >= shares[bin]!) u -= shares[bin++]!;
        counts[bin]!++;
      }
      return counts;
    };
    let overThreshold = 0;
    let drifted = 0;
    for (let trial = 0; trial < 200; trial++) {
      const result = compareCounts(draw(40), draw(300), options);
      if (result.value! >= options.threshold) overThreshold++;
      if (result.drifted) drifted++;
    }
    // Seeded: 96 of the 200 windows reach the threshold, 2 are judged drifted.
    expect(overThreshold).toBeGreaterThan(60);
    expect(drifted).toBeLessThanOrEqual(4);
  });

  it('compares categories by name, a tag on one side only counting as 0 on the other', () => {
    const result = compareCategories({ a: 50, b: 50 }, { a: 10, b: 10, c: 200 }, options);
    expect(result.drifted).toBe(true);
    expect(result.live).toBe(220);
  });
});

describe('liveQuality: the same numbers as training computes', () => {
  const tags = ['cv', 'mlops', 'nlp', 'other'];

  it('single-label: weighted overall and per tag, as performanceReport', () => {
    const truth = ['nlp', 'nlp', 'cv', 'mlops', 'other', 'cv', 'nlp'];
    const predicted = ['nlp', 'cv', 'cv', 'mlops', 'nlp', 'cv', 'nlp'];
    const live = liveQuality(
      truth.map((t, i) => ({ truth: [t], predicted: [predicted[i]!] })),
      tags,
      false,
    );
    const report = performanceReport(truth, truth, predicted, tags, []);
    expect(live.overall).toEqual(report.overall);
    expect(live.class).toEqual(report.class);
  });

  it('multi-label: weighted averages on the label-indicator matrix, as multiLabelReport', () => {
    const truth = [['nlp'], ['nlp', 'mlops'], [], ['cv']];
    const predicted = [['nlp', 'cv'], ['mlops'], ['other'], ['cv']];
    const live = liveQuality(
      truth.map((t, i) => ({ truth: t, predicted: predicted[i]! })),
      tags,
      true,
    );
    const report = multiLabelReport(
      truth.map((_, i) => `text ${i}`),
      truth,
      predicted,
      tags,
      [],
    );
    expect(live.overall).toEqual(report.overall);
    expect(live.class).toEqual(report.class);
  });
});
