/**
 * One-vs-rest SGD (sgd-solver.ts's losses and lazily scaled weights), its classes trained on a
 * ParallelRunner's threads (../../parallel.ts) as the member classifiers' one-vs-rest problems are
 * (../members/member-fitting.ts). Every class's binary problem is independent — its own slice of the
 * weights, intercept, weight scale, shuffle RNG and visiting order — so one epoch of every class is one run of
 * the `sgd-ovr-epoch` job (a task per class), and the run's end is the barrier after which the calling thread
 * reports the epoch's losses, as it did when it trained the classes itself. What a class carries from one
 * epoch to the next lives in shared memory when the classes are spread (its RNG as its state: rng.ts's
 * `rngStateAfter`); the rows are shared, not copied per class or thread. The validation loss is summed over
 * fixed blocks of rows (the `sgd-ovr-validation` job), the blocks in order. Nothing depends on which thread
 * ran a task, so the model and the losses are the same whatever the threads, and the model is the one the
 * classes trained one after the other gave before.
 */

import { float64Array, int32Array, type ParallelRunner, sharedCopy, spreads } from '../../parallel.js';
import { createRng, randomInt, rngStateAfter, shuffleInPlace } from '../../rng.js';
import type { CsrMatrix } from '../../text/tfidf.js';
import { type Link, probabilitiesInPlace } from '../links.js';
import type { LearningRateSchedule, Loss } from './sgd-params.js';
import {
  type LabelledMatrix,
  type LinearModel,
  learningRateAt,
  linkOf,
  logLossSum,
  lossDerivative,
  lossValue,
  MAX_DLOSS,
  ScaledWeights,
  type SgdOptions,
  SPARSE_INTERCEPT_DECAY,
} from './sgd-solver.js';

/** Validation rows per task of the `sgd-ovr-validation` job (fixed, so the sum is the same on any threads). */
const VALIDATION_BLOCK = 1024;

/**
 * Everything the classes' epochs read and write (in shared memory when spread). Class k owns
 * w[k·V, (k+1)·V) (class-major, so each binary problem is contiguous), `intercept[k]`, the three numbers of
 * its weight scale at `scales[3k]` (wscale, averageA, averageB), its RNG state and visits[k·n, (k+1)·n).
 */
export interface OvrWork {
  x: CsrMatrix;
  y: Int32Array;
  labels?: Uint8Array;
  nClasses: number;
  /** Samples per epoch (the length of `order`). */
  n: number;
  w: Float64Array;
  aw: Float64Array | null;
  intercept: Float64Array;
  averageIntercept: Float64Array;
  scales: Float64Array;
  rngStates: Int32Array;
  visits: Int32Array;
  classWeight: Float64Array | null;
  sampleWeight: Float64Array | null;
  alpha: number;
  learningRate: number;
  powerT: number;
  schedule: LearningRateSchedule;
  shuffle: boolean;
  loss: Loss;
  averaged: boolean;
  link: Link;
  validation: Pick<LabelledMatrix, 'x' | 'y' | 'labels'>;
  /** The epoch a run of `sgd-ovr-epoch` trains (from 1). */
  epoch: number;
}

/** Class k's weight scale as the epoch left it. */
function scaledWeights(work: OvrWork, k: number): ScaledWeights {
  const V = work.x.nCols;
  const s = new ScaledWeights(work.w, work.aw, k * V, (k + 1) * V);
  s.wscale = work.scales[3 * k]!;
  s.averageA = work.scales[3 * k + 1]!;
  s.averageB = work.scales[3 * k + 2]!;
  return s;
}

/**
 * The parallel job `sgd-ovr-epoch`: epoch `work.epoch` of class k's binary problem (sklearn's `_plain_sgd`
 * step, see trainOvrSgd), in place; returns the summed loss of its samples, each taken before its update.
 */
