/**
 * How the member classifiers' scores become the model's probabilities: each member's linear scores of the
 * text's features (computed once and shared), its link or Platt sigmoids, and for a soft vote the weighted
 * mean over the members (a lone member's probabilities are the model's). Shared by prediction, explanation
 * and training.
 */
import { probabilitiesInPlace } from '../links.js';
import { addMemberScores } from './member-weights.js';
import { plattProbability } from './platt.js';
import type { Member } from './train-member.js';

/**
 * A member's probabilities from its scores, in place: Platt's sigmoid per class when it is calibrated
 * (normalised to sum to 1 unless `multiLabel`, as sklearn's CalibratedClassifierCV; all zero gives the
 * uniform distribution), else its link.
 */
export function memberProbabilitiesInPlace(member: Member, scores: Float64Array, multiLabel: boolean): void {
  const calibration = member.calibration;
  if (calibration === null) {
    probabilitiesInPlace(scores, member.link);
    return;
  }
  let sum = 0;
  for (let k = 0; k < scores.length; k++) {
    scores[k] = plattProbability(scores[k]!, calibration.a[k]!, calibration.b[k]!);
    sum += scores[k]!;
  }
  if (multiLabel) return;
  if (!(sum > 0)) scores.fill(1 / scores.length);
  else for (let k = 0; k < scores.length; k++) scores[k]! /= sum;
}

/** A member's linear scores of the features (indices, values)[0, n) into `out`. */
export function memberScores(
  member: Member,
  indices: ArrayLike<number>,
  values: ArrayLike<number>,
  from: number,
  to: number,
  out: Float64Array,
): void {
  out.set(member.bias);
  addMemberScores(member.weights, indices, member.inputs === 'binary' ? null : values, from, to, out);
}

/** The parts the model's probabilities are computed from (the model, or a model being trained). */
export interface MemberParts {
  readonly members: readonly Member[];
  /** The model tag of each trained class (member column). */
  readonly classes: Int32Array;
  readonly multiLabel: boolean;
}

/**
 * The model's probability of every tag (model order) from the features [from, to) of (indices, values):
 * Σ weightₘ · pₘ / Σ weightₘ over the members (a lone member's own pₘ); tags without a class get 0.
 * `blockEntries`: how many of the entries, the last ones, are an encoder run's embedding block, which only
 * the members that read embeddings score. `scratch` holds at least one member's classes.
 */
export function combinedProbabilities(
  parts: MemberParts,
  indices: ArrayLike<number>,
  values: ArrayLike<number>,
  from: number,
  to: number,
  out: Float64Array,
  scratch: Float64Array,
  blockEntries = 0,
): void {
  out.fill(0);
  let total = 0;
  for (const member of parts.members) {
    const scores = scratch.subarray(0, member.nClasses);
    memberScores(member, indices, values, from, member.readsEmbeddings ? to : to - blockEntries, scores);
    memberProbabilitiesInPlace(member, scores, parts.multiLabel);
    for (let c = 0; c < scores.length; c++) out[parts.classes[c]!]! += member.weight * scores[c]!;
    total += member.weight;
  }
  for (let k = 0; k < out.length; k++) out[k]! /= total;
}
