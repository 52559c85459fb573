/**
 * Interop through a real `mlflow server`: runs logged by Python MLflow are read by the REST adapter
 * with the same values and order, and runs written by the adapter are seen by `MlflowClient` the same
 * way. Python runs `python/mlflow_interop.py` (JSON in/out, shared with the file-store interop tests).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestTrackingStore } from '../../../src/tracking/rest/rest-store.js';
import { venvPython } from '../../support/components.js';
import {
  expectMlflowSeesTaggerRuns,
  expectTaggerSeesPythonRuns,
  logTaggerRuns,
  PYTHON_RUNS,
  type PyAnswer,
  runInteropScript,
  WEIGHTS,
} from '../../support/mlflow-interop.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../../support/mlflow-server.js';
import { uniqueName } from '../contract.js';

const mlflow = venvMlflow();
const python = mlflow ? venvPython() : null;
const runPython = (command: Record<string, unknown>): Promise<PyAnswer> => runInteropScript(python!, command);

describe.skipIf(!mlflow || !python)('REST store interop with Python MLflow through mlflow server', () => {
  let server: MlflowServer;
  let store: RestTrackingStore;
  beforeAll(async () => {
    server = await startMlflowServer(mlflow!);
    store = new RestTrackingStore({ uri: server.uri, env: {} });
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it('reads runs logged by Python MLflow with the same values, and in search_runs order', async () => {
    const experimentName = uniqueName('best');
    const answer = await runPython({
      command: 'write',
      tracking_uri: server.uri,
      experiment_name: experimentName,
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
      runs: PYTHON_RUNS,
    });

    const experiment = await store.getExperimentByName(experimentName);
    expect(experiment?.experimentId).toBe(answer.experiment_id);
    const runs = await expectTaggerSeesPythonRuns(store, answer);
    expect(answer.runs[runs.find((run) => run.info.runName === 'py-nan')!.info.runId]!.metrics['f1']).toBe(
      'NaN',
    );
  }, 120_000);

  it('MlflowClient sees runs written by the adapter: params, metrics, history, artifacts, order', async () => {
    const experimentName = uniqueName('best');
    const experimentId = await store.createExperiment(experimentName);
    const specs: { name: string; start: number; f1?: number }[] = [
      { name: 'good', start: 1_000, f1: 0.8 },
      { name: 'best', start: 2_000, f1: 0.9 },
      { name: 'nan', start: 3_000, f1: Number.NaN },
      { name: 'no-f1', start: 4_000 },
      { name: 'tie-newer', start: 5_000, f1: 0.8 },
    ];
    const ids = await logTaggerRuns(store, experimentId, specs);

    const tagger = await store.searchRuns(experimentId, { orderByMetric: { key: 'f1', descending: true } });
    const answer = await runPython({
      command: 'read',
      tracking_uri: server.uri,
      experiment_name: experimentName,
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
      download: ['model/weights.bin'],
    });
    expect(answer.experiment_id).toBe(experimentId);
    expect(answer.order).toEqual([ids['best'], ids['tie-newer'], ids['good'], ids['nan'], ids['no-f1']]);
    await expectMlflowSeesTaggerRuns(store, tagger, answer);
    for (const run of tagger) {
      const downloaded = Buffer.from(answer.runs[run.info.runId]!.downloads['model/weights.bin']!, 'base64');
      expect(downloaded.equals(Buffer.from(WEIGHTS))).toBe(true);
    }
    expect(answer.runs[ids['best']!]!.history['f1']).toHaveLength(2);
    expect(answer.runs[ids['nan']!]!.metrics['f1']).toBe('NaN');
    expect(answer.runs[ids['no-f1']!]!.metrics).not.toHaveProperty('f1');
  }, 120_000);
});
