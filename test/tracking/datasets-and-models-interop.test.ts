/**
 * What MLflow 3.17.2's own Python client sees of a real `tagger train` run, on the file layout, SQLite
 * and a real `mlflow server`: the training file as a dataset input with Tagger's digest (and a source
 * MLflow parses back), and the trained model as a READY logged model of the run (found by
 * `search_logged_models` with a `source_run_id` filter, with the f1 metric and the run's params),
 * whose files MLflow downloads through `models:/<id>` and whose `MLmodel` it loads.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_FILES, MODEL_FORMAT } from '../../src/model/index.js';
import { FileTrackingStore } from '../../src/tracking/file/file-store.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import { fileDigest } from '../../src/train/dataset-input.js';
import { CLI_ENTRY } from '../support/cli.js';
import { SAMPLE_DATA, TSX_LOADER, venvPython } from '../support/components.js';
import { runInteropScript } from '../support/mlflow-interop.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../support/mlflow-server.js';
import { useTempDir } from '../support/temp-dir.js';

const mlflow = venvMlflow();
const python = mlflow ? venvPython() : null;

interface PyModel {
  model_id: string;
  name: string;
  status: string;
  experiment_id: string;
  source_run_id: string;
  artifact_location: string;
  params: Record<string, string>;
  metrics: Record<string, number | string>;
}
interface OutputsAnswer {
  dataset_inputs: {
    name: string;
    digest: string;
    source_type: string;
    source: string;
    schema: string | null;
    profile: string | null;
    tags: Record<string, string>;
  }[];
  source_uris: string[];
  outputs: string[];
  models: PyModel[];
  logged_model: PyModel;
  model_files: string[];
  flavors: Record<string, Record<string, unknown>>;
  mlmodel_model_id: string;
  mlmodel_run_id: string;
}

interface TrainJson {
  run_id: string;
  experiment_id: string;
  metrics: { f1: number };
}

describe.skipIf(!mlflow || !python)(
  'MLflow 3 sees the dataset input and the logged model of a tagger train run',
  () => {
    const scratch = useTempDir('tagger-outputs-interop-');
    let server: MlflowServer;
    beforeAll(async () => {
      server = await startMlflowServer(mlflow!);
    }, 240_000);
    afterAll(async () => {
      await server?.stop();
    });

    const check = async (trackingUri: string): Promise<void> => {
      const trained = await taggerTrain(scratch.path, trackingUri);
      const answer = (await runInteropScript(
        python!,
        {
          command: 'outputs',
          tracking_uri: trackingUri,
          experiment_id: trained.experiment_id,
          run_id: trained.run_id,
        },
        scratch.path,
      )) as unknown as OutputsAnswer;

      const digest = fileDigest(new Uint8Array(await readFile(SAMPLE_DATA)));
      expect(answer.dataset_inputs).toHaveLength(1);
      expect(answer.dataset_inputs[0]).toMatchObject({
        name: 'projects.csv',
        digest,
        source_type: 'local',
        tags: { 'mlflow.data.context': 'training' },
      });
      expect(answer.source_uris).toEqual([pathToFileURL(SAMPLE_DATA).href]);

      expect(answer.models).toHaveLength(1);
      const [model] = answer.models;
      expect(model).toMatchObject({
        name: 'model',
        status: 'READY',
        experiment_id: trained.experiment_id,
        source_run_id: trained.run_id,
      });
      expect(model!.model_id).toMatch(/^m-[0-9a-f]{32}$/);
      expect(Number(model!.metrics.f1)).toBe(trained.metrics.f1);
      expect(model!.params.seed).toBe('42');
      expect(answer.outputs).toEqual([model!.model_id]);
      expect(answer.logged_model).toEqual(model);

      expect(answer.model_files).toEqual(['MLmodel', ...MODEL_FILES].sort());
      expect(answer.flavors).toEqual({ tagger: { format: MODEL_FORMAT, data: 'tagger-model.json' } });
      expect(answer.mlmodel_model_id).toBe(model!.model_id);
      expect(answer.mlmodel_run_id).toBe(trained.run_id);
    };

    it('file store (mlruns/)', async () => {
      await check(pathToFileURL(join(scratch.path, 'mlruns')).href);
    }, 180_000);

    it('SQLite', async () => {
      await check(`sqlite:///${join(scratch.path, 'mlflow.db')}`);
    }, 180_000);

    it('MLflow tracking server (REST, proxied artifacts)', async () => {
      await check(server.uri);
    }, 180_000);
  },
);

/** A real `tagger train --json` into `trackingUri`: the run and experiment ids and the metrics. */
function taggerTrain(dir: string, trackingUri: string): Promise<TrainJson> {
  const args = JSON.stringify({ num_epochs: 3, ngram_max_range: 4 });
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [
        '--import',
        TSX_LOADER,
        CLI_ENTRY,
        'train',
        '--data',
        SAMPLE_DATA,
        '--args',
        args,
        '--quiet',
        '--json',
      ],
      { cwd: dir, env: { ...process.env, MLFLOW_TRACKING_URI: trackingUri }, timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`tagger train failed: ${error.message}\n${stderr}`));
        resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as TrainJson);
      },
    );
  });
}

describe.skipIf(!python)('Tagger reads the dataset inputs and logged models Python MLflow logs', () => {
  const scratch = useTempDir('tagger-outputs-read-');

  const check = async (trackingUri: string): Promise<void> => {
    const written = (await runInteropScript(
      python!,
      {
        command: 'write_outputs',
        tracking_uri: trackingUri,
        experiment_name: 'python-outputs',
        data_uri: pathToFileURL(SAMPLE_DATA).href,
      },
      scratch.path,
    )) as unknown as { experiment_id: string; run_id: string; model_id: string };
    const warnings: string[] = [];
    const store = trackingUri.startsWith('file:')
      ? new FileTrackingStore(trackingUri, { onWarning: (message) => warnings.push(message) })
      : await openTrackingStore(trackingUri);
    try {
      const run = await store.getRun(written.run_id);
      expect(run?.inputs).toEqual([
        {
          dataset: {
            name: 'python.csv',
            digest: 'cafe0123',
            sourceType: 'local',
            source: `{"uri": "${pathToFileURL(SAMPLE_DATA).href}"}`,
            schema: null,
            profile: null,
          },
          tags: { 'mlflow.data.context': 'training' },
        },
      ]);
      expect(run?.outputs).toEqual([{ modelId: written.model_id, step: 0 }]);
      expect(await store.getLoggedModel(written.model_id)).toMatchObject({
        name: 'model',
        status: 'READY',
        experimentId: written.experiment_id,
        sourceRunId: written.run_id,
        params: { lr: '0.1' },
        metrics: { f1: 0.75 },
      });
      const models = await store.searchLoggedModels(written.experiment_id, { sourceRunId: written.run_id });
      expect(models.map((model) => model.modelId)).toEqual([written.model_id]);
      expect(new TextDecoder().decode(await store.readLoggedModelArtifact(written.model_id, 'MLmodel'))).toBe(
        'flavors: {}\n',
      );
      expect(warnings).toEqual([]);
    } finally {
      await store.close();
    }
  };

  it('file store (mlruns/)', async () => {
    await check(pathToFileURL(join(scratch.path, 'mlruns')).href);
  }, 120_000);

  it('SQLite', async () => {
    await check(`sqlite:///${join(scratch.path, 'python.db')}`);
  }, 120_000);
});