export function trainOvrClassEpoch(work: OvrWork, k: number): number {
  const { x, y, labels, n, w, aw, classWeight, sampleWeight, loss, averaged, epoch } = work;
  const { indptr, indices, data } = x;
  const K = work.nClasses;
  const base = k * x.nCols;
  const s = scaledWeights(work, k);
  const visit = work.visits.subarray(k * n, (k + 1) * n);
  if (work.shuffle) {
    const state = work.rngStates[k]! >>> 0;
    const rng = createRng(state);
    let draws = 0;
    shuffleInPlace(visit, () => {
      draws++;
      return rng();
    });
    work.rngStates[k] = rngStateAfter(state, draws);
  }
  let b = work.intercept[k]!;
  let bAverage = work.averageIntercept[k]!;
  const positiveWeight = classWeight === null ? 1 : classWeight[k]!;
  let epochLoss = 0;
  for (let i = 0; i < n; i++) {
    const r = visit[i]!;
    const t = (epoch - 1) * n + i + 1;
    const eta = learningRateAt(work, t);
    const start = indptr[r]!;
    const end = indptr[r + 1]!;
    let dot = 0;
    for (let p = start; p < end; p++) dot += w[base + indices[p]!]! * data[p]!;
    const score = dot * s.wscale + b;
    const positive = labels === undefined ? y[r] === k : labels[r * K + k] === 1;
    const label = positive ? 1 : -1;
    epochLoss += lossValue(loss, score, label);
    const dloss = Math.min(MAX_DLOSS, Math.max(-MAX_DLOSS, lossDerivative(loss, score, label)));
    const update =
      -eta * dloss * (positive ? positiveWeight : 1) * (sampleWeight === null ? 1 : sampleWeight[r]!);
    s.scale(Math.max(0, 1 - eta * work.alpha));
    const c = update / s.wscale;
    if (update !== 0) {
      for (let p = start; p < end; p++) w[base + indices[p]!]! += data[p]! * c;
      b += update * SPARSE_INTERCEPT_DECAY;
    }
    if (averaged) {
      const a = -s.averageA * c;
      if (a !== 0) for (let p = start; p < end; p++) aw![base + indices[p]!]! += data[p]! * a;
      s.advanceAverage(t);
      bAverage += (b - bAverage) / t;
    }
  }
  work.intercept[k] = b;
  work.averageIntercept[k] = bAverage;
  work.scales[3 * k] = s.wscale;
  work.scales[3 * k + 1] = s.averageA;
  work.scales[3 * k + 2] = s.averageB;
  return epochLoss;
}

/**
 * The parallel job `sgd-ovr-validation`: the summed cross-entropy of validation rows [block·B, (block+1)·B)
 * under the weights as they are (class-major, scaled), without a feature-major copy of them.
 */
export function ovrValidationLoss(work: OvrWork, block: number): number {
  const { validation, w, aw, averaged, link } = work;
  const K = work.nClasses;
  const V = work.x.nCols;
  const vx = validation.x;
  const from = block * VALIDATION_BLOCK;
  const to = Math.min(vx.nRows, from + VALIDATION_BLOCK);
  const states = Array.from({ length: K }, (_, k) => scaledWeights(work, k));
  return logLossSum(
    validation,
    K,
    (r, out) => {
      for (let k = 0; k < K; k++) {
        const st = states[k]!;
        const base = k * V;
        let dot = 0;
        let dotAverage = 0;
        for (let p = vx.indptr[r]!; p < vx.indptr[r + 1]!; p++) {
          const f = base + vx.indices[p]!;
          dot += w[f]! * vx.data[p]!;
          if (averaged) dotAverage += aw![f]! * vx.data[p]!;
        }
        out[k] = averaged
          ? (dotAverage + st.averageA * dot) / st.averageB + work.averageIntercept[k]!
          : dot * st.wscale + work.intercept[k]!;
      }
      probabilitiesInPlace(out, link);
    },
    from,
    to,
  );
}

/** Runs a job's tasks on the runner's threads, or in this thread one after the other; results in task order. */
function runTasks(
  runner: ParallelRunner | undefined,
  job: string,
  run: (work: OvrWork, task: number) => number,
  work: OvrWork,
  count: number,
): number[] {
  if (count === 0) return [];
  if (spreads(runner)) return runner.run(job, work, count) as number[];
  return Array.from({ length: count }, (_, task) => run(work, task));
}

