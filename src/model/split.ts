/** Deterministic stratified splitting (train/validation/test) driven by the seeded RNG. */
import { ModelInputError } from './errors.js';
import { createRng, shuffleInPlace } from './rng.js';

/**
 * Splits items into parts of the given fractions, keeping each label's proportion in every part.
 * Each label's items are shuffled, then cut at round(cumulative fraction * count); every part is then
 * shuffled so labels are interleaved. Same inputs and seed → same parts.
 * @example stratifiedSplit(rows, (r) => r.tag, [0.7, 0.15, 0.15], 42) // [train, val, test]
 */
export function stratifiedSplit<T>(
  items: readonly T[],
  labelOf: (item: T) => string,
  fractions: readonly number[],
  seed: number,
): T[][] {
  const sum = fractions.reduce((a, b) => a + b, 0);
  if (
    fractions.length === 0 ||
    fractions.some((f) => !Number.isFinite(f) || f < 0) ||
    Math.abs(sum - 1) > 1e-9
  ) {
    throw new ModelInputError(
      `model/split: fractions must be non-negative and sum to 1, got ${JSON.stringify(fractions)}; e.g. [0.7, 0.15, 0.15]`,
    );
  }
  const rng = createRng(seed);
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const label = labelOf(item);
    let group = groups.get(label);
    if (group === undefined) {
      group = [];
      groups.set(label, group);
    }
    group.push(item);
  }
  const parts: T[][] = fractions.map(() => []);
  // Labels in sorted order so the result does not depend on the order labels first appear in.
  for (const label of [...groups.keys()].sort()) {
    const group = groups.get(label)!;
    shuffleInPlace(group, rng);
    let cumulative = 0;
    let start = 0;
    fractions.forEach((fraction, i) => {
      cumulative += fraction;
      const end = i === fractions.length - 1 ? group.length : Math.round(cumulative * group.length);
      parts[i]!.push(...group.slice(start, end));
      start = end;
    });
  }
  for (const part of parts) shuffleInPlace(part, rng);
  return parts;
}
