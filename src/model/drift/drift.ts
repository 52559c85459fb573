/**
 * Drift statistics and live quality, pure: live histograms against a run's reference profile
 * (profile.ts), and precision / recall / f1 of predictions that people labelled afterwards.
 *
 * The statistic is the population stability index, PSI = Σ (p_i − q_i) · ln(p_i / q_i) over the bins
 * (p live shares, q reference shares), the usual measure of how far a model's inputs or scores moved
 * (< 0.1 stable, 0.1–0.25 some shift, > 0.25 a large one). PSI alone ignores how many observations it
 * rests on, and a profile holds only the test split (tens to hundreds of rows): two samples from the same
 * population then differ by about (bins − 1) · (1/n + 1/m) by chance alone, above any useful threshold
 * on small samples. So a signal counts as drifted only when PSI reaches its threshold AND the difference
 * is significant: PSI is the symmetric (Jeffreys) divergence, and n·m/(n+m) · PSI is asymptotically χ²
 * with bins − 1 degrees of freedom when nothing moved, which gives a p-value. Small samples then need a
 * big shift; big ones never flag a tiny one. Shares are smoothed by half an observation per bin
 * (Jeffreys), so an empty bin never makes PSI infinite.
 */
import { type Metrics, multiLabelMetrics, perLabelMetrics, weightedMetrics } from '../evaluation/metrics.js';

/** Half an observation per bin (see the module comment). */
const SMOOTHING = 0.5;

export interface DriftOptions {
  /** PSI at or above which a significant shift counts as drift. */
  threshold: number;
  /** Largest p-value that counts as significant. */
  significance: number;
  /** Fewest live observations to judge at all. */
  minLive: number;
}

export const DEFAULT_DRIFT_OPTIONS: Readonly<DriftOptions> = {
  threshold: 0.2,
  significance: 0.01,
  minLive: 100,
};

export interface DriftResult {
  /** PSI; null when there is too little to compare (`reason` says why). */
  value: number | null;
  /** Chance of a difference at least this large with no drift (χ² approximation); null with `value`. */
  pValue: number | null;
  threshold: number;
  drifted: boolean;
  /** Observations in the live window and in the reference. */
  live: number;
  reference: number;
  reason?: string;
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

/**
 * Compares two histograms over the same bins (`reference[i]` and `live[i]` count bin i).
 * @example compareCounts([50, 50], [90, 10], DEFAULT_DRIFT_OPTIONS).drifted // true
 */
export function compareCounts(
  reference: readonly number[],
  live: readonly number[],
  options: DriftOptions,
): DriftResult {
  const n = sum(live);
  const m = sum(reference);
  const base = { threshold: options.threshold, live: n, reference: m };
  if (m === 0)
    return { ...base, value: null, pValue: null, drifted: false, reason: 'the reference profile is empty' };
  if (n < options.minLive) {
    return {
      ...base,
      value: null,
      pValue: null,
      drifted: false,
      reason: `${n} predictions in the window; drift is judged from ${options.minLive}`,
    };
  }
  const used: number[] = [];
  for (let i = 0; i < Math.max(reference.length, live.length); i++) {
    if ((reference[i] ?? 0) + (live[i] ?? 0) > 0) used.push(i);
  }
  if (used.length < 2) return { ...base, value: 0, pValue: 1, drifted: false };
  const bins = used.length;
  let psi = 0;
  for (const i of used) {
    const p = ((live[i] ?? 0) + SMOOTHING) / (n + SMOOTHING * bins);
    const q = ((reference[i] ?? 0) + SMOOTHING) / (m + SMOOTHING * bins);
    psi += (p - q) * Math.log(p / q);
  }
  const pValue = chiSquareSurvival((psi * n * m) / (n + m), bins - 1);
  return { ...base, value: psi, pValue, drifted: psi >= options.threshold && pValue < options.significance };
}

/** Compares categorical counts (tag → count); tags of either side count, missing ones as 0. */
export function compareCategories(
  reference: Readonly<Record<string, number>>,
  live: Readonly<Record<string, number>>,
  options: DriftOptions,
): DriftResult {
  const keys = [...new Set([...Object.keys(reference), ...Object.keys(live)])].sort();
  return compareCounts(
    keys.map((key) => reference[key] ?? 0),
    keys.map((key) => live[key] ?? 0),
    options,
  );
}

// ---- the χ² distribution ---------------------------------------------------------------------------

/** ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: ~15 significant digits). */
function lnGamma(x: number): number {
  const c = [
    0.9999999999998099, 676.5203681218851, -1259.1392167224028, 771.3234287776531, -176.6150291621406,
    12.507343278686905, -0.13857109526572012, 9.984369578019572e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const z = x - 1;
  let a = c[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** The regularized upper incomplete gamma function Q(a, x) (series below a + 1, continued fraction above). */
function upperGamma(a: number, x: number): number {
  if (x <= 0) return 1;
  const front = Math.exp(-x + a * Math.log(x) - lnGamma(a));
  if (x < a + 1) {
    let term = 1 / a;
    let total = term;
    for (let k = 1; k < 1000; k++) {
      term *= x / (a + k);
      total += term;
      if (Math.abs(term) < Math.abs(total) * 1e-15) break;
    }
    return Math.max(0, 1 - front * total);
  }
  // Lentz's method for the continued fraction of Q.
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 1000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return Math.min(1, front * h);
}

/**
 * P(X ≥ x) for X ~ χ² with `df` degrees of freedom.
 * @example chiSquareSurvival(3.841, 1) // ≈ 0.05
 */
export function chiSquareSurvival(x: number, df: number): number {
  if (!(df > 0)) return 1;
  if (!(x > 0)) return 1;
  return upperGamma(df / 2, x / 2);
}

// ---- live quality ----------------------------------------------------------------------------------

/** A recorded prediction and the tags a person gave it later. */
export interface LabelledPrediction {
  /** The model's own answer: `[predicted_tag]` (single-label) or its predicted tags (multi-label). */
  predicted: readonly string[];
  /** The tags given in feedback. */
  truth: readonly string[];
}

export interface LiveQuality {
  /** The weighted average over tags, as training's `overall`. */
  overall: Metrics;
  /** Per model tag, zeros for tags without feedback or predictions, as training's `class`. */
  class: Record<string, Metrics>;
}

const ZERO: Metrics = { precision: 0, recall: 0, f1: 0, num_samples: 0 };

/**
 * Precision, recall and f1 of labelled predictions, computed as training computes its test metrics
 * (metrics.ts: scikit-learn's weighted averages; the multi-label ones on the label-indicator matrix).
 */
export function liveQuality(
  labelled: readonly LabelledPrediction[],
  tags: readonly string[],
  multiLabel: boolean,
): LiveQuality {
  const cls: Record<string, Metrics> = {};
  if (multiLabel) {
    const { perTag, averages } = multiLabelMetrics(
      labelled.map((row) => row.truth),
      labelled.map((row) => row.predicted),
    );
    for (const tag of tags) cls[tag] = perTag.get(tag) ?? ZERO;
    return { overall: averages.weighted, class: cls };
  }
  const yTrue = labelled.map((row) => row.truth[0] ?? '');
  const yPred = labelled.map((row) => row.predicted[0] ?? '');
  const perLabel = perLabelMetrics(yTrue, yPred);
  for (const tag of tags) cls[tag] = perLabel.get(tag) ?? ZERO;
  return { overall: weightedMetrics(yTrue, yPred), class: cls };
}
