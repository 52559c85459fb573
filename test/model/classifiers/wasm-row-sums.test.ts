/**
 * The WebAssembly SIMD row sums (wasm-row-sums.ts, row-sums.wat) give the plain loop's sums bit for bit:
 * every class count's tail (four classes a step, then two, then one), runs of eight rows and what is left,
 * texts longer than the rows staged between two calls, binary inputs; dense and sparse member weights (rows
 * amid listed features) scored through addMemberScores both ways.
 */
import { describe, expect, it, vi } from 'vitest';
import {
  addMemberScores,
  denseWeights,
  type MemberWeights,
  withoutRowSums,
  withRowSums,
  withRows,
} from '../../../src/model/classifiers/members/member-weights.js';
import { RowSums } from '../../../src/model/classifiers/wasm-row-sums.js';
import { createRng } from '../../../src/model/rng.js';

/** Σ rows[at_i × K + k] · factor_i added to out[k] in row order: the plain loop. */
function plain(rows: Float32Array, K: number, at: number[], factor: number[], out: Float64Array): void {
  for (let i = 0; i < at.length; i++)
    for (let k = 0; k < K; k++) out[k]! += rows[at[i]! * K + k]! * factor[i]!;
}

/** Weights spread over many magnitudes and signs, so a changed order or rounding shows in the sums. */
const weight = (rng: () => number): number => (rng() * 2 - 1) * 10 ** Math.floor(rng() * 8 - 4);

describe('RowSums', () => {
  it.each([1, 2, 3, 5, 6, 7, 8, 9, 50, 51, 501])(
    'adds rows as the plain loop does, bit for bit, with %i classes',
    (K) => {
      const rng = createRng(K + 1);
      const nRows = 97;
      const rows = Float32Array.from({ length: nRows * K }, () => weight(rng));
      const rowSums = RowSums.of(rows, K);
      expect(rowSums).not.toBeNull();
      expect(Array.from(rowSums!.rows)).toEqual(Array.from(rows));
      for (const count of [0, 1, 7, 8, 9, 23, 256, 600]) {
        const at = Array.from({ length: count }, () => Math.floor(rng() * nRows));
        const factor = Array.from({ length: count }, () => weight(rng));
        const start = Float64Array.from({ length: K }, () => weight(rng));
        const expected = Float64Array.from(start);
        plain(rows, K, at, factor, expected);
        const got = Float64Array.from(start);
        rowSums!.begin(got);
        at.forEach((r, i) => {
          rowSums!.stage(r, factor[i]!);
        });
        rowSums!.end(got);
        expect(Array.from(got), `${count} rows`).toEqual(Array.from(expected));
      }
    },
  );
});

/** Random indices and values of a text of `n` features (repeats allowed, as a union's blocks never have). */
function text(
  rng: () => number,
  nFeatures: number,
  n: number,
): { indices: Int32Array; values: Float64Array } {
  return {
    indices: Int32Array.from({ length: n }, () => Math.floor(rng() * nFeatures)),
    values: Float64Array.from({ length: n }, () => rng() / 3),
  };
}

function expectSameScores(weights: MemberWeights, rng: () => number): void {
  const K = weights.nClasses;
  const js = withoutRowSums(weights);
  for (const n of [0, 3, 8, 41, 300]) {
    const { indices, values } = text(rng, weights.nFeatures, n);
    for (const inputs of [values, null]) {
      const start = Float64Array.from({ length: K }, () => rng() - 0.5);
      const expected = Float64Array.from(start);
      addMemberScores(js, indices, inputs, 0, n, expected);
      const got = Float64Array.from(start);
      addMemberScores(weights, indices, inputs, 0, n, got);
      expect(Array.from(got)).toEqual(Array.from(expected));
    }
  }
}

describe('member weights scored by WebAssembly', () => {
  it.each([5, 6, 50, 51])('dense Float32 weights of %i classes: the JavaScript loops bit for bit', (K) => {
    const rng = createRng(K);
    const V = 400;
    const weights = withRowSums(
      denseWeights(
        Float32Array.from({ length: V * K }, () => weight(rng)),
        V,
        K,
      ),
    );
    expect(weights.rowSums).toBeInstanceOf(RowSums);
    expect(weights.dense).toBe(weights.rowSums!.rows);
    expectSameScores(weights, rng);
  });

  it.each([6, 50, 51])(
    'sparse Float32 weights of %i classes, rows amid lists: the JavaScript loops bit for bit',
    (K) => {
      const rng = createRng(100 + K);
      const V = 600;
      // Half the features weigh in every class (rows), the others in a few (lists), a tenth in none; built as
      // lists directly (fromClasses keeps a model this small dense).
      const start = new Int32Array(V + 1);
      const classes: number[] = [];
      const values: number[] = [];
      for (let f = 0; f < V; f++) {
        const share = f % 2 === 0 ? 1 : f % 10 === 1 ? 0 : 0.1;
        for (let k = 0; k < K; k++) {
          if (rng() >= share) continue;
          classes.push(k);
          values.push(weight(rng) || 1);
        }
        start[f + 1] = classes.length;
      }
      const lists = {
        start,
        classes: Int32Array.from(classes),
        values: Float32Array.from(values),
        rowOf: null,
        rows: null,
      };
      const weights = withRowSums({
        nFeatures: V,
        nClasses: K,
        dense: null,
        sparse: withRows(lists, K),
        perFeature: null,
        perClass: Float64Array.from({ length: K }, () => weight(rng)),
      });
      expect(weights.rowSums).toBeInstanceOf(RowSums);
      expect(weights.sparse!.rows).toBe(weights.rowSums!.rows);
      expect(weights.sparse!.values.length).toBeGreaterThan(0);
      expectSameScores(weights, rng);
    },
  );

  it('leaves the weights to the JavaScript loops where the runtime refuses a WebAssembly memory', () => {
    const rng = createRng(7);
    // The project's TypeScript libs declare WebAssembly's types but not the global (wasm-row-sums.ts).
    const api = (globalThis as unknown as { WebAssembly: { Memory: new () => unknown } }).WebAssembly;
    const refuse = vi.spyOn(api, 'Memory').mockImplementation(
      class {
        constructor() {
          throw new RangeError('WebAssembly.Memory(): could not allocate memory');
        }
      } as never,
    );
    try {
      const dense = denseWeights(
        Float32Array.from({ length: 40 * 8 }, () => weight(rng)),
        40,
        8,
      );
      const weights = withRowSums(dense);
      expect(weights).toBe(dense);
      const out = new Float64Array(8);
      addMemberScores(weights, Int32Array.of(3, 5), Float64Array.of(0.5, 0.25), 0, 2, out);
      expect(out[0]).toBe(dense.dense![3 * 8]! * 0.5 + dense.dense![5 * 8]! * 0.25);
    } finally {
      refuse.mockRestore();
    }
    expect(withRowSums(denseWeights(new Float32Array(40 * 8), 40, 8)).rowSums).toBeInstanceOf(RowSums);
  });

  it('leaves Float64 weights and four classes or fewer to the JavaScript loops', () => {
    expect(withRowSums(denseWeights(new Float64Array(40 * 8), 40, 8)).rowSums ?? null).toBeNull();
    expect(withRowSums(denseWeights(new Float32Array(40 * 4), 40, 4)).rowSums ?? null).toBeNull();
  });
});
