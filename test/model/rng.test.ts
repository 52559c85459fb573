/** Seeded PRNG and shuffle: determinism per seed and range. */
import { describe, expect, it } from 'vitest';
import { ModelInputError } from '../../src/model/errors.js';
import { createRng, rngStateAfter, shuffleInPlace } from '../../src/model/rng.js';

describe('createRng', () => {
  it('is deterministic per seed and differs across seeds', () => {
    const a = createRng(42);
    const b = createRng(42);
    const c = createRng(43);
    const sa = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(sa);
    expect(Array.from({ length: 5 }, c)).not.toEqual(sa);
  });

  it('stays in [0, 1) with a plausible mean', () => {
    const rng = createRng(1);
    let sum = 0;
    for (let i = 0; i < 10_000; i++) {
      const x = rng();
      expect(x >= 0 && x < 1).toBe(true);
      sum += x;
    }
    expect(sum / 10_000).toBeGreaterThan(0.48);
    expect(sum / 10_000).toBeLessThan(0.52);
  });

  it('goes on from rngStateAfter(seed, draws) exactly where it was after that many draws', () => {
    for (const seed of [0, 42, 0x7ffffffe]) {
      const rng = createRng(seed);
      const draws = Array.from({ length: 1000 }, rng);
      for (const d of [0, 1, 17, 999]) {
        expect(Array.from({ length: 1000 - d }, createRng(rngStateAfter(seed, d)))).toEqual(draws.slice(d));
      }
    }
    // Past 2^32 draws the state wraps as the generator's own does (a Weyl step: state + d × step mod 2^32).
    expect(rngStateAfter(rngStateAfter(5, 2 ** 31), 2 ** 31)).toBe(rngStateAfter(5, 0));
  });

  it('rejects non-integer seeds', () => {
    expect(() => createRng(1.5)).toThrow(ModelInputError);
    expect(() => createRng(Number.NaN)).toThrow(/seed must be an integer, got null/);
  });
});

describe('shuffleInPlace', () => {
  it('permutes deterministically', () => {
    const a = [1, 2, 3, 4, 5, 6, 7, 8];
    const b = [...a];
    shuffleInPlace(a, createRng(7));
    shuffleInPlace(b, createRng(7));
    expect(a).toEqual(b);
    expect([...a].sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(a).not.toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
});
