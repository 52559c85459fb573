/**
 * Linear classifiers on CSR rows trained by SGD with an L2 penalty, hand-written because no maintained JS
 * library offers sparse SGD. Two variants:
 * - `trainOvrSgd` (ovr-sgd.ts, on this file's losses and weight scale): scikit-learn's `SGDClassifier(loss='log_loss' | 'hinge' | 'modified_huber')` rule for
 *   rule — one binary problem per class (one-vs-rest), each with its own seeded shuffle, the sparse
 *   intercept decay, optional class weights and optional averaging (ASGD); probabilities are the per-class
 *   sigmoids normalised to sum to 1, as in sklearn's `predict_proba` for log loss, or sklearn's
 *   modified-Huber probabilities.
 * - `trainSoftmaxSgd`: multinomial (softmax) regression with one shared update per sample.
 * Like sklearn, the L2 shrinkage is applied lazily through one weight scale factor, so each step costs
 * O(nnz) per class instead of O(features) per class.
 */

import type { ParallelRunner } from '../../parallel.js';
import { shuffleInPlace } from '../../rng.js';
import type { CsrMatrix } from '../../text/tfidf.js';
import { addLinearScores } from '../linear-scores.js';
import { type Link, probabilitiesInPlace, sigmoid } from '../links.js';
import type { LearningRateSchedule, Loss } from './sgd-params.js';

export interface LinearModel {
  nFeatures: number;
  nClasses: number;
  /** weights[f * nClasses + k]: weight of feature f for class k (feature-major, so a sparse row is local). */
  weights: Float64Array;
  bias: Float64Array;
  /** How scores become probabilities (see `Link`). */
  link: Link;
}

export interface SgdOptions {
  alpha: number;
  learningRate: number;
  powerT: number;
  schedule: LearningRateSchedule;
  epochs: number;
  shuffle: boolean;
  rng: () => number;
  /** One-vs-rest only: the binary loss of every class's problem (default `log_loss`). */
  loss?: Loss;
  /**
   * Per-class weight multiplying every step on a sample of that class (sklearn's class_weight: in class
   * k's binary problem, the positive samples' steps; the negatives weigh 1). Null or absent: all 1.
   */
  classWeight?: Float64Array | null;
  /**
   * Per-row weight multiplying every step on that row (sklearn's sample_weight), indexed by row: how
   * oversampling is expressed without repeating rows when repeating them would multiply the work
   * (train-sgd.ts). Null or absent: all 1.
   */
  sampleWeight?: Float64Array | null;
  /**
   * Return the average of all SGD iterates (Polyak–Ruppert averaging, sklearn's `average=True`) instead
   * of the last one. Default false.
   */
  average?: boolean;
  /**
   * Called after each epoch with the training loss and the validation loss (mean multiclass log loss of
   * the validation rows under the model as it would be returned after this epoch). The training loss is
   * free to compute (each sample's loss is taken just before its update, as sklearn's verbose output
   * reports it): for softmax the mean multiclass log loss, for one-vs-rest the mean over samples of the
   * summed per-class binary log losses (the objective the binary problems minimise).
   */
  onEpoch?: (epoch: number, trainLoss: number, valLoss: number) => void;
  /**
   * One-vs-rest only: threads to train the classes on (ovr-sgd.ts); absent or one thread: the calling
   * thread alone. The model is the same either way.
   */
  parallel?: ParallelRunner | undefined;
}

export interface LabelledMatrix {
  x: CsrMatrix;
  /** The class of each row (single-label); for multi-label rows, the group oversampling uses. */
  y: Int32Array;
  /**
   * Multi-label rows: labels[r * K + k] is 1 when row r has class k. When present it, not `y`, says
   * which rows are positive in class k's binary problem.
   */
  labels?: Uint8Array;
}

// Below this the scale factor is folded back into the weights to keep them in floating-point range
// (sklearn's reset_wscale threshold for float64).
const MIN_SCALE = 1e-9;
/** sklearn's SPARSE_INTERCEPT_DECAY: on sparse input, intercept steps are scaled by this factor. */
export const SPARSE_INTERCEPT_DECAY = 0.01;
/** sklearn's MAX_DLOSS: the loss derivative is clipped to ±this. */
export const MAX_DLOSS = 1e12;

