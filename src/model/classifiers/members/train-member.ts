/**
 * The member classifiers of a soft vote (and the lone classifiers `classifier` can name), each trained on
 * the shared tf-idf rows into one linear model per tag:
 * - `linear_svm`, `logistic_regression`: one-vs-rest, each tag's binary problem solved in the dual by
 *   coordinate descent (dual-cd.ts; sklearn's LinearSVC / LogisticRegression(solver='liblinear', dual=True));
 * - `nb_lr`, `nb_svm` (Wang & Manning 2012): the same solvers on binary features scaled by each tag's
 *   naive-Bayes log-count ratios r; the ratios are folded into the weights (score = Σ w_f r_f x̂_f + b), so
 *   prediction is one linear model over binary inputs; nb_svm interpolates w' = (1 − β)·mean|w| + β·w;
 * - `multinomial_nb`, `complement_nb`: closed form (naive-bayes.ts).
 * With `calibration: sigmoid` a member's scores become probabilities by a Platt sigmoid per tag fitted on
 * out-of-fold scores (platt.ts; sklearn's CalibratedClassifierCV(method='sigmoid', ensemble=False)).
 * Only the tags with training rows take part (`nClasses` counts them): a tag no row has gets no weights,
 * and the model gives it probability 0.
 */

import { ModelInputError } from '../../errors.js';
import { createRng, randomInt } from '../../rng.js';
import { stratifiedSplit } from '../../split.js';
import type { CsrMatrix } from '../../text/tfidf.js';
import {
  DUAL_CD_MAX_ITER,
  DUAL_CD_TOLERANCE,
  type DualProblem,
  solveLogisticDual,
  solveSvmDual,
} from './dual-cd.js';
import type { MemberClassifier, MemberHyperParams } from './member-args.js';
import { featureSums, fitComplementNb, fitMultinomialNb, logCountRatios } from './naive-bayes.js';
import { fitPlatt } from './platt.js';

/** What a member reads of a text's features: their tf-idf values, or 1 for every feature present (x̂). */
export type MemberInputs = 'tfidf' | 'binary';
/** How a member's scores become probabilities without calibration (sgd.ts's links of the same names). */
export type MemberLink = 'ovr' | 'sigmoid' | 'softmax';

/** A trained member: a linear model over the shared features and how its scores become probabilities. */
export interface Member {
  classifier: MemberClassifier;
  /** Its weight in the vote. */
  weight: number;
  inputs: MemberInputs;
  nFeatures: number;
  /** The tags with training rows (the model maps them to its tags). */
  nClasses: number;
  /** weights[f × nClasses + k]: feature-major, as sgd.ts's LinearModel. */
  weights: Float64Array;
  bias: Float64Array;
  link: MemberLink;
  /** Platt's a and b per class (probability 1 / (1 + exp(a·score + b))); null: the link's probabilities. */
  calibration: { a: Float64Array; b: Float64Array } | null;
}

/** The training rows of the members: distinct tf-idf rows, their weights and their classes. */
export interface MemberTrainingData {
  x: CsrMatrix;
  /** Each row's weight: how many times oversampling visits it (0 leaves it out). */
  rowWeight: Float64Array;
  /** Each row's class; for multi-label rows, the group the rows are stratified and oversampled by. */
  y: Int32Array;
  /** Multi-label: labels[r × nClasses + k] = 1 when row r has class k. */
  labels?: Uint8Array;
  nClasses: number;
  /** The classes' tag names, for messages. */
  tagNames: readonly string[];
  /** sklearn's class_weight per class (liblinear weighs a class's positive rows by it); null: all 1. */
  classWeight: Float64Array | null;
}

export type MemberSpec = MemberHyperParams & { classifier: MemberClassifier; weight: number };

export interface MemberTrainOptions {
  seed: number;
  calibrationFolds: number;
  /** Dual-CD stopping tolerance and iteration cap (default liblinear's, as sklearn sets them). */
  tol?: number;
  maxIter?: number;
}

const INPUTS: Record<MemberClassifier, MemberInputs> = {
  linear_svm: 'tfidf',
  logistic_regression: 'tfidf',
  nb_lr: 'binary',
  nb_svm: 'binary',
  multinomial_nb: 'tfidf',
  complement_nb: 'tfidf',
};

