/**
 * addLinearScores, the hand-unrolled inner loop of every linear model: the same sums as the plain loop,
 * bit for bit, for every number of classes (up to four in registers; past four, runs of eight features and
 * what is left), Float64 and Float32 weights, binary inputs and a scale.
 */
import { describe, expect, it } from 'vitest';
import { addLinearScores } from '../../../src/model/classifiers/linear-scores.js';
import { createRng } from '../../../src/model/rng.js';

function plain(
  w: Float32Array | Float64Array,
  K: number,
  indices: Int32Array,
  values: Float64Array | null,
  from: number,
  to: number,
  out: Float64Array,
  scale: number,
): void {
  for (let j = from; j < to; j++) {
    const v = values === null ? 1 : values[j]! * scale;
    for (let k = 0; k < K; k++) out[k]! += w[indices[j]! * K + k]! * v;
  }
}

describe('addLinearScores', () => {
  it.each([1, 2, 3, 4, 5, 7, 8, 9, 13, 50])('equals the plain loop bit for bit with %i classes', (K) => {
    const rng = createRng(K);
    const nFeatures = 300;
    const w = Float64Array.from({ length: nFeatures * K }, () => rng() * 2 - 1);
    const w32 = Float32Array.from(w);
    const indices = Int32Array.from({ length: 120 }, () => Math.floor(rng() * nFeatures));
    const values = Float64Array.from({ length: 120 }, () => rng() / 3);
    for (const [inputs, scale] of [
      [values, 1],
      [values, 0.37],
      [null, 1],
    ] as const) {
      const start = Float64Array.from({ length: K }, () => rng() - 0.5);
      const expected = Float64Array.from(start);
      const actual = Float64Array.from(start);
      plain(w, K, indices, inputs, 5, 110, expected, scale);
      addLinearScores(w, K, indices, inputs, 5, 110, actual, scale);
      expect(Array.from(actual)).toEqual(Array.from(expected));
      expect(actual.some((s, k) => s !== start[k])).toBe(true);
      // Float32 weights, and every length of the last run of rows (eight at a time past four classes).
      for (let to = 100; to < 110; to++) {
        const expected32 = Float64Array.from(start);
        const actual32 = Float64Array.from(start);
        plain(w32, K, indices, inputs, 5, to, expected32, scale);
        addLinearScores(w32, K, indices, inputs, 5, to, actual32, scale);
        expect(Array.from(actual32)).toEqual(Array.from(expected32));
      }
    }
  });

  it('adds nothing for an empty range and writes no class beyond K', () => {
    const out = Float64Array.from([1, 2, 3, 4, 5, 6]);
    addLinearScores(new Float64Array(10 * 5), 5, Int32Array.of(1, 2), Float64Array.of(1, 1), 1, 1, out);
    expect(Array.from(out)).toEqual([1, 2, 3, 4, 5, 6]);
    addLinearScores(new Float64Array(10 * 5).fill(1), 5, Int32Array.of(1, 2), null, 0, 2, out);
    expect(Array.from(out)).toEqual([3, 4, 5, 6, 7, 6]);
  });
});