/** The link of a model trained with these arguments (how artifact.ts rebuilds a saved model's). */
export function linkOf(classifier: 'ovr' | 'softmax', loss: Loss, multiLabel = false): Link {
  if (classifier === 'softmax') return 'softmax';
  if (multiLabel) return loss === 'modified_huber' ? 'modified_huber_binary' : 'sigmoid';
  return loss === 'modified_huber' ? 'modified_huber' : 'ovr';
}

/** Linear scores (decision function) of CSR row r into `out`, with weights scaled by `scale`. */
export function rowScores(model: LinearModel, x: CsrMatrix, r: number, out: Float64Array, scale = 1): void {
  out.set(model.bias);
  addLinearScores(
    model.weights,
    model.nClasses,
    x.indices,
    x.data,
    x.indptr[r]!,
    x.indptr[r + 1]!,
    out,
    scale,
  );
}

/** Class probabilities of CSR row r into `out`, with weights scaled by `scale`. */
export function rowProbabilities(
  model: LinearModel,
  x: CsrMatrix,
  r: number,
  out: Float64Array,
  scale = 1,
): void {
  rowScores(model, x, r, out, scale);
  probabilitiesInPlace(out, model.link);
}

/**
 * Mean cross-entropy of the model on labelled rows (NaN when there are none); for multi-label rows the
 * mean over rows of the summed per-class binary cross-entropies.
 */
export function meanLogLoss(model: LinearModel, data: LabelledMatrix, scale = 1): number {
  return meanLogLossOf(data, model.nClasses, (r, p) => rowProbabilities(model, data.x, r, p, scale));
}

/**
 * Mean cross-entropy of labelled rows whose probabilities `probabilities(r, out)` writes (as
 * meanLogLoss): lets a trainer score its weights as they are, without a copy of them in a model.
 */
export function meanLogLossOf(
  data: LabelledMatrix,
  K: number,
  probabilities: (r: number, out: Float64Array) => void,
): number {
  return logLossSum(data, K, probabilities, 0, data.x.nRows) / data.x.nRows;
}

/** The cross-entropies (as meanLogLossOf) of rows [from, to), summed in row order. */
export function logLossSum(
  data: Pick<LabelledMatrix, 'y' | 'labels'>,
  K: number,
  probabilities: (r: number, out: Float64Array) => void,
  from: number,
  to: number,
): number {
  const p = new Float64Array(K);
  const labels = data.labels;
  let total = 0;
  for (let r = from; r < to; r++) {
    probabilities(r, p);
    if (labels === undefined) {
      total -= Math.log(Math.max(p[data.y[r]!]!, 1e-15));
      continue;
    }
    for (let k = 0; k < K; k++) {
      total -= Math.log(Math.max(labels[r * K + k] === 1 ? p[k]! : 1 - p[k]!, 1e-15));
    }
  }
  return total;
}

/**
 * The mean of linear models of the same shape and link: weights and biases averaged entry by entry (summed
 * in member order, then divided by the count). Its scores are exactly the mean of the members' scores, so
 * it is the "average the decision functions" ensemble as one model. One model is returned as it is.
 */
export function averageLinearModels(models: readonly LinearModel[]): LinearModel {
  const first = models[0];
  if (first === undefined) throw new RangeError('model/sgd: averageLinearModels needs at least one model');
  if (models.length === 1) return first;
  const { nFeatures, nClasses, link } = first;
  for (const m of models) {
    if (m.nFeatures !== nFeatures || m.nClasses !== nClasses || m.link !== link) {
      throw new RangeError(
        `model/sgd: cannot average a ${m.nFeatures}x${m.nClasses} ${m.link} model with a ${nFeatures}x${nClasses} ${link} one`,
      );
    }
  }
  const weights = new Float64Array(first.weights.length);
  const bias = new Float64Array(nClasses);
  for (const m of models) {
    for (let j = 0; j < weights.length; j++) weights[j]! += m.weights[j]!;
    for (let k = 0; k < nClasses; k++) bias[k]! += m.bias[k]!;
  }
  const n = models.length;
  for (let j = 0; j < weights.length; j++) weights[j]! /= n;
  for (let k = 0; k < nClasses; k++) bias[k]! /= n;
  return { nFeatures, nClasses, weights, bias, link };
}

