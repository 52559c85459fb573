/**
 * The contract for what a run used and produced (dataset inputs, run outputs, MLflow 3 logged models),
 * part of `runTrackingStoreContract`, so every adapter (file layout, SQLite, PostgreSQL, a real MLflow
 * server) passes the same cases. Same rules as `contract.ts`: only the interface, own experiments.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { DatasetInput, TrackingStore } from '../../src/tracking/store.js';
import { TrackingError } from '../../src/tracking/store.js';

const encoder = new TextEncoder();

export const TRAINING_INPUT: DatasetInput = {
  dataset: {
    name: 'projects.csv',
    digest: '0123456789abcdef',
    sourceType: 'local',
    source: '{"uri": "file:///data/projects.csv"}',
    schema: '{"mlflow_colspec": [{"type": "string", "name": "title", "required": true}]}',
    profile: '{"num_rows": 3}',
  },
  tags: { 'mlflow.data.context': 'training' },
};

async function expectCode(fn: () => Promise<unknown>, code: string): Promise<void> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a TrackingError ${code}`).toBeInstanceOf(TrackingError);
  expect((caught as TrackingError).code, (caught as TrackingError).message).toBe(code);
}

export function defineOutputsContract(
  store: () => TrackingStore,
  newExperiment: () => Promise<string>,
): void {
  it('inputs: a dataset input with its context tag is read back by getRun, once', async () => {
    const s = store();
    const experimentId = await newExperiment();
    const { info } = await s.createRun(experimentId, { runName: 'inputs' });
    expect((await s.getRun(info.runId))?.inputs).toEqual([]);
    const testing: DatasetInput = {
      dataset: {
        ...TRAINING_INPUT.dataset,
        name: 'holdout.csv',
        digest: 'fedcba9876543210',
        schema: null,
        profile: null,
      },
      tags: { 'mlflow.data.context': 'testing' },
    };
    await s.logInputs(info.runId, [TRAINING_INPUT, testing]);
    // Logging the same dataset again (this run or another) adds nothing to the run.
    await s.logInputs(info.runId, [TRAINING_INPUT]);
    const other = await s.createRun(experimentId, { runName: 'same data' });
    await s.logInputs(other.info.runId, [TRAINING_INPUT]);

    const run = await s.getRun(info.runId);
    const byName = [...(run?.inputs ?? [])].sort((a, b) => (a.dataset.name < b.dataset.name ? -1 : 1));
    expect(byName).toEqual([testing, TRAINING_INPUT]);
    expect((await s.getRun(other.info.runId))?.inputs).toEqual([TRAINING_INPUT]);
  });

  it('inputs: invalid datasets are INVALID_ARGUMENT and write nothing', async () => {
    const s = store();
    const experimentId = await newExperiment();
    const { info } = await s.createRun(experimentId, { runName: 'bad-inputs' });
    const bad = (change: Partial<DatasetInput['dataset']>): DatasetInput => ({
      dataset: { ...TRAINING_INPUT.dataset, ...change },
      tags: {},
    });
    for (const input of [bad({ name: '' }), bad({ digest: 'x'.repeat(37) }), bad({ sourceType: '' })]) {
      await expectCode(() => s.logInputs(info.runId, [TRAINING_INPUT, input]), 'INVALID_ARGUMENT');
    }
    await expectCode(
      () => s.logInputs(info.runId, [{ ...TRAINING_INPUT, tags: { context: 'v'.repeat(501) } }]),
      'INVALID_ARGUMENT',
    );
    expect((await s.getRun(info.runId))?.inputs).toEqual([]);
  });

  it('logged models: PENDING, then READY with params, tags, linked metrics, artifacts and a run output', async () => {
    const s = store();
    const experimentId = await newExperiment();
    const { info } = await s.createRun(experimentId, { runName: 'model-run' });
    const before = Date.now();
    const created = await s.createLoggedModel(experimentId, {
      name: 'model',
      sourceRunId: info.runId,
      params: { lr: '0.1', 'nested/param': 'yes' },
      tags: { 'tagger.model_format': 'tagger-model/1.1' },
    });
    expect(created.modelId).toMatch(/^m-[0-9a-f]{32}$/);
    expect(created).toMatchObject({
      experimentId,
      name: 'model',
      status: 'PENDING',
      sourceRunId: info.runId,
      params: { lr: '0.1', 'nested/param': 'yes' },
      tags: { 'tagger.model_format': 'tagger-model/1.1' },
      metrics: {},
    });
    expect(created.creationTimestamp).toBeGreaterThanOrEqual(before - 60_000);
    expect(created.artifactLocation).toContain(created.modelId);

    const weights = Uint8Array.from({ length: 256 }, (_, i) => i);
    await s.logLoggedModelArtifact(created.modelId, 'MLmodel', encoder.encode('flavors: {}\n'));
    await s.logLoggedModelArtifact(created.modelId, 'data/weights.bin', weights);
    expect(
      Buffer.from(await s.readLoggedModelArtifact(created.modelId, 'data/weights.bin')).equals(
        Buffer.from(weights),
      ),
    ).toBe(true);
    await expectCode(() => s.readLoggedModelArtifact(created.modelId, 'absent.txt'), 'NOT_FOUND');
    await expectCode(
      () => s.logLoggedModelArtifact(created.modelId, '../escape', weights),
      'INVALID_ARGUMENT',
    );

    // Final metrics go to the run and, carrying the model id, to the model; epoch history only to the run.
    await s.logBatch(info.runId, {
      metrics: [
        { key: 'loss', value: 0.5, timestamp: 1_000, step: 1 },
        { key: 'f1', value: 0.8, timestamp: 2_000, step: 0, modelId: created.modelId },
        { key: 'tag.nlp.f1', value: 0.7, timestamp: 2_000, step: 0, modelId: created.modelId },
      ],
    });
    await s.logOutputs(info.runId, [{ modelId: created.modelId, step: 0 }]);
    const ready = await s.finalizeLoggedModel(created.modelId, 'READY');
    expect(ready.status).toBe('READY');
    expect(ready.lastUpdatedTimestamp).toBeGreaterThanOrEqual(created.lastUpdatedTimestamp);

    const fetched = await s.getLoggedModel(created.modelId);
    expect(fetched).toMatchObject({
      modelId: created.modelId,
      status: 'READY',
      sourceRunId: info.runId,
      artifactLocation: created.artifactLocation,
      params: created.params,
      metrics: { f1: 0.8, 'tag.nlp.f1': 0.7 },
    });
    const run = await s.getRun(info.runId);
    expect(run?.outputs).toEqual([{ modelId: created.modelId, step: 0 }]);
    expect(run?.metrics).toEqual({ loss: 0.5, f1: 0.8, 'tag.nlp.f1': 0.7 });
    expect(await s.getMetricHistory(info.runId, 'f1')).toEqual([
      { key: 'f1', value: 0.8, timestamp: 2_000, step: 0 },
    ]);
  });

  it('logged models: search by experiment and source run, newest first; unknown ids', async () => {
    const s = store();
    const experimentId = await newExperiment();
    const first = await s.createRun(experimentId, { runName: 'first' });
    const second = await s.createRun(experimentId, { runName: 'second' });
    const a = await s.createLoggedModel(experimentId, { name: 'model', sourceRunId: first.info.runId });
    const b = await s.createLoggedModel(experimentId, { name: 'model', sourceRunId: second.info.runId });
    const elsewhere = await newExperiment();
    await s.createLoggedModel(elsewhere, { name: 'model' });

    const ids = (models: { modelId: string }[]) => models.map((model) => model.modelId);
    expect(ids(await s.searchLoggedModels(experimentId, { sourceRunId: first.info.runId }))).toEqual([
      a.modelId,
    ]);
    expect(new Set(ids(await s.searchLoggedModels(experimentId)))).toEqual(new Set([a.modelId, b.modelId]));
    expect(
      await s.searchLoggedModels(experimentId, { sourceRunId: randomBytes(16).toString('hex') }),
    ).toEqual([]);
    expect(await s.getLoggedModel(`m-${randomBytes(16).toString('hex')}`)).toBeNull();
    await expectCode(
      () => s.finalizeLoggedModel(`m-${randomBytes(16).toString('hex')}`, 'READY'),
      'NOT_FOUND',
    );
    await expectCode(() => s.getLoggedModel('../../etc'), 'INVALID_ARGUMENT');
    await expectCode(() => s.createLoggedModel(experimentId, { name: 'a/b' }), 'INVALID_ARGUMENT');
  });
}
