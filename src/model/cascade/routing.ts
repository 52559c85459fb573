/**
 * Which texts a cascade sends to its encoder model: those its fast model is unsure of. A prediction's
 * confidence is a number in [0, 1]; a text is routed when it is below the threshold τ.
 *
 * - Single-label: the top probability (the predicted tag's, before any fallback to `other`).
 * - Multi-label: every tag is a yes/no decision against its own threshold θ, and a text is as sure as
 *   its least sure tag. A tag's margin is how far its probability p lies from θ, as a share of the room
 *   on that side: (p − θ) / (1 − θ) above it, (θ − p) / θ below it — 0 at the threshold, 1 at certainty
 *   (p = 1 for a tag given, p = 0 for one withheld). The confidence is the smallest margin, so a text is
 *   routed when any tag's probability is near its threshold (within τ of the room on its side). A tag
 *   whose threshold is 0 is always given and never in doubt (margin 1).
 */
import type { Prediction } from '../prediction.js';

/** The parts of a model confidence needs: its tags and, multi-label, each tag's threshold. */
export interface RoutingModel {
  readonly tags: readonly string[];
  readonly tagThresholds: readonly number[] | null;
}

/** How sure a tag's yes/no is: 0 at its threshold, 1 at certainty. */
export function tagMargin(probability: number, threshold: number): number {
  if (threshold <= 0) return 1;
  if (probability >= threshold) return threshold >= 1 ? 1 : (probability - threshold) / (1 - threshold);
  return (threshold - probability) / threshold;
}

/**
 * A prediction's confidence. Single-label: the largest probability it lists (a prediction always lists
 * the most probable tag's). Multi-label: the smallest tag margin, which needs every tag's probability
 * (a tag the prediction does not list counts as probability 0).
 */
export function routingConfidence(model: RoutingModel, prediction: Prediction): number {
  const { probabilities } = prediction;
  if (model.tagThresholds === null) {
    let top = 0;
    for (const p of Object.values(probabilities)) if (p > top) top = p;
    return top;
  }
  let least = 1;
  model.tags.forEach((tag, k) => {
    const margin = tagMargin(probabilities[tag] ?? 0, model.tagThresholds![k]!);
    if (margin < least) least = margin;
  });
  return least;
}

/** Whether a text of this confidence goes to the encoder at threshold τ. */
export const isRouted = (confidence: number, threshold: number): boolean => confidence < threshold;
