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
 *
 * In memory (not in the saved file, which keeps the lists: `listedEntries`), a sparse feature with entries
 * for most classes keeps them as a dense row of its own instead (`rows`, zeros where the list has none): a
 * text's features are mostly the frequent n-grams, which have entries in nearly every class (at 50 tags,
 * 46 of 50 for naive Bayes), and a row is added eight features at a time like a dense model's
 * (linear-scores.ts) where a list costs a read of its class and a scattered add per entry: multinomial naive
 * Bayes of 50 tags over 199,676 features scores a text in half the time (104 → 48 µs, best of 7 rounds
 * side by side on a busy VM), in less memory (16.4 → 13.8 MB: 27,564 rows, 839,673 entries left in lists).
 * A feature becomes a row only where the row takes no more memory than its list.
 */
import {
  addFullRun,
  addLinearScores,
  addPartRun,
  CLASSES_IN_LOCALS,
  RUN_LENGTH,
  rowRun,
} from '../linear-scores.js';
import { RowSums } from '../wasm-row-sums.js';

export type WeightValues = Float32Array | Float64Array;

export interface MemberWeights {
  readonly nFeatures: number;
  readonly nClasses: number;
  /** The part stored densely: f × nClasses + k. Null when it is sparse. */
  readonly dense: WeightValues | null;
  /** The part stored sparsely by feature (null when dense). */
  readonly sparse: SparseWeights | null;
  /** A term every class shares for feature f (complement naive Bayes), or null. */
  readonly perFeature: WeightValues | null;
  /** A term of class k on every feature (naive Bayes' weight of a feature the class never saw), or null. */
  readonly perClass: Float64Array | null;
  /**
   * The dense part's or the sparse part's rows in WebAssembly memory (`dense` or `sparse.rows` is then a
   * view of them), which scores add by SIMD (wasm-row-sums.ts); null or absent: the JavaScript loops.
   */
  readonly rowSums?: RowSums | null;
}

/**
 * Weights sparse by feature: feature f's entries are `classes`/`values` [start[f], start[f + 1]), or, when
 * rowOf[f] ≥ 0, the dense row rows[rowOf[f] × nClasses …] of nClasses values (its list then empty).
 * `rowOf` and `rows` are null when no feature has a row (the lists as saved, and as training builds them).
 */
export interface SparseWeights {
  readonly start: Int32Array;
  readonly classes: Int32Array;
  readonly values: WeightValues;
  readonly rowOf: Int32Array | null;
  readonly rows: WeightValues | null;
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
  return { ...base, dense: null, sparse: { start, classes: classOf, values, rowOf: null, rows: null } };
}

/**
 * The weights as a model keeps them: in Float32 when there are more than DENSE_UP_TO (the per-class terms
 * stay Float64, K of them); a small model keeps Float64, which costs little and keeps the scores' one
 * element type on the scoring path (V8 reads a typed array slower where it has seen both kinds).
 */
export function forStorage(weights: MemberWeights): MemberWeights {
  if (weights.nFeatures * weights.nClasses <= DENSE_UP_TO) return weights;
  const round = (v: WeightValues | null): Float32Array | null => (v === null ? null : Float32Array.from(v));
  const { sparse } = weights;
  return withRowSums({
    ...weights,
    dense: round(weights.dense),
    sparse:
      sparse === null
        ? null
        : withRows({ ...sparse, values: round(sparse.values)!, rows: round(sparse.rows) }, weights.nClasses),
    perFeature: round(weights.perFeature),
  });
}

/**
 * The weights with their Float32 rows moved into WebAssembly memory, where SIMD adds them (wasm-row-sums.ts),
 * when there are more than CLASSES_IN_LOCALS classes (fewer keep linear-scores.ts's sums in locals, faster
 * there); as they are where that cannot be done. What a model keeps once trained or read.
 */
