/**
 * A member classifier's weights in a form that grows with its non-zero weights, not with features × tags:
 *
 *   weight(f, k) = perFeature[f] + perClass[k] + part(f, k)
 *
 * where `part` is stored densely (feature-major, f × K + k, as before) when most of it is non-zero, and
 * otherwise sparsely by feature (feature f's entries are `classes`/`values` [start[f], start[f + 1])). A
 * linear SVM's or logistic regression's weights are non-zero only on the features of its support vectors;
 * naive Bayes gives every feature a weight in every class, but one a class never saw is the same for all such
 * features up to a per-feature term — so naive Bayes stores those two terms and the counts it saw, sparsely.
 * A trained model keeps its values in Float32 when it has more than a million weights (what it is saved in;
 * its probabilities agree with scikit-learn's to 1e-6), in Float64 below; a model saved before
 * tagger-model/1.6 keeps its Float64 values, so it predicts bit for bit as it did.
 */
import { addLinearScores } from '../linear-scores.js';

export type WeightValues = Float32Array | Float64Array;

export interface MemberWeights {
  readonly nFeatures: number;
  readonly nClasses: number;
  /** The part stored densely: f × nClasses + k. Null when it is sparse. */
  readonly dense: WeightValues | null;
  /** The part stored sparsely by feature (null when dense). */
  readonly sparse: {
    readonly start: Int32Array;
    readonly classes: Int32Array;
    readonly values: WeightValues;
  } | null;
  /** A term every class shares for feature f (complement naive Bayes), or null. */
  readonly perFeature: WeightValues | null;
  /** A term of class k on every feature (naive Bayes' weight of a feature the class never saw), or null. */
  readonly perClass: Float64Array | null;
}

/** Sparse storage is chosen when at most this share of the part is non-zero… */
const SPARSE_BELOW = 0.5;
/**
 * …and the weights are more than this many (4 MB in Float32): a smaller model is stored densely, with the
 * shared terms folded in, since a dense row of a few tags is the faster score and the memory is small.
 */
const DENSE_UP_TO = 1 << 20;

/** Dense weights (f × nClasses + k), as they are: what models saved before tagger-model/1.6 hold. */
export function denseWeights(weights: WeightValues, nFeatures: number, nClasses: number): MemberWeights {
  return { nFeatures, nClasses, dense: weights, sparse: null, perFeature: null, perClass: null };
}

/** One class's non-zero weights: features ascending. */
export interface ClassWeights {
  features: Int32Array;
  values: Float64Array;
}

/** A class's non-zero entries of a dense per-feature vector (the dual solvers' w). */
export function nonZero(w: ArrayLike<number>, nFeatures: number): ClassWeights {
  let n = 0;
  for (let f = 0; f < nFeatures; f++) if (w[f] !== 0) n++;
  const features = new Int32Array(n);
  const values = new Float64Array(n);
  let at = 0;
  for (let f = 0; f < nFeatures; f++) {
    if (w[f] === 0) continue;
    features[at] = f;
    values[at++] = w[f]!;
  }
  return { features, values };
}

/**
 * The weights of per-class non-zero lists (plus the shared terms), laid out densely or sparsely by how many
 * are non-zero, in Float64 (exact; `forStorage` rounds them to what a model keeps).
 */
export function fromClasses(
  classes: readonly ClassWeights[],
  nFeatures: number,
  shared: { perFeature?: WeightValues | null; perClass?: Float64Array | null } = {},
): MemberWeights {
  const K = classes.length;
  let nnz = 0;
  for (const c of classes) nnz += c.features.length;
  const base = {
    nFeatures,
    nClasses: K,
    perFeature: shared.perFeature ?? null,
    perClass: shared.perClass ?? null,
  };
  if (nnz > SPARSE_BELOW * nFeatures * K || nFeatures * K <= DENSE_UP_TO) {
    const dense = new Float64Array(nFeatures * K);
    const { perFeature, perClass } = base;
    if (perFeature !== null || perClass !== null) {
      for (let f = 0; f < nFeatures; f++) {
        for (let k = 0; k < K; k++) dense[f * K + k] = (perFeature?.[f] ?? 0) + (perClass?.[k] ?? 0);
      }
    }
    classes.forEach((c, k) => {
      for (let i = 0; i < c.features.length; i++) dense[c.features[i]! * K + k]! += c.values[i]!;
    });
    return { ...base, perFeature: null, perClass: null, dense, sparse: null };
  }
  const start = new Int32Array(nFeatures + 1);
  for (const c of classes) for (const f of c.features) start[f + 1]!++;
  for (let f = 0; f < nFeatures; f++) start[f + 1]! += start[f]!;
  const next = start.slice(0, nFeatures);
  const classOf = new Int32Array(nnz);
  const values = new Float64Array(nnz);
  // Classes in ascending order within a feature: a score adds them in the order a dense row would.
  classes.forEach((c, k) => {
    for (let i = 0; i < c.features.length; i++) {
      const at = next[c.features[i]!]!++;
      classOf[at] = k;
      values[at] = c.values[i]!;
    }
  });
  return { ...base, dense: null, sparse: { start, classes: classOf, values } };
}

