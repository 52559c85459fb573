/**
 * Binary L2-regularised linear classifiers solved exactly in the dual by coordinate descent, as liblinear
 * does (the solvers behind scikit-learn's `LinearSVC(dual=True)` and `LogisticRegression(solver='liblinear',
 * dual=True)`; sklearn 1.9.1's `sklearn/svm/src/liblinear/linear.cpp`):
 * - `solveSvmDual`: L1-loss (hinge) or L2-loss (squared hinge) SVM, Hsieh et al. (ICML 2008) Algorithm 3
 *   with liblinear's shrinking and stopping rule (max − min projected gradient ≤ tol);
 * - `solveLogisticDual`: logistic regression, Yu, Huang & Lin (MLJ 2011) Algorithm 5, with liblinear's
 *   inner Newton steps and their shrinking tolerance.
 * Both minimise ½‖w‖² + Σᵢ Cᵢ·loss(yᵢ (w·xᵢ + b)) with the intercept as one more feature of value 1
 * (liblinear's bias, sklearn's intercept_scaling = 1), so the intercept is regularised like a weight, as
 * in sklearn. Cᵢ carries the sample and class weights (liblinear's W[i]·Cp / Cn); rows with Cᵢ = 0 are left
 * out (liblinear's remove_zero_weight). The objective is strictly convex, so the solution does not depend
 * on the visiting order: it is seeded here (Tagger's RNG, not liblinear's), and two orders agree to the
 * stopping tolerance. Hand-written because no maintained JS library solves these problems on sparse rows.
 */
import { randomInt } from '../../rng.js';

/** The rows of one binary problem: CSR structure, each entry's value, ±1 labels and per-row costs Cᵢ. */
export interface DualProblem {
  indptr: Int32Array;
  indices: Int32Array;
  /** The value of every CSR entry (already transformed: tf-idf, binary, NB-scaled, …). */
  values: Float64Array;
  nFeatures: number;
  /** +1 (positive) or −1 per row. */
  y: Int8Array;
  /** Cᵢ ≥ 0 per row: C × the row's weight (and its class weight when positive). */
  cost: Float64Array;
}

export interface DualOptions {
  /** liblinear's eps (sklearn's tol): the stopping tolerance. */
  tol: number;
  /** Outer iterations at most (sklearn's max_iter). */
  maxIter: number;
  /** Draws the visiting order of every outer iteration. */
  rng: () => number;
}

export interface BinaryLinear {
  /** Weight per feature. */
  w: Float64Array;
  /** The intercept (the weight of liblinear's constant bias feature). */
  bias: number;
  /** Outer iterations run; `maxIter` means it stopped before reaching the tolerance (as liblinear warns). */
  iterations: number;
}

/** liblinear's defaults as sklearn's LinearSVC sets them: tol 1e-4, max_iter 1000. */
export const DUAL_CD_TOLERANCE = 1e-4;
export const DUAL_CD_MAX_ITER = 1000;

/** The rows with Cᵢ > 0 and each one's squared norm (+ 1 for the bias feature). */
function activeRows(p: DualProblem): { rows: Int32Array; sqNorm: Float64Array } {
  const kept: number[] = [];
  for (let r = 0; r < p.y.length; r++) if (p.cost[r]! > 0) kept.push(r);
  const rows = Int32Array.from(kept);
  const sqNorm = Float64Array.from(rows, (r) => {
    let sum = 1;
    for (let q = p.indptr[r]!; q < p.indptr[r + 1]!; q++) sum += p.values[q]! * p.values[q]!;
    return sum;
  });
  return { rows, sqNorm };
}

/** w·x_r + b for CSR row r (w[nFeatures] is the bias weight). */
function dot(p: DualProblem, w: Float64Array, r: number): number {
  let sum = w[p.nFeatures]!;
  for (let q = p.indptr[r]!; q < p.indptr[r + 1]!; q++) sum += w[p.indices[q]!]! * p.values[q]!;
  return sum;
}

/** w += d·x_r (and the bias feature's 1). */
function axpy(p: DualProblem, w: Float64Array, r: number, d: number): void {
  w[p.nFeatures]! += d;
  for (let q = p.indptr[r]!; q < p.indptr[r + 1]!; q++) w[p.indices[q]!]! += d * p.values[q]!;
}

/** Fisher–Yates over the first `n` entries, liblinear's `j = i + rand() % (n − i)`. */
function shuffleActive(index: Int32Array, n: number, rng: () => number): void {
  for (let i = 0; i < n; i++) {
    const j = i + randomInt(rng, n - i);
    const t = index[i]!;
    index[i] = index[j]!;
    index[j] = t;
  }
}

const result = (w: Float64Array, nFeatures: number, iterations: number): BinaryLinear => ({
  w: w.slice(0, nFeatures),
  bias: w[nFeatures]!,
  iterations,
});

/**
 * The SVM dual: min_α ½ αᵀ(Q + D)α − Σα, 0 ≤ αᵢ ≤ Uᵢ, Qᵢⱼ = yᵢyⱼxᵢ·xⱼ; hinge: D = 0, Uᵢ = Cᵢ; squared
 * hinge: Dᵢᵢ = 1/(2Cᵢ), Uᵢ = ∞. w = Σ αᵢyᵢxᵢ. liblinear's `solve_l2r_l1l2_svc`, step for step.
 */
