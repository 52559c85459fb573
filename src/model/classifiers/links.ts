/**
 * How a linear model's scores become class probabilities (the links every linear classifier here uses:
 * the SGD model's by its loss, a member classifier's by its kind): softmax, normalised sigmoids,
 * modified-Huber, and their multi-label forms where each class keeps its own probability.
 */

/**
 * How a model's linear scores become class probabilities: `softmax`; `ovr`, the per-class sigmoids
 * normalised to sum to 1 (log loss, and hinge, for which sklearn has none); `modified_huber`, sklearn's
 * (clip(score, -1, 1) + 1) / 2 normalised (uniform when all are 0). Multi-label models keep every
 * class's probability on its own (they need not sum to 1): `sigmoid` (log loss, hinge) and
 * `modified_huber_binary`, the same formulas without the normalisation.
 */
export type Link = 'softmax' | 'ovr' | 'modified_huber' | 'sigmoid' | 'modified_huber_binary';

/** Softmax of `z` in place; stable for large scores. */
export function softmaxInPlace(z: Float64Array): void {
  let max = -Infinity;
  for (let k = 0; k < z.length; k++) if (z[k]! > max) max = z[k]!;
  let sum = 0;
  for (let k = 0; k < z.length; k++) {
    const e = Math.exp(z[k]! - max);
    z[k] = e;
    sum += e;
  }
  normalizeInPlace(z, sum);
}

/**
 * Divides `z` by `sum` in place; a zero or non-finite sum (only reachable with diverged weights) gives the
 * uniform distribution, so probabilities always sum to 1.
 */
function normalizeInPlace(z: Float64Array, sum: number): void {
  if (!(sum > 0 && sum < Infinity)) {
    z.fill(1 / z.length);
    return;
  }
  for (let k = 0; k < z.length; k++) z[k]! /= sum;
}

/** Logistic sigmoid 1 / (1 + e^-s), without overflow for large |s|. */
export function sigmoid(s: number): number {
  if (s >= 0) return 1 / (1 + Math.exp(-s));
  const e = Math.exp(s);
  return e / (1 + e);
}

/**
 * One-vs-rest probabilities in place: sigmoid of every score, divided by their sum (sklearn's
 * `_predict_proba_lr`). All-zero sigmoids (and, here, non-finite scores) give the uniform distribution.
 */
export function ovrProbabilitiesInPlace(z: Float64Array): void {
  let sum = 0;
  for (let k = 0; k < z.length; k++) {
    const p = sigmoid(z[k]!);
    z[k] = p;
    sum += p;
  }
  normalizeInPlace(z, sum);
}

/**
 * sklearn's modified-Huber `predict_proba` in place: (clip(score, -1, 1) + 1) / 2 per class, divided by
 * their sum; all zero gives the uniform distribution (as sklearn does).
 */
export function modifiedHuberProbabilitiesInPlace(z: Float64Array): void {
  let sum = 0;
  for (let k = 0; k < z.length; k++) {
    // NaN scores (diverged weights) count as 0 probability, so the row falls back to uniform.
    const p = modifiedHuberProbability(z[k]!);
    z[k] = p;
    sum += p;
  }
  normalizeInPlace(z, sum);
}

/** A modified-Huber probability (clip(s, -1, 1) + 1) / 2; NaN (diverged weights) gives 0. */
const modifiedHuberProbability = (s: number): number => (s >= 1 ? 1 : s > -1 ? (s + 1) / 2 : 0);

/** Turns linear scores into probabilities in place, by the model's link. */
export function probabilitiesInPlace(z: Float64Array, link: Link): void {
  if (link === 'ovr') ovrProbabilitiesInPlace(z);
  else if (link === 'modified_huber') modifiedHuberProbabilitiesInPlace(z);
  else if (link === 'sigmoid') for (let k = 0; k < z.length; k++) z[k] = sigmoid(z[k]!);
  else if (link === 'modified_huber_binary') {
    for (let k = 0; k < z.length; k++) z[k] = modifiedHuberProbability(z[k]!);
  } else softmaxInPlace(z);
}

/** True when a link gives every class its own probability (a multi-label model). */
export const independentLink = (link: Link): boolean =>
  link === 'sigmoid' || link === 'modified_huber_binary';

/**
 * Index of the largest score (the first on ties): the predicted class. Taken on the scores, not the
 * probabilities, because the modified-Huber link clips scores above 1 to equal probabilities (sklearn's
 * `predict` is the argmax of `decision_function` too); for the other links the order is the same.
 */
export function argmax(z: Float64Array): number {
  let best = 0;
  for (let k = 1; k < z.length; k++) if (z[k]! > z[best]!) best = k;
  return best;
}
