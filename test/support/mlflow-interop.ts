/**
 * Shared pieces of the interop tests between a Tagger store (file or REST) and Python MLflow:
 * running `python/mlflow_interop.py` (JSON in/out), the runs both directions log, and the checks that
 * Tagger and MLflow see the same runs, values, history, artifacts and order.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import type { MetricPoint, Run, TrackingStore } from '../../src/tracking/store.js';
import { REPO_ROOT } from './components.js';

export type JsonFloat = number | 'NaN' | 'Infinity' | '-Infinity';
export interface ArtifactListing {
  path: string;
  is_dir: boolean;
  file_size: number | null;
}
export interface PyRun {
  run_name: string;
  status: string;
  start_time: number;
  end_time: number | null;
  experiment_id: string;
  metrics: Record<string, JsonFloat>;
  params: Record<string, string>;
  tags: Record<string, string>;
  history: Record<string, { key: string; value: JsonFloat; timestamp: number; step: number }[]>;
  artifacts: Record<string, ArtifactListing[]>;
  downloads: Record<string, string>;
}
export interface PyAnswer {
  error?: string;
  experiment_id: string;
  order: string[];
  runs: Record<string, PyRun>;
  created?: string[];
}

export const toNumber = (value: JsonFloat): number => (typeof value === 'number' ? value : Number(value));
export const numbers = (metrics: Record<string, JsonFloat>): Record<string, number> =>
  Object.fromEntries(Object.entries(metrics).map(([key, value]) => [key, toNumber(value)]));

/**
 * Runs one of the project's Python probes (`python/<script>`) with the venv's Python: one JSON command
 * on stdin, one JSON answer on stdout (`{"error": …}` rejects). The tracking URI travels in the command,
 * so inherited MLFLOW_TRACKING_* variables are dropped; file stores need MLFLOW_ALLOW_FILE_STORE on
 * MLflow ≥ 3.13.
 */
