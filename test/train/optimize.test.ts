/**
 * The search: every trial scored by cross-validation on the training rows only, the CV mean ± std and the
 * per-fold f1 logged on its run, the best trial chosen by CV mean, the same result with and without
 * threads; the search space only yields valid arguments.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRng, type LabelledText, parseTrainingArgs } from '../../src/model/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import type { TrackingStore } from '../../src/tracking/store.js';
import { crossValidateSerial } from '../../src/train/cross-validate.js';
import { readDataset } from '../../src/train/data.js';
import { crossValidationRows, optimize, SEARCH_SPACE, sampleArgs } from '../../src/train/optimize.js';
import { splitData } from '../../src/train/pipeline.js';
import { SGD } from '../model/fixtures.js';
import { SAMPLE_DATA } from '../support/components.js';
import { useTempDir } from '../support/temp-dir.js';

const FAST = parseTrainingArgs({
  ...SGD,
  num_epochs: 3,
  analyzer: 'char_wb',
  ngram_max_range: 3,
  refit: false,
});

const scratch = useTempDir('tagger-optimize-');
let store: TrackingStore;
let data: LabelledText[];

beforeAll(async () => {
  store = await openTrackingStore(join(scratch.path, 'mlruns'));
  data = await readDataset(SAMPLE_DATA);
});
afterAll(async () => {
  await store.close();
});

describe('sampleArgs', () => {
  it('draws only valid arguments from the whole space, deterministically for a seed', () => {
    const random = createRng(3);
    const drawn = Array.from({ length: 300 }, () => sampleArgs(FAST, random));
    for (const args of drawn) expect(parseTrainingArgs(args)).toEqual(args);
    expect(new Set(drawn.map((a) => a.analyzer))).toEqual(new Set(SEARCH_SPACE.analyzer));
    expect(new Set(drawn.map((a) => a.loss))).toEqual(new Set(SEARCH_SPACE.loss));
    expect(new Set(drawn.map((a) => a.min_df))).toEqual(new Set(SEARCH_SPACE.minDf));
    expect(new Set(drawn.map((a) => `${a.oversample}/${a.class_weight}`))).toEqual(
      new Set(['true/null', 'false/balanced', 'false/null']),
    );
    expect(drawn.some((a) => a.ngram_min_range === 1)).toBe(true);
    expect(new Set(drawn.map((a) => a.classifier))).toEqual(
      new Set([
        'ovr',
        'linear_svm',
        'logistic_regression',
        'nb_lr',
        'nb_svm',
        'multinomial_nb',
        'complement_nb',
        'soft_vote',
        'fasttext',
      ]),
    );
    const votes = drawn.filter((a) => a.classifier === 'soft_vote');
    for (const vote of votes) {
      const kinds = vote.members!.map((m) => m.classifier);
      expect(new Set(kinds).size).toBe(kinds.length);
      expect(kinds.length).toBeGreaterThanOrEqual(2);
      expect(kinds.length).toBeLessThanOrEqual(4);
      // A vote's SVM members are calibrated, its others not.
      for (const m of vote.members!) {
        expect(m.calibration).toBe(
          m.classifier === 'linear_svm' || m.classifier === 'nb_svm' ? 'sigmoid' : 'none',
        );
      }
    }
    expect(new Set(drawn.map((a) => a.calibration))).toEqual(new Set(['none', 'sigmoid']));
    const again = createRng(3);
    expect(sampleArgs(FAST, again)).toEqual(drawn[0]);
  });

  it('keeps log loss for a softmax base, and softmax as its SGD classifier', () => {
    const random = createRng(4);
    const softmax = parseTrainingArgs({ classifier: 'softmax' });
    for (let i = 0; i < 30; i++) {
      const args = sampleArgs(softmax, random);
      expect(args.loss).toBe('log_loss');
      expect(args.classifier).not.toBe('ovr');
    }
  });

  it('never calibrates naive Bayes (a calibration fold may leave it a tag without rows)', () => {
    const random = createRng(5);
    for (let i = 0; i < 120; i++) {
      const args = sampleArgs(FAST, random);
      const nb = (c: string) => c === 'multinomial_nb' || c === 'complement_nb';
      if (nb(args.classifier)) expect(args.calibration).toBe('none');
      for (const m of args.members ?? []) if (nb(m.classifier)) expect(m.calibration).toBe('none');
    }
  });
});

describe('crossValidationRows', () => {
  it("is training's train + validation split without a test file (never the test rows), else the data", () => {
    const rows = crossValidationRows({ data, args: FAST, seed: 9 });
    const { train, validation, test } = splitData(data, false, 9);
    expect(rows).toEqual([...train, ...validation]);
    expect(rows.some((row) => test.includes(row))).toBe(false);
    expect(crossValidationRows({ data, testData: test, args: FAST, seed: 9 })).toEqual(data);
    expect(
      crossValidationRows({ data, testData: test, args: { ...FAST, subset: 40 }, seed: 9 }),
    ).toHaveLength(40);
  });
});

describe('optimize', () => {
  const search = (experiment: string, cvWorkers: number) =>
    optimize(store, {
      data,
      args: FAST,
      seed: 9,
      trials: 3,
      folds: 3,
      cvWorkers,
      experiment,
      runNamePrefix: 'trial',
    });

  it('ranks the trials by cross-validated f1 and logs mean, std and per-fold f1 on every trial run', async () => {
    const result = await search('cv-serial', 1);
    expect(result.trials).toHaveLength(3);
    const rows = crossValidationRows({ data, args: FAST, seed: 9 });
    for (const trial of result.trials) {
      // The CV is on the training rows, with the search's seed.
      const { folds, mean, std } = crossValidateSerial(rows, trial.args, { folds: 3, seed: 9 });
      expect(trial.cv).toMatchObject({ folds, mean, std });
      const run = await store.getRun(trial.runId);
      expect(run?.metrics.cv_f1_mean).toBe(trial.cv.mean);
      expect(run?.metrics.cv_f1_std).toBe(trial.cv.std);
      const history = await store.getMetricHistory(trial.runId, 'cv_f1_fold');
      expect(history.map((point) => [point.step, point.value])).toEqual(
        trial.cv.folds.map((f1, i) => [i + 1, f1]),
      );
    }
    const best = Math.max(...result.trials.map((trial) => trial.cv.mean));
    expect(result.best.cv.mean).toBe(best);
    expect(result.best).toBe(result.trials.find((trial) => trial.cv.mean === best));
    const parent = await store.getRun(result.parentRunId);
    expect(parent?.metrics.best_cv_f1_mean).toBe(best);
    expect(parent?.params.folds).toBe('3');
    expect(parent?.tags['tagger.best_run_id']).toBe(result.best.runId);
  }, 120_000);

  it('gives the same trials and choice with folds trained in threads', async () => {
    const [serial, threaded] = [await search('cv-a', 1), await search('cv-b', 2)];
    const scores = (r: typeof serial) => r.trials.map((t) => [t.args, t.cv.folds, t.cv.mean, t.cv.std]);
    expect(scores(threaded)).toEqual(scores(serial));
    expect(threaded.best.trial).toBe(serial.best.trial);
  }, 120_000);

  it('refuses data too small for the folds before creating any run', async () => {
    await expect(
      optimize(store, {
        data: data.slice(0, 30),
        args: FAST,
        seed: 1,
        trials: 1,
        folds: 12,
        experiment: 'cv-small',
        runNamePrefix: 'trial',
      }),
    ).rejects.toThrow(/too few for 12-fold cross-validation/);
    expect(await store.getExperimentByName('cv-small')).toBeNull();
  });
});
