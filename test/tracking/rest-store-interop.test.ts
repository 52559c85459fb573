/**
 * Interop through a real `mlflow server`: runs logged by Python MLflow are read by the REST adapter
 * with the same values and order, and runs written by the adapter are seen by `MlflowClient` the same
 * way. Python runs `python/mlflow_interop.py` (JSON in/out, shared with the file-store interop tests).
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestTrackingStore } from '../../src/tracking/rest-store.js';
import type { MetricPoint } from '../../src/tracking/store.js';
import { REPO_ROOT, venvPython } from '../support/components.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../support/mlflow-server.js';
import { uniqueName } from './contract.js';

const mlflow = venvMlflow();
const python = mlflow ? venvPython() : null;
const SCRIPT = resolve(REPO_ROOT, 'python', 'mlflow_interop.py');

type JsonFloat = number | 'NaN' | 'Infinity' | '-Infinity';
interface PyRun {
  run_name: string;
  status: string;
  start_time: number;
  end_time: number | null;
  experiment_id: string;
  metrics: Record<string, JsonFloat>;
  params: Record<string, string>;
  tags: Record<string, string>;
  history: Record<string, { key: string; value: JsonFloat; timestamp: number; step: number }[]>;
  artifacts: Record<string, { path: string; is_dir: boolean; file_size: number | null }[]>;
  downloads: Record<string, string>;
}
interface PyAnswer {
  error?: string;
  experiment_id: string;
  order: string[];
  runs: Record<string, PyRun>;
  created?: string[];
}

const toNumber = (value: JsonFloat): number => (typeof value === 'number' ? value : Number(value));
const numbers = (metrics: Record<string, JsonFloat>): Record<string, number> =>
  Object.fromEntries(Object.entries(metrics).map(([k, v]) => [k, toNumber(v)]));

function runPython(command: Record<string, unknown>): Promise<PyAnswer> {
  return new Promise((resolvePromise, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, PYTHONWARNINGS: 'ignore' };
    for (const key of Object.keys(env)) if (key.startsWith('MLFLOW_TRACKING_')) delete env[key];
    const child = execFile(
      python!,
      [SCRIPT],
      { env, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`mlflow_interop.py failed: ${error.message}\n${stderr}`));
        let answer: PyAnswer;
        try {
          answer = JSON.parse(stdout) as PyAnswer;
        } catch {
          return reject(new Error(`mlflow_interop.py printed no JSON answer:\n${stdout}\n${stderr}`));
        }
        if (answer.error) reject(new Error(`mlflow_interop.py: ${answer.error}`));
        else resolvePromise(answer);
      },
    );
    child.stdin?.end(JSON.stringify(command));
  });
}

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
    const step = (key: string, values: (number | string)[]) =>
      values.map((value, i) => ({ key, value, step: i }));
    const answer = await runPython({
      command: 'write',
      tracking_uri: server.uri,
      experiment_name: experimentName,
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
      runs: [
        {
          name: 'py-good',
          params: { lr: 0.01, epochs: 10 },
          metrics: [...step('f1', [0.5, 0.8]), ...step('val/loss', [0.9, 0.4])],
          tags: { 'model.format': 'json-v1' },
          artifacts: {
            'args.json': '{"lr": 0.01}',
            'model/tagger-model.json': '{"format": "tagger-model/1"}',
          },
        },
        { name: 'py-nan', params: { lr: 0.1 }, metrics: step('f1', [0.99, 'NaN']), tags: {}, artifacts: {} },
        { name: 'py-none', params: { lr: 0.2 }, metrics: step('loss', [1]), tags: {}, artifacts: {} },
        { name: 'py-best', params: { lr: 0.05 }, metrics: step('f1', [0.95]), tags: {}, artifacts: {} },
        { name: 'py-tie', params: { lr: 0.3 }, metrics: step('f1', [0.3, 0.8]), tags: {}, artifacts: {} },
      ],
    });

    const experiment = await store.getExperimentByName(experimentName);
    expect(experiment?.experimentId).toBe(answer.experiment_id);
    const runs = await store.searchRuns(answer.experiment_id, {
      orderByMetric: { key: 'f1', descending: true },
    });
    expect(runs.map((run) => run.info.runId)).toEqual(answer.order);
    expect(runs.map((run) => run.info.runName)).toEqual([
      'py-best',
      'py-tie',
      'py-good',
      'py-nan',
      'py-none',
    ]);
    expect(new Set(answer.created)).toEqual(new Set(answer.order));

    for (const run of runs) {
      const py = answer.runs[run.info.runId]!;
      expect(run.info.runName).toBe(py.run_name);
      expect(run.info.status).toBe(py.status);
      expect(run.info.startTime).toBe(py.start_time);
      expect(run.info.endTime).toBe(py.end_time);
      expect(run.info.experimentId).toBe(py.experiment_id);
      expect(run.params).toEqual(py.params);
      expect(run.tags).toEqual(py.tags);
      expect(run.metrics).toEqual(numbers(py.metrics));
      const history = await store.getMetricHistory(run.info.runId, 'f1');
      expect(history).toEqual(py.history['f1']!.map((point) => ({ ...point, value: toNumber(point.value) })));
      const listed = await store.listArtifacts(run.info.runId);
      expect(listed.map(({ path, isDir, size }) => ({ path, is_dir: isDir, file_size: size }))).toEqual(
        py.artifacts[''],
      );
    }
    const good = runs.find((run) => run.info.runName === 'py-good')!;
    expect(good.params).toEqual({ lr: '0.01', epochs: '10' });
    expect(good.metrics).toEqual({ f1: 0.8, 'val/loss': 0.4 });
    expect(good.tags['model.format']).toBe('json-v1');
    const model = await store.listArtifacts(good.info.runId, 'model');
    expect(model.map(({ path, isDir, size }) => ({ path, is_dir: isDir, file_size: size }))).toEqual(
      answer.runs[good.info.runId]!.artifacts['model'],
    );
    const json = new TextDecoder().decode(
      await store.readArtifact(good.info.runId, 'model/tagger-model.json'),
    );
    expect(JSON.parse(json)).toEqual({ format: 'tagger-model/1' });
    expect(runs.find((run) => run.info.runName === 'py-nan')!.metrics['f1']).toBeNaN();
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
    const ids: Record<string, string> = {};
    const weights = Uint8Array.of(0, 1, 2, 254, 255);
    for (const spec of specs) {
      const { info } = await store.createRun(experimentId, {
        runName: spec.name,
        startTime: spec.start,
        userId: 'tagger',
        tags: { 'tagger.kind': 'interop' },
      });
      ids[spec.name] = info.runId;
      const metrics: MetricPoint[] = [{ key: 'val/loss', value: 0.25, timestamp: spec.start, step: 0 }];
      if (spec.f1 !== undefined) {
        metrics.push({ key: 'f1', value: 0.99, timestamp: spec.start, step: 0 });
        metrics.push({ key: 'f1', value: spec.f1, timestamp: spec.start + 1, step: 1 });
      }
      await store.logBatch(info.runId, { metrics, params: { lr: '0.01', name: spec.name } });
      await store.logArtifact(info.runId, 'args.json', new TextEncoder().encode('{"lr":0.01}'));
      await store.logArtifact(info.runId, 'model/weights.bin', weights);
      await store.updateRun(info.runId, { status: 'FINISHED', endTime: spec.start + 10 });
    }

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
    expect(answer.order).toEqual(tagger.map((run) => run.info.runId));
    expect(answer.order).toEqual([ids['best'], ids['tie-newer'], ids['good'], ids['nan'], ids['no-f1']]);
    for (const run of tagger) {
      const py = answer.runs[run.info.runId]!;
      expect(py.run_name).toBe(run.info.runName);
      expect(py.status).toBe('FINISHED');
      expect(py.start_time).toBe(run.info.startTime);
      expect(py.end_time).toBe(run.info.endTime);
      expect(py.params).toEqual(run.params);
      expect(py.tags).toEqual(run.tags);
      expect(numbers(py.metrics)).toEqual(run.metrics);
      const history = py.history['f1']!.map((point) => ({ ...point, value: toNumber(point.value) }));
      expect(history).toEqual(await store.getMetricHistory(run.info.runId, 'f1'));
      expect(py.artifacts['']).toEqual([
        { path: 'args.json', is_dir: false, file_size: 11 },
        { path: 'model', is_dir: true, file_size: null },
      ]);
      expect(py.artifacts['model']).toEqual([{ path: 'model/weights.bin', is_dir: false, file_size: 5 }]);
      expect(Buffer.from(py.downloads['model/weights.bin']!, 'base64').equals(Buffer.from(weights))).toBe(
        true,
      );
    }
    expect(answer.runs[ids['best']!]!.history['f1']).toHaveLength(2);
    expect(answer.runs[ids['nan']!]!.metrics['f1']).toBe('NaN');
    expect(answer.runs[ids['no-f1']!]!.metrics).not.toHaveProperty('f1');
  }, 120_000);
});
