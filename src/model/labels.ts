/** Label normalisation: rare or unaccepted tags are folded into `other`, as tagifai does. */

export const OTHER_TAG = 'other';

/**
 * The model's classes: accepted tags with at least `minFreq` training examples, plus `other`, sorted.
 * @example modelTags(['a', 'a', 'b'], 2, null) // ['a', 'other']
 */
export function modelTags(
  trainTags: readonly string[],
  minFreq: number,
  accepted: readonly string[] | null,
): string[] {
  const counts = new Map<string, number>();
  for (const tag of trainTags) counts.set(tag, (counts.get(tag) ?? 0) + 1);
  const allowed = accepted === null ? null : new Set(accepted);
  const kept = new Set<string>([OTHER_TAG]);
  for (const [tag, count] of counts) {
    if (count >= minFreq && (allowed === null || allowed.has(tag))) kept.add(tag);
  }
  return [...kept].sort();
}

/** Maps a tag to itself when it is one of the model's classes, else to `other`. */
export function normalizeTag(tag: string, classes: ReadonlySet<string>): string {
  return classes.has(tag) ? tag : OTHER_TAG;
}
