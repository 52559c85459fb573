/**
 * Probability thresholds chosen on the validation split: the single-label fallback threshold (below it a
 * prediction becomes `other`) and a multi-label model's per-tag thresholds. Shared by every trainer.
 */

import { weightedMetrics } from '../evaluation/metrics.js';
import { OTHER_TAG } from '../labels.js';
import type { TrainingArgs } from '../training-args.js';

/** Weighted f1 on validation when predictions whose top probability is below `threshold` become `other`. */
export function f1WithThreshold(
  top: Float64Array,
  argmax: readonly string[],
  yTrue: readonly string[],
  threshold: number | null,
): number {
  const pred = argmax.map((tag, i) => (threshold !== null && top[i]! < threshold ? OTHER_TAG : tag));
  return weightedMetrics(yTrue, pred).f1;
}

/**
 * Threshold selection on the validation split. `tuned` tries 0 (no fallback) and the midpoints between
 * consecutive distinct top probabilities, keeping the best weighted f1 (lowest threshold on ties);
 * `auto` keeps that threshold only if it beats argmax strictly, else returns null (argmax).
 */
export function chooseThreshold(
  mode: TrainingArgs['threshold'],
  top: Float64Array,
  argmax: readonly string[],
  yTrue: readonly string[],
): number | null {
  if (mode === 'argmax' || top.length === 0) return null;
  const distinct = [...new Set(top)].sort((a, b) => a - b);
  const argmaxF1 = f1WithThreshold(top, argmax, yTrue, null);
  let best = 0;
  let bestF1 = argmaxF1;
  for (let i = 0; i + 1 < distinct.length; i++) {
    const candidate = (distinct[i]! + distinct[i + 1]!) / 2;
    const f1 = f1WithThreshold(top, argmax, yTrue, candidate);
    if (f1 > bestF1) {
      bestF1 = f1;
      best = candidate;
    }
  }
  if (mode === 'tuned') return best;
  return best > 0 && bestF1 > argmaxF1 ? best : null;
}

/**
 * Multi-label thresholds on the validation split, one per tag: 0.5 for `argmax` (and for a tag the split
 * never shows, whose f1 says nothing); otherwise the f1-best of 0.5 and the midpoints between the tag's
 * consecutive distinct validation probabilities (`tuned`: the lowest on ties; `auto`: 0.5 unless strictly
 * beaten). One sort and one sweep per tag.
 */
export function chooseTagThresholds(
  mode: TrainingArgs['threshold'],
  probabilities: readonly Float64Array[],
  labels: Uint8Array,
  nTags: number,
): number[] {
  const thresholds: number[] = Array.from({ length: nTags }, () => 0.5);
  if (mode === 'argmax') return thresholds;
  for (let k = 0; k < nTags; k++) {
    // Rows by probability, highest first: predicting the tag for p >= t predicts it for a prefix.
    const rows = probabilities
      .map((p, r) => ({ p: p[k]!, positive: labels[r * nTags + k] === 1 }))
      .sort((a, b) => b.p - a.p);
    const positives = rows.filter((row) => row.positive).length;
    if (positives === 0) continue;
    const f1Of = (tp: number, predicted: number): number =>
      predicted === 0 ? 0 : (2 * tp) / (predicted + positives);
    const atHalf = rows.filter((row) => row.p >= 0.5);
    let best = 0.5;
    let bestF1 = f1Of(atHalf.filter((row) => row.positive).length, atHalf.length);
    let tp = 0;
    for (let i = 0; i < rows.length; i++) {
      if (rows[i]!.positive) tp++;
      const next = rows[i + 1];
      // A threshold between this row's probability and the next lower one predicts rows 0..i.
      if (next === undefined || next.p === rows[i]!.p) continue;
      const candidate = (rows[i]!.p + next.p) / 2;
      const f1 = f1Of(tp, i + 1);
      // Ties go to the lower threshold under `tuned`; `auto` keeps 0.5 unless strictly beaten.
      if (f1 > bestF1 || (mode === 'tuned' && f1 === bestF1 && candidate < best)) {
        bestF1 = f1;
        best = candidate;
      }
    }
    thresholds[k] = best;
  }
  return thresholds;
}
