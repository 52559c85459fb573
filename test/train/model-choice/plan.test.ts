/**
 * The model choice's plan (src/train/model-choice/plan.ts) over the rules' table: cheapest first, and each
 * candidate that is not tried named with why — too few rows, no encoder, over the memory, over what the
 * budget leaves, not asked for.
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../../src/model/index.js';
import {
  cleanupNotCompared,
  type PlanContext,
  planCandidates,
} from '../../../src/train/model-choice/plan.js';
import {
  CANDIDATES,
  type ChoiceShape,
  DEFAULT_BUDGET,
  defaultBudgetSeconds,
  embeddingCost,
} from '../../../src/train/model-choice/rules.js';

/** BANKING77's shape, roughly: 8,505 training rows of 77 tags, short texts. */
const SHAPE: ChoiceShape = {
  rows: 8_505,
  validationRows: 1_498,
  tags: 77,
  multiLabel: false,
  nonZerosPerRow: 148,
  wordNonZerosPerRow: 22,
  wordsPerRow: 12,
  textsToEmbed: 13_000,
  tokensPerText: 15,
};

const context = (overrides: Partial<PlanContext> = {}): PlanContext => ({
  shape: SHAPE,
  budgetSeconds: 10_000,
  encoder: { installed: true },
  threads: 1,
  argsOf: (rule) => parseTrainingArgs(rule.args),
  memoryOf: () => 1e9,
  memoryBudget: 8e9,
  ...overrides,
});

