/**
 * Which tags a prediction lists under a client's `top_k` / `threshold` options (POST /predict), the same
 * rule for single- and multi-label models:
 * - `threshold` alone: every tag whose probability reaches it;
 * - `top_k` alone: the k most probable tags of a single-label model (its own answer lists one), or at most
 *   k of a multi-label model's predicted tags (those that passed their own thresholds);
 * - both: at most k of the tags that reach the threshold;
 * - neither: the model's own `predicted_tags`.
 * Most probable first; equal probabilities keep the model's tag order.
 */
import type { Prediction } from './tagger.js';

export interface TagSelection {
  topK?: number | undefined;
  threshold?: number | undefined;
}

/** Tags of `prediction` by the rule above; `multiLabel` says what kind of model made it. */
export function selectTags(prediction: Prediction, selection: TagSelection, multiLabel: boolean): string[] {
  const { topK, threshold } = selection;
  if (topK === undefined && threshold === undefined) return prediction.predicted_tags;
  let tags: string[];
  if (threshold === undefined && multiLabel) {
    tags = prediction.predicted_tags;
  } else {
    const floor = threshold ?? -Infinity;
    tags = Object.entries(prediction.probabilities)
      .filter(([, p]) => p >= floor)
      .sort((a, b) => b[1] - a[1])
      .map(([tag]) => tag);
  }
  return topK === undefined ? tags : tags.slice(0, topK);
}
