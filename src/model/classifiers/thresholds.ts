/**
 * Probability thresholds chosen on the validation split: the single-label fallback threshold (below it a
 * prediction becomes `other`) and a multi-label model's per-tag thresholds. Shared by every trainer.
 */

import { weightedMetrics } from '../evaluation/metrics.js';
import { OTHER_TAG } from '../labels.js';
import { createRng, shuffleInPlace } from '../rng.js';
import type { TrainingArgs } from '../training-args.js';

/** The predictions with every one whose top probability is below `threshold` answered `other`. */
const withFallback = (top: Float64Array, argmax: readonly string[], threshold: number | null): string[] =>
  argmax.map((tag, i) => (threshold !== null && top[i]! < threshold ? OTHER_TAG : tag));

/** Weighted f1 on validation when predictions whose top probability is below `threshold` become `other`. */
export function f1WithThreshold(
  top: Float64Array,
  argmax: readonly string[],
  yTrue: readonly string[],
  threshold: number | null,
): number {
  return weightedMetrics(yTrue, withFallback(top, argmax, threshold)).f1;
}

/** What a threshold is chosen to make highest: a score of predictions against the true tags. */
export type ThresholdScore = (yTrue: readonly string[], yPred: readonly string[]) => number;

/** The weighted f1 (the run's headline metric). */
export const weightedF1Score: ThresholdScore = (yTrue, yPred) => weightedMetrics(yTrue, yPred).f1;

/**
 * The mean of two shares, whatever their rows' prevalence: the rows of a tag answered with it, and the rows
 * of `other` (texts that fit no tag) answered `other` — in-scope accuracy and out-of-scope recall, as
 * out-of-scope detection is measured (Larson et al. 2019).
 */
export const balancedOtherScore: ThresholdScore = (yTrue, yPred) => {
  let tagged = 0;
  let taggedRight = 0;
  let others = 0;
  let othersRight = 0;
  yTrue.forEach((tag, i) => {
    if (tag === OTHER_TAG) {
      others++;
      if (yPred[i] === OTHER_TAG) othersRight++;
    } else {
      tagged++;
      if (yPred[i] === tag) taggedRight++;
    }
  });
  const share = (right: number, all: number): number => (all === 0 ? 1 : right / all);
  return (share(taggedRight, tagged) + share(othersRight, others)) / 2;
};

/** The most thresholds `chooseThreshold` tries: past it, midpoints at evenly spaced ranks of the top probabilities. */
export const MAX_THRESHOLD_CANDIDATES = 256;

/**
 * Threshold selection on the validation split. `tuned` tries 0 (no fallback) and the midpoints between
 * consecutive distinct top probabilities (past MAX_THRESHOLD_CANDIDATES distinct ones, the midpoints at
 * that many evenly spaced ranks: each try scores the whole split), keeping the best weighted f1 (lowest
 * threshold on ties); `balanced` scores them by `balancedOtherScore` and keeps the lowest within one
 * `other` row's share of the best; `auto` keeps
 * the weighted-f1-best threshold only if it beats argmax strictly, else returns null (argmax).
 */
export function chooseThreshold(
  mode: TrainingArgs['threshold'],
  top: Float64Array,
  argmax: readonly string[],
  yTrue: readonly string[],
): number | null {
  if (mode === 'argmax' || top.length === 0) return null;
  const objective = mode === 'balanced' ? balancedOtherScore : weightedF1Score;
  const scoreAt = (threshold: number | null): number =>
    objective(yTrue, withFallback(top, argmax, threshold));
  const distinct = [...new Set(top)].sort((a, b) => a - b);
  const argmaxScore = scoreAt(null);
  // Every threshold tried, lowest first (0: argmax), with its score.
  const tried: { threshold: number; score: number }[] = [{ threshold: 0, score: argmaxScore }];
  const gaps = distinct.length - 1;
  const tries = Math.min(gaps, MAX_THRESHOLD_CANDIDATES);
  for (let t = 0; t < tries; t++) {
    const i = tries === gaps ? t : Math.floor(((t + 0.5) * gaps) / tries);
    const candidate = (distinct[i]! + distinct[i + 1]!) / 2;
    tried.push({ threshold: candidate, score: scoreAt(candidate) });
  }
  let best = tried[0]!;
  for (const entry of tried) if (entry.score > best.score) best = entry;
  if (mode === 'balanced') {
    // The lowest threshold within one `other` row's share of the best: on few rows of `other` the best
    // is partly those rows' luck, and each one caught there is bought with many tagged rows answered
    // `other` (a row of `other` weighs as much as tagged rows / others of the tagged ones).
    const others = yTrue.filter((tag) => tag === OTHER_TAG).length;
    const tolerance = others === 0 ? 0 : 1 / (2 * others);
    return tried.find((entry) => entry.score >= best.score - tolerance)!.threshold;
  }
  if (mode === 'tuned') return best.threshold;
  return best.threshold > 0 && best.score > argmaxScore ? best.threshold : null;
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
  /** The score of the argmax predictions. */
  argmax: number;
  /**
   * The score when each half of the rows gets the threshold chosen on the other half (cross-fitting):
   * what a threshold chosen on held-out rows does on new ones.
   */
  crossFitted: number;
  /** Those cross-fitted predictions. */
  crossFittedPredictions: string[];
  /** The threshold chosen on every row (what a model that takes one uses). */
  threshold: number;
}

/**
 * The evidence for a fallback threshold of `mode` (`tuned`: weighted f1; `balanced`: balancedOtherScore)
 * on validation predictions (top probability, argmax tag, true tag as the model knows it): the rows are
 * split in two by a seeded shuffle, stratified by whether a row is `other` so each half holds its share
 * of them, and each half is predicted with the threshold chosen on the other. A threshold is worth taking
 * only when the cross-fitted score beats argmax.
 */
export function thresholdEvidence(
  top: Float64Array,
  argmax: readonly string[],
  yTrue: readonly string[],
  seed: number,
  mode: 'tuned' | 'balanced' = 'tuned',
): ThresholdEvidence {
  const score = mode === 'balanced' ? balancedOtherScore : weightedF1Score;
  const order = Array.from({ length: top.length }, (_, i) => i);
  shuffleInPlace(order, createRng(seed ^ 0x7f4a7c15));
  const byKind = [order.filter((i) => yTrue[i] === OTHER_TAG), order.filter((i) => yTrue[i] !== OTHER_TAG)];
  const halves = [0, 1].map((h) => byKind.flatMap((rows) => rows.filter((_, k) => k % 2 === h)));
  const predicted = [...argmax];
  for (const [h, rows] of halves.entries()) {
    const other = halves[1 - h]!;
    const chosen = chooseThreshold(
      mode,
      Float64Array.from(other, (i) => top[i]!),
      other.map((i) => argmax[i]!),
      other.map((i) => yTrue[i]!),
    );
    for (const i of rows) if (chosen !== null && top[i]! < chosen) predicted[i] = OTHER_TAG;
  }
  return {
    argmax: score(yTrue, argmax),
    crossFitted: score(yTrue, predicted),
    crossFittedPredictions: predicted,
    threshold: chooseThreshold(mode, top, argmax, yTrue) ?? 0,
  };
}
