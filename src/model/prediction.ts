/**
 * A prediction built from a model's probabilities, the same way for every family: the predicted tag (the
 * most probable, or `other` under the threshold; multi-label: every tag over its own threshold) and the
 * probabilities a caller asked for — every tag's, or only the most probable ones (`PredictOptions`): with
 * hundreds of tags an answer of every tag's probability is most of a prediction's cost and size.
 */
import { OTHER_TAG, tagsOverThresholds } from './labels.js';

export interface Prediction {
  /** The model's answer: the most probable tag (single-label), or the most probable of `predicted_tags`, else `other`. */
  predicted_tag: string;
  /**
   * The tags the model gives the text, most probable first: `[predicted_tag]` for a single-label model,
   * every tag whose probability reaches its threshold for a multi-label one (possibly none).
   */
  predicted_tags: string[];
  /** Probability of every model tag; they sum to 1 for a single-label model, not for a multi-label one. */
  probabilities: Record<string, number>;
  /**
   * A cascade's predictions: which of its models answered (model/cascade/). `fast_degraded` is set by
   * serving only: a routed text the fast model answered because the encoder could not take it (the
   * records keep it). Absent for every other model.
   */
  stage?: 'fast' | 'encoder' | 'fast_degraded';
  /**
   * Set (true) when the model knew none of the text's features — none of its n-grams (fastText: words
   * and n-grams) is in the model's vocabulary, and it has no sentence embedding to go by — so the answer
   * is the model's prior, what it says of an empty text (a whitespace-only or Japanese text for a model
   * trained on English). Absent otherwise.
   */
  no_known_features?: true;
}

export interface PredictOptions {
  /**
   * Whose probabilities a prediction lists: `all` tags (the default), or the `n` most probable (ties: the
   * first in tag order), always with the predicted tag(s).
   */
  probabilities?: 'all' | number;
}

/**
 * Models of at most this many tags list every tag's probability unless asked otherwise; larger ones list
 * the this-many most probable (and say so where they answer: POST /predict's `probabilities_listed`, the
 * batch output's columns). Past a few dozen tags the long tail of near-zero probabilities is most of an
 * answer's bytes and cost and nobody reads it; every model Tagger served before issue 31 had fewer.
 */
export const DEFAULT_LISTED_PROBABILITIES = 20;

/**
 * Whose probabilities an answer lists for a model of `tagCount` tags when a caller asked for `asked`
 * (`all`, a count, or nothing: DEFAULT_LISTED_PROBABILITIES's rule); `all` when the count covers every tag.
 */
export function listedProbabilities(asked: 'all' | number | undefined, tagCount: number): 'all' | number {
  const limit =
    asked ?? (tagCount > DEFAULT_LISTED_PROBABILITIES ? DEFAULT_LISTED_PROBABILITIES : ('all' as const));
  return limit === 'all' || limit >= tagCount ? 'all' : limit;
}

/**
 * A probability record (keys in model tag order, as predictions build them) cut to its `limit` most
 * probable entries plus those of `always`: for an answer that selects its tags from a fuller record.
 */
export function limitProbabilities(
  probabilities: Readonly<Record<string, number>>,
  limit: 'all' | number,
  always: readonly string[],
): Record<string, number> {
  return probabilityRecord(Object.keys(probabilities), Object.values(probabilities), limit, always);
}

/** The parts of a model a prediction is built from. */
export interface PredictingModel {
  readonly tags: readonly string[];
  readonly threshold: number | null;
  readonly tagThresholds: readonly number[] | null;
}

/**
 * The prediction of probabilities `p` (model tag order); `best`: the tag a single-label model ranks first
 * (the SGD model ranks by its scores, which modified-Huber clips differently from its probabilities).
 */
export function predictionOf(
  model: PredictingModel,
  p: ArrayLike<number>,
  best: number,
  options: PredictOptions = {},
  /** How many of the text's features the model knew (0: `no_known_features`). */
  knownFeatures = 1,
): Prediction {
  const { tags, tagThresholds } = model;
  let predicted_tags: string[];
  let predicted_tag: string;
  if (tagThresholds !== null) {
    predicted_tags = tagsOverThresholds(tags, tagThresholds, p);
    predicted_tag = predicted_tags[0] ?? OTHER_TAG;
  } else {
    const fallback = model.threshold !== null && p[best]! < model.threshold;
    predicted_tag = fallback ? OTHER_TAG : tags[best]!;
    predicted_tags = [predicted_tag];
  }
  const prediction: Prediction = {
    predicted_tag,
    predicted_tags,
    probabilities: probabilityRecord(tags, p, options.probabilities ?? 'all', predicted_tags),
  };
  if (knownFeatures === 0) prediction.no_known_features = true;
  return prediction;
}

/** Every tag's probability in tag order, or the `limit` most probable in that order plus `always`. */
function probabilityRecord(
  tags: readonly string[],
  p: ArrayLike<number>,
  limit: 'all' | number,
  always: readonly string[],
): Record<string, number> {
  const probabilities: Record<string, number> = {};
  if (limit === 'all' || limit >= tags.length) {
    for (let k = 0; k < tags.length; k++) probabilities[tags[k]!] = p[k]!;
    return probabilities;
  }
  const kept = new Set(mostProbable(p, limit, 0, tags.length));
  for (const tag of always) {
    const k = tags.indexOf(tag);
    if (k >= 0) kept.add(k);
  }
  for (const k of [...kept].sort((a, b) => a - b)) probabilities[tags[k]!] = p[k]!;
  return probabilities;
}

/**
 * The indices (0 … width − 1) of the `n` largest of `p[offset … offset + width)`, most probable first,
 * ties in index (tag) order: one pass keeping a short sorted list (n ≪ width).
 */
export function mostProbable(
  p: ArrayLike<number>,
  n: number,
  offset = 0,
  width = p.length - offset,
): number[] {
  const top: number[] = [];
  if (n <= 0) return top;
  for (let k = 0; k < width; k++) {
    const value = p[offset + k]!;
    if (top.length === n && value <= p[offset + top[top.length - 1]!]!) continue;
    let at = top.length === n ? n - 1 : top.length;
    while (at > 0 && p[offset + top[at - 1]!]! < value) at--;
    top.splice(at, 0, k);
    if (top.length > n) top.pop();
  }
  return top;
}
