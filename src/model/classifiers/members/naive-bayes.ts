/**
 * Naive Bayes on sparse rows, in closed form, with scikit-learn's definitions (1.9.1,
 * `sklearn/naive_bayes.py`): `MultinomialNB` and `ComplementNB` (norm=False), and the naive-Bayes
 * log-count ratios of NB-LR / NB-SVM (Wang & Manning, ACL 2012). Each gives a linear model: a class's
 * joint log likelihood is bias + Σ weight × value, which is how Tagger stores, predicts and explains it.
 * Hand-written because it is a few sums per feature and class, and no maintained JS library has sklearn's
 * semantics on CSR rows.
 *
 * Memory grows with the counts seen, not with features × classes: a class's feature sums are kept for the
 * features its rows have, and a weight of a feature the class never saw is a per-class term plus, for the
 * complement and multi-label forms, a per-feature one (member-weights.ts), so only the seen counts are
 * stored one by one.
 *
 * A row counts with its weight (sklearn's sample_weight: oversampling multiplicity × class weight).
 * Single-label: the classes compete (softmax of the joint log likelihoods, as sklearn's predict_proba).
 * Multi-label: each class is its own two-class problem, class vs the rest (sklearn's
 * OneVsRestClassifier(MultinomialNB())), and its score is log P(class) − log P(rest), whose sigmoid is
 * that problem's probability.
 */
import type { CsrMatrix } from '../../text/tfidf.js';
import { type ClassWeights, fromClasses, type MemberWeights } from './member-weights.js';

/** Which classes row r belongs to: one class (single-label), or a row of the label-indicator matrix. */
export interface ClassMembership {
  nClasses: number;
  /** Single-label: each row's class. */
  y?: Int32Array;
  /** Multi-label: labels[r × nClasses + k] = 1 when row r has class k. */
  labels?: Uint8Array;
}

/** A linear model over the features: its weights and a bias per class. */
export interface LinearParts {
  weights: MemberWeights;
  bias: Float64Array;
}

/** Per-class weighted feature sums (only the features a class's rows have), their total, and row weight sums. */
export interface FeatureSums {
  perClass: ClassWeights[];
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
  const total = new Float64Array(V);
  const classWeight = new Float64Array(K);
  let totalWeight = 0;
  // Each class's rows, then one pass over them into a scratch vector that is read back and cleared.
  const rowsOf: number[][] = Array.from({ length: K }, () => []);
  for (let r = 0; r < x.nRows; r++) {
    const weight = rowWeight[r]!;
    if (weight === 0) continue;
    totalWeight += weight;
    for (let q = x.indptr[r]!; q < x.indptr[r + 1]!; q++)
      total[x.indices[q]!]! += (binary ? 1 : x.data[q]!) * weight;
    if (membership.labels !== undefined) {
      for (let k = 0; k < K; k++) {
        if (membership.labels[r * K + k] === 1) {
          rowsOf[k]!.push(r);
          classWeight[k]! += weight;
        }
      }
    } else {
      rowsOf[membership.y![r]!]!.push(r);
      classWeight[membership.y![r]!]! += weight;
    }
  }
  const scratch = new Float64Array(V);
  const seen = new Uint8Array(V);
  const perClass = rowsOf.map((rows) => {
    const features: number[] = [];
    for (const r of rows) {
      const weight = rowWeight[r]!;
      for (let q = x.indptr[r]!; q < x.indptr[r + 1]!; q++) {
        const f = x.indices[q]!;
        if (seen[f] === 0) {
          seen[f] = 1;
          features.push(f);
        }
        scratch[f]! += (binary ? 1 : x.data[q]!) * weight;
      }
    }
    features.sort((a, b) => a - b);
    const values = Float64Array.from(features, (f) => scratch[f]!);
    for (const f of features) {
      scratch[f] = 0;
      seen[f] = 0;
    }
    return { features: Int32Array.from(features), values };
  });
  return { perClass, total, classWeight, totalWeight };
}

/** Σ over classes' seen features of f(count, f), as the per-class entries of a weight. */
function entries(sums: FeatureSums, k: number, value: (count: number, f: number) => number): ClassWeights {
  const { features, values } = sums.perClass[k]!;
  return { features, values: Float64Array.from(values, (count, i) => value(count, features[i]!)) };
}

/**
 * MultinomialNB (fit_prior=True): weights = feature_log_prob_ = log(count + α) − log Σ(count + α), bias =
 * class_log_prior_; a feature the class never saw weighs log α − log Σ(count + α) (its per-class term).
 * Multi-label: per class, the class's minus the rest's (a never-seen feature adds −log(total + α), the
 * per-feature term). Every class must have rows (a class without rows has no prior).
 */
