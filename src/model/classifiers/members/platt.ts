/**
 * Platt scaling (Platt 2000): p = 1 / (1 + exp(a·s + b)) fitted to a score s and a binary label by
 * weighted maximum likelihood against Platt's smoothed targets, as scikit-learn 1.9.1's
 * `_sigmoid_calibration` defines it (targets (N₊ + 1)/(N₊ + 2) and 1/(N₋ + 2); scores rescaled by their
 * largest magnitude when it is ≥ 30; start at a = 0, b = log((N₋ + 1)/(N₊ + 1))). sklearn minimises with
 * L-BFGS; the problem is a smooth convex one in two unknowns, so here Newton's method with a backtracking
 * line search (Lin, Lin & Weng 2007, "A note on Platt's probabilistic outputs") finds the same minimum to
 * far tighter tolerance in a few steps. Hand-written: two parameters, no library needed.
 */

export interface PlattParameters {
  a: number;
  b: number;
}

const softplus = (z: number): number => (z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z)));

/** 1 / (1 + exp(a·s + b)): Platt's probability of the positive label at score s. */
export function plattProbability(s: number, a: number, b: number): number {
  const f = a * s + b;
  if (f >= 0) {
    const e = Math.exp(-f);
    return e / (1 + e);
  }
  return 1 / (1 + Math.exp(f));
}

/**
 * Fits a and b on scores and labels (row weights optional, sklearn's sample_weight).
 * @example fitPlatt(Float64Array.of(-2, -1, 1, 2), [false, false, true, true]).a < 0 // true
 */
export function fitPlatt(
  scores: Float64Array,
  positive: readonly boolean[],
  weights: Float64Array | null = null,
): PlattParameters {
  const n = scores.length;
  let maxAbs = 0;
  for (let i = 0; i < n; i++) maxAbs = Math.max(maxAbs, Math.abs(scores[i]!));
  const scale = maxAbs >= 30 ? maxAbs : 1;
  const F = Float64Array.from(scores, (s) => s / scale);
  const w = (i: number): number => (weights === null ? 1 : weights[i]!);
  let prior0 = 0;
  let prior1 = 0;
  for (let i = 0; i < n; i++) {
    if (positive[i]) prior1 += w(i);
    else prior0 += w(i);
  }
  const hi = (prior1 + 1) / (prior1 + 2);
  const lo = 1 / (prior0 + 2);
  const T = Float64Array.from({ length: n }, (_, i) => (positive[i] ? hi : lo));
  // The loss of f = a·F + b per row: log(1 + e^−f) + T·f (sklearn's half binomial loss at raw = −f).
  const objective = (a: number, b: number): number => {
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const f = a * F[i]! + b;
      sum += w(i) * (softplus(-f) + T[i]! * f);
    }
    return sum;
  };
  let a = 0;
  let b = Math.log((prior0 + 1) / (prior1 + 1));
  let value = objective(a, b);
  for (let iter = 0; iter < 100; iter++) {
    let ga = 0;
    let gb = 0;
    let haa = 1e-12; // Lin et al.'s small ridge keeps the Hessian invertible
    let hab = 0;
    let hbb = 1e-12;
    for (let i = 0; i < n; i++) {
      const p = plattProbability(F[i]!, a, b);
      const d1 = w(i) * (T[i]! - p);
      const d2 = w(i) * p * (1 - p);
      ga += d1 * F[i]!;
      gb += d1;
      haa += d2 * F[i]! * F[i]!;
      hab += d2 * F[i]!;
      hbb += d2;
    }
    if (Math.abs(ga) < 1e-11 && Math.abs(gb) < 1e-11) break;
    const det = haa * hbb - hab * hab;
    const da = -(hbb * ga - hab * gb) / det;
    const db = -(-hab * ga + haa * gb) / det;
    const slope = ga * da + gb * db;
    let step = 1;
    while (step >= 1e-10) {
      const next = objective(a + step * da, b + step * db);
      if (next <= value + 1e-4 * step * slope) {
        a += step * da;
        b += step * db;
        value = next;
        break;
      }
      step /= 2;
    }
    if (step < 1e-10) break;
  }
  return { a: a / scale, b };
}
