/**
 * The `fasttext` model's training step, fastText's supervised SGD (Joulin et al. 2017) written for speed:
 * for each example, the text vector is the mean of its input rows; the output layer (softmax, hierarchical
 * softmax or one sigmoid per tag) takes one gradient step at learning rate lr × (1 − progress), and the
 * gradient with respect to the text vector, divided by the number of rows, is added to each input row.
 * `trainExamples` runs a range of examples over matrices it may share with other threads (Hogwild!, as
 * fastText does: the threads update the same rows without locks, so the result depends on their timing);
 * with one thread it is deterministic.
 */
import { sigmoid } from '../links.js';
import type { FastTextOutput } from './fasttext-model.js';
import type { HuffmanTree } from './fasttext-tree.js';

/** The training rows as the SGD sees them. */
export interface FastTextExamples {
  /** Row r's input rows are ids[indptr[r] … indptr[r + 1]). */
  indptr: Int32Array;
  ids: Int32Array;
  /** Words per row: the unit of progress (fastText counts tokens). */
  tokens: Int32Array;
  /** Single-label: each row's class. */
  y: Int32Array;
  /** Multi-label: labels[r × K + k] = 1 when row r has class k. */
  labels: Uint8Array | null;
  nClasses: number;
}

export interface FastTextMatrices {
  dim: number;
  input: Float32Array;
  output: Float32Array;
  loss: FastTextOutput;
  tree: HuffmanTree | null;
}

export interface StepSchedule {
  lr: number;
  /** Tokens the whole training visits (all epochs, all threads). */
  totalTokens: number;
  /** sklearn-style per-class weight of a positive example (null: all 1). */
  classWeight: Float64Array | null;
}

/** Scratch of one thread. */
export interface SgdScratch {
  hidden: Float32Array;
  grad: Float32Array;
  scores: Float64Array;
}

export const sgdScratch = (dim: number, nClasses: number): SgdScratch => ({
  hidden: new Float32Array(dim),
  grad: new Float32Array(dim),
  scores: new Float64Array(nClasses),
});

/**
 * Trains on `order[from … to)` (indices of rows of `examples`), starting `tokensBefore` tokens into the
 * whole training (for the learning rate). With `progressScale` n (n threads training n shards of an epoch
 * at once) the training's progress is taken as n times this shard's, as fastText's shared token count
 * would be. Returns the summed loss and the tokens it visited.
 */
export function trainExamples(
  examples: FastTextExamples,
  matrices: FastTextMatrices,
  order: Int32Array,
  from: number,
  to: number,
  schedule: StepSchedule,
  tokensBefore: number,
  scratch: SgdScratch,
  progressScale = 1,
): { loss: number; tokens: number } {
  const { indptr, ids, tokens, y, labels, nClasses: K } = examples;
  const { dim, input, output, loss: kind, tree } = matrices;
  const { hidden: h, grad, scores } = scratch;
  const classWeight = schedule.classWeight;
  let seen = 0;
  let totalLoss = 0;
  for (let i = from; i < to; i++) {
    const r = order[i]!;
    const start = indptr[r]!;
    const end = indptr[r + 1]!;
    seen += tokens[r]!;
    const n = end - start;
    if (n === 0) continue;
    const lr = schedule.lr * Math.max(0, 1 - (tokensBefore + seen * progressScale) / schedule.totalTokens);
    h.fill(0);
    for (let q = start; q < end; q++) {
      const base = ids[q]! * dim;
      for (let d = 0; d < dim; d++) h[d]! += input[base + d]!;
    }
    const inverse = 1 / n;
    for (let d = 0; d < dim; d++) h[d]! *= inverse;
    grad.fill(0);
    if (kind === 'softmax') {
      const target = y[r]!;
      const rate = lr * (classWeight === null ? 1 : classWeight[target]!);
      let max = -Infinity;
      for (let k = 0; k < K; k++) {
        const s = dot(output, k * dim, h, dim);
        scores[k] = s;
        if (s > max) max = s;
      }
      let sum = 0;
      for (let k = 0; k < K; k++) {
        const e = Math.exp(scores[k]! - max);
        scores[k] = e;
        sum += e;
      }
      totalLoss -= Math.log(Math.max(scores[target]! / sum, 1e-15));
      for (let k = 0; k < K; k++) {
        const alpha = rate * ((k === target ? 1 : 0) - scores[k]! / sum);
        step(output, k * dim, h, grad, alpha, dim);
      }
    } else if (kind === 'hs') {
      const target = y[r]!;
      const rate = lr * (classWeight === null ? 1 : classWeight[target]!);
      const path = tree!.paths[target]!;
      const code = tree!.codes[target]!;
      for (let p = 0; p < path.length; p++) {
        const base = path[p]! * dim;
        const f = sigmoid(dot(output, base, h, dim));
        const label = code[p]!;
        totalLoss -= Math.log(Math.max(label === 1 ? f : 1 - f, 1e-15));
        step(output, base, h, grad, rate * (label - f), dim);
      }
    } else {
      for (let k = 0; k < K; k++) {
        const base = k * dim;
        const f = sigmoid(dot(output, base, h, dim));
        const label = labels![r * K + k]!;
        const rate = label === 1 && classWeight !== null ? lr * classWeight[k]! : lr;
        totalLoss -= Math.log(Math.max(label === 1 ? f : 1 - f, 1e-15));
        step(output, base, h, grad, rate * (label - f), dim);
      }
    }
    for (let d = 0; d < dim; d++) grad[d]! *= inverse;
    for (let q = start; q < end; q++) {
      const base = ids[q]! * dim;
      for (let d = 0; d < dim; d++) input[base + d]! += grad[d]!;
    }
  }
  return { loss: totalLoss, tokens: seen };
}

/** One epoch of SGD split into `shards` parts trained at once (Hogwild!): the work of every shard. */
export interface FastTextShardWork {
  examples: FastTextExamples;
  matrices: FastTextMatrices;
  order: Int32Array;
  schedule: StepSchedule;
  /** Tokens the training visited before this epoch. */
  epochStart: number;
  shards: number;
  /** Each shard's summed loss (shared memory). */
  losses: Float64Array;
}

/** The parallel job `fasttext-shard`: trains shard `shard` of the epoch (its own slice of `order`). */
export function trainShard(work: FastTextShardWork, shard: number): void {
  const { order, shards } = work;
  const from = Math.floor((shard * order.length) / shards);
  const to = Math.floor(((shard + 1) * order.length) / shards);
  const scratch = sgdScratch(work.matrices.dim, work.examples.nClasses);
  const { loss } = trainExamples(
    work.examples,
    work.matrices,
    order,
    from,
    to,
    work.schedule,
    work.epochStart,
    scratch,
    shards,
  );
  work.losses[shard] = loss;
}

/** a[from … from + n) · b. */
function dot(a: Float32Array, from: number, b: Float32Array, n: number): number {
  let sum = 0;
  for (let d = 0; d < n; d++) sum += a[from + d]! * b[d]!;
  return sum;
}

/** grad += alpha · row; row += alpha · h (the output row's step, after its gradient was taken). */
function step(
  output: Float32Array,
  from: number,
  h: Float32Array,
  grad: Float32Array,
  alpha: number,
  n: number,
): void {
  if (alpha === 0) return;
  for (let d = 0; d < n; d++) {
    const o = output[from + d]!;
    grad[d]! += alpha * o;
    output[from + d] = o + alpha * h[d]!;
  }
}
