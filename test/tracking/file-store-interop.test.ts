/**
 * Interop with real MLflow (the project venv's mlflow, 3.17.2): runs written by Tagger's file store are
 * read by Python MLflow with the same data and order, and runs logged by Python are read by Tagger the
 * same way. One Python process per scenario (`python/mlflow_interop.py`, JSON in/out).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../src/tracking/file-store.js';
import type { MetricPoint } from '../../src/tracking/store.js';
import { REPO_ROOT, venvPython } from '../support/components.js';

const python = venvPython();
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
}
interface PyAnswer {
  error?: string;
  experiment_id: string;
  order: string[];
  runs: Record<string, PyRun>;
  created?: string[];
}

const toNumber = (value: JsonFloat): number => (typeof value === 'number' ? value : Number(value));

/** Runs one scenario in Python; rejects with MLflow's stderr when the script fails. */
function runPython(command: Record<string, unknown>): Promise<PyAnswer> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      python!,
      [SCRIPT],
      {
        env: { ...process.env, MLFLOW_ALLOW_FILE_STORE: 'true', PYTHONWARNINGS: 'ignore' },
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`mlflow_interop.py failed: ${error.message}\n${stderr}`));
          return;
        }
        const answer = JSON.parse(stdout) as PyAnswer;
        if (answer.error) reject(new Error(`mlflow_interop.py: ${answer.error}`));
        else resolvePromise(answer);
      },
    );
    child.stdin?.end(JSON.stringify(command));
  });
}