export function withRowSums(weights: MemberWeights): MemberWeights {
  const K = weights.nClasses;
  const rows = weights.dense ?? weights.sparse?.rows ?? null;
  if (K <= CLASSES_IN_LOCALS || !(rows instanceof Float32Array) || weights.rowSums) return weights;
  const rowSums = RowSums.of(rows, K);
  if (rowSums === null) return weights;
  if (weights.dense !== null) return { ...weights, dense: rowSums.rows, rowSums };
  return { ...weights, sparse: { ...weights.sparse!, rows: rowSums.rows }, rowSums };
}

/** The same weights scored by the JavaScript loops only (tests compare the two ways). */
export const withoutRowSums = (weights: MemberWeights): MemberWeights => ({ ...weights, rowSums: null });

/**
 * The sparse weights with a dense row for every feature whose row takes no more memory than its list
 * (entries × (value + class) ≥ classes × value) and whose listed values are all non-zero (so the row's
 * zeros tell which entries it had: `listedEntries` gives the lists back exactly). Already rows are kept.
 */
export function withRows(sparse: SparseWeights, nClasses: number): SparseWeights {
  const { start, classes, values } = sparse;
  const V = start.length - 1;
  const width = values.BYTES_PER_ELEMENT;
  const minEntries = Math.ceil((nClasses * width) / (width + 4));
  const becomesRow = (f: number): boolean => {
    if (start[f + 1]! - start[f]! < minEntries) return false;
    for (let q = start[f]!; q < start[f + 1]!; q++) if (values[q] === 0) return false;
    return true;
  };
  const rowOf = sparse.rowOf === null ? new Int32Array(V).fill(-1) : Int32Array.from(sparse.rowOf);
  let nRows = sparse.rows === null ? 0 : sparse.rows.length / nClasses;
  const firstNew = nRows;
  let moved = 0;
  for (let f = 0; f < V; f++) {
    if (rowOf[f]! < 0 && becomesRow(f)) {
      rowOf[f] = nRows++;
      moved += start[f + 1]! - start[f]!;
    }
  }
  if (nRows === firstNew) return sparse;
  const Values = values.constructor as new (n: number) => WeightValues;
  const rows = new Values(nRows * nClasses);
  if (sparse.rows !== null) rows.set(sparse.rows);
  const keptStart = new Int32Array(V + 1);
  const keptClasses = new Int32Array(values.length - moved);
  const keptValues = new Values(values.length - moved);
  let at = 0;
  for (let f = 0; f < V; f++) {
    const r = rowOf[f]!;
    if (r >= firstNew) {
      for (let q = start[f]!; q < start[f + 1]!; q++) rows[r * nClasses + classes[q]!] = values[q]!;
    } else {
      for (let q = start[f]!; q < start[f + 1]!; q++) {
        keptClasses[at] = classes[q]!;
        keptValues[at++] = values[q]!;
      }
    }
    keptStart[f + 1] = at;
  }
  return { start: keptStart, classes: keptClasses, values: keptValues, rowOf, rows };
}

/** The sparse weights as lists only (every row back into its feature's list): what a saved model holds. */
export function listedEntries(sparse: SparseWeights, nClasses: number): SparseWeights {
  const { start, classes, values, rowOf, rows } = sparse;
  if (rowOf === null || rows === null) return sparse;
  const V = start.length - 1;
  let n = values.length;
  for (let i = 0; i < rows.length; i++) if (rows[i] !== 0) n++;
  const Values = values.constructor as new (n: number) => WeightValues;
  const listedStart = new Int32Array(V + 1);
  const listedClasses = new Int32Array(n);
  const listedValues = new Values(n);
  let at = 0;
  for (let f = 0; f < V; f++) {
    const r = rowOf[f]!;
    if (r >= 0) {
      for (let k = 0; k < nClasses; k++) {
        const w = rows[r * nClasses + k]!;
        if (w === 0) continue;
        listedClasses[at] = k;
        listedValues[at++] = w;
      }
    } else {
      for (let q = start[f]!; q < start[f + 1]!; q++) {
        listedClasses[at] = classes[q]!;
        listedValues[at++] = values[q]!;
      }
    }
    listedStart[f + 1] = at;
  }
  return { start: listedStart, classes: listedClasses, values: listedValues, rowOf: null, rows: null };
}

