/**
 * The two ways a member classifier fits, shared by their files: one binary problem per tag solved in the
 * dual by coordinate descent (linear_svm, logistic_regression, nb_lr, nb_svm; dual-cd.ts), optionally on
 * binary features scaled by the tag's naive-Bayes log-count ratios (Wang & Manning 2012: the ratios are
 * then folded into the weights, so prediction is one linear model over binary inputs); and naive Bayes in
 * closed form (multinomial_nb, complement_nb; naive-bayes.ts).
 * Only the tags with training rows take part (`nClasses` counts them).
 */

import { type ParallelRunner, sharedCopy, spreads } from '../../parallel.js';
import { createRng, randomInt } from '../../rng.js';
import type { CsrMatrix } from '../../text/tfidf.js';
import {
  type BinaryLinear,
  DUAL_CD_MAX_ITER,
  DUAL_CD_TOLERANCE,
  type DualOptions,
  type DualProblem,
  solveLogisticDual,
  solveSvmDual,
} from './dual-cd.js';
import type { SvmLoss } from './hyper-params.js';
import type { FitOptions, LinearParts, MemberTrainingData } from './member.js';
import { type ClassWeights, fromClasses, nonZero } from './member-weights.js';
import { type FeatureSums, featureSums, logCountRatios } from './naive-bayes.js';

export interface DualFit {
  /** The binary problem each tag's is: an SVM (with its loss) or logistic regression. */
  solver: 'svm' | 'logistic';
  svmLoss?: SvmLoss | undefined;
  /** nb_lr / nb_svm: the smoothing of the log-count ratios the binary features are scaled by; absent: tf-idf inputs. */
  ratioAlpha?: number;
  /** nb_svm: Wang & Manning's β, w' = (1 − β)·mean|w| + β·w (applied when below 1). */
  interpolation?: number;
}

/** The binary problem of class k: ±1 per row, and each row's cost C × its weight (× the class's when positive). */
function classProblem(data: ClassData, k: number, values: Float64Array): DualProblem {
  const n = data.x.nRows;
  const y = new Int8Array(n);
  const cost = new Float64Array(n);
  const positiveWeight = data.classWeight === null ? 1 : data.classWeight[k]!;
  for (let r = 0; r < n; r++) {
    const positive = data.labels === null ? data.y[r] === k : data.labels[r * data.nClasses + k] === 1;
    y[r] = positive ? 1 : -1;
    cost[r] = data.C * data.rowWeight[r]! * (positive ? positiveWeight : 1);
  }
  return { indptr: data.x.indptr, indices: data.x.indices, values, nFeatures: data.x.nCols, y, cost };
}

const solve = (
  problem: DualProblem,
  how: Pick<DualFit, 'solver' | 'svmLoss'>,
  options: DualOptions,
): BinaryLinear =>
  how.solver === 'svm'
    ? solveSvmDual(problem, how.svmLoss ?? 'squared_hinge', options)
    : solveLogisticDual(problem, options);

/** What every class's problem is made of (shared with the threads that solve them). */
interface ClassData {
  x: CsrMatrix;
  rowWeight: Float64Array;
  y: Int32Array;
  labels: Uint8Array | null;
  nClasses: number;
  classWeight: Float64Array | null;
  C: number;
}

/** The parallel job `member-dual-class`: class `k`'s problem solved, as its non-zero weights and bias. */
export interface DualClassWork extends ClassData {
  solver: DualFit['solver'];
  svmLoss: SvmLoss | undefined;
  seeds: Int32Array;
  tol: number;
  maxIter: number;
}

export function fitDualClass(work: DualClassWork, k: number): { weights: ClassWeights; bias: number } {
  const solved = solve(classProblem(work, k, work.x.data), work, {
    tol: work.tol,
    maxIter: work.maxIter,
    rng: createRng(work.seeds[k]!),
  });
  return { weights: nonZero(solved.w, work.x.nCols), bias: solved.bias };
}