/**
 * The weights as a model keeps them: in Float32 when there are more than DENSE_UP_TO (the per-class terms
 * stay Float64, K of them); a small model keeps Float64, which costs little and keeps the scores' one
 * element type on the scoring path (V8 reads a typed array slower where it has seen both kinds).
 */
export function forStorage(weights: MemberWeights): MemberWeights {
  if (weights.nFeatures * weights.nClasses <= DENSE_UP_TO) return weights;
  const round = (v: WeightValues | null): Float32Array | null => (v === null ? null : Float32Array.from(v));
  return {
    ...weights,
    dense: round(weights.dense),
    sparse: weights.sparse === null ? null : { ...weights.sparse, values: round(weights.sparse.values)! },
    perFeature: round(weights.perFeature),
  };
}

/** weight(f, k). */
export function weightAt(weights: MemberWeights, f: number, k: number): number {
  let w = (weights.perFeature?.[f] ?? 0) + (weights.perClass?.[k] ?? 0);
  if (weights.dense !== null) return w + weights.dense[f * weights.nClasses + k]!;
  const { start, classes, values } = weights.sparse!;
  for (let q = start[f]!; q < start[f + 1]!; q++) {
    if (classes[q] === k) {
      w += values[q]!;
      break;
    }
  }
  return w;
}

/** Every weight(f, k) as a dense f × nClasses + k array (tests and comparisons; never on a serving path). */
export function toDense(weights: MemberWeights): Float64Array {
  const K = weights.nClasses;
  const out = new Float64Array(weights.nFeatures * K);
  for (let f = 0; f < weights.nFeatures; f++)
    for (let k = 0; k < K; k++) out[f * K + k] = weightAt(weights, f, k);
  return out;
}

/** How many weights are stored (a sparse part's entries, a dense part's all). */
export const storedWeights = (weights: MemberWeights): number =>
  weights.dense?.length ?? weights.sparse!.values.length;

/**
 * Adds Σⱼ weight(indices[j], k) · values[j], j ∈ [from, to), to out[k] for every class k (values null:
 * binary inputs, every value 1). The stored part is added feature by feature in text order, as a dense
 * model always added it (so a model saved before 1.6 scores bit for bit as it did); the shared terms after.
 */
export function addMemberScores(
  weights: MemberWeights,
  indices: ArrayLike<number>,
  values: ArrayLike<number> | null,
  from: number,
  to: number,
  out: Float64Array,
): void {
  const K = weights.nClasses;
  if (weights.dense !== null) addLinearScores(weights.dense, K, indices, values, from, to, out);
  else {
    const { start, classes, values: w } = weights.sparse!;
    for (let j = from; j < to; j++) {
      const v = values === null ? 1 : values[j]!;
      const f = indices[j]!;
      for (let q = start[f]!; q < start[f + 1]!; q++) out[classes[q]!]! += w[q]! * v;
    }
  }
  if (weights.perFeature === null && weights.perClass === null) return;
  let sumValues = 0;
  let sharedScore = 0;
  for (let j = from; j < to; j++) {
    const v = values === null ? 1 : values[j]!;
    sumValues += v;
    if (weights.perFeature !== null) sharedScore += weights.perFeature[indices[j]!]! * v;
  }
  for (let k = 0; k < K; k++) out[k]! += sharedScore + (weights.perClass?.[k] ?? 0) * sumValues;
}