export function fitMultinomialNb(
  sums: FeatureSums,
  nClasses: number,
  alpha: number,
  multiLabel: boolean,
): LinearParts {
  const V = sums.total.length;
  const K = nClasses;
  const bias = new Float64Array(K);
  const perClass = new Float64Array(K);
  const classes: ClassWeights[] = [];
  const logAlpha = Math.log(alpha);
  const grandTotal = sums.total.reduce((a, b) => a + b, 0);
  for (let k = 0; k < K; k++) {
    const own = sums.perClass[k]!.values.reduce((a, b) => a + b, 0);
    const logOwn = Math.log(own + V * alpha);
    const ownPrior = Math.log(sums.classWeight[k]! / sums.totalWeight);
    if (!multiLabel) {
      classes.push(entries(sums, k, (count) => Math.log(count + alpha) - logAlpha));
      perClass[k] = logAlpha - logOwn;
      bias[k] = ownPrior;
      continue;
    }
    const logRest = Math.log(grandTotal - own + V * alpha);
    const restPrior = Math.log((sums.totalWeight - sums.classWeight[k]!) / sums.totalWeight);
    // weight = [log(c + α) − logOwn] − [log(t − c + α) − logRest]; at c = 0: −log(t + α) + (log α − logOwn + logRest).
    classes.push(
      entries(
        sums,
        k,
        (count, f) =>
          Math.log(count + alpha) -
          logAlpha -
          Math.log(sums.total[f]! - count + alpha) +
          Math.log(sums.total[f]! + alpha),
      ),
    );
    perClass[k] = logAlpha - logOwn + logRest;
    bias[k] = ownPrior - restPrior;
  }
  const perFeature = multiLabel ? Float64Array.from(sums.total, (t) => -Math.log(t + alpha)) : null;
  return { weights: fromClasses(classes, V, { perFeature, perClass }), bias };
}

/**
 * ComplementNB (norm=False): a class's weights are −log of the smoothed feature distribution of the rows
 * *not* in it (sklearn's feature_log_prob_ = −log(comp_count / Σ comp_count)), no prior (sklearn adds it
 * only with one class); multi-label: the class's two-class problem, class minus rest. A feature the class
 * never saw weighs −log(total + α) (per feature) + log Σ comp_count (per class).
 */
export function fitComplementNb(
  sums: FeatureSums,
  nClasses: number,
  alpha: number,
  multiLabel: boolean,
): LinearParts {
  const V = sums.total.length;
  const K = nClasses;
  const perClass = new Float64Array(K);
  const classes: ClassWeights[] = [];
  const grandTotal = sums.total.reduce((a, b) => a + b, 0);
  const logAlpha = Math.log(alpha);
  for (let k = 0; k < K; k++) {
    const own = sums.perClass[k]!.values.reduce((a, b) => a + b, 0);
    // The complement of class k: every row not in it (for multi-label, the rows without the class).
    const logComplement = Math.log(grandTotal - own + V * alpha);
    const complement = (count: number, f: number) =>
      -Math.log(sums.total[f]! - count + alpha) + Math.log(sums.total[f]! + alpha);
    if (!multiLabel) {
      classes.push(entries(sums, k, complement));
      perClass[k] = logComplement;
      continue;
    }
    // The rest's complement is the class itself: + log(c + α) − log Σ(c + α).
    const logOwn = Math.log(own + V * alpha);
    classes.push(entries(sums, k, (count, f) => complement(count, f) + Math.log(count + alpha) - logAlpha));
    perClass[k] = logComplement + logAlpha - logOwn;
  }
  const perFeature = Float64Array.from(sums.total, (t) => -Math.log(t + alpha));
  return { weights: fromClasses(classes, V, { perFeature, perClass }), bias: new Float64Array(K) };
}

/**
 * Wang & Manning's log-count ratio of class k against the rest, per feature: r = log((p/‖p‖₁) / (q/‖q‖₁)),
 * p = α + Σ x̂ over the class's rows, q = α + Σ x̂ over the others' (x̂: binary features, weighted rows).
 * `sums` must be binary feature sums. One class at a time: a dense vector the caller uses and drops.
 */
export function logCountRatios(sums: FeatureSums, k: number, alpha: number): Float64Array {
  const V = sums.total.length;
  const { features, values } = sums.perClass[k]!;
  const own = new Float64Array(V);
  let p = 0;
  for (let i = 0; i < features.length; i++) {
    own[features[i]!] = values[i]!;
    p += values[i]!;
  }
  const total = sums.total.reduce((a, b) => a + b, 0);
  const offset = Math.log(V * alpha + total - p) - Math.log(V * alpha + p);
  return Float64Array.from(
    { length: V },
    (_, f) => Math.log(alpha + own[f]!) - Math.log(alpha + sums.total[f]! - own[f]!) + offset,
  );
}