/**
 * One binary problem per class, each row costing C × its weight (× its class weight when positive),
 * every class's solver seeded from one RNG seeded with `options.seed`. On tf-idf inputs the classes are
 * solved on the runner's threads when there is one (the same weights: each class has its own seed).
 */
export function fitOneVsRestDual(
  data: MemberTrainingData,
  C: number,
  options: FitOptions,
  how: DualFit,
): LinearParts {
  const K = data.nClasses;
  const V = data.x.nCols;
  const rng = createRng(options.seed);
  const seeds = Int32Array.from({ length: K }, () => randomInt(rng, 0x7fffffff));
  const tol = options.tol ?? DUAL_CD_TOLERANCE;
  const maxIter = options.maxIter ?? DUAL_CD_MAX_ITER;
  const classData: ClassData = {
    x: data.x,
    rowWeight: data.rowWeight,
    y: data.y,
    labels: data.labels ?? null,
    nClasses: K,
    classWeight: data.classWeight,
    C,
  };
  const runner: ParallelRunner | undefined = options.parallel;
  if (how.ratioAlpha === undefined && how.interpolation === undefined && spreads(runner)) {
    const work: DualClassWork = {
      ...classData,
      x: {
        ...data.x,
        indptr: sharedCopy(data.x.indptr, true),
        indices: sharedCopy(data.x.indices, true),
        data: sharedCopy(data.x.data, true),
      },
      solver: how.solver,
      svmLoss: how.svmLoss,
      seeds,
      tol,
      maxIter,
    };
    const onProgress =
      options.onClass === undefined ? undefined : (done: number) => options.onClass!(done, K);
    const solved = runner.run('member-dual-class', work, K, onProgress) as ReturnType<typeof fitDualClass>[];
    return {
      weights: fromClasses(
        solved.map((s) => s.weights),
        V,
      ),
      bias: Float64Array.from(solved, (s) => s.bias),
    };
  }
  // One class at a time, kept as its non-zero weights: never a features × classes array.
  const classes: ClassWeights[] = [];
  const bias = new Float64Array(K);
  const binarySums = how.ratioAlpha === undefined ? null : featureSums(data.x, data.rowWeight, data, true);
  for (let k = 0; k < K; k++) {
    const ratios = binarySums === null ? null : logCountRatios(binarySums, k, how.ratioAlpha!);
    const values = ratios === null ? data.x.data : Float64Array.from(data.x.indices, (f) => ratios[f]!);
    const solved = solve(classProblem(classData, k, values), how, {
      tol,
      maxIter,
      rng: createRng(seeds[k]!),
    });
    let w = solved.w;
    const beta = how.interpolation;
    if (beta !== undefined && beta < 1) {
      let meanMagnitude = 0;
      for (let f = 0; f < V; f++) meanMagnitude += Math.abs(w[f]!);
      meanMagnitude /= V;
      w = w.map((value) => (1 - beta) * meanMagnitude + beta * value);
    }
    if (ratios !== null) for (let f = 0; f < V; f++) w[f]! *= ratios[f]!;
    classes.push(nonZero(w, V));
    bias[k] = solved.bias;
    options.onClass?.(k + 1, K);
  }
  return { weights: fromClasses(classes, V), bias };
}

/**
 * Naive Bayes fitted in closed form by `fitSums` on the rows' weighted feature sums. sklearn's sample_weight:
 * the oversampling multiplicity times the class weight of the row's class (a multi-label row's: its rarest
 * tag's, the group oversampling repeats it by).
 */
export function fitNaiveBayesMember(
  data: MemberTrainingData,
  alpha: number,
  fitSums: (sums: FeatureSums, nClasses: number, alpha: number, multiLabel: boolean) => LinearParts,
): LinearParts {
  const cw = data.classWeight;
  const rowWeight = cw === null ? data.rowWeight : data.rowWeight.map((w, r) => w * cw[data.y[r]!]!);
  const sums = featureSums(data.x, rowWeight, data, false);
  return fitSums(sums, data.nClasses, alpha, data.labels !== undefined);
}
