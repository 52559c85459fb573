import { describe, expect, it } from 'vitest';
import { compareByMetric, type OrderableRun, sortRuns } from '../../src/tracking/order.js';

const run = (runId: string, startTime: number, f1?: number): OrderableRun => ({
  info: { runId, startTime },
  metrics: f1 === undefined ? { other: 1 } : { f1, other: 1 },
});

const ids = (runs: OrderableRun[]): string[] => runs.map((r) => r.info.runId);

describe('MLflow run ordering', () => {
  // Expected orders below were produced by MLflow 3.17.2's SearchUtils.sort on the same runs.
  const runs = [
    run('a', 1_000, 0.8),
    run('b', 2_000, 0.9),
    run('c', 3_000, 0.8),
    run('d', 4_000, Number.NaN),
    run('e', 5_000),
    run('f', 6_000, 0.1),
    run('h', 7_000, 0.5),
    run('g', 7_000, 0.5),
    run('i', 500),
    run('j', 8_000, Number.NaN),
    run('k', 9_000, Number.POSITIVE_INFINITY),
    run('l', 9_500, Number.NEGATIVE_INFINITY),
  ];

  it('DESC: values high to low, then NaN, then missing; ties newest first, then run id', () => {
    expect(ids(sortRuns(runs, { key: 'f1', descending: true }))).toEqual([
      'k',
      'b',
      'c',
      'a',
      'g',
      'h',
      'f',
      'l',
      'j',
      'd',
      'e',
      'i',
    ]);
  });

  it('ASC: values low to high, then NaN, then missing; ties keep the natural order', () => {
    expect(ids(sortRuns(runs, { key: 'f1', descending: false }))).toEqual([
      'l',
      'f',
      'g',
      'h',
      'c',
      'a',
      'b',
      'k',
      'j',
      'd',
      'e',
      'i',
    ]);
  });

  it('without a metric: newest start time first, then run id ascending', () => {
    expect(ids(sortRuns(runs))).toEqual(['l', 'k', 'j', 'g', 'h', 'f', 'e', 'd', 'c', 'b', 'a', 'i']);
  });

  it('a metric nobody has leaves the natural order', () => {
    expect(ids(sortRuns(runs, { key: 'absent', descending: true }))).toEqual(ids(sortRuns(runs)));
  });

  it('does not modify its input', () => {
    const copy = [...runs];
    sortRuns(runs, { key: 'f1', descending: true });
    expect(runs).toEqual(copy);
  });

  it('compares -0 and 0 as equal and groups NaN before missing in both directions', () => {
    for (const descending of [true, false]) {
      expect(compareByMetric(run('x', 0, -0), run('y', 0, 0), { key: 'f1', descending })).toBe(0);
      expect(compareByMetric(run('x', 0, Number.NaN), run('y', 0), { key: 'f1', descending })).toBeLessThan(
        0,
      );
      expect(
        compareByMetric(run('x', 0, 0), run('y', 0, Number.NaN), { key: 'f1', descending }),
      ).toBeLessThan(0);
      expect(
        compareByMetric(run('x', 0, Number.NaN), run('y', 0, Number.NaN), { key: 'f1', descending }),
      ).toBe(0);
    }
  });
});