/** log(1 + e^s) without overflow. */
const log1pExp = (s: number): number => (s > 0 ? s + Math.log1p(Math.exp(-s)) : Math.log1p(Math.exp(s)));

/** A binary loss at score `score` for label y = ±1, as sklearn's `_sgd_fast` defines it. */
export function lossValue(loss: Loss, score: number, y: 1 | -1): number {
  const z = score * y;
  if (loss === 'hinge') return z <= 1 ? 1 - z : 0;
  if (loss === 'modified_huber') return z >= 1 ? 0 : z >= -1 ? (1 - z) * (1 - z) : -4 * z;
  return log1pExp(score) - (y === 1 ? score : 0);
}

/** The loss's derivative with respect to the score (the SGD step's dloss), as sklearn's `_sgd_fast`. */
export function lossDerivative(loss: Loss, score: number, y: 1 | -1): number {
  const z = score * y;
  if (loss === 'hinge') return z <= 1 ? -y : 0;
  if (loss === 'modified_huber') return z >= 1 ? 0 : z >= -1 ? -2 * (1 - z) * y : -4 * y;
  // log loss: d/ds log(1 + e^(-ys)) = sigmoid(s) - target, target = 1 for y = 1 else 0.
  return sigmoid(score) - (y === 1 ? 1 : 0);
}

/** Both, for tests and callers that want the pair. */
export function binaryLoss(loss: Loss, score: number, y: 1 | -1): { value: number; dloss: number } {
  return { value: lossValue(loss, score, y), dloss: lossDerivative(loss, score, y) };
}

export const learningRateAt = (
  options: Pick<SgdOptions, 'schedule' | 'learningRate' | 'powerT'>,
  t: number,
): number =>
  options.schedule === 'invscaling' ? options.learningRate / t ** options.powerT : options.learningRate;

/**
 * Lazily scaled weights in w[start, end) with sklearn's averaging trick (WeightVector, after Bottou's
 * "Stochastic gradient tricks"): true weights = w * wscale; averaged weights = (aw + averageA * w) / averageB.
 * A sample step first calls `scale`, then adds c * x to w (in units of 1/wscale), then, when averaging,
 * subtracts averageA * (that addition) from aw and calls `advanceAverage`.
 */
export class ScaledWeights {
  wscale = 1;
  averageA = 0;
  averageB = 1;

  constructor(
    readonly w: Float64Array,
    readonly aw: Float64Array | null,
    readonly start: number,
    readonly end: number,
  ) {}

  /** Multiplies the weights by c (L2 shrinkage), folding the scale in when it gets too small. */
  scale(c: number): void {
    this.wscale *= c;
    if (this.wscale < MIN_SCALE) this.reset();
  }

  /** Folds the scale (and the averaging coefficients) into the arrays; the represented values are unchanged. */
  reset(): void {
    const { w, aw, start, end } = this;
    if (aw !== null) {
      for (let j = start; j < end; j++) aw[j] = (aw[j]! + this.averageA * w[j]!) / this.averageB;
      this.averageA = 0;
      this.averageB = 1;
    }
    for (let j = start; j < end; j++) w[j]! *= this.wscale;
    this.wscale = 1;
  }

  /** After the step's aw correction: the average now covers n iterates, the newest weighted 1/n. */
  advanceAverage(n: number): void {
    const mu = 1 / n;
    if (n > 1) this.averageB /= 1 - mu;
    this.averageA += mu * this.averageB * this.wscale;
  }

  /** The true weight at index j: the average of the iterates so far, or the current one. */
  value(j: number, averaged: boolean): number {
    return averaged ? (this.aw![j]! + this.averageA * this.w[j]!) / this.averageB : this.w[j]! * this.wscale;
  }
}

