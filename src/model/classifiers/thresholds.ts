/**
 * Probability thresholds chosen on the validation split: the single-label fallback threshold (below it a
 * prediction becomes `other`) and a multi-label model's per-tag thresholds. Shared by every trainer.
 */

import { weightedMetrics } from '../evaluation/metrics.js';
import { OTHER_TAG } from '../labels.js';
import { createRng, shuffleInPlace } from '../rng.js';
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

/** The most thresholds `chooseThreshold` tries: past it, midpoints at evenly spaced ranks of the top probabilities. */
export const MAX_THRESHOLD_CANDIDATES = 256;

/**
 * Threshold selection on the validation split. `tuned` tries 0 (no fallback) and the midpoints between
 * consecutive distinct top probabilities (past MAX_THRESHOLD_CANDIDATES distinct ones, the midpoints at
 * that many evenly spaced ranks: each try scores the whole split), keeping the best weighted f1 (lowest
 * threshold on ties); `auto` keeps that threshold only if it beats argmax strictly, else returns null
 * (argmax).
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
  const gaps = distinct.length - 1;
  const tries = Math.min(gaps, MAX_THRESHOLD_CANDIDATES);
  for (let t = 0; t < tries; t++) {
    const i = tries === gaps ? t : Math.floor(((t + 0.5) * gaps) / tries);
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

/** What the validation split says of a fallback threshold, measured without choosing and scoring on the same rows. */
export interface ThresholdEvidence {
  /** Weighted f1 of the argmax predictions. */
  argmaxF1: number;
  /**
   * Weighted f1 when each half of the rows gets the `tuned` threshold chosen on the other half
   * (cross-fitting): what a threshold chosen on held-out rows does on new ones.
   */
  crossFittedF1: number;
  /** The `tuned` threshold chosen on every row (what a model that takes one uses). */
  threshold: number;
}

/**
 * The evidence for a fallback threshold on validation predictions (top probability, argmax tag, true tag
 * as the model knows it): the rows are split in two by a seeded shuffle, and each half is predicted with
 * the threshold chosen on the other. Two halves of one split; a threshold is worth taking only when the
 * cross-fitted f1 beats argmax.
 */
export function thresholdEvidence(
  top: Float64Array,
  argmax: readonly string[],
  yTrue: readonly string[],
  seed: number,
): ThresholdEvidence {
  const n = top.length;
  const order = Array.from({ length: n }, (_, i) => i);
  shuffleInPlace(order, createRng(seed ^ 0x7f4a7c15));
  const halves = [order.filter((_, i) => i % 2 === 0), order.filter((_, i) => i % 2 === 1)];
  const predicted = [...argmax];
  for (const [h, rows] of halves.entries()) {
    const other = halves[1 - h]!;
    const chosen = chooseThreshold(
      'tuned',
      Float64Array.from(other, (i) => top[i]!),
      other.map((i) => argmax[i]!),
      other.map((i) => yTrue[i]!),
    );
    for (const i of rows) if (chosen !== null && top[i]! < chosen) predicted[i] = OTHER_TAG;
  }
  return {
    argmaxF1: f1WithThreshold(top, argmax, yTrue, null),
    crossFittedF1: weightedMetrics(yTrue, predicted).f1,
    threshold: chooseThreshold('tuned', top, argmax, yTrue) ?? 0,
  };
}
