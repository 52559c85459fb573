/**
 * A training estimated to need more memory than the process may use is refused before it starts, with
 * the estimate and the settings that make it smaller; the budget comes from TAGGER_TRAIN_MEMORY or 90 %
 * of the cgroup's (or the machine's) memory.
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../src/model/index.js';
import {
  checkTrainingMemory,
  MemoryBudgetError,
  trainingMemoryBudget,
} from '../../src/train/memory-check.js';
import { TRAIN } from '../model/fixtures.js';

describe('checkTrainingMemory', () => {
  it('returns the estimate when it fits', () => {
    const estimate = checkTrainingMemory(TRAIN, parseTrainingArgs({ min_freq: 1 }), 2, 2 ** 40);
    expect(estimate.bytes).toBeGreaterThan(0);
    expect(estimate.shape.rows).toBe(TRAIN.length);
  });

  it('refuses, naming the estimate, the budget and the settings that shrink it', () => {
    const args = parseTrainingArgs({ min_freq: 1 });
    let error: unknown;
    try {
      checkTrainingMemory(TRAIN, args, 2, 2 ** 20);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(MemoryBudgetError);
    const { message, estimate, budgetBytes } = error as MemoryBudgetError;
    expect(budgetBytes).toBe(2 ** 20);
    expect(estimate.bytes).toBeGreaterThan(2 ** 20);
    expect(message).toMatch(
      new RegExp(
        `^this training would need about [\\d.]+ MB \\(.*\\) for ${TRAIN.length} rows and \\d+ tags, more than the 1.0 MB this process may use`,
      ),
    );
    expect(message).toMatch(
      /a higher min_df \(fewer features; it is 1\).*classifier fasttext.*--no-memory-check/,
    );
    const fasttext = () =>
      checkTrainingMemory(TRAIN, parseTrainingArgs({ classifier: 'fasttext' }), 2, 2 ** 20);
    expect(fasttext).toThrow(/a smaller ft_buckets or ft_dim/);
  });
});

describe('trainingMemoryBudget', () => {
  it('reads TAGGER_TRAIN_MEMORY in bytes or with a unit, and refuses anything else', () => {
    expect(trainingMemoryBudget({ TAGGER_TRAIN_MEMORY: '6GB' })).toBe(6 * 2 ** 30);
    expect(trainingMemoryBudget({ TAGGER_TRAIN_MEMORY: '512 mb' })).toBe(512 * 2 ** 20);
    expect(trainingMemoryBudget({ TAGGER_TRAIN_MEMORY: '1000' })).toBe(1000);
    expect(() => trainingMemoryBudget({ TAGGER_TRAIN_MEMORY: 'lots' })).toThrow(
      'TAGGER_TRAIN_MEMORY must be a size such as 6GB or 512MB (or bytes), got "lots"',
    );
    // Unset: 90 % of what the machine or its container allows.
    expect(trainingMemoryBudget({})).toBeGreaterThan(0);
  });
});