export function runPythonProbe<T extends { error?: string }>(
  python: string,
  script: string,
  command: Record<string, unknown>,
  cwd?: string,
): Promise<T> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    MLFLOW_ALLOW_FILE_STORE: 'true',
    PYTHONWARNINGS: 'ignore',
    // MLflow's telemetry sets and unsets a variable of os.environ from its own thread, so a request that
    // reads the environment meanwhile dies of a KeyError (_MLFLOW_TELEMETRY_SESSION_ID, seen once in the
    // interop test); it would also send events off this machine.
    MLFLOW_DISABLE_TELEMETRY: 'true',
  };
  for (const key of Object.keys(env)) if (key.startsWith('MLFLOW_TRACKING_')) delete env[key];
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      python,
      [resolve(REPO_ROOT, 'python', script)],
      { env, maxBuffer: 16 * 1024 * 1024, ...(cwd !== undefined ? { cwd } : {}) },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${script} failed: ${error.message}\n${stderr}`));
        let answer: T;
        try {
          answer = JSON.parse(stdout) as T;
        } catch {
          return reject(new Error(`${script} printed no JSON answer:\n${stdout}\n${stderr}`));
        }
        if (answer.error) reject(new Error(`${script}: ${answer.error}`));
        else resolvePromise(answer);
      },
    );
    child.stdin?.end(JSON.stringify(command));
  });
}

/** One scenario of `python/mlflow_interop.py` (see the script for the commands). */
export function runInteropScript(
  python: string,
  command: Record<string, unknown>,
  /** Where Python runs: MLflow's default artifact root for database URIs is ./mlruns there. */
  cwd?: string,
): Promise<PyAnswer> {
  return runPythonProbe<PyAnswer>(python, 'mlflow_interop.py', command, cwd);
}

// ---- Tagger writes, MLflow reads -------------------------------------------------------------------

export interface TaggerRunSpec {
  name: string;
  start: number;
  f1?: number;
}

/** Bytes of the binary artifact every Tagger-written run carries (exercises non-UTF-8 content). */
export const WEIGHTS = Uint8Array.of(0, 1, 2, 254, 255);
const ARGS_JSON = new TextEncoder().encode('{"lr":0.01}');

/**
 * Logs one finished run per spec through the store: a loss metric, a two-step f1 history ending at
 * `spec.f1`, params, a tag and two artifacts. Returns run ids by spec name.
 */
export async function logTaggerRuns(
  store: TrackingStore,
  experimentId: string,
  specs: readonly TaggerRunSpec[],
): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (const spec of specs) {
    const { info } = await store.createRun(experimentId, {
      runName: spec.name,
      startTime: spec.start,
      userId: 'tagger',
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
    await store.logArtifact(info.runId, 'args.json', ARGS_JSON);
    await store.logArtifact(info.runId, 'model/weights.bin', WEIGHTS);
    await store.updateRun(info.runId, { status: 'FINISHED', endTime: spec.start + 10 });
  }
  return ids;
}

/** What MLflow read (`command: 'read'` with history of f1 and artifacts of '' and 'model') equals Tagger's view. */
export async function expectMlflowSeesTaggerRuns(
  store: TrackingStore,
  tagger: readonly Run[],
  answer: PyAnswer,
): Promise<void> {
  expect(answer.order).toEqual(tagger.map((run) => run.info.runId));
  for (const run of tagger) {
    const py = answer.runs[run.info.runId]!;
    expect(py.run_name).toBe(run.info.runName);
    expect(py.status).toBe('FINISHED');
    expect(py.start_time).toBe(run.info.startTime);
    expect(py.end_time).toBe(run.info.endTime);
    expect(py.experiment_id).toBe(run.info.experimentId);
    expect(py.params).toEqual(run.params);
    expect(py.tags).toEqual(run.tags);
    expect(numbers(py.metrics)).toEqual(run.metrics);
    const history = (py.history['f1'] ?? []).map((point) => ({ ...point, value: toNumber(point.value) }));
    expect(history).toEqual(await store.getMetricHistory(run.info.runId, 'f1'));
    expect(py.artifacts['']).toEqual([
      { path: 'args.json', is_dir: false, file_size: ARGS_JSON.length },
      { path: 'model', is_dir: true, file_size: null },
    ]);
    expect(py.artifacts['model']).toEqual([
      { path: 'model/weights.bin', is_dir: false, file_size: WEIGHTS.length },
    ]);
  }
}

// ---- MLflow writes, Tagger reads -------------------------------------------------------------------

const step = (key: string, values: (number | string)[]) =>
  values.map((value, i) => ({ key, value, step: i }));

/** Runs Python logs with `command: 'write'`: histories, a NaN latest f1, a run without f1, a tie. */
export const PYTHON_RUNS = [
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
];

/** MLflow's order of PYTHON_RUNS by `metrics.f1 DESC` (the tie goes to the newer run). */
export const PYTHON_RUNS_F1_ORDER = ['py-best', 'py-tie', 'py-good', 'py-nan', 'py-none'];

/** Tagger's view of the runs Python logged (PYTHON_RUNS) equals MLflow's, in the same order. */
export async function expectTaggerSeesPythonRuns(store: TrackingStore, answer: PyAnswer): Promise<Run[]> {
  const runs = await store.searchRuns(answer.experiment_id, {
    orderByMetric: { key: 'f1', descending: true },
  });
  expect(runs.map((run) => run.info.runId)).toEqual(answer.order);
  expect(runs.map((run) => run.info.runName)).toEqual(PYTHON_RUNS_F1_ORDER);
  expect(new Set(answer.created)).toEqual(new Set(answer.order));
  const listing = ({ path, isDir, size }: { path: string; isDir: boolean; size: number | null }) => ({
    path,
    is_dir: isDir,
    file_size: size,
  });
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
    expect(history).toEqual(
      (py.history['f1'] ?? []).map((point) => ({ ...point, value: toNumber(point.value) })),
    );
    expect((await store.listArtifacts(run.info.runId)).map(listing)).toEqual(py.artifacts['']);
  }
  const good = runs.find((run) => run.info.runName === 'py-good')!;
  expect(good.params).toEqual({ lr: '0.01', epochs: '10' });
  expect(good.metrics).toEqual({ f1: 0.8, 'val/loss': 0.4 });
  expect(good.tags['model.format']).toBe('json-v1');
  expect(good.tags['mlflow.runName']).toBe('py-good');
  expect((await store.listArtifacts(good.info.runId, 'model')).map(listing)).toEqual(
    answer.runs[good.info.runId]!.artifacts['model'],
  );
  const json = new TextDecoder().decode(await store.readArtifact(good.info.runId, 'model/tagger-model.json'));
  expect(JSON.parse(json)).toEqual({ format: 'tagger-model/1' });
  expect(runs.find((run) => run.info.runName === 'py-nan')!.metrics['f1']).toBeNaN();
  return runs;
}

/**
 * Lets MLflow's own store create (and migrate) a database at `uri`, as `mlflow server` does on first
 * start; resolves with MLflow's version. Used to compare schemas and by scripts/mlflow-schema.ts.
 */
export async function mlflowCreatesDatabase(
  python: string,
  uri: string,
  artifactRoot: string,
): Promise<string> {
  const code = [
    'import sys, mlflow',
    'from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore',
    'SqlAlchemyStore(sys.argv[1], sys.argv[2])',
    'print(mlflow.__version__)',
  ].join('\n');
  const { stdout } = await promisify(execFile)(python, ['-c', code, uri, artifactRoot]);
  return stdout.trim();
}
