/**
 * Cross-validation: the folds (stratified, disjoint, covering the data), scores equal to training and
 * scoring each fold by hand, the same numbers serially and in worker threads, seeds averaged, errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluate, type LabelledText, parseTrainingArgs, trainTagger } from '../../src/model/index.js';
import {
  CrossValidator,
  crossValidate,
  crossValidateSerial,
  crossValidationFolds,
  meanStd,
} from '../../src/train/cross-validate.js';
import { DataError, readDataset } from '../../src/train/data.js';
import { SGD } from '../model/fixtures.js';
import { REPO_ROOT, SAMPLE_DATA } from '../support/components.js';

const FAST = parseTrainingArgs({
  ...SGD,
  num_epochs: 4,
  analyzer: 'char_wb',
  ngram_max_range: 3,
  refit: false,
});

let data: LabelledText[];
beforeAll(async () => {
  data = await readDataset(SAMPLE_DATA);
});

describe('meanStd', () => {
  it('gives the mean and the sample standard deviation', () => {
    expect(meanStd([1, 2, 3, 4])).toEqual({ mean: 2.5, std: Math.sqrt(5 / 3) });
    expect(meanStd([0.7])).toEqual({ mean: 0.7, std: 0 });
  });
});

describe('crossValidationFolds', () => {
  it('makes k stratified, disjoint test folds covering the data; the rest is split 85/15', () => {
    const folds = crossValidationFolds(data, 4, 11);
    expect(folds).toHaveLength(4);
    const tested = folds.flatMap((fold) => fold.test);
    expect(tested).toHaveLength(data.length);
    expect(new Set(tested).size).toBe(data.length);
    const tags = new Set(data.map((row) => row.tag));
    for (const fold of folds) {
      expect(fold.train.length + fold.validation.length + fold.test.length).toBe(data.length);
      const seen = new Set([...fold.train, ...fold.validation]);
      expect(fold.test.some((row) => seen.has(row))).toBe(false);
      expect(fold.validation.length / (data.length - fold.test.length)).toBeCloseTo(0.15, 1);
      for (const tag of tags) expect(fold.test.some((row) => row.tag === tag)).toBe(true);
    }
    expect(crossValidationFolds(data, 4, 11)).toEqual(folds);
    expect(crossValidationFolds(data, 4, 12)[0]!.test).not.toEqual(folds[0]!.test);
  });

  it('refuses fewer than 2 folds and data too small for the folds', () => {
    expect(() => crossValidationFolds(data, 1, 1)).toThrow(/--folds must be a whole number ≥ 2, got 1/);
    expect(() => crossValidationFolds(data.slice(0, 12), 10, 1)).toThrow(DataError);
    expect(() => crossValidationFolds(data.slice(0, 12), 10, 1)).toThrow(
      /too few for 10-fold cross-validation/,
    );
  });
});

describe('cross-validation of multi-label data', () => {
  it('makes folds that test every tag and scores them by the weighted f1 over tags', async () => {
    const multi = await readDataset(`${REPO_ROOT}/samples/projects-multilabel.csv`);
    const folds = crossValidationFolds(multi, 3, 5);
    for (const fold of folds) {
      expect(new Set(fold.test.flatMap((row) => row.tags ?? [])).size).toBe(8);
    }
    const args = { ...FAST, multi_label: true, threshold: 'tuned' as const };
    // In worker threads: the rows' tag lists reach the workers.
    const result = await crossValidate(multi, args, { folds: 3, seed: 5, workers: 2 });
    const { model } = trainTagger(folds[0]!.train, folds[0]!.validation, args, { seed: 5 });
    expect(result.folds[0]).toBeCloseTo(evaluate(model, folds[0]!.test).overall.f1, 12);
    expect(result.mean).toBeGreaterThan(0.4);
  });
});

describe('crossValidate', () => {
  it('scores each fold as training on the rest and evaluating on the fold does, with mean and std', () => {
    const cv = crossValidateSerial(data, FAST, { folds: 3, seed: 5 });
    const byHand = crossValidationFolds(data, 3, 5).map((fold) => {
      const { model } = trainTagger(fold.train, fold.validation, FAST, { seed: 5 });
      return evaluate(model, fold.test).overall.f1;
    });
    expect(cv.folds).toEqual(byHand);
    expect({ mean: cv.mean, std: cv.std }).toEqual(meanStd(byHand));
    expect(cv.mean).toBeGreaterThan(0.3);
    expect(cv.trainingSeconds).toBeGreaterThan(0);
  });

  it('averages each fold over the training seeds', () => {
    const seeds = [5, 6];
    const cv = crossValidateSerial(data, FAST, { folds: 3, seed: 5, trainingSeeds: seeds });
    const single = seeds.map(
      (seed) => crossValidateSerial(data, FAST, { folds: 3, seed: 5, trainingSeeds: [seed] }).folds,
    );
    expect(cv.folds).toEqual(single[0]!.map((f1, i) => (f1 + single[1]![i]!) / 2));
  });

  it('gives the same numbers in worker threads as in this thread', async () => {
    const options = { folds: 3, seed: 5, trainingSeeds: [5, 6] };
    const serial = crossValidateSerial(data, FAST, options);
    const threaded = await crossValidate(data, FAST, { ...options, workers: 2 });
    expect(threaded.folds).toEqual(serial.folds);
    expect(threaded.mean).toBe(serial.mean);
    expect(threaded.std).toBe(serial.std);
    const inThread = await crossValidate(data, FAST, { ...options, workers: 1 });
    expect(inThread.folds).toEqual(serial.folds);
  }, 60_000);
});

describe('CrossValidator', () => {
  const validator = () => new CrossValidator(data, { folds: 3, seed: 5, workers: 2 });
  let pool: CrossValidator | undefined;
  afterAll(async () => {
    await pool?.close();
  });

  it('scores several argument sets with one pool of threads', async () => {
    pool = validator();
    expect(pool.workers).toBe(2);
    const other = { ...FAST, loss: 'hinge' as const };
    const [a, b] = [await pool.run(FAST), await pool.run(other)];
    expect(a.folds).toEqual(crossValidateSerial(data, FAST, { folds: 3, seed: 5 }).folds);
    expect(b.folds).toEqual(crossValidateSerial(data, other, { folds: 3, seed: 5 }).folds);
    expect(b.folds).not.toEqual(a.folds);
  }, 60_000);

  it('scores the default soft vote (its members in the args) the same in threads as in this thread', async () => {
    pool ??= validator();
    const vote = parseTrainingArgs({ refit: false });
    expect(vote.classifier).toBe('soft_vote');
    expect((await pool.run(vote)).folds).toEqual(
      crossValidateSerial(data, vote, { folds: 3, seed: 5 }).folds,
    );
  }, 60_000);

  it("reports a training's error from a thread with its message", async () => {
    pool ??= validator();
    // No n-gram is in 10,000 documents: the vectorizer has an empty vocabulary.
    await expect(pool.run({ ...FAST, min_df: 10_000 })).rejects.toThrow(/empty vocabulary/);
    // The pool still works after a failed task.
    expect((await pool.run(FAST)).folds).toHaveLength(3);
  }, 60_000);

  it('uses no more threads than there are tasks, and none for 1 worker', () => {
    expect(new CrossValidator(data, { folds: 2, seed: 1, workers: 8 }).workers).toBe(2);
    expect(new CrossValidator(data, { folds: 3, seed: 1, workers: 1 }).workers).toBe(1);
  });
});