/** The inputs a member classifier reads. */
export const memberInputs = (classifier: MemberClassifier): MemberInputs => INPUTS[classifier];

/** The link of a member classifier's own probabilities. */
export function memberLink(classifier: MemberClassifier, multiLabel: boolean): MemberLink {
  if (multiLabel) return 'sigmoid';
  return classifier === 'multinomial_nb' || classifier === 'complement_nb' ? 'softmax' : 'ovr';
}

const isPositive = (data: MemberTrainingData, r: number, k: number): boolean =>
  data.labels === undefined ? data.y[r] === k : data.labels[r * data.nClasses + k] === 1;

/** Trains one member on `data` (with its calibration when the spec asks for one). */
export function trainMember(spec: MemberSpec, data: MemberTrainingData, options: MemberTrainOptions): Member {
  if (spec.calibration === 'none') return fitMember(spec, data, options.seed, options);
  return calibrated(spec, data, options);
}

/** The member fitted on every row with a weight, without calibration. */
function fitMember(
  spec: MemberSpec,
  data: MemberTrainingData,
  seed: number,
  options: Pick<MemberTrainOptions, 'tol' | 'maxIter'>,
): Member {
  const multiLabel = data.labels !== undefined;
  const K = data.nClasses;
  const V = data.x.nCols;
  const base = {
    classifier: spec.classifier,
    weight: spec.weight,
    inputs: memberInputs(spec.classifier),
    nFeatures: V,
    nClasses: K,
    link: memberLink(spec.classifier, multiLabel),
    calibration: null,
  };
  if (spec.classifier === 'multinomial_nb' || spec.classifier === 'complement_nb') {
    // sklearn's sample_weight: the oversampling multiplicity times the class weight of the row's class (a
    // multi-label row's: its rarest tag's, the group oversampling repeats it by).
    const cw = data.classWeight;
    const rowWeight = cw === null ? data.rowWeight : data.rowWeight.map((w, r) => w * cw[data.y[r]!]!);
    const sums = featureSums(data.x, rowWeight, data, false);
    const fitNb = spec.classifier === 'multinomial_nb' ? fitMultinomialNb : fitComplementNb;
    return { ...base, ...fitNb(sums, K, spec.nb_alpha, multiLabel) };
  }
  const weights = new Float64Array(V * K);
  const bias = new Float64Array(K);
  const nb = spec.classifier === 'nb_lr' || spec.classifier === 'nb_svm';
  const binarySums = nb ? featureSums(data.x, data.rowWeight, data, true) : null;
  const svm = spec.classifier === 'linear_svm' || spec.classifier === 'nb_svm';
  const rng = createRng(seed);
  const n = data.x.nRows;
  for (let k = 0; k < K; k++) {
    const ratios = binarySums === null ? null : logCountRatios(binarySums, k, spec.nb_ratio_alpha);
    const y = new Int8Array(n);
    const cost = new Float64Array(n);
    const positiveWeight = data.classWeight === null ? 1 : data.classWeight[k]!;
    for (let r = 0; r < n; r++) {
      const positive = isPositive(data, r, k);
      y[r] = positive ? 1 : -1;
      cost[r] = spec.C * data.rowWeight[r]! * (positive ? positiveWeight : 1);
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
    const solverOptions = {
      tol: options.tol ?? DUAL_CD_TOLERANCE,
      maxIter: options.maxIter ?? DUAL_CD_MAX_ITER,
      rng: createRng(randomInt(rng, 0x7fffffff)),
    };
    const solved = svm
      ? solveSvmDual(problem, spec.svm_loss, solverOptions)
      : solveLogisticDual(problem, solverOptions);
    let w = solved.w;
    if (spec.classifier === 'nb_svm' && spec.nb_svm_beta < 1) {
      let meanMagnitude = 0;
      for (let f = 0; f < V; f++) meanMagnitude += Math.abs(w[f]!);
      meanMagnitude /= V;
      const beta = spec.nb_svm_beta;
      w = w.map((value) => (1 - beta) * meanMagnitude + beta * value);
    }
    for (let f = 0; f < V; f++) weights[f * K + k] = ratios === null ? w[f]! : w[f]! * ratios[f]!;
    bias[k] = solved.bias;
  }
  return { ...base, weights, bias };
}

/** The member's linear scores of CSR row r of the training matrix into `out`. */
export function memberRowScores(member: Member, x: CsrMatrix, r: number, out: Float64Array): void {
  const K = member.nClasses;
  out.set(member.bias);
  const binary = member.inputs === 'binary';
  for (let q = x.indptr[r]!; q < x.indptr[r + 1]!; q++) {
    const base = x.indices[q]! * K;
    const v = binary ? 1 : x.data[q]!;
    for (let k = 0; k < K; k++) out[k]! += member.weights[base + k]! * v;
  }
}

/**
 * Platt calibration on out-of-fold scores: the rows are split into `calibrationFolds` stratified folds; a
 * member fitted without each fold scores that fold; one sigmoid per class is fitted on all those scores;
 * the returned member is fitted on every row and carries the sigmoids. A tag with fewer rows than folds
 * has at most one row per fold (stratified); a fold that holds a tag's only row is scored by a dual-CD
 * member that had no row of the tag (its binary problem is all negatives), which is what calibration should
 * learn from: one row is not enough to recognise the tag. Naive Bayes cannot fit a tag without rows (its
 * log prior is −∞), so an NB member needs every fold's training part to hold every tag.
 */
function calibrated(spec: MemberSpec, data: MemberTrainingData, options: MemberTrainOptions): Member {
  const folds = options.calibrationFolds;
  const K = data.nClasses;
  const rows = Array.from({ length: data.x.nRows }, (_, r) => r).filter((r) => data.rowWeight[r]! > 0);
  if (rows.length < folds) {
    throw new ModelInputError(
      `model/calibration: "calibration": "sigmoid" scores every training row out of fold on ${folds} folds (calibration_folds), but there are only ${rows.length} training rows; lower calibration_folds or use "calibration": "none"`,
    );
  }
  const naiveBayes = spec.classifier === 'multinomial_nb' || spec.classifier === 'complement_nb';
  const parts = stratifiedSplit(
    rows,
    (r) => String(data.y[r]),
    Array.from({ length: folds }, () => 1 / folds),
    options.seed,
  );
  const scores = new Float64Array(data.x.nRows * K);
  const out = new Float64Array(K);
  const seeds = createRng(options.seed ^ 0x0ca1b4a7);
  parts.forEach((heldOut, f) => {
    if (heldOut.length === 0) return;
    const rowWeight = Float64Array.from(data.rowWeight);
    for (const r of heldOut) rowWeight[r] = 0;
    if (naiveBayes) checkNaiveBayesFold(data, rows, rowWeight, f, folds);
    const member = fitMember(spec, { ...data, rowWeight }, randomInt(seeds, 0x7fffffff), options);
    for (const r of heldOut) {
      memberRowScores(member, data.x, r, out);
      scores.set(out, r * K);
    }
  });
  const weights = Float64Array.from(rows, (r) => data.rowWeight[r]!);
  const a = new Float64Array(K);
  const b = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    const classScores = Float64Array.from(rows, (r) => scores[r * K + k]!);
    const fitted = fitPlatt(
      classScores,
      rows.map((r) => isPositive(data, r, k)),
      weights,
    );
    a[k] = fitted.a;
    b[k] = fitted.b;
  }
  return { ...fitMember(spec, data, options.seed, options), calibration: { a, b } };
}

/** A naive-Bayes member's calibration fold must leave rows with (and, multi-label, without) every tag. */
function checkNaiveBayesFold(
  data: MemberTrainingData,
  rows: readonly number[],
  rowWeight: Float64Array,
  fold: number,
  folds: number,
): void {
  for (let k = 0; k < data.nClasses; k++) {
    const kept = rows.filter((r) => rowWeight[r]! > 0);
    const positives = kept.filter((r) => isPositive(data, r, k)).length;
    const missing =
      positives === 0 ? 'with' : data.labels !== undefined && positives === kept.length ? 'without' : null;
    if (missing !== null) {
      throw new ModelInputError(
        `model/calibration: calibrating naive Bayes on ${folds} folds (calibration_folds) leaves fold ${fold + 1} no training row ${missing} tag "${data.tagNames[k]}", and naive Bayes cannot score a tag it has no rows of; give every tag at least 2 training rows ${missing} it, lower calibration_folds, or use "calibration": "none" for this member`,
      );
    }
  }
}
