/**
 * Inputs, outputs and logged models in the file layout: the exact files MLflow 3.17.2 writes (compared
 * with files MLflow wrote itself, see `src/tracking/file/datasets-and-models.ts`), and broken or half-written
 * records, which are MALFORMED naming the file or skipped like MLflow skips them. The local stores'
 * check that a linked metric names a model of the run's experiment is here too (SQLite as well).
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../../src/tracking/file/file-store.js';
import { SqlTrackingStore } from '../../../src/tracking/sql/sql-store.js';
import type { TrackingStore } from '../../../src/tracking/store.js';
import { useTempDir } from '../../support/temp-dir.js';
import { expectTrackingError } from '../contract.js';
import { TRAINING_INPUT } from '../contract-datasets-and-models.js';

const scratch = useTempDir('tagger-file-outputs-');

describe('file store: the files of inputs, outputs and logged models', () => {
  it('writes meta.yaml files with the keys and values MLflow writes', async () => {
    const root = join(scratch.path, 'layout');
    const store = await FileTrackingStore.open(root);
    const experimentId = await store.createExperiment('layout');
    const { info } = await store.createRun(experimentId, { runName: 'r' });
    await store.logInputs(info.runId, [TRAINING_INPUT]);
    const model = await store.createLoggedModel(experimentId, { name: 'model', sourceRunId: info.runId });
    await store.logOutputs(info.runId, [{ modelId: model.modelId, step: 0 }]);
    await store.logBatch(info.runId, {
      metrics: [{ key: 'f1', value: 0.5, timestamp: 7, step: 0, modelId: model.modelId }],
    });
    const experimentDir = join(root, experimentId);
    const [datasetId] = await readdir(join(experimentDir, 'datasets'));
    const [inputId] = await readdir(join(experimentDir, info.runId, 'inputs'));
    const text = (...path: string[]) => readFile(join(experimentDir, ...path), 'utf8');
    expect(await text('datasets', datasetId!, 'meta.yaml')).toBe(
      [
        'digest: 0123456789abcdef',
        'name: projects.csv',
        `profile: '{"num_rows": 3}'`,
        `schema: '{"mlflow_colspec": [{"type": "string", "name": "title", "required": true}]}'`,
        `source: '{"uri": "file:///data/projects.csv"}'`,
        'source_type: local',
        '',
      ].join('\n'),
    );
    expect(await text(info.runId, 'inputs', inputId!, 'meta.yaml')).toBe(
      [
        `destination_id: ${datasetId}`,
        'destination_type: RUN',
        `source_id: ${datasetId}`,
        'source_type: DATASET',
        'tags:',
        '  mlflow.data.context: training',
        '',
      ].join('\n'),
    );
    expect(await text(info.runId, 'outputs', model.modelId, 'meta.yaml')).toBe(
      [
        `destination_id: ${model.modelId}`,
        'destination_type: MODEL_OUTPUT',
        `source_id: ${model.modelId}`,
        'source_type: RUN_OUTPUT',
        'step: 0',
        'tags: {}',
        '',
      ].join('\n'),
    );
    const meta = await text('models', model.modelId, 'meta.yaml');
    expect(meta).toContain(`experiment_id: '${experimentId}'`);
    expect(meta).toContain('status: 1\n');
    expect(meta).toContain(`artifact_location: file://${experimentDir}/models/${model.modelId}/artifacts\n`);
    expect(await text('models', model.modelId, 'metrics', 'f1')).toBe(`7 0.5 0 ${info.runId}\n`);
  });

  it('broken records are MALFORMED naming the file; unfinished or dangling ones are skipped', async () => {
    const root = join(scratch.path, 'broken');
    const warnings: string[] = [];
    const store = new FileTrackingStore(root, { onWarning: (message) => warnings.push(message) });
    const experimentId = await store.createExperiment('broken');
    const { info } = await store.createRun(experimentId, { runName: 'r' });
    const runDir = join(root, experimentId, info.runId);

    // A crash between the folder and its meta.yaml: not an input yet.
    await mkdir(join(runDir, 'inputs', 'half'), { recursive: true });
    // An input whose dataset folder is gone: MLflow warns and skips it.
    await mkdir(join(runDir, 'inputs', 'dangling'), { recursive: true });
    await writeFile(
      join(runDir, 'inputs', 'dangling', 'meta.yaml'),
      'source_type: DATASET\nsource_id: abc\ndestination_type: RUN\ndestination_id: abc\ntags: {}\n',
    );
    expect((await store.getRun(info.runId))?.inputs).toEqual([]);
    expect(warnings.join('\n')).toContain('dataset abc');

    await writeFile(
      join(runDir, 'inputs', 'dangling', 'meta.yaml'),
      'source_type: DATASET\nsource_id: ../../x\n',
    );
    const error = await expectTrackingError(() => store.getRun(info.runId), 'MALFORMED');
    expect(error.message).toContain(join(runDir, 'inputs', 'dangling', 'meta.yaml'));
    await writeFile(join(runDir, 'inputs', 'dangling', 'meta.yaml'), 'tags: [unclosed\n');
    await expectTrackingError(() => store.getRun(info.runId), 'MALFORMED');
    await rm(join(runDir, 'inputs', 'dangling'), { recursive: true });

    const good = await store.createLoggedModel(experimentId, { name: 'model' });
    const bad = await store.createLoggedModel(experimentId, { name: 'model' });
    const badMeta = join(root, experimentId, 'models', bad.modelId, 'meta.yaml');
    await writeFile(badMeta, (await readFile(badMeta, 'utf8')).replace('status: 1', 'status: 9'));
    await mkdir(join(root, experimentId, 'models', 'm-unfinished'), { recursive: true });
    const found = await store.searchLoggedModels(experimentId);
    expect(found.map((model) => model.modelId)).toEqual([good.modelId]);
    expect(warnings.join('\n')).toContain(`logged model ${bad.modelId} skipped`);
    const badError = await expectTrackingError(() => store.getLoggedModel(bad.modelId), 'MALFORMED');
    expect(badError.message).toContain(badMeta);
  });
});

describe('local stores: a metric linked to a model outside the run experiment', () => {
  const stores: [string, () => Promise<TrackingStore>][] = [
    ['file store', async () => FileTrackingStore.open(join(scratch.path, 'linked'))],
    [
      'SQLite',
      async () => SqlTrackingStore.open(`sqlite:///${join(scratch.path, 'linked.db')}`, 'linked.db'),
    ],
  ];
  for (const [name, open] of stores) {
    it(`${name}: NOT_FOUND, and the batch logs nothing`, async () => {
      const store = await open();
      try {
        const experimentId = await store.createExperiment('linked');
        const { info } = await store.createRun(experimentId, { runName: 'r' });
        const foreign = await store.createLoggedModel(await store.createExperiment('other'), {
          name: 'model',
        });
        await expectTrackingError(
          () =>
            store.logBatch(info.runId, {
              params: { lr: '0.1' },
              metrics: [{ key: 'f1', value: 0.9, timestamp: 1, step: 0, modelId: foreign.modelId }],
            }),
          'NOT_FOUND',
        );
        const run = await store.getRun(info.runId);
        expect(run?.metrics).toEqual({});
        expect(run?.params).toEqual({});
        expect((await store.getLoggedModel(foreign.modelId))?.metrics).toEqual({});
      } finally {
        await store.close();
      }
    });
  }
});

describe('SQL store: a database without MLflow 3 tables', () => {
  it('logging a model is UNSUPPORTED naming `mlflow db upgrade`', async () => {
    const file = join(scratch.path, 'old.db');
    const store = await SqlTrackingStore.open(`sqlite:///${file}`, 'old.db');
    try {
      const experimentId = await store.createExperiment('old');
      const raw = new DatabaseSync(file);
      raw.exec(
        'DROP TABLE logged_model_metrics; DROP TABLE logged_model_params; DROP TABLE logged_model_tags; DROP TABLE logged_models',
      );
      raw.close();
      const error = await expectTrackingError(
        () => store.createLoggedModel(experimentId, { name: 'model' }),
        'UNSUPPORTED',
      );
      expect(error.message).toContain('mlflow db upgrade');
    } finally {
      await store.close();
    }
  });
});
