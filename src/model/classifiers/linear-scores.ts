/**
 * The inner loop of every linear model here (the SGD model, each member of a vote, training's row
 * scores): the products of a sparse row's features with feature-major weights (w[f × K + k]) added to each
 * class's running sum. Written for speed by hand: four classes at a time with their sums in locals
 * (registers), one pass over the row for each four, instead of adding into the output array feature by
 * feature — measured 2x faster (a vote of three members over 20,612 features and 4 tags: 4.9 → 2.5 µs per
 * text). The sums are the plain loop's bit for bit: each class's starts at `out`'s value and adds the
 * same products in the same order.
 */

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
  for (let k = 0; k < K; k += 4) {
    const width = Math.min(4, K - k);
    let s0 = out[k]!;
    let s1 = width > 1 ? out[k + 1]! : 0;
    let s2 = width > 2 ? out[k + 2]! : 0;
    let s3 = width > 3 ? out[k + 3]! : 0;
    for (let j = from; j < to; j++) {
      const v = values === null ? 1 : values[j]! * scale;
      const at = indices[j]! * K + k;
      s0 += weights[at]! * v;
      if (width > 1) s1 += weights[at + 1]! * v;
      if (width > 2) s2 += weights[at + 2]! * v;
      if (width > 3) s3 += weights[at + 3]! * v;
    }
    out[k] = s0;
    if (width > 1) out[k + 1] = s1;
    if (width > 2) out[k + 2] = s2;
    if (width > 3) out[k + 3] = s3;
  }
}
