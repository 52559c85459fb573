/**
 * Cascade runs in src/train, with synthetic embeddings (the real encoder: test/cli/encoder.test.ts): the
 * out-of-fold curve and τ by each rule, the stages trained on the same split, the test split's figures,
 * what the run logs (cascade_curve.json, params, metrics), cross-validation and label issues of cascade
 * args, and the refusals.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bindEmbeddings,
  type CascadeTagModel,
  checkCascadeArgs,
  decodeModel,
  encoderStageArgs,
  evaluate,
  isCascade,
  type LabelledText,
  RUN_ARTIFACTS,
  routingConfidence,
  type TrainEncoder,
  trainTagger,
} from '../../src/model/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import type { TrackingStore } from '../../src/tracking/store.js';
import { trainCascade } from '../../src/train/cascade-training.js';
import { crossValidateSerial } from '../../src/train/cross-validate.js';
import { readDataset } from '../../src/train/data.js';
import { textsToEmbed } from '../../src/train/embeddings.js';
import { trainingLabelIssues } from '../../src/train/label-issues.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { splitData, type TrainingOutcome, trainAndEvaluate } from '../../src/train/pipeline.js';
import { SYNTHETIC_CASCADE_ARGS, sampleCascade, syntheticEmbeddings } from '../support/cascade-run.js';
import { REPO_ROOT } from '../support/components.js';
import { useTempDir } from '../support/temp-dir.js';

const ARGS = SYNTHETIC_CASCADE_ARGS;

const scratch = useTempDir('tagger-cascade-');
let data: LabelledText[];
let encoder: TrainEncoder;
let outcome: TrainingOutcome;
let store: TrackingStore;

beforeAll(async () => {
  ({ data, encoder, outcome } = await sampleCascade());
  store = await openTrackingStore(join(scratch.path, 'mlruns'));
}, 120_000);
afterAll(async () => {
  await store?.close();
});

describe('cascade training', () => {
  it('chooses τ by the default rule from out-of-fold predictions of every row the model learns from', () => {
    const cascade = outcome.cascade!;
    expect(isCascade(outcome.model)).toBe(true);
    const model = outcome.model as CascadeTagModel;
    expect(cascade.curve.points).toHaveLength(100);
    expect(cascade.curve.rows).toBe(outcome.sizes.train + outcome.sizes.validation);
    expect(model.routingThreshold).toBe(cascade.choice.point.threshold);
    expect(cascade.choice.rule).toEqual({ kind: 'tolerance', tolerance: 0.002 });
    const floor = cascade.curve.encoder_f1 - 0.002;
    if (cascade.choice.point.f1 >= floor) {
      for (const point of cascade.curve.points) {
        if (point.routed < cascade.choice.point.routed) expect(point.f1).toBeLessThan(floor);
      }
    }
    expect(model.choice.cv).toEqual({
      routed: cascade.choice.point.routed,
      f1: cascade.choice.point.f1,
      fast_f1: cascade.curve.fast_f1,
      encoder_f1: cascade.curve.encoder_f1,
      rows: cascade.curve.rows,
    });
    expect(cascade.fastClassifier).toBe('soft_vote');
    expect(model.encoderModel.args.classifier).toBe('ovr');
  });

  it('scores the cascade on the test split as served, with each stage alone beside it', () => {
    const model = outcome.model as CascadeTagModel;
    const { test } = splitData(data, false, 3);
    const texts = test.map((row) => row.text);
    expect(outcome.cascade!.test.routed).toBe(model.predictFast(texts).routed.length / texts.length);
    expect(outcome.performance.overall.f1).toBeCloseTo(
      evaluate(bindEmbeddings(model, encoder.embeddings), test).overall.f1,
      12,
    );
    expect(outcome.cascade!.test.fast_f1).toBeCloseTo(evaluate(model.fast, test).overall.f1, 12);
    expect(outcome.cascade!.test.encoder_f1).toBeCloseTo(
      evaluate(bindEmbeddings(model.encoderModel, encoder.embeddings), test).overall.f1,
      12,
    );
  });

  it('takes a budget or a fixed τ when the args say so', () => {
    const { train, validation } = splitData(data, false, 3);
    const budget = trainCascade(
      train,
      validation,
      { ...ARGS, cascade_max_routed: 0.1 },
      { seed: 3, encoder },
    );
    expect(budget.choice.rule).toEqual({ kind: 'budget', maxRouted: 0.1 });
    expect(budget.choice.point.routed <= 0.1 || budget.choice.point.threshold === 0.01).toBe(true);
    const fixed = trainCascade(
      train,
      validation,
      { ...ARGS, cascade_threshold: 0.555 },
      { seed: 3, encoder },
    );
    expect(fixed.model.routingThreshold).toBe(0.555);
    expect(fixed.choice.reason).toMatch(/τ 0.555 as given/);
  }, 120_000);

  it('logs the curve, what was chosen and why, and each stage alone', async () => {
    const logged = await logTrainingRun(store, {
      experiment: 'cascade',
      runName: 'cascade',
      args: ARGS,
      seed: 3,
      outcome,
      source: 'test',
    });
    const run = (await store.getRun(logged.runId))!;
    const params = run.params;
    expect(params.cascade).toBe('true');
    expect(params['cascade.threshold']).toBe(String(outcome.cascade!.choice.point.threshold));
    expect(params['cascade.rule']).toBe('tolerance');
    expect(params['cascade.reason']).toBe(outcome.cascade!.choice.reason);
    expect(params['cascade.fast_classifier']).toBe('soft_vote');
    const metrics = run.metrics;
    expect(metrics['cascade.routed_test']).toBe(outcome.cascade!.test.routed);
    expect(metrics['cascade.encoder_f1_cv']).toBe(outcome.cascade!.curve.encoder_f1);
    const curve = JSON.parse(
      new TextDecoder().decode(await store.readArtifact(logged.runId, RUN_ARTIFACTS.cascadeCurve)),
    );
    expect(curve.points).toHaveLength(100);
    expect(curve.chosen).toEqual(outcome.cascade!.choice.point);
    expect(curve.test).toEqual(outcome.cascade!.test);
    // The saved model is the cascade, τ and all.
    const files: Record<string, Uint8Array> = {};
    for (const name of ['tagger-model.json', 'weights.bin']) {
      files[name] = await store.readArtifact(logged.runId, `${RUN_ARTIFACTS.modelDir}/${name}`);
    }
    const saved = decodeModel(files, { withEncoder: true });
    expect(isCascade(saved) && saved.routingThreshold).toBe(outcome.cascade!.choice.point.threshold);
    const args = JSON.parse(
      new TextDecoder().decode(await store.readArtifact(logged.runId, RUN_ARTIFACTS.args)),
    );
    expect(args.cascade).toBe(true);
  });

  it('cross-validates and finds label issues of cascade args with the encoder stage', () => {
    const options = { folds: 3, seed: 5, encoder };
    expect(crossValidateSerial(data, ARGS, options).folds).toEqual(
      crossValidateSerial(data, encoderStageArgs(ARGS), options).folds,
    );
    const found = trainingLabelIssues(data, ARGS, 3, undefined, encoder);
    expect('report' in found, JSON.stringify(found)).toBe(true);
  }, 120_000);

  it('trains a multi-label cascade: routed by the least sure tag, scored by the weighted f1 over tags', async () => {
    const rows = await readDataset(join(REPO_ROOT, 'samples', 'projects-multilabel.csv'));
    const args = { ...ARGS, multi_label: true, threshold: 'tuned' as const, min_freq: 5 };
    const multi = trainAndEvaluate({
      data: rows,
      args,
      seed: 3,
      encoder: syntheticEmbeddings(textsToEmbed({ data: rows }), rows),
    });
    const model = multi.model as CascadeTagModel;
    expect(isCascade(model) && model.tagThresholds).not.toBeNull();
    expect(multi.cascade!.curve.points).toHaveLength(100);
    // What routes a text is routing.ts's multi-label confidence: its least sure tag's margin.
    const texts = rows.slice(0, 40).map((row) => row.text);
    const fast = model.fast.predict(texts);
    const expected = fast.flatMap((p, i) =>
      routingConfidence(model.fast, p) < model.routingThreshold ? [i] : [],
    );
    expect(model.predictFast(texts).routed).toEqual(expected);
    expect(multi.performance.averages).toBeDefined();
  }, 120_000);

  it('refuses what cannot be a cascade, in one line', () => {
    expect(() => trainTagger(data, [], ARGS, { seed: 1, encoder })).toThrow(
      /train it with src\/train's trainCascade/,
    );
    expect(() => trainAndEvaluate({ data, args: ARGS, seed: 3 })).toThrow(/needs the embeddings/);
    expect(() => checkCascadeArgs({ ...ARGS, encoder: null })).toThrow(/no encoder is named/);
    expect(() => trainAndEvaluate({ data, args: { ...ARGS, encoder: null }, seed: 3 })).toThrow(
      /no encoder is named/,
    );
  });
});