describe.skipIf(python === null)('file store interop with Python MLflow', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tagger-interop-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('MLflow reads runs written by Tagger: same params, metrics, history, artifacts and order', async () => {
    const root = join(dir, 'tagger-mlruns');
    const store = await FileTrackingStore.open(root);
    const experimentId = await store.createExperiment('best');
    const specs: { name: string; start: number; f1?: number }[] = [
      { name: 'good', start: 1_000, f1: 0.8 },
      { name: 'best', start: 2_000, f1: 0.9 },
      { name: 'tie-newer', start: 3_000, f1: 0.8 },
      { name: 'nan', start: 4_000, f1: Number.NaN },
      { name: 'no-f1', start: 5_000 },
      { name: 'tie-same-a', start: 6_000, f1: 0.5 },
      { name: 'tie-same-b', start: 6_000, f1: 0.5 },
    ];
    const ids: Record<string, string> = {};
    for (const spec of specs) {
      const { info } = await store.createRun(experimentId, {
        runName: spec.name,
        startTime: spec.start,
        tags: { 'mlflow.user': 'tagger' },
      });
      ids[spec.name] = info.runId;
      const metrics: MetricPoint[] = [{ key: 'val/loss', value: 0.25, timestamp: spec.start, step: 0 }];
      if (spec.f1 !== undefined) {
        metrics.push({ key: 'f1', value: 0.99, timestamp: spec.start, step: 0 });
        metrics.push({ key: 'f1', value: spec.f1, timestamp: spec.start + 1, step: 1 });
      }
      await store.logBatch(info.runId, {
        metrics,
        params: { lr: '0.01', name: spec.name, 'model/kind': 'sgd' },
        tags: { 'tagger.kind': 'interop' },
      });
      await store.logArtifact(info.runId, 'args.json', new TextEncoder().encode('{"lr":0.01}'));
      await store.logArtifact(info.runId, 'model/weights.bin', Uint8Array.of(0, 1, 2, 255));
      await store.updateRun(info.runId, { status: 'FINISHED', endTime: spec.start + 10 });
    }
    // Debris of a crash: a run folder without meta.yaml and stray temp files.
    const experimentDir = join(root, experimentId);
    await mkdir(join(experimentDir, 'f'.repeat(32), 'metrics'), { recursive: true });
    await writeFile(join(experimentDir, 'f'.repeat(32), 'metrics', 'f1'), '1 0.99 0\n');
    await writeFile(join(experimentDir, '.tagger-tmp-1-deadbeef'), 'run_id: half');
    await writeFile(join(root, '.tagger-tmp-1-cafe'), 'half');

    const tagger = await store.searchRuns(experimentId, { orderByMetric: { key: 'f1', descending: true } });
    const answer = await runPython({
      command: 'read',
      tracking_uri: pathToFileURL(root).href,
      experiment_name: 'best',
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
    });

    expect(answer.experiment_id).toBe(experimentId);
    expect(answer.order).toEqual(tagger.map((run) => run.info.runId));
    const [tieA, tieB] = [ids['tie-same-a']!, ids['tie-same-b']!].sort();
    expect(answer.order).toEqual([
      ids['best'],
      ids['tie-newer'],
      ids['good'],
      tieA,
      tieB,
      ids['nan'],
      ids['no-f1'],
    ]);
    for (const run of tagger) {
      const py = answer.runs[run.info.runId]!;
      expect(py.run_name).toBe(run.info.runName);
      expect(py.status).toBe('FINISHED');
      expect(py.start_time).toBe(run.info.startTime);
      expect(py.end_time).toBe(run.info.endTime);
      expect(py.experiment_id).toBe(experimentId);
      expect(py.params).toEqual(run.params);
      expect(py.tags).toEqual(run.tags);
      expect(Object.fromEntries(Object.entries(py.metrics).map(([k, v]) => [k, toNumber(v)]))).toEqual(
        run.metrics,
      );
      const history = py.history['f1']!.map((point) => ({ ...point, value: toNumber(point.value) }));
      expect(history).toEqual(await store.getMetricHistory(run.info.runId, 'f1'));
      expect(py.artifacts['']).toEqual([
        { path: 'args.json', is_dir: false, file_size: 11 },
        { path: 'model', is_dir: true, file_size: null },
      ]);
      expect(py.artifacts['model']).toEqual([{ path: 'model/weights.bin', is_dir: false, file_size: 4 }]);
    }
    expect(answer.runs[ids['best']!]!.history['f1']).toHaveLength(2);
    expect(answer.runs[ids['nan']!]!.metrics['f1']).toBe('NaN');
    expect(answer.runs[ids['no-f1']!]!.metrics).not.toHaveProperty('f1');
  }, 120_000);

  it('Tagger reads runs logged by Python MLflow: same values, history, artifacts and order', async () => {
    const root = join(dir, 'python-mlruns');
    const step = (key: string, values: (number | string)[]) =>
      values.map((value, i) => ({ key, value, step: i }));
    const answer = await runPython({
      command: 'write',
      tracking_uri: pathToFileURL(root).href,
      experiment_name: 'best',
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
    const warnings: string[] = [];
    const store = new FileTrackingStore(root, { onWarning: (message) => warnings.push(message) });
    const experiment = await store.getExperimentByName('best');
    expect(experiment?.experimentId).toBe(answer.experiment_id);
    const runs = await store.searchRuns(answer.experiment_id, {
      orderByMetric: { key: 'f1', descending: true },
    });
    expect(warnings).toEqual([]);
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
      expect(run.params).toEqual(py.params);
      expect(run.tags).toEqual(py.tags);
      expect(run.metrics).toEqual(
        Object.fromEntries(Object.entries(py.metrics).map(([k, v]) => [k, toNumber(v)])),
      );
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
    expect(good.tags['mlflow.runName']).toBe('py-good');
    const model = await store.listArtifacts(good.info.runId, 'model');
    expect(model.map(({ path, isDir, size }) => ({ path, is_dir: isDir, file_size: size }))).toEqual(
      answer.runs[good.info.runId]!.artifacts['model'],
    );
    const json = new TextDecoder().decode(
      await store.readArtifact(good.info.runId, 'model/tagger-model.json'),
    );
    expect(JSON.parse(json)).toEqual({ format: 'tagger-model/1' });
    expect(Number.isNaN(runs.find((run) => run.info.runName === 'py-nan')!.metrics['f1'])).toBe(true);

    // Tagger can keep logging into a Python-created store, and MLflow's layout stays intact for it.
    const added = await store.createRun(answer.experiment_id, { runName: 'tagger-after-python' });
    expect((await store.getRun(added.info.runId))?.info.status).toBe('RUNNING');
  }, 120_000);
});