/**
 * Multinomial (softmax) regression: per sample, g = (softmax(scores) - onehot(y)) × the weight of y's
 * class; eta as in `trainOvrSgd`;
 * w *= max(0, 1 - eta * alpha) (lazily), w -= eta * g x, b -= eta * g (no intercept decay); with
 * `average`, the mean of all iterates. Visits `order` in a fresh seeded shuffle each epoch when `shuffle`
 * is set. (An index may repeat in `order`: that is how oversampling is expressed.)
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
  const V = x.nCols;
  const averaged = options.average === true;
  const classWeight = options.classWeight ?? null;
  const sampleWeight = options.sampleWeight ?? null;
  const model: LinearModel = {
    nFeatures: V,
    nClasses: K,
    weights: new Float64Array(V * K),
    bias: new Float64Array(K),
    link: 'softmax',
  };
  const w = model.weights;
  const b = model.bias;
  const aw = averaged ? new Float64Array(V * K) : null;
  const averageBias = new Float64Array(K);
  // One scale for all classes: every class shrinks by the same factor at every step.
  const s = new ScaledWeights(w, aw, 0, V * K);
  const g = new Float64Array(K);
  const visit = Int32Array.from(order);
  const current = (): LinearModel => ({
    ...model,
    weights: Float64Array.from(w, (_, j) => s.value(j, averaged)),
    bias: Float64Array.from(averaged ? averageBias : b),
  });
  // The averaged model's validation loss without current()'s copy of the weights (see trainOvrSgd).
  const averagedValidationLoss = (): number => {
    const vx = validation.x;
    return meanLogLossOf(validation, K, (r, out) => {
      out.set(averageBias);
      for (let p = vx.indptr[r]!; p < vx.indptr[r + 1]!; p++) {
        const base = vx.indices[p]! * K;
        const v = vx.data[p]!;
        for (let k = 0; k < K; k++)
          out[k]! += ((aw![base + k]! + s.averageA * w[base + k]!) / s.averageB) * v;
      }
      probabilitiesInPlace(out, 'softmax');
    });
  };
  // t: samples seen so far, from 1, as in sklearn's invscaling schedule.
  let t = 0;
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    if (options.shuffle) shuffleInPlace(visit, options.rng);
    let epochLoss = 0;
    for (let i = 0; i < visit.length; i++) {
      const r = visit[i]!;
      t++;
      const eta = learningRateAt(options, t);
      rowProbabilities(model, x, r, g, s.wscale);
      epochLoss -= Math.log(Math.max(g[y[r]!]!, 1e-15));
      g[y[r]!]! -= 1; // gradient of log loss w.r.t. the scores: p - onehot(y)
      // A class weight weighs the sample (its true class's), as sample_weight does in sklearn.
      if (classWeight !== null) for (let k = 0; k < K; k++) g[k]! *= classWeight[y[r]!]!;
      if (sampleWeight !== null) for (let k = 0; k < K; k++) g[k]! *= sampleWeight[r]!;
      s.scale(Math.max(0, 1 - eta * options.alpha));
      const step = eta / s.wscale;
      for (let p = x.indptr[r]!; p < x.indptr[r + 1]!; p++) {
        const base = x.indices[p]! * K;
        const v = x.data[p]! * step;
        for (let k = 0; k < K; k++) w[base + k]! -= g[k]! * v;
      }
      for (let k = 0; k < K; k++) b[k]! -= eta * g[k]!;
      if (averaged) {
        const a = s.averageA * step;
        for (let p = x.indptr[r]!; p < x.indptr[r + 1]!; p++) {
          const base = x.indices[p]! * K;
          const v = x.data[p]! * a;
          for (let k = 0; k < K; k++) aw![base + k]! += g[k]! * v;
        }
        s.advanceAverage(t);
        for (let k = 0; k < K; k++) averageBias[k]! += (b[k]! - averageBias[k]!) / t;
      }
    }
    if (options.onEpoch) {
      const valLoss = averaged ? averagedValidationLoss() : meanLogLoss(model, validation, s.wscale);
      options.onEpoch(epoch, epochLoss / visit.length, valLoss);
    }
  }
  return current();
}
