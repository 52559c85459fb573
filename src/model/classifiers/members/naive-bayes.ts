/**
 * Naive Bayes on sparse rows, in closed form, with scikit-learn's definitions (1.9.1,
 * `sklearn/naive_bayes.py`): `MultinomialNB` and `ComplementNB` (norm=False), and the naive-Bayes
 * log-count ratios of NB-LR / NB-SVM (Wang & Manning, ACL 2012). Each gives a linear model: a class's
 * joint log likelihood is bias + Σ weight × value, which is how Tagger stores, predicts and explains it.
 * Hand-written because it is a few sums per feature and class, and no maintained JS library has sklearn's
 * semantics on CSR rows.
 *
 * A row counts with its weight (sklearn's sample_weight: oversampling multiplicity × class weight).
 * Single-label: the classes compete (softmax of the joint log likelihoods, as sklearn's predict_proba).
 * Multi-label: each class is its own two-class problem, class vs the rest (sklearn's
 * OneVsRestClassifier(MultinomialNB())), and its score is log P(class) − log P(rest), whose sigmoid is
 * that problem's probability.
 */
import type { CsrMatrix } from '../../text/tfidf.js';

/** Which classes row r belongs to: one class (single-label), or a row of the label-indicator matrix. */
export interface ClassMembership {
  nClasses: number;
  /** Single-label: each row's class. */
  y?: Int32Array;
  /** Multi-label: labels[r × nClasses + k] = 1 when row r has class k. */
  labels?: Uint8Array;
}

/** A linear model over the features: weights[f × nClasses + k] (feature-major, as sgd/sgd-solver.ts) and a bias per class. */
export interface LinearParts {
  weights: Float64Array;
  bias: Float64Array;
}

/** Per-class weighted feature sums of `values` (class-major, K × V), their total over all rows, and row weight sums. */
export interface FeatureSums {
  perClass: Float64Array;
  total: Float64Array;
  classWeight: Float64Array;
  totalWeight: number;
}

/** Weighted sums of each feature per class; `binary` counts a present feature as 1 (Wang & Manning's x̂). */
export function featureSums(
  x: CsrMatrix,
  rowWeight: Float64Array,
  membership: ClassMembership,
  binary = false,
): FeatureSums {
  const K = membership.nClasses;
  const V = x.nCols;
  const perClass = new Float64Array(K * V);
  const total = new Float64Array(V);
  const classWeight = new Float64Array(K);
  let totalWeight = 0;
  const classes: number[] = [];
  for (let r = 0; r < x.nRows; r++) {
    const weight = rowWeight[r]!;
    if (weight === 0) continue;
    classes.length = 0;
    if (membership.labels !== undefined) {
      for (let k = 0; k < K; k++) if (membership.labels[r * K + k] === 1) classes.push(k);
    } else classes.push(membership.y![r]!);
    totalWeight += weight;
    for (const k of classes) classWeight[k]! += weight;
    for (let q = x.indptr[r]!; q < x.indptr[r + 1]!; q++) {
      const f = x.indices[q]!;
      const v = (binary ? 1 : x.data[q]!) * weight;
      total[f]! += v;
      for (const k of classes) perClass[k * V + f]! += v;
    }
  }
  return { perClass, total, classWeight, totalWeight };
}

/** log((count + α) / Σ(count + α)) of one class's feature counts: MultinomialNB's feature_log_prob_. */
function logProbabilities(counts: (f: number) => number, V: number, alpha: number): Float64Array {
  let sum = 0;
  for (let f = 0; f < V; f++) sum += counts(f) + alpha;
  const logSum = Math.log(sum);
  return Float64Array.from({ length: V }, (_, f) => Math.log(counts(f) + alpha) - logSum);
}

/**
 * MultinomialNB (fit_prior=True): weights = feature_log_prob_, bias = class_log_prior_; multi-label: per
 * class, the class's minus the rest's. Every class must have rows (a class without rows has no prior).
 */
export function fitMultinomialNb(
  sums: FeatureSums,
  nClasses: number,
  alpha: number,
  multiLabel: boolean,
): LinearParts {
  const V = sums.total.length;
  const K = nClasses;
  const weights = new Float64Array(V * K);
  const bias = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    const own = logProbabilities((f) => sums.perClass[k * V + f]!, V, alpha);
    const ownPrior = Math.log(sums.classWeight[k]! / sums.totalWeight);
    if (!multiLabel) {
      for (let f = 0; f < V; f++) weights[f * K + k] = own[f]!;
      bias[k] = ownPrior;
      continue;
    }
    const rest = logProbabilities((f) => sums.total[f]! - sums.perClass[k * V + f]!, V, alpha);
    const restPrior = Math.log((sums.totalWeight - sums.classWeight[k]!) / sums.totalWeight);
    for (let f = 0; f < V; f++) weights[f * K + k] = own[f]! - rest[f]!;
    bias[k] = ownPrior - restPrior;
  }
  return { weights, bias };
}

/**
 * ComplementNB (norm=False): a class's weights are −log of the smoothed feature distribution of the rows
 * *not* in it (sklearn's feature_log_prob_ = −log(comp_count / Σ comp_count)), no prior (sklearn adds it
 * only with one class); multi-label: the class's two-class problem, class minus rest.
 */
export function fitComplementNb(
  sums: FeatureSums,
  nClasses: number,
  alpha: number,
  multiLabel: boolean,
): LinearParts {
  const V = sums.total.length;
  const K = nClasses;
  const weights = new Float64Array(V * K);
  const bias = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    // The complement of class k: every row not in it (for multi-label, the rows without the class).
    const complement = logProbabilities((f) => sums.total[f]! - sums.perClass[k * V + f]!, V, alpha);
    if (!multiLabel) {
      for (let f = 0; f < V; f++) weights[f * K + k] = -complement[f]!;
      continue;
    }
    // The rest's complement is the class itself.
    const own = logProbabilities((f) => sums.perClass[k * V + f]!, V, alpha);
    for (let f = 0; f < V; f++) weights[f * K + k] = -complement[f]! + own[f]!;
  }
  return { weights, bias };
}

/**
 * Wang & Manning's log-count ratio of class k against the rest, per feature: r = log((p/‖p‖₁) / (q/‖q‖₁)),
 * p = α + Σ x̂ over the class's rows, q = α + Σ x̂ over the others' (x̂: binary features, weighted rows).
 * `sums` must be binary feature sums.
 */
export function logCountRatios(sums: FeatureSums, k: number, alpha: number): Float64Array {
  const V = sums.total.length;
  let pSum = 0;
  let qSum = 0;
  for (let f = 0; f < V; f++) {
    pSum += alpha + sums.perClass[k * V + f]!;
    qSum += alpha + sums.total[f]! - sums.perClass[k * V + f]!;
  }
  const offset = Math.log(qSum) - Math.log(pSum);
  return Float64Array.from(
    { length: V },
    (_, f) =>
      Math.log(alpha + sums.perClass[k * V + f]!) -
      Math.log(alpha + sums.total[f]! - sums.perClass[k * V + f]!) +
      offset,
  );
}
