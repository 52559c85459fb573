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

/**
 * How many rows have each tag (a tag listed twice in one row counts once).
 * @example rowsPerTag([['a', 'b'], ['a', 'a']]).get('a') // 2
 */
export function rowsPerTag(tagLists: readonly (readonly string[])[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const tags of tagLists) for (const tag of new Set(tags)) counts.set(tag, (counts.get(tag) ?? 0) + 1);
  return counts;
}

/**
 * The tags whose probability reaches their own threshold, most probable first (ties in `tags` order):
 * a multi-label model's answer. `probabilities[base + k]` is tag k's.
 * @example tagsOverThresholds(['a', 'b'], [0.5, 0.5], Float64Array.of(0.6, 0.9)) // ['b', 'a']
 */
export function tagsOverThresholds(
  tags: readonly string[],
  thresholds: readonly number[],
  probabilities: ArrayLike<number>,
  base = 0,
): string[] {
  const passed: number[] = [];
  for (let k = 0; k < thresholds.length; k++) if (probabilities[base + k]! >= thresholds[k]!) passed.push(k);
  // sort is stable: equal probabilities keep the tags' order.
  return passed.sort((a, b) => probabilities[base + b]! - probabilities[base + a]!).map((k) => tags[k]!);
}

/**
 * The classes of a multi-label model: accepted tags found in at least `minFreq` training rows' tag lists,
 * plus `other`, sorted (a tag listed twice in one row counts once).
 * @example multiLabelModelTags([['a', 'b'], ['a']], 2, null) // ['a', 'other']
 */
export function multiLabelModelTags(
  trainTags: readonly (readonly string[])[],
  minFreq: number,
  accepted: readonly string[] | null,
): string[] {
  return modelTags(
    trainTags.flatMap((tags) => [...new Set(tags)]),
    minFreq,
    accepted,
  );
}

/**
 * A row's tags as a multi-label model knows them: its tags that are model classes, once each, in the
 * model's order; `[other]` when none is (a text with only rare or unaccepted tags has none of the known
 * ones, which is what `other` means).
 * @example normalizeTagSet(['b', 'zz', 'a'], new Set(['a', 'b', 'other'])) // ['a', 'b']
 */
export function normalizeTagSet(tags: readonly string[], classes: ReadonlySet<string>): string[] {
  const kept = [...new Set(tags.filter((tag) => classes.has(tag)))].sort();
  return kept.length > 0 ? kept : [OTHER_TAG];
}
