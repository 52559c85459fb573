import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  decodeModel,
  EVALUATION_METRICS,
  MODEL_FILES,
  MODEL_FORMAT,
  parseTrainingArgs,
  RUN_ARTIFACTS,
} from '../../src/model/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import type { TrackingStore } from '../../src/tracking/store.js';
import { readDataset } from '../../src/train/data.js';
import { fileDigest, readDataWithInput } from '../../src/train/dataset-input.js';
import { trainingLabelIssues } from '../../src/train/label-issues.js';
import {
  formatParam,
  InterruptedError,
  LABEL_ISSUES_SKIPPED_TAG,
  logTrainingRun,
  MODEL_FORMAT_TAG,
  metricKeyPart,
} from '../../src/train/log-run.js';
import { type TrainingOutcome, trainAndEvaluate } from '../../src/train/pipeline.js';
import { SGD } from '../model/fixtures.js';
import { SAMPLE_DATA, SPEC_ARG_KEYS } from '../support/components.js';
import { instrumentStore } from '../support/fixtures.js';
import { useTempDir } from '../support/temp-dir.js';

const ARGS = parseTrainingArgs({ ...SGD, num_epochs: 4, ngram_max_range: 4 });
const decoder = new TextDecoder();

const scratch = useTempDir('tagger-logrun-');
let store: TrackingStore;
let outcome: TrainingOutcome;

