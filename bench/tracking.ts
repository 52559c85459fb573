/**
 * Tracking stores side by side in one run: the MLflow file layout, SQLite (MLflow's schema), and an
 * MLflow tracking server over REST (`mlflow server` on the SQLite database Tagger wrote, so all three
 * hold the same runs).
 * - "startup": open the store and list experiment `best`'s finished runs, best f1 first — what
 *   `tagger serve` does before it loads the best model — with 1,000 runs shaped like real trainings
 *   (params, precision/recall/f1, 60-epoch loss histories, tags);
 * - "log one run": what `tagger train` writes (params, metrics with history, three artifacts, FINISHED);
 * - "search by f1 with 10,000 runs" on SQLite (through `latest_metrics`' index; the test suite checks
 *   the query plan).
 * Medians of repeated measurements; each repetition opens a fresh store object (no warm caches of ours).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTrackingStore, openTrackingStore, RestTrackingStore } from '../src/tracking/index.js';
import type { MetricPoint, TrackingStore } from '../src/tracking/store.js';
import { getOrCreateExperiment } from '../src/tracking/store.js';
import { startMlflowServer, venvMlflow } from '../test/support/mlflow-server.js';
import type { BenchOptions, BenchRow, SectionResult } from './section.js';

const EPOCHS = 60;
const PARAMS = Object.fromEntries(
  Array.from({ length: 20 }, (_, index) => [`param_${index}`, `value-${index}`]),
);
/** Stand-ins for a model's artifacts, of a real model's sizes (args, performance, weights). */
const ARTIFACTS: [string, Uint8Array][] = [
  ['args.json', new Uint8Array(600).fill(32)],
  ['performance.json', new Uint8Array(4_000).fill(32)],
  ['model/tagger-model.json', new Uint8Array(1_500_000).fill(48)],
];

async function logRun(
  store: TrackingStore,
  experimentId: string,
  index: number,
  withArtifacts: boolean,
): Promise<void> {
  const now = Date.now();
  const { info } = await store.createRun(experimentId, { runName: `bench-${index}`, startTime: now - index });
  const f1 = 0.5 + ((index * 7919) % 1000) / 2000;
  const metrics: MetricPoint[] = [
    { key: 'precision', value: f1 + 0.01, timestamp: now, step: 0 },
    { key: 'recall', value: f1 - 0.01, timestamp: now, step: 0 },
    { key: 'f1', value: f1, timestamp: now, step: 0 },
  ];
  for (let epoch = 0; epoch < EPOCHS; epoch += 1) {
    metrics.push({ key: 'train_loss', value: 1 / (epoch + 1), timestamp: now, step: epoch });
    metrics.push({ key: 'val_loss', value: 1.1 / (epoch + 1), timestamp: now, step: epoch });
  }
  await store.logBatch(info.runId, { params: PARAMS, metrics, tags: { 'tagger.model_format': '3' } });
  if (withArtifacts) for (const [path, bytes] of ARTIFACTS) await store.logArtifact(info.runId, path, bytes);
  await store.updateRun(info.runId, { status: 'FINISHED' });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

async function timed(repetitions: number, fn: () => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let index = 0; index < repetitions; index += 1) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

/** Opens a store, lists `best`'s finished runs by f1, closes it; checks the count. */
async function startup(open: () => Promise<TrackingStore>, expected: number): Promise<void> {
  const store = await open();
  try {
    const experiment = await store.getExperimentByName('best');
    const runs = await store.searchRuns(experiment!.experimentId, {
      finishedOnly: true,
      orderByMetric: { key: 'f1', descending: true },
    });
    if (runs.length !== expected) throw new Error(`expected ${expected} runs, listed ${runs.length}`);
  } finally {
    await store.close();
  }
}

async function populate(store: TrackingStore, count: number): Promise<string> {
  const experimentId = await getOrCreateExperiment(store, 'best');
  for (let index = 0; index < count; index += 1) await logRun(store, experimentId, index, false);
  return experimentId;
}

export async function run(opts: BenchOptions): Promise<SectionResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tagger-bench-tracking-'));
  const rows: BenchRow[] = [];
  const details: Record<string, number> = {};
  const notes: string[] = [];
  const runs = opts.quick ? 200 : 1000;
  const many = opts.quick ? 2000 : 10_000;
  const repetitions = opts.quick ? 3 : 7;
  try {
    const fileUri = join(dir, 'mlruns');
    const sqliteUri = `sqlite:///${join(dir, 'mlflow.db')}`;
    const stores: { name: string; open: () => Promise<TrackingStore> }[] = [
      { name: 'file layout', open: () => FileTrackingStore.open(fileUri) },
      { name: 'SQLite', open: () => openTrackingStore(sqliteUri) },
    ];
    for (const { name, open } of stores) {
      const store = await open();
      const started = performance.now();
      const experimentId = await populate(store, runs);
      details[`${name} populate ${runs} runs ms`] = performance.now() - started;
      const logMs = await timed(repetitions, () => logRun(store, experimentId, runs, true));
      await store.close();
      const startupMs = await timed(repetitions, () => startup(open, runs + repetitions));
      rows.push(
        {
          section: 'tracking',
          metric: `startup listing, ${runs} runs: ${name}`,
          unit: 'ms',
          tagger: startupMs,
          reference: null,
        },
        {
          section: 'tracking',
          metric: `log one training run: ${name}`,
          unit: 'ms',
          tagger: logMs,
          reference: null,
        },
      );
    }

    const mlflow = venvMlflow();
    if (mlflow) {
      // The server reads the database Tagger wrote: the same runs, over REST.
      const server = await startMlflowServer(mlflow, { backendStoreUri: sqliteUri });
      try {
        const open = async () => new RestTrackingStore({ uri: server.uri, env: {} });
        const startupMs = await timed(repetitions, () => startup(open, runs + repetitions));
        const store = await open();
        const experimentId = (await store.getExperimentByName('best'))!.experimentId;
        const logMs = await timed(repetitions, () => logRun(store, experimentId, runs + 1, false));
        await store.close();
        rows.push(
          {
            section: 'tracking',
            metric: `startup listing, ${runs} runs: MLflow server (REST)`,
            unit: 'ms',
            tagger: startupMs,
            reference: null,
            note: 'mlflow server on the same SQLite file',
          },
          {
            section: 'tracking',
            metric: 'log one training run: MLflow server (REST)',
            unit: 'ms',
            tagger: logMs,
            reference: null,
            note: 'without artifacts (the server proxies no local artifact root here)',
          },
        );
      } finally {
        await server.stop();
      }
    } else {
      notes.push('no .venv with mlflow: the REST rows are missing (scripts/setup-python.sh installs it)');
    }

    const manyUri = `sqlite:///${join(dir, 'many.db')}`;
    const manyStore = await openTrackingStore(manyUri);
    const started = performance.now();
    await populate(manyStore, many);
    details[`SQLite populate ${many} runs ms`] = performance.now() - started;
    await manyStore.close();
    const searchMs = await timed(repetitions, () => startup(() => openTrackingStore(manyUri), many));
    rows.push({
      section: 'tracking',
      metric: `search by f1, ${many.toLocaleString('en-US')} runs: SQLite`,
      unit: 'ms',
      tagger: searchMs,
      reference: null,
      note: 'latest_metrics by index, whole runs (params, tags) returned',
    });
    return { rows, notes, details };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