/** weight(f, k). */
export function weightAt(weights: MemberWeights, f: number, k: number): number {
  let w = (weights.perFeature?.[f] ?? 0) + (weights.perClass?.[k] ?? 0);
  if (weights.dense !== null) return w + weights.dense[f * weights.nClasses + k]!;
  const { start, classes, values, rowOf, rows } = weights.sparse!;
  if (rowOf !== null && rowOf[f]! >= 0) return w + rows![rowOf[f]! * weights.nClasses + k]!;
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

/** How many weights are stored (a sparse part's entries, rows' included; a dense part's all). */
export const storedWeights = (weights: MemberWeights): number =>
  weights.dense?.length ?? listedEntries(weights.sparse!, weights.nClasses).values.length;

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
  const rowSums = weights.rowSums ?? null;
  if (rowSums !== null) addRowSumsScores(rowSums, weights.sparse, indices, values, from, to, out);
  else if (weights.dense !== null) addLinearScores(weights.dense, K, indices, values, from, to, out);
  else addSparseScores(weights.sparse!, K, indices, values, from, to, out);
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

/** addSparseScores' run of rows (linear-scores.ts). */
const sparseRun = rowRun();

/**
 * The sparse part of addMemberScores: features in text order, a run of features with rows added four at a
 * time (linear-scores.ts), a feature's list entry by entry; a list ends the run before it, so every class
 * adds its products in text order, as the lists alone (and a dense model) add them.
 */
function addSparseScores(
  sparse: SparseWeights,
  K: number,
  indices: ArrayLike<number>,
  values: ArrayLike<number> | null,
  from: number,
  to: number,
  out: Float64Array,
): void {
  const { start, classes, values: w, rowOf } = sparse;
  const rows = sparse.rows ?? w;
  const run = sparseRun;
  let pending = 0; // rows in `run` not added yet
  for (let j = from; j < to; j++) {
    const v = values === null ? 1 : values[j]!;
    const f = indices[j]!;
    const r = rowOf === null ? -1 : rowOf[f]!;
    if (r >= 0) {
      run.at[pending] = r * K;
      run.factor[pending] = v;
      if (++pending === RUN_LENGTH) {
        addFullRun(rows, K, run, out);
        pending = 0;
      }
      continue;
    }
    if (pending > 0) {
      addPartRun(rows, K, run, pending, out);
      pending = 0;
    }
    for (let q = start[f]!; q < start[f + 1]!; q++) out[classes[q]!]! += w[q]! * v;
  }
  if (pending > 0) addPartRun(rows, K, run, pending, out);
}

/**
 * addMemberScores' stored part when its rows are in WebAssembly memory: every feature with a row (all of a
 * dense part's) staged in text order, a listed feature's entries added after the rows staged before it, so
 * every class adds its products in text order, as addSparseScores and addLinearScores add them.
 */
function addRowSumsScores(
  rowSums: RowSums,
  sparse: SparseWeights | null,
  indices: ArrayLike<number>,
  values: ArrayLike<number> | null,
  from: number,
  to: number,
  out: Float64Array,
): void {
  rowSums.begin(out);
  if (sparse === null) {
    for (let j = from; j < to; j++) rowSums.stage(indices[j]!, values === null ? 1 : values[j]!);
    rowSums.end(out);
    return;
  }
  const { start, classes, values: w, rowOf } = sparse;
  const sums = rowSums.sums;
  for (let j = from; j < to; j++) {
    const v = values === null ? 1 : values[j]!;
    const f = indices[j]!;
    const r = rowOf === null ? -1 : rowOf[f]!;
    if (r >= 0) {
      rowSums.stage(r, v);
      continue;
    }
    if (start[f + 1]! === start[f]!) continue;
    rowSums.flush();
    for (let q = start[f]!; q < start[f + 1]!; q++) sums[classes[q]!]! += w[q]! * v;
  }
  rowSums.end(out);
}