beforeAll(async () => {
  store = await openTrackingStore(join(scratch.path, 'mlruns'));
  outcome = trainAndEvaluate({ data: await readDataset(SAMPLE_DATA), args: ARGS, seed: 3 });
});
afterAll(async () => {
  await store.close();
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

  it('logs the label issues it is given as label_issues.json with their count and time, or why there are none', async () => {
    const found = trainingLabelIssues(await readDataset(SAMPLE_DATA), ARGS, 3);
    if (!('report' in found)) throw new Error(found.skipped);
    const input = { experiment: 'best', args: ARGS, seed: 3, outcome, source: 'tagger train' };
    const logged = await logTrainingRun(store, { ...input, runName: 'issues', labelIssues: found });
    const run = await store.getRun(logged.runId);
    expect(run!.metrics.label_issues).toBe(found.report.found);
    expect(run!.metrics.label_issues_seconds).toBe(found.seconds);
    expect(run!.tags).not.toHaveProperty(LABEL_ISSUES_SKIPPED_TAG);
    const artifact = await store.readArtifact(logged.runId, RUN_ARTIFACTS.labelIssues);
    expect(JSON.parse(decoder.decode(artifact))).toEqual(found.report);

    const skipped = await logTrainingRun(store, {
      ...input,
      runName: 'too-small',
      labelIssues: { skipped: 'label-issues: 8 rows are too few' },
    });
    const small = await store.getRun(skipped.runId);
    expect(small!.tags[LABEL_ISSUES_SKIPPED_TAG]).toBe('label-issues: 8 rows are too few');
    expect(small!.metrics).not.toHaveProperty('label_issues');
    await expect(store.readArtifact(skipped.runId, RUN_ARTIFACTS.labelIssues)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('logs the behavioural tests as an artifact and as pass-rate metrics, and the slice definitions', async () => {
    const logged = await logTrainingRun(store, {
      experiment: 'behaviour',
      runName: 'b',
      args: ARGS,
      seed: 3,
      outcome,
      source: 't',
    });
    const run = (await store.getRun(logged.runId))!;
    const report = outcome.behaviour;
    expect(report.cases.length).toBeGreaterThan(20);
    expect(report.pass_rate).not.toBeNull();
    expect(run.metrics[EVALUATION_METRICS.behaviouralPassRate]).toBe(report.pass_rate);
    for (const kind of ['mft', 'inv', 'dir'] as const) {
      expect(run.metrics[`behavioural_pass_rate.${kind}`], kind).toBe(report.by_kind[kind]!.pass_rate);
    }
    const artifact = JSON.parse(
      decoder.decode(await store.readArtifact(logged.runId, RUN_ARTIFACTS.behavioural)),
    );
    expect(artifact).toEqual(JSON.parse(JSON.stringify(report)));
    for (const c of artifact.cases) {
      expect(Object.keys(c)).toEqual(
        expect.arrayContaining(['name', 'kind', 'text', 'expected', 'got', 'pass']),
      );
    }
    const slices = JSON.parse(decoder.decode(await store.readArtifact(logged.runId, RUN_ARTIFACTS.slices)));
    expect(slices.slices.map((s: { name: string }) => s.name)).toEqual(['nlp_cnn', 'short_text']);
    expect(slices.slices[0].where).toEqual({
      tag: 'natural-language-processing',
      text_matches: 'cnn|convolution',
    });
    for (const s of slices.slices) {
      expect(s.rows).toBe(outcome.performance.slices[s.name]?.num_samples ?? 0);
    }
  });

  it('logs no pass-rate metric when no behavioural case could run', async () => {
    const none = { ...outcome, behaviour: { ...outcome.behaviour, pass_rate: null, by_kind: {} } };
    const logged = await logTrainingRun(store, {
      experiment: 'behaviour',
      runName: 'none',
      args: ARGS,
      seed: 3,
      outcome: none,
      source: 't',
    });
    const run = (await store.getRun(logged.runId))!;
    expect(Object.keys(run.metrics).filter((key) => key.startsWith('behavioural'))).toEqual([]);
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
      ...instrumentStore(store),
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
    // args, performance, confusion matrix, mistakes, behavioural, reference profile, slices and the model files.
    expect(calls.filter((call) => call.startsWith('artifact '))).toHaveLength(7 + MODEL_FILES.length);
  });

  it('an interruption while artifacts are written leaves the run KILLED, never FINISHED', async () => {
    const controller = new AbortController();
    const statuses: string[] = [];
    let artifacts = 0;
    const interrupted: TrackingStore = {
      ...instrumentStore(store),
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

describe('the dataset input and the MLflow 3 logged model of a run', () => {
  it('a data file becomes a dataset input: content digest, file:// source, schema, row count', async () => {
    const bytes = new Uint8Array(await readFile(SAMPLE_DATA));
    const { rows, input } = await readDataWithInput(SAMPLE_DATA, 'training');
    expect(input.dataset.digest).toBe(createHash('sha256').update(bytes).digest('hex').slice(0, 16));
    expect(fileDigest(Uint8Array.of(...bytes, 10))).not.toBe(input.dataset.digest);
    expect(input.dataset.name).toBe('projects.csv');
    expect(input.dataset.sourceType).toBe('local');
    expect(JSON.parse(input.dataset.source)).toEqual({ uri: pathToFileURL(SAMPLE_DATA).href });
    expect(JSON.parse(input.dataset.profile ?? '')).toEqual({ num_rows: rows.length });
    expect(
      JSON.parse(input.dataset.schema ?? '').mlflow_colspec.map((c: { name: string }) => c.name),
    ).toEqual(['title', 'description', 'tag']);
    expect(input.tags).toEqual({ 'mlflow.data.context': 'training' });
    // As Python's json.dumps writes it, byte for byte what MLflow's client records.
    expect(input.dataset.profile).toBe(`{"num_rows": ${rows.length}}`);
  });

  it('logs the data as an input and the model as a READY logged model; the run artifacts stay as they were', async () => {
    const { input } = await readDataWithInput(SAMPLE_DATA, 'training');
    const logged = await logTrainingRun(store, {
      experiment: 'logged-model',
      runName: 'lm',
      args: ARGS,
      seed: 3,
      outcome,
      source: 'tagger train',
      datasets: [input],
    });
    const run = await store.getRun(logged.runId);
    expect(run?.info.status).toBe('FINISHED');
    expect(run?.inputs).toEqual([input]);
    expect(run?.outputs).toEqual([{ modelId: logged.modelId, step: 0 }]);
    expect((await store.listArtifacts(logged.runId)).map((entry) => entry.path)).toEqual([
      RUN_ARTIFACTS.args,
      RUN_ARTIFACTS.behavioural,
      RUN_ARTIFACTS.confusion,
      RUN_ARTIFACTS.modelDir,
      RUN_ARTIFACTS.performance,
      RUN_ARTIFACTS.referenceProfile,
      RUN_ARTIFACTS.slices,
      RUN_ARTIFACTS.mistakes,
    ]);
    // What the inspection page shows: the test split's confusion matrix and mistakes, as evaluated.
    const artifactJson = async (path: string) =>
      JSON.parse(decoder.decode(await store.readArtifact(logged.runId, path)));
    expect(await artifactJson(RUN_ARTIFACTS.confusion)).toEqual(outcome.confusionAndMistakes.confusion);
    expect(await artifactJson(RUN_ARTIFACTS.mistakes)).toEqual(outcome.confusionAndMistakes.mistakes);
    const { matrix } = outcome.confusionAndMistakes.confusion!;
    expect(matrix.flat().reduce((a, b) => a + b, 0)).toBe(outcome.sizes.test);
    // The test split's reference profile, for drift monitoring: every test row counted once per signal.
    const reference = await artifactJson(RUN_ARTIFACTS.referenceProfile);
    expect(reference).toEqual(JSON.parse(JSON.stringify(outcome.reference)));
    expect(reference.rows).toBe(outcome.sizes.test);
    for (const signal of ['confidence', 'unseen_ngrams', 'text_length'] as const) {
      expect(reference[signal].counts.reduce((a: number, b: number) => a + b, 0)).toBe(outcome.sizes.test);
    }
    expect(Object.values(reference.predicted_tag).reduce((a, b) => Number(a) + Number(b), 0)).toBe(
      outcome.sizes.test,
    );
    expect(reference.vocabulary.length).toBeGreaterThan(100);

    const model = await store.getLoggedModel(logged.modelId);
    expect(model).toMatchObject({
      name: 'model',
      status: 'READY',
      experimentId: logged.experimentId,
      sourceRunId: logged.runId,
      params: run?.params,
    });
    expect(model?.tags[MODEL_FORMAT_TAG]).toBe(MODEL_FORMAT);
    // The final metrics are the model's too; the epoch histories belong to the run only.
    expect(model?.metrics.f1).toBe(outcome.performance.overall.f1);
    expect(Object.keys(model?.metrics ?? {}).sort()).toEqual(
      Object.keys(run?.metrics ?? {})
        .filter((key) => key !== 'train_loss' && key !== 'val_loss')
        .sort(),
    );
    const mlmodel = parseYaml(decoder.decode(await store.readLoggedModelArtifact(logged.modelId, 'MLmodel')));
    expect(mlmodel).toMatchObject({
      artifact_path: model?.artifactLocation,
      flavors: { tagger: { format: MODEL_FORMAT, data: 'tagger-model.json' } },
      model_id: logged.modelId,
      run_id: logged.runId,
    });
    expect(mlmodel.utc_time_created).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$/);
    for (const name of MODEL_FILES) {
      const fromModel = await store.readLoggedModelArtifact(logged.modelId, name);
      const fromRun = await store.readArtifact(logged.runId, `${RUN_ARTIFACTS.modelDir}/${name}`);
      expect(Buffer.from(fromModel).equals(Buffer.from(fromRun)), name).toBe(true);
    }
  });

  it('a model file that cannot be stored fails the run and leaves the model UPLOAD_FAILED', async () => {
    const failing: TrackingStore = {
      ...instrumentStore(store),
      logLoggedModelArtifact: async () => {
        throw new Error('disk full');
      },
    };
    const error = await logTrainingRun(failing, {
      experiment: 'upload-failed',
      runName: 'u',
      args: ARGS,
      seed: 3,
      outcome,
      source: 't',
    }).catch((caught: unknown) => caught);
    expect((error as Error).message).toBe('disk full');
    const experiment = await store.getExperimentByName('upload-failed');
    const [run] = await store.searchRuns(experiment!.experimentId);
    expect(run?.info.status).toBe('FAILED');
    const models = await store.searchLoggedModels(experiment!.experimentId, { sourceRunId: run!.info.runId });
    expect(models.map((model) => model.status)).toEqual(['UPLOAD_FAILED']);
  });
});