/**
 * One-vs-rest linear classifiers, following sklearn's `_plain_sgd` for every class k (binary label
 * y = +1 for class k, -1 otherwise): t counts this class's samples across all epochs from 1; eta =
 * eta0 / t^power_t (invscaling) or eta0; dloss = the loss's derivative (`lossDerivative`), clipped to ±1e12;
 * update = -eta * dloss * (class k's weight for a positive sample, else 1); w *= max(0, 1 - eta * alpha)
 * (lazily), then w += update * x; intercept += update * 0.01 (sparse intercept decay); with `average`,
 * the returned weights and intercept are the mean of all t iterates.
 * Each class shuffles its own copy of `order` with its own RNG, seeded from `options.rng` (as sklearn
 * draws one seed per binary problem); the shuffles are Tagger's, so the sample order differs from sklearn's.
 * With `options.parallel` the classes of each epoch are trained on its threads (see the module comment).
 */
export function trainOvrSgd(
  train: LabelledMatrix,
  order: Int32Array,
  nClasses: number,
  options: SgdOptions,
  validation: LabelledMatrix,
): LinearModel {
  const K = nClasses;
  const V = train.x.nCols;
  const n = order.length;
  const runner = options.parallel;
  const shared = spreads(runner);
  const averaged = options.average === true;
  const loss = options.loss ?? 'log_loss';
  const link = linkOf('ovr', loss, train.labels !== undefined);
  const sharedRows = (
    m: Pick<LabelledMatrix, 'x' | 'y' | 'labels'>,
  ): Pick<LabelledMatrix, 'x' | 'y' | 'labels'> => ({
    x: {
      ...m.x,
      indptr: sharedCopy(m.x.indptr, shared),
      indices: sharedCopy(m.x.indices, shared),
      data: sharedCopy(m.x.data, shared),
    },
    y: sharedCopy(m.y, shared),
    ...(m.labels === undefined ? {} : { labels: sharedCopy(m.labels, shared) }),
  });
  const scales = float64Array(3 * K, shared);
  for (let k = 0; k < K; k++) {
    scales[3 * k] = 1;
    scales[3 * k + 2] = 1;
  }
  const rngStates = int32Array(K, shared);
  for (let k = 0; k < K; k++) rngStates[k] = randomInt(options.rng, 0x7fffffff);
  const visits = int32Array(K * n, shared);
  for (let k = 0; k < K; k++) visits.set(order, k * n);
  const classWeight = options.classWeight ?? null;
  const sampleWeight = options.sampleWeight ?? null;
  const work: OvrWork = {
    ...sharedRows(train),
    nClasses: K,
    n,
    w: float64Array(V * K, shared),
    aw: averaged ? float64Array(V * K, shared) : null,
    intercept: float64Array(K, shared),
    averageIntercept: float64Array(K, shared),
    scales,
    rngStates,
    visits,
    classWeight: classWeight === null ? null : sharedCopy(classWeight, shared),
    sampleWeight: sampleWeight === null ? null : sharedCopy(sampleWeight, shared),
    alpha: options.alpha,
    learningRate: options.learningRate,
    powerT: options.powerT,
    schedule: options.schedule,
    shuffle: options.shuffle,
    loss,
    averaged,
    link,
    validation: sharedRows(validation),
    epoch: 0,
  };
  const blocks = Math.ceil(validation.x.nRows / VALIDATION_BLOCK);
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    work.epoch = epoch;
    const classLosses = runTasks(runner, 'sgd-ovr-epoch', trainOvrClassEpoch, work, K);
    if (options.onEpoch) {
      let epochLoss = 0;
      for (const classLoss of classLosses) epochLoss += classLoss;
      let valLoss = 0;
      for (const sum of runTasks(runner, 'sgd-ovr-validation', ovrValidationLoss, work, blocks))
        valLoss += sum;
      options.onEpoch(epoch, epochLoss / n, valLoss / validation.x.nRows);
    }
  }
  // The model as returned: feature-major copies of the true or averaged weights.
  const weights = new Float64Array(V * K);
  for (let k = 0; k < K; k++) {
    const s = scaledWeights(work, k);
    for (let f = 0; f < V; f++) weights[f * K + k] = s.value(k * V + f, averaged);
  }
  const bias = Float64Array.from(averaged ? work.averageIntercept : work.intercept);
  return { nFeatures: V, nClasses: K, weights, bias, link };
}
