import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeModel,
  MODEL_FILES,
  MODEL_FORMAT,
  parseTrainingArgs,
  RUN_ARTIFACTS,
} from '../../src/model/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import type { TrackingStore } from '../../src/tracking/store.js';
import { readDataset } from '../../src/train/data.js';
import {
  formatParam,
  InterruptedError,
  logTrainingRun,
  MODEL_FORMAT_TAG,
  metricKeyPart,
} from '../../src/train/log-run.js';
import { type TrainingOutcome, trainAndEvaluate } from '../../src/train/pipeline.js';
import { SAMPLE_DATA, SPEC_ARG_KEYS } from '../support/components.js';

const ARGS = parseTrainingArgs({ num_epochs: 4, ngram_max_range: 4 });
const decoder = new TextDecoder();

let dir: string;
let store: TrackingStore;
let outcome: TrainingOutcome;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tagger-logrun-'));
  store = await openTrackingStore(join(dir, 'mlruns'));
  outcome = trainAndEvaluate({ data: await readDataset(SAMPLE_DATA), args: ARGS, seed: 3 });
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('metricKeyPart', () => {
  it('keeps MLflow key characters and replaces the rest', () => {
    expect(metricKeyPart('natural-language-processing')).toBe('natural-language-processing');
    expect(metricKeyPart('a/b*c')).toBe('a_b_c');
    expect(metricKeyPart('')).toBe('_');
  });
});

describe('formatParam', () => {
  it('writes strings raw and everything else as JSON', () => {
    expect([
      formatParam('char'),
      formatParam(true),
      formatParam(null),
      formatParam(0.0001),
      formatParam(['a']),
    ]).toEqual(['char', 'true', 'null', '0.0001', '["a"]']);
  });
});

