/** Softmax SGD: hand-computed update steps (invscaling + lazy L2), convergence, determinism. */
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/model/rng.js';
import { meanLogLoss, softmaxInPlace, trainSoftmaxSgd } from '../../src/model/sgd.js';
import type { CsrMatrix } from '../../src/model/tfidf.js';

/** Dense rows → CSR (test helper). */
const csr = (rows: number[][]): CsrMatrix => {
  const indptr = [0];
  const indices: number[] = [];
  const data: number[] = [];
  for (const row of rows) {
    row.forEach((v, j) => {
      if (v !== 0) {
        indices.push(j);
        data.push(v);
      }
    });
    indptr.push(indices.length);
  }
  return {
    nRows: rows.length,
    nCols: rows[0]!.length,
    indptr: Int32Array.from(indptr),
    indices: Int32Array.from(indices),
    data: Float64Array.from(data),
  };
};

const base = { alpha: 0.1, learningRate: 0.5, powerT: 0.5, schedule: 'invscaling' as const, shuffle: false };

describe('softmaxInPlace', () => {
  it('normalises, is shift-invariant and survives huge scores', () => {
    const z = Float64Array.from([0, Math.log(3)]);
    softmaxInPlace(z);
    expect(z[0]).toBeCloseTo(0.25, 12);
    expect(z[1]).toBeCloseTo(0.75, 12);
    const big = Float64Array.from([1000, 1000 + Math.log(3)]);
    softmaxInPlace(big);
    expect(big[1]).toBeCloseTo(0.75, 12);
    const broken = Float64Array.from([Number.NaN, 1]);
    softmaxInPlace(broken);
    expect(Array.from(broken)).toEqual([0.5, 0.5]);
  });
});

describe('trainSoftmaxSgd', () => {
  it('matches two hand-computed SGD steps with invscaling and lazy L2 shrinkage', () => {
    const x = csr([[2, 0]]);
    const data = { x, y: Int32Array.from([0]) };
    const m = trainSoftmaxSgd(
      data,
      Int32Array.from([0, 0]),
      2,
      { ...base, epochs: 1, rng: createRng(1) },
      data,
    );
    // Step 1: t=1, eta=0.5, p=[.5,.5], g=[-.5,.5]; w = (1-eta*alpha)*0 - eta*g*x; b = -eta*g.
    let eta = 0.5;
    let w0 = 0 - eta * -0.5 * 2;
    let b0 = -eta * -0.5;
    // Step 2: t=2, eta=0.5/sqrt(2); softmax of the symmetric scores s=[w0*2+b0, -(w0*2+b0)].
    eta = 0.5 / Math.sqrt(2);
    const s = w0 * 2 + b0;
    const p0 = 1 / (1 + Math.exp(-2 * s));
    w0 = w0 * (1 - eta * 0.1) - eta * (p0 - 1) * 2;
    b0 = b0 - eta * (p0 - 1);
    expect(m.weights[0]).toBeCloseTo(w0, 12);
    expect(m.weights[1]).toBeCloseTo(-w0, 12);
    expect(m.weights[2]).toBe(0);
    expect(m.bias[0]).toBeCloseTo(b0, 12);
  });

  it('learns a separable problem and reports decreasing loss per epoch', () => {
    const x = csr([
      [1, 0, 0],
      [0.9, 0.1, 0],
      [0, 1, 0],
      [0, 0.8, 0.2],
      [0, 0, 1],
      [0.1, 0, 0.9],
    ]);
    const data = { x, y: Int32Array.from([0, 0, 1, 1, 2, 2]) };
    const losses: number[] = [];
    const valLosses: number[] = [];
    const m = trainSoftmaxSgd(
      data,
      Int32Array.from([0, 1, 2, 3, 4, 5]),
      3,
      {
        ...base,
        alpha: 1e-4,
        learningRate: 1,
        powerT: 0.1,
        epochs: 30,
        shuffle: true,
        rng: createRng(3),
        onEpoch: (_e, l, v) => {
          losses.push(l);
          valLosses.push(v);
        },
      },
      data,
    );
    expect(losses).toHaveLength(30);
    expect(losses[29]!).toBeLessThan(losses[0]!);
    // The validation set is the training set here, so the end-of-epoch validation loss is the model's loss.
    expect(meanLogLoss(m, data)).toBeCloseTo(valLosses[29]!, 12);
    expect(valLosses[29]!).toBeLessThan(valLosses[0]!);
    expect(meanLogLoss(m, data)).toBeLessThan(0.3);
  });

  it('is deterministic for a seed', () => {
    const x = csr([
      [1, 0],
      [0, 1],
      [1, 1],
    ]);
    const data = { x, y: Int32Array.from([0, 1, 1]) };
    const run = (seed: number) =>
      trainSoftmaxSgd(
        data,
        Int32Array.from([0, 1, 2]),
        2,
        { ...base, epochs: 5, shuffle: true, rng: createRng(seed) },
        data,
      );
    expect(run(5).weights).toEqual(run(5).weights);
    expect(run(5).weights).not.toEqual(run(6).weights);
  });
});