describe('planCandidates', () => {
  it('tries every candidate of the table when nothing prunes them, cheapest first; a fallback only where it stands in', () => {
    const plan = planCandidates(context());
    expect(plan.map((p) => p.name).sort()).toEqual(CANDIDATES.map((c) => c.name).sort());
    // The word SVM and fastText stand in for the linear SVM where it is too slow: here it fits.
    for (const fallback of ['linear_svm_words', 'fasttext']) {
      expect(plan.find((p) => p.name === fallback)!.skip).toMatch(
        /^linear_svm fits the budget and is tried: it stands in for/,
      );
    }
    const tried = (of: ReturnType<typeof planCandidates>) =>
      of
        .filter((p) => p.skip === null)
        .map((p) => p.name)
        .sort();
    expect(tried(plan)).toEqual(['cascade', 'encoder', 'linear_svm', 'soft_vote']);
    expect(tried(planCandidates(context({ only: ['linear_svm_words', 'fasttext', 'soft_vote'] })))).toEqual([
      'fasttext',
      'linear_svm_words',
      'soft_vote',
    ]);
    // The first encoder candidate carries the embedding pass; sorted by fit + the pass its kind needs.
    const order = plan.map(
      (p) =>
        p.estimatedSeconds -
        p.embeddingSeconds -
        p.cleanupSeconds +
        (p.needsEncoder ? embeddingCost(SHAPE) : 0),
    );
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(plan.filter((p) => p.embeddingSeconds > 0)).toHaveLength(1);
    expect(plan.every((p) => p.estimatedSeconds > 0)).toBe(true);
    expect(plan[0]!.name).toBe('linear_svm_words');
  });

  it('names why a candidate is left out: rows, encoder, memory, --candidates', () => {
    // The linear SVMs (fastText's betters, whose fallback it is) out of the way by their memory.
    const few = planCandidates(
      context({
        shape: { ...SHAPE, rows: 500 },
        memoryOf: (args) => (args.classifier === 'linear_svm' ? 9e9 : 1e9),
      }),
    );
    expect(few.find((p) => p.name === 'fasttext')!.skip).toMatch(/^fewer than 2,000 training rows \(500\)/);
    // Named in --candidates, it is tried all the same: the rules' judgement gives way to the user's.
    const named = planCandidates(context({ shape: { ...SHAPE, rows: 500 }, only: ['fasttext'] }));
    expect(named.find((p) => p.name === 'fasttext')!.skip).toBeNull();
    const noEncoder = planCandidates(
      context({ encoder: { installed: false, why: 'the encoder is not installed' } }),
    );
    for (const name of ['encoder', 'cascade'])
      expect(noEncoder.find((p) => p.name === name)!.skip).toBe('the encoder is not installed');
    const memory = planCandidates(
      context({ memoryOf: (args) => (args.classifier === 'soft_vote' ? 9e9 : 1e9) }),
    );
    expect(memory.find((p) => p.name === 'soft_vote')!.skip).toMatch(
      /^needs about 8\.4 GB, more than the 7\.5 GB/,
    );
    const only = planCandidates(context({ only: ['fasttext', 'linear_svm'] }));
    expect(only.find((p) => p.name === 'encoder')!.skip).toBe('not in --candidates');
    // The first candidate tried compares the clean-up variants, unless the user gave the clean-up.
    const first = planCandidates(context()).find((p) => p.skip === null && !p.needsEncoder)!;
    expect(first.cleanupSeconds).toBeGreaterThan(0);
    expect(planCandidates(context({ cleanupGiven: true })).every((p) => p.cleanupSeconds === 0)).toBe(true);
  });

  it('keeps within the budget: a candidate whose fit and refit do not fit what is left is skipped, with the figures', () => {
    const first = planCandidates(context()).filter((p) => p.skip === null)[0]!;
    // Room for the cheapest one and its refit only.
    const budget = first.estimatedSeconds + first.estimatedRefitSeconds + 1e-6;
    const plan = planCandidates(context({ budgetSeconds: budget }));
    expect(plan.filter((p) => p.skip === null).map((p) => p.name)).toEqual([first.name]);
    for (const skipped of plan.filter((p) => p.name !== first.name && !p.skip!.includes('stands in'))) {
      expect(skipped.skip).toMatch(
        /^estimated .* with its refit, more than the .* left of the .* CPU budget \(--time-budget\)$/,
      );
    }
  });

  it('grows the default budget with the data: 3 minutes and 4 ms a row', () => {
    expect(defaultBudgetSeconds(0)).toBe(DEFAULT_BUDGET.baseSeconds);
    expect(defaultBudgetSeconds(10_000)).toBe(220);
    expect(defaultBudgetSeconds(200_000)).toBe(980);
  });

  it('estimates the linear SVM by rows × tags × values^0.4, and fastText far cheaper at hundreds of tags', () => {
    const svm = CANDIDATES.find((c) => c.name === 'linear_svm')!;
    const fasttext = CANDIDATES.find((c) => c.name === 'fasttext')!;
    expect(svm.cost({ ...SHAPE, tags: 154 })).toBeCloseTo(2 * svm.cost(SHAPE), 9);
    expect(svm.cost({ ...SHAPE, nonZerosPerRow: 148 * 32 })).toBeCloseTo(4 * svm.cost(SHAPE), 9);
    const large = {
      ...SHAPE,
      rows: 40_000,
      tags: 500,
      nonZerosPerRow: 770,
      wordNonZerosPerRow: 70,
      wordsPerRow: 35,
    };
    expect(fasttext.cost(large)).toBeLessThan(svm.cost(large) / 10);
    // There the linear SVM does not fit a budget of a few minutes: the word SVM stands in for it, and
    // fastText, a fallback of the word SVM too, is left to where neither fits.
    const plan = planCandidates(context({ shape: large, budgetSeconds: 340 }));
    expect(plan.find((p) => p.name === 'linear_svm')!.skip).toMatch(/CPU budget/);
    expect(plan.find((p) => p.name === 'linear_svm_words')!.skip).toBeNull();
    expect(plan.find((p) => p.name === 'fasttext')!.skip).toMatch(
      /^linear_svm_words fits the budget and is tried: it stands in for a linear SVM/,
    );
    const tight = planCandidates(context({ shape: large, budgetSeconds: 60 }));
    expect(tight.filter((p) => p.skip === null).map((p) => p.name)).toEqual(['fasttext']);
  });

  it('compares the clean-up on a sample only where it holds 10 rows of each tag', () => {
    expect(cleanupNotCompared(1_500, 500)).toBeNull();
    expect(cleanupNotCompared(40_000, 150)).toBeNull();
    expect(cleanupNotCompared(40_000, 500)).toMatch(
      /^not compared: a sample of 2,000 rows holds 4 per tag of 500 \(fewer than 10 say nothing of it\)/,
    );
    const manyTags = { ...SHAPE, rows: 40_000, tags: 500 };
    expect(planCandidates(context({ shape: manyTags })).every((p) => p.cleanupSeconds === 0)).toBe(true);
  });
});
