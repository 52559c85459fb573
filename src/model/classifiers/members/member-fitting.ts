/**
 * The two ways a member classifier fits, shared by their files: one binary problem per tag solved in the
 * dual by coordinate descent (linear_svm, logistic_regression, nb_lr, nb_svm; dual-cd.ts), optionally on
 * binary features scaled by the tag's naive-Bayes log-count ratios (Wang & Manning 2012: the ratios are
 * then folded into the weights, so prediction is one linear model over binary inputs); and naive Bayes in
 * closed form (multinomial_nb, complement_nb; naive-bayes.ts).
 * Only the tags with training rows take part (`nClasses` counts them).
 */
import { createRng, randomInt } from '../../rng.js';
import {
  type BinaryLinear,
  DUAL_CD_MAX_ITER,
  DUAL_CD_TOLERANCE,
  type DualOptions,
  type DualProblem,
} from './dual-cd.js';
import { type FitOptions, isPositive, type LinearParts, type MemberTrainingData } from './member.js';
import { type ClassWeights, fromClasses, nonZero } from './member-weights.js';
import { type FeatureSums, featureSums, logCountRatios } from './naive-bayes.js';

export interface DualFit {
  /** Solves one tag's binary problem. */
  solve(problem: DualProblem, options: DualOptions): BinaryLinear;
  /** nb_lr / nb_svm: the smoothing of the log-count ratios the binary features are scaled by; absent: tf-idf inputs. */
  ratioAlpha?: number;
  /** nb_svm: Wang & Manning's β, w' = (1 − β)·mean|w| + β·w (applied when below 1). */
  interpolation?: number;
}

/**
 * One binary problem per class, each row costing C × its weight (× its class weight when positive),
 * every class's solver seeded from one RNG seeded with `options.seed`.
 */
export function fitOneVsRestDual(
  data: MemberTrainingData,
  C: number,
  options: FitOptions,
  how: DualFit,
): LinearParts {
  const K = data.nClasses;
  const V = data.x.nCols;
  // One class at a time, kept as its non-zero weights: never a features × classes array.
  const classes: ClassWeights[] = [];
  const bias = new Float64Array(K);
  const binarySums = how.ratioAlpha === undefined ? null : featureSums(data.x, data.rowWeight, data, true);
  const rng = createRng(options.seed);
  const n = data.x.nRows;
  for (let k = 0; k < K; k++) {
    const ratios = binarySums === null ? null : logCountRatios(binarySums, k, how.ratioAlpha!);
    const y = new Int8Array(n);
    const cost = new Float64Array(n);
    const positiveWeight = data.classWeight === null ? 1 : data.classWeight[k]!;
    for (let r = 0; r < n; r++) {
      const positive = isPositive(data, r, k);
      y[r] = positive ? 1 : -1;
      cost[r] = C * data.rowWeight[r]! * (positive ? positiveWeight : 1);
    }
    const values = ratios === null ? data.x.data : Float64Array.from(data.x.indices, (f) => ratios[f]!);
    const problem: DualProblem = {
      indptr: data.x.indptr,
      indices: data.x.indices,
      values,
      nFeatures: V,
      y,
      cost,
    };
    const solved = how.solve(problem, {
      tol: options.tol ?? DUAL_CD_TOLERANCE,
      maxIter: options.maxIter ?? DUAL_CD_MAX_ITER,
      rng: createRng(randomInt(rng, 0x7fffffff)),
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
