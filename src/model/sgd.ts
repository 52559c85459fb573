/**
 * Multinomial logistic regression (softmax, log loss, L2 penalty) trained by plain SGD on CSR rows,
 * hand-written because no maintained JS library offers sparse SGD. Like sklearn's SGDClassifier the
 * L2 shrinkage is applied lazily through one weight scale factor, so each step costs O(nnz * classes)
 * instead of O(features * classes). Softmax (not sklearn's one-vs-rest) makes class probabilities sum to 1.
 */
import type { LearningRateSchedule } from './args.js';
import { shuffleInPlace } from './rng.js';
import type { CsrMatrix } from './tfidf.js';

export interface LinearModel {
  nFeatures: number;
  nClasses: number;
  /** weights[f * nClasses + k]: weight of feature f for class k (feature-major, so a sparse row is local). */
  weights: Float64Array;
  bias: Float64Array;
}

export interface SgdOptions {
  alpha: number;
  learningRate: number;
  powerT: number;
  schedule: LearningRateSchedule;
  epochs: number;
  shuffle: boolean;
  rng: () => number;
  /**
   * Called after each epoch with the training loss (mean log loss of the epoch's samples, each taken just
   * before its update, as sklearn's verbose output reports it: free to compute) and the validation loss
   * (mean log loss of the validation rows at the end of the epoch).
   */
  onEpoch?: (epoch: number, trainLoss: number, valLoss: number) => void;
}

export interface LabelledMatrix {
  x: CsrMatrix;
  y: Int32Array;
}

// Below this the scale factor is folded back into the weights to keep them in floating-point range.
const MIN_SCALE = 1e-9;

/** Softmax of `z` in place; stable for large scores. */
export function softmaxInPlace(z: Float64Array): void {
  let max = -Infinity;
  for (let k = 0; k < z.length; k++) if (z[k]! > max) max = z[k]!;
  let sum = 0;
  for (let k = 0; k < z.length; k++) {
    const e = Math.exp(z[k]! - max);
    z[k] = e;
    sum += e;
  }
  if (!(sum > 0 && sum < Infinity)) {
    // Only reachable with diverged (non-finite) weights; still honour "probabilities sum to 1".
    z.fill(1 / z.length);
    return;
  }
  for (let k = 0; k < z.length; k++) z[k]! /= sum;
}

/** Class probabilities of CSR row r into `out`, with weights scaled by `scale`. */
export function rowProbabilities(
  model: LinearModel,
  x: CsrMatrix,
  r: number,
  out: Float64Array,
  scale = 1,
): void {
  const K = model.nClasses;
  const w = model.weights;
  out.set(model.bias);
  for (let p = x.indptr[r]!; p < x.indptr[r + 1]!; p++) {
    const base = x.indices[p]! * K;
    const v = x.data[p]! * scale;
    for (let k = 0; k < K; k++) out[k]! += w[base + k]! * v;
  }
  softmaxInPlace(out);
}

/** Mean cross-entropy of the model on labelled rows (NaN when there are none). */
export function meanLogLoss(model: LinearModel, data: LabelledMatrix, scale = 1): number {
  const p = new Float64Array(model.nClasses);
  let total = 0;
  for (let r = 0; r < data.x.nRows; r++) {
    rowProbabilities(model, data.x, r, p, scale);
    total -= Math.log(Math.max(p[data.y[r]!]!, 1e-15));
  }
  return total / data.x.nRows;
}

/**
 * Trains on the rows listed in `order` (an index may repeat: that is how oversampling is expressed),
 * visiting them in a fresh seeded shuffle each epoch when `shuffle` is set.
 */
export function trainSoftmaxSgd(
  train: LabelledMatrix,
  order: Int32Array,
  nClasses: number,
  options: SgdOptions,
  validation: LabelledMatrix,
): LinearModel {
  const K = nClasses;
  const { x, y } = train;
  const model: LinearModel = {
    nFeatures: x.nCols,
    nClasses: K,
    weights: new Float64Array(x.nCols * K),
    bias: new Float64Array(K),
  };
  const w = model.weights;
  const b = model.bias;
  const g = new Float64Array(K);
  const visit = Int32Array.from(order);
  // wscale: true weights = w * wscale; shrinks by (1 - eta * alpha) every step (lazy L2).
  let wscale = 1;
  // t: samples seen so far, from 1, as in sklearn's invscaling schedule.
  let t = 0;
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    if (options.shuffle) shuffleInPlace(visit, options.rng);
    let epochLoss = 0;
    for (let i = 0; i < visit.length; i++) {
      const r = visit[i]!;
      t++;
      const eta =
        options.schedule === 'invscaling' ? options.learningRate / t ** options.powerT : options.learningRate;
      rowProbabilities(model, x, r, g, wscale);
      epochLoss -= Math.log(Math.max(g[y[r]!]!, 1e-15));
      g[y[r]!]! -= 1; // gradient of log loss w.r.t. the scores: p - onehot(y)
      wscale *= Math.max(0, 1 - eta * options.alpha);
      if (wscale < MIN_SCALE) {
        for (let j = 0; j < w.length; j++) w[j]! *= wscale;
        wscale = 1;
      }
      const step = eta / wscale;
      for (let p = x.indptr[r]!; p < x.indptr[r + 1]!; p++) {
        const base = x.indices[p]! * K;
        const v = x.data[p]! * step;
        for (let k = 0; k < K; k++) w[base + k]! -= g[k]! * v;
      }
      for (let k = 0; k < K; k++) b[k]! -= eta * g[k]!;
    }
    if (options.onEpoch) {
      options.onEpoch(epoch, epochLoss / visit.length, meanLogLoss(model, validation, wscale));
    }
  }
  for (let j = 0; j < w.length; j++) w[j]! *= wscale;
  return model;
}