export function solveSvmDual(
  p: DualProblem,
  loss: 'hinge' | 'squared_hinge',
  options: DualOptions,
): BinaryLinear {
  const { rows, sqNorm } = activeRows(p);
  const l = rows.length;
  const w = new Float64Array(p.nFeatures + 1);
  const alpha = new Float64Array(l);
  const diag = Float64Array.from(rows, (r) => (loss === 'squared_hinge' ? 0.5 / p.cost[r]! : 0));
  const upper = Float64Array.from(rows, (r) => (loss === 'squared_hinge' ? Infinity : p.cost[r]!));
  const qd = Float64Array.from(sqNorm, (n, i) => n + diag[i]!);
  const index = Int32Array.from({ length: l }, (_, i) => i);
  let active = l;
  let pgMaxOld = Infinity;
  let pgMinOld = -Infinity;
  let iter = 0;
  while (iter < options.maxIter) {
    let pgMaxNew = -Infinity;
    let pgMinNew = Infinity;
    shuffleActive(index, active, options.rng);
    for (let s = 0; s < active; s++) {
      const i = index[s]!;
      const r = rows[i]!;
      const yi = p.y[r]!;
      const g = dot(p, w, r) * yi - 1 + alpha[i]! * diag[i]!;
      const c = upper[i]!;
      let pg = 0;
      if (alpha[i] === 0) {
        if (g > pgMaxOld) {
          // Shrinking: a bound variable whose gradient points out of the box stays there for now.
          active--;
          index[s] = index[active]!;
          index[active] = i;
          s--;
          continue;
        }
        if (g < 0) pg = g;
      } else if (alpha[i] === c) {
        if (g < pgMinOld) {
          active--;
          index[s] = index[active]!;
          index[active] = i;
          s--;
          continue;
        }
        if (g > 0) pg = g;
      } else pg = g;
      pgMaxNew = Math.max(pgMaxNew, pg);
      pgMinNew = Math.min(pgMinNew, pg);
      if (Math.abs(pg) > 1e-12) {
        const old = alpha[i]!;
        alpha[i] = Math.min(Math.max(old - g / qd[i]!, 0), c);
        axpy(p, w, r, (alpha[i]! - old) * yi);
      }
    }
    iter++;
    if (pgMaxNew - pgMinNew <= options.tol) {
      if (active === l) break;
      // Converged on the shrunk set: check every variable once more before stopping.
      active = l;
      pgMaxOld = Infinity;
      pgMinOld = -Infinity;
      continue;
    }
    pgMaxOld = pgMaxNew <= 0 ? Infinity : pgMaxNew;
    pgMinOld = pgMinNew >= 0 ? -Infinity : pgMinNew;
  }
  return result(w, p.nFeatures, iter);
}

/**
 * The logistic-regression dual: min_α ½ αᵀQα + Σ αᵢ log αᵢ + (Cᵢ − αᵢ) log(Cᵢ − αᵢ), 0 < αᵢ < Cᵢ, each
 * one-variable sub-problem solved by a few Newton steps (liblinear's `solve_l2r_lr_dual`, step for step,
 * including its starting point min(0.001·Cᵢ, 1e-8) and its shrinking inner tolerance).
 */
export function solveLogisticDual(p: DualProblem, options: DualOptions): BinaryLinear {
  const { rows, sqNorm } = activeRows(p);
  const l = rows.length;
  const w = new Float64Array(p.nFeatures + 1);
  // alpha[2i] is αᵢ and alpha[2i + 1] is Cᵢ − αᵢ, kept apart for accuracy near either bound.
  const alpha = new Float64Array(2 * l);
  const maxInnerIter = 100;
  let innerEps = 1e-2;
  const innerEpsMin = Math.min(1e-8, options.tol);
  for (let i = 0; i < l; i++) {
    const c = p.cost[rows[i]!]!;
    alpha[2 * i] = Math.min(0.001 * c, 1e-8);
    alpha[2 * i + 1] = c - alpha[2 * i]!;
    axpy(p, w, rows[i]!, p.y[rows[i]!]! * alpha[2 * i]!);
  }
  const index = Int32Array.from({ length: l }, (_, i) => i);
  let iter = 0;
  while (iter < options.maxIter) {
    shuffleActive(index, l, options.rng);
    let newtonIter = 0;
    let gMax = 0;
    for (let s = 0; s < l; s++) {
      const i = index[s]!;
      const r = rows[i]!;
      const yi = p.y[r]!;
      const c = p.cost[r]!;
      const a = sqNorm[i]!;
      const b = yi * dot(p, w, r);
      // Minimise g₁(z) (over αᵢ) or g₂(z) (over Cᵢ − αᵢ), whichever moves away from its nearer bound.
      let ind1 = 2 * i;
      let ind2 = 2 * i + 1;
      let sign = 1;
      if (0.5 * a * (alpha[ind2]! - alpha[ind1]!) + b < 0) {
        ind1 = 2 * i + 1;
        ind2 = 2 * i;
        sign = -1;
      }
      const alphaOld = alpha[ind1]!;
      let z = alphaOld;
      if (c - z < 0.5 * c) z *= 0.1;
      let gp = a * (z - alphaOld) + sign * b + Math.log(z / (c - z));
      gMax = Math.max(gMax, Math.abs(gp));
      const eta = 0.1;
      let inner = 0;
      while (inner <= maxInnerIter) {
        if (Math.abs(gp) < innerEps) break;
        const gpp = a + c / (c - z) / z;
        const next = z - gp / gpp;
        z = next <= 0 ? z * eta : next;
        gp = a * (z - alphaOld) + sign * b + Math.log(z / (c - z));
        newtonIter++;
        inner++;
      }
      if (inner > 0) {
        alpha[ind1] = z;
        alpha[ind2] = c - z;
        axpy(p, w, r, sign * (z - alphaOld) * yi);
      }
    }
    iter++;
    if (gMax < options.tol) break;
    // liblinear compares with the integer l / 10.
    if (newtonIter <= Math.floor(l / 10)) innerEps = Math.max(innerEpsMin, 0.1 * innerEps);
  }
  return result(w, p.nFeatures, iter);
}
