/**
 * The inner loop of every linear model here (the SGD model, each member of a vote, training's row
 * scores): the products of a sparse row's features with feature-major weights (w[f × K + k]) added to each
 * class's running sum. Written for speed by hand, in two shapes by the number of classes:
 *
 * - up to four classes, their sums in locals (registers) over one pass of the row's features, instead of
 *   adding into the output array feature by feature: measured 2x faster (a vote of three members over
 *   20,612 features and 4 tags: 4.9 → 2.5 µs per text);
 * - more classes, a run of eight features at a time (`addFullRun`): each class's sum is read once, takes
 *   the eight features' products and is written back, so the features' rows are read in one pass, eight
 *   runs of K contiguous weights side by side (the groups-of-four-classes loop read every feature's row
 *   once per four classes: 13 passes at 50 classes). At 50 classes (a linear SVM of 199,676 features, 550
 *   features a text) four features at a time took 34 → 24 µs per text, eight about 10 % less again (side by
 *   side on a busy VM). Member weights kept sparse add their dense rows the same way (member-weights.ts).
 *
 * The sums are the plain loop's bit for bit either way: each class's starts at `out`'s value and adds the
 * same products in the same order (features in row order). A member classifier's Float32 rows of more than
 * four classes are added by WebAssembly SIMD instead (wasm-row-sums.ts: the same runs, the same sums).
 */

/** Up to this many classes, the classes' sums are kept in locals; past it, runs of features' rows. */
export const CLASSES_IN_LOCALS = 4;

/**
 * Adds Σⱼ w[indices[j] × K + k] · values[j] · scale, j ∈ [from, to), to out[k] for every class k < K.
 * `values` null: every feature's value is 1 (binary inputs).
 */
export function addLinearScores(
  weights: Float32Array | Float64Array,
  K: number,
  indices: ArrayLike<number>,
  values: ArrayLike<number> | null,
  from: number,
  to: number,
  out: Float64Array,
  scale = 1,
): void {
  if (K > CLASSES_IN_LOCALS) {
    const { at, factor } = denseRun;
    let j = from;
    for (; j + RUN_LENGTH <= to; j += RUN_LENGTH) {
      for (let i = 0; i < RUN_LENGTH; i++) {
        at[i] = indices[j + i]! * K;
        factor[i] = values === null ? 1 : values[j + i]! * scale;
      }
      addFullRun(weights, K, denseRun, out);
    }
    for (; j < to; j++) addRow(weights, K, indices[j]! * K, values === null ? 1 : values[j]! * scale, out);
    return;
  }
  if (K === 0) return;
  const width = K;
  let s0 = out[0]!;
  let s1 = width > 1 ? out[1]! : 0;
  let s2 = width > 2 ? out[2]! : 0;
  let s3 = width > 3 ? out[3]! : 0;
  for (let j = from; j < to; j++) {
    const v = values === null ? 1 : values[j]! * scale;
    const at = indices[j]! * K;
    s0 += weights[at]! * v;
    if (width > 1) s1 += weights[at + 1]! * v;
    if (width > 2) s2 += weights[at + 2]! * v;
    if (width > 3) s3 += weights[at + 3]! * v;
  }
  out[0] = s0;
  if (width > 1) out[1] = s1;
  if (width > 2) out[2] = s2;
  if (width > 3) out[3] = s3;
}

/** How many rows a run adds at a time (addFullRun). */
export const RUN_LENGTH = 8;

/** Rows to add: each one's start in the weights and the factor its weights are multiplied by. */
export interface RowRun {
  readonly at: Int32Array;
  readonly factor: Float64Array;
}

/** Room for a run of RUN_LENGTH rows. */
export const rowRun = (): RowRun => ({
  at: new Int32Array(RUN_LENGTH),
  factor: new Float64Array(RUN_LENGTH),
});

/** addLinearScores' run. */
const denseRun = rowRun();

/**
 * Adds a full run of RUN_LENGTH rows to out[0..K): each class's sum read once, the rows' products added
 * in run order, written back.
 */
export function addFullRun(
  weights: Float32Array | Float64Array,
  K: number,
  run: RowRun,
  out: Float64Array,
): void {
  const { at, factor } = run;
  const at0 = at[0]!;
  const at1 = at[1]!;
  const at2 = at[2]!;
  const at3 = at[3]!;
  const at4 = at[4]!;
  const at5 = at[5]!;
  const at6 = at[6]!;
  const at7 = at[7]!;
  const v0 = factor[0]!;
  const v1 = factor[1]!;
  const v2 = factor[2]!;
  const v3 = factor[3]!;
  const v4 = factor[4]!;
  const v5 = factor[5]!;
  const v6 = factor[6]!;
  const v7 = factor[7]!;
  for (let k = 0; k < K; k++) {
    let s = out[k]!;
    s += weights[at0 + k]! * v0;
    s += weights[at1 + k]! * v1;
    s += weights[at2 + k]! * v2;
    s += weights[at3 + k]! * v3;
    s += weights[at4 + k]! * v4;
    s += weights[at5 + k]! * v5;
    s += weights[at6 + k]! * v6;
    s += weights[at7 + k]! * v7;
    out[k] = s;
  }
}

/** Adds the first `count` (< RUN_LENGTH) rows of a run (as addFullRun has them) to out[0..K), in order. */
export function addPartRun(
  weights: Float32Array | Float64Array,
  K: number,
  run: RowRun,
  count: number,
  out: Float64Array,
): void {
  const { at, factor } = run;
  let i = 0;
  if (count >= 4) {
    const at0 = at[0]!;
    const at1 = at[1]!;
    const at2 = at[2]!;
    const at3 = at[3]!;
    const v0 = factor[0]!;
    const v1 = factor[1]!;
    const v2 = factor[2]!;
    const v3 = factor[3]!;
    for (let k = 0; k < K; k++) {
      let s = out[k]!;
      s += weights[at0 + k]! * v0;
      s += weights[at1 + k]! * v1;
      s += weights[at2 + k]! * v2;
      s += weights[at3 + k]! * v3;
      out[k] = s;
    }
    i = 4;
  }
  for (; i < count; i++) addRow(weights, K, at[i]!, factor[i]!, out);
}

/** Adds the K weights from `at` times `v` to out[0..K). */
export function addRow(
  weights: Float32Array | Float64Array,
  K: number,
  at: number,
  v: number,
  out: Float64Array,
): void {
  for (let k = 0; k < K; k++) out[k]! += weights[at + k]! * v;
}
