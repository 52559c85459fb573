/** stratifiedSplit: exact per-label counts, partitioning, determinism. */
import { describe, expect, it } from 'vitest';
import { ModelInputError } from '../../src/model/errors.js';
import { stratifiedSplit } from '../../src/model/split.js';

const items = [
  ...Array.from({ length: 60 }, (_, i) => ({ id: i, tag: 'a' })),
  ...Array.from({ length: 20 }, (_, i) => ({ id: 60 + i, tag: 'b' })),
  ...Array.from({ length: 10 }, (_, i) => ({ id: 80 + i, tag: 'c' })),
];
const tagOf = (x: { tag: string }) => x.tag;

describe('stratifiedSplit', () => {
  it('partitions the items, keeping label proportions', () => {
    const [train, val, test] = stratifiedSplit(items, tagOf, [0.7, 0.15, 0.15], 42);
    expect([...train!, ...val!, ...test!].map((x) => x.id).sort((a, b) => a - b)).toEqual(
      items.map((x) => x.id),
    );
    const count = (part: typeof items, tag: string) => part.filter((x) => x.tag === tag).length;
    expect([count(train!, 'a'), count(train!, 'b'), count(train!, 'c')]).toEqual([42, 14, 7]);
    expect([count(val!, 'a'), count(val!, 'b'), count(val!, 'c')]).toEqual([9, 3, 2]);
    expect([count(test!, 'a'), count(test!, 'b'), count(test!, 'c')]).toEqual([9, 3, 1]);
  });

  it('is deterministic for a seed and shuffles differently for another', () => {
    const a = stratifiedSplit(items, tagOf, [0.5, 0.5], 1);
    expect(stratifiedSplit(items, tagOf, [0.5, 0.5], 1)).toEqual(a);
    expect(stratifiedSplit(items, tagOf, [0.5, 0.5], 2)).not.toEqual(a);
  });

  it('does not depend on the order labels first appear in', () => {
    const reversed = [...items].reverse().sort((x, y) => x.id - y.id);
    expect(stratifiedSplit(reversed, tagOf, [0.8, 0.2], 3)).toEqual(
      stratifiedSplit(items, tagOf, [0.8, 0.2], 3),
    );
  });

  it('rejects fractions that do not sum to 1', () => {
    expect(() => stratifiedSplit(items, tagOf, [0.5, 0.6], 1)).toThrow(ModelInputError);
    expect(() => stratifiedSplit(items, tagOf, [1.5, -0.5], 1)).toThrow(
      /fractions must be non-negative and sum to 1, got \[1.5,-0.5\]/,
    );
  });
});