describe('logTrainingRun', () => {
  it('logs params, final metrics, loss history, tags and artifacts, then finishes the run', async () => {
    const logged = await logTrainingRun(store, {
      experiment: 'best',
      runName: 'unit-run',
      args: ARGS,
      seed: 3,
      outcome,
      source: 'tagger train',
      extraParams: { data: 'samples.csv' },
    });
    const run = await store.getRun(logged.runId);
    expect(run).not.toBeNull();
    if (!run) return;
    expect(run.info.status).toBe('FINISHED');
    expect(run.info.endTime).toBeTypeOf('number');
    expect(run.info.runName).toBe('unit-run');

    for (const key of Object.keys(ARGS))
      expect(run.params[key]).toBe(formatParam(ARGS[key as keyof typeof ARGS]));
    for (const key of SPEC_ARG_KEYS) expect(run.params).toHaveProperty(key);
    expect(run.params.seed).toBe('3');
    expect(run.params.data).toBe('samples.csv');

    expect(run.metrics.f1).toBe(outcome.performance.overall.f1);
    expect(run.metrics.precision).toBe(outcome.performance.overall.precision);
    expect(run.metrics.recall).toBe(outcome.performance.overall.recall);
    // The saved model is the refit's (refit is on by default): its losses, with the times epochs ended.
    expect(outcome.refitHistory).toHaveLength(ARGS.num_epochs);
    const history = await store.getMetricHistory(logged.runId, 'train_loss');
    expect(history.map((point) => point.step)).toEqual(outcome.refitHistory.map((epoch) => epoch.epoch));
    expect(history.map((point) => point.value)).toEqual(outcome.refitHistory.map((epoch) => epoch.trainLoss));
    expect(history.map((point) => point.timestamp)).toEqual(outcome.refitHistory.map((epoch) => epoch.time));
    const validation = await store.getMetricHistory(logged.runId, 'val_loss');
    expect(validation.map((point) => point.value)).toEqual(outcome.history.map((epoch) => epoch.valLoss));
    // The run starts when the training started, and the training time is a metric.
    expect(run.info.startTime).toBe(outcome.startedAt);
    expect(history[0]!.timestamp).toBeGreaterThanOrEqual(outcome.startedAt);
    expect(run.metrics.training_seconds).toBe(outcome.trainingSeconds);
    // Per-tag metrics, comparable across runs in MLflow.
    for (const [tag, metrics] of Object.entries(outcome.performance.class)) {
      expect(run.metrics[`tag.${tag}.f1`], tag).toBe(metrics.f1);
      expect(run.metrics[`tag.${tag}.precision`], tag).toBe(metrics.precision);
      expect(run.metrics[`tag.${tag}.recall`], tag).toBe(metrics.recall);
    }

    expect(run.tags['mlflow.runName']).toBe('unit-run');
    expect(run.tags['mlflow.source.name']).toBe('tagger train');
    expect(run.tags['mlflow.user']).toBeTruthy();
    expect(run.tags[MODEL_FORMAT_TAG]).toBe(MODEL_FORMAT);

    const args = JSON.parse(decoder.decode(await store.readArtifact(logged.runId, RUN_ARTIFACTS.args)));
    expect(args).toEqual(ARGS);
    const performance = JSON.parse(
      decoder.decode(await store.readArtifact(logged.runId, RUN_ARTIFACTS.performance)),
    );
    expect(performance).toEqual(outcome.performance);

    const files: Record<string, Uint8Array> = {};
    for (const name of MODEL_FILES)
      files[name] = await store.readArtifact(logged.runId, `${RUN_ARTIFACTS.modelDir}/${name}`);
    const texts = ['A convolutional network for image segmentation', 'Serving models with Kubernetes'];
    expect(decodeModel(files).predict(texts)).toEqual(outcome.model.predict(texts));
  });

  it('reuses an existing experiment', async () => {
    const first = await logTrainingRun(store, {
      experiment: 'shared',
      runName: 'a',
      args: ARGS,
      seed: 3,
      outcome,
      source: 't',
    });
    const second = await logTrainingRun(store, {
      experiment: 'shared',
      runName: 'b',
      args: ARGS,
      seed: 3,
      outcome,
      source: 't',
    });
    expect(second.experimentId).toBe(first.experimentId);
    expect(await store.searchRuns(first.experimentId)).toHaveLength(2);
  });

  it('marks the run FINISHED only after every artifact is stored', async () => {
    const calls: string[] = [];
    const recording: TrackingStore = {
      ...store,
      createRun: (id, options) => store.createRun(id, options),
      getExperimentByName: (name) => store.getExperimentByName(name),
      createExperiment: (name) => store.createExperiment(name),
      logBatch: (id, batch) => store.logBatch(id, batch),
      logArtifact: async (id, path, bytes) => {
        calls.push(`artifact ${path}`);
        await store.logArtifact(id, path, bytes);
      },
      updateRun: async (id, update) => {
        calls.push(`status ${update.status}`);
        await store.updateRun(id, update);
      },
    };
    await logTrainingRun(recording, {
      experiment: 'order',
      runName: 'o',
      args: ARGS,
      seed: 3,
      outcome,
      source: 't',
    });
    expect(calls.at(-1)).toBe('status FINISHED');
    expect(calls.filter((call) => call.startsWith('artifact '))).toHaveLength(2 + MODEL_FILES.length);
  });

  it('an interruption while artifacts are written leaves the run KILLED, never FINISHED', async () => {
    const controller = new AbortController();
    const statuses: string[] = [];
    let artifacts = 0;
    const interrupted: TrackingStore = {
      ...store,
      createRun: (id, options) => store.createRun(id, options),
      getExperimentByName: (name) => store.getExperimentByName(name),
      createExperiment: (name) => store.createExperiment(name),
      logBatch: (id, batch) => store.logBatch(id, batch),
      logArtifact: async (id, path, bytes) => {
        await store.logArtifact(id, path, bytes);
        // SIGTERM arrives after the second artifact.
        if (++artifacts === 2) controller.abort(new InterruptedError('SIGTERM'));
      },
      updateRun: async (id, update) => {
        statuses.push(update.status);
        await store.updateRun(id, update);
      },
    };
    const error = await logTrainingRun(interrupted, {
      experiment: 'interrupted',
      runName: 'i',
      args: ARGS,
      seed: 3,
      outcome,
      source: 't',
      signal: controller.signal,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InterruptedError);
    expect((error as InterruptedError).exitCode).toBe(143);
    expect(statuses).toEqual(['KILLED']);
    const experiment = await store.getExperimentByName('interrupted');
    const [run] = await store.searchRuns(experiment!.experimentId);
    expect(run?.info.status).toBe('KILLED');
    expect(artifacts).toBe(2);
  });

  it('an interruption before logging starts creates no run', async () => {
    const controller = new AbortController();
    controller.abort(new InterruptedError('SIGINT'));
    const error = await logTrainingRun(store, {
      experiment: 'never-created',
      runName: 'n',
      args: ARGS,
      seed: 3,
      outcome,
      source: 't',
      signal: controller.signal,
    }).catch((caught: unknown) => caught);
    expect((error as InterruptedError).exitCode).toBe(130);
    expect(await store.getExperimentByName('never-created')).toBeNull();
  });
});
