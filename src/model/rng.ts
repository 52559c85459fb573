/** Seeded pseudo-random numbers, so splits, shuffles and oversampling are reproducible from a seed. */
import { ModelInputError } from './errors.js';

/** What Mulberry32 adds to its state on every draw. */
const WEYL_STEP = 0x6d2b79f5;

/**
 * Mulberry32: 32-bit state, full period 2^32, fast and good enough for shuffling (not cryptographic).
 * @example const rng = createRng(42); rng(); // 0.6011037519201636
 */
export function createRng(seed: number): () => number {
  if (!Number.isSafeInteger(seed)) {
    throw new ModelInputError(`model/rng: seed must be an integer, got ${JSON.stringify(seed)}`);
  }
  // state: the only mutable variable; advanced by a Weyl step on every draw.
  let state = seed >>> 0;
  return () => {
    state = (state + WEYL_STEP) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The state of `createRng(state)`'s generator after `draws` draws: its state only ever adds the Weyl step,
 * so `createRng(rngStateAfter(s, d))` goes on exactly where `createRng(s)` was after d draws — a generator
 * carried from one thread to another as one number.
 * @example rngStateAfter(42, 0) // 42
 */
export function rngStateAfter(state: number, draws: number): number {
  return (state + Math.imul(draws, WEYL_STEP)) >>> 0;
}

/** Uniform integer in [0, n). */
export function randomInt(rng: () => number, n: number): number {
  return Math.floor(rng() * n);
}

/** In-place Fisher–Yates shuffle. */
/** The first `size` indices of a seeded random permutation of 0..n-1: `size` distinct indices, drawn. */
export function sampleIndices(n: number, size: number, seed: number): Int32Array {
  const order = Int32Array.from({ length: n }, (_, i) => i);
  shuffleInPlace(order, createRng(seed));
  return order.subarray(0, Math.min(n, size));
}

export function shuffleInPlace<T>(items: { length: number; [index: number]: T }, rng: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(rng, i + 1);
    const tmp = items[i] as T;
    items[i] = items[j] as T;
    items[j] = tmp;
  }
}
