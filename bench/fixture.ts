/**
 * What the HTTP benchmark serves, built once and cached under `.tagger-cache/bench/` (gitignored):
 * - `store-1/`: an mlruns store whose experiment `best` has one run, trained like
 *   `tagger train --data ../shared/data/dataset.csv` (default arguments, seed 42);
 * - `store-1000/`: the same best run plus 999 worse runs (params, metrics with 60-epoch loss histories,
 *   tags; only the best 4 carry model artifacts — the others must still be listed), written through the
 *   FileTrackingStore API;
 * - `sqlite/store-1.db` and `sqlite/store-1000.db`: the same runs in SQLite databases (MLflow's default
 *   store, and Tagger's), artifacts in `sqlite/mlruns/`; built in place beside the fixture folder rather
 *   than renamed into it, because a database records its artifact folder by absolute path;
 * - the request texts (holdout.csv, `title + " " + description`).
 * The cache key hashes the data and the sources that decide the model and the store layout, so a change
 * to any of them rebuilds. Also resolves the `tagger` CLI to run: `dist/` when it is newer than `src/`,
 * else a transpile-only copy of `src/` (no type check, so others' work in progress does not block it).
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { type LabelledText, parseTrainingArgs } from '../src/model/index.js';
import { FileTrackingStore, openTrackingStore } from '../src/tracking/index.js';
import type { MetricPoint, TrackingStore } from '../src/tracking/store.js';
import { readDataset } from '../src/train/data.js';
import { logTrainingRun } from '../src/train/log-run.js';
import { trainAndEvaluate } from '../src/train/pipeline.js';
import { DATA_DIR, REPO } from './paths.js';

export const CACHE_ROOT = resolve(REPO, '.tagger-cache', 'bench');
const SEED = 42;
const EXPERIMENT = 'best';
/** Runs of the big store, and how many of them (the best) carry model artifacts. */
export const MANY_RUNS = 1000;
const RUNS_WITH_ARTIFACTS = 4;
/** Loss history length of the bulk runs (the real run logs one point per epoch; ~60 by default). */
const EPOCHS = 60;

export interface Fixture {
  dir: string;
  store1: string;
  store1000: string;
  /** The same stores as SQLite tracking URIs (`sqlite:////…/store-1.db`). */
  sqlite1: string;
  sqlite1000: string;
  /** Artifact folder of the best run (a saved model directory), for in-process scoring. */
  modelDir: string;
  runId: string;
  /** holdout.csv texts. */
  texts: string[];
  /** Training rows (dataset.csv) for the scikit-learn twin. */
  trainRows: LabelledText[];
}

function filesUnder(dir: string, keep: (path: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path, keep));
    else if (keep(path)) out.push(path);
  }
  return out.sort();
}

function hashFiles(files: string[]): string {
  const hash = createHash('sha256');
  for (const file of files)
    hash.update(relative(REPO, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex').slice(0, 16);
}

const isTs = (path: string): boolean => path.endsWith('.ts');

/** Runs `build(tmp)` into a temp folder and renames it to `dir`, so a half-built cache never counts. */
async function cached(dir: string, build: (tmp: string) => Promise<void>): Promise<void> {
  if (existsSync(join(dir, '.complete'))) return;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    await build(tmp);
    writeFileSync(join(tmp, '.complete'), `${new Date().toISOString()}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw error;
  }
}

/** Writes `count` items through `work` with at most `limit` in flight (file descriptors are finite). */
async function bounded(count: number, limit: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, lane));
}

/** A SQLite store's tracking URI for a database file (absolute path). */
const sqliteUri = (file: string): string => `sqlite:///${file}`;

async function buildStores(tmp: string, sqliteDir: string): Promise<void> {
  const data = await readDataset(join(DATA_DIR, 'dataset.csv'));
  const args = parseTrainingArgs({});
  const outcome = trainAndEvaluate({ data, args, seed: SEED });
  const input = {
    experiment: EXPERIMENT,
    args,
    seed: SEED,
    source: 'bench/fixture.ts',
    extraParams: { data: 'dataset.csv' },
  };
  const one = await FileTrackingStore.open(join(tmp, 'store-1'));
  const best = await logTrainingRun(one, { ...input, runName: 'bench-best', outcome });
  await fillManyRuns(await FileTrackingStore.open(join(tmp, 'store-1000')), input, outcome);

  rmSync(sqliteDir, { recursive: true, force: true });
  mkdirSync(sqliteDir, { recursive: true });
  const sqliteOne = await openTrackingStore(sqliteUri(join(sqliteDir, 'store-1.db')));
  try {
    await logTrainingRun(sqliteOne, { ...input, runName: 'bench-best', outcome });
  } finally {
    await sqliteOne.close();
  }
  const sqliteMany = await openTrackingStore(sqliteUri(join(sqliteDir, 'store-1000.db')));
  try {
    await fillManyRuns(sqliteMany, input, outcome);
  } finally {
    await sqliteMany.close();
  }
  const runDir = join(tmp, 'store-1', experimentIdDir(tmp), best.runId);
  writeFileSync(
    join(tmp, 'fixture.json'),
    JSON.stringify({ runId: best.runId, modelDir: relative(tmp, join(runDir, 'artifacts')) }),
  );
}

/** The best run's model logged RUNS_WITH_ARTIFACTS times, then bulk runs up to MANY_RUNS, into `many`. */
async function fillManyRuns(
  many: TrackingStore,
  input: Omit<Parameters<typeof logTrainingRun>[1], 'runName' | 'outcome'>,
  outcome: ReturnType<typeof trainAndEvaluate>,
): Promise<void> {
  const args = input.args;
  const top = outcome.performance.overall.f1;
  // The few runs with artifacts: the real model, logged with slightly lower f1 each.
  for (let i = 0; i < RUNS_WITH_ARTIFACTS; i += 1) {
    const overall = { ...outcome.performance.overall, f1: top - i * 0.001 };
    await logTrainingRun(many, {
      ...input,
      runName: `bench-${i}`,
      outcome: { ...outcome, performance: { ...outcome.performance, overall } },
    });
  }
  const experimentId = (await many.getExperimentByName(EXPERIMENT))!.experimentId;
  const params: Record<string, string> = {};
  for (const [key, value] of Object.entries(args))
    params[key] = typeof value === 'string' ? value : JSON.stringify(value);
  const now = Date.now();
  await bounded(MANY_RUNS - RUNS_WITH_ARTIFACTS, 16, async (i) => {
    const run = await many.createRun(experimentId, { runName: `bench-bulk-${i}`, startTime: now - i });
    const f1 = top - 0.01 - (i % 500) * 0.0005;
    const metrics: MetricPoint[] = ['precision', 'recall', 'f1'].map((key) => ({
      key,
      value: key === 'f1' ? f1 : f1 + 0.01,
      timestamp: now,
      step: 0,
    }));
    // Like a real training run: per-epoch loss histories (every line is read to find the latest value)
    // and the tags logTrainingRun sets, so startup with 1,000 runs reads what a real store holds.
    for (let epoch = 0; epoch < EPOCHS; epoch += 1) {
      const loss = 1 / (epoch + 1) + (i % 7) * 0.001;
      metrics.push({ key: 'train_loss', value: loss, timestamp: now + epoch, step: epoch });
      metrics.push({ key: 'val_loss', value: loss * 1.1, timestamp: now + epoch, step: epoch });
    }
    const tags = {
      'mlflow.source.type': 'LOCAL',
      'mlflow.source.name': 'bench/fixture.ts',
      'mlflow.user': 'bench',
      'tagger.bench': 'bulk',
    };
    await many.logBatch(run.info.runId, { params: { ...params, seed: String(i) }, metrics, tags });
    await many.updateRun(run.info.runId, { status: 'FINISHED', endTime: now });
  });
}

/** The experiment folder of store-1 (one experiment besides the default `0`). */
function experimentIdDir(tmp: string): string {
  const dirs = readdirSync(join(tmp, 'store-1'), { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== '0' && !d.name.startsWith('.'))
    .map((d) => d.name);
  if (dirs.length !== 1)
    throw new Error(`bench: expected one experiment in store-1, found ${dirs.join(', ')}`);
  return dirs[0]!;
}

function readTexts(file: string): LabelledText[] {
  // readDataset is async; the CSV is small, so parse it the same way synchronously via the cached copy.
  return JSON.parse(readFileSync(file, 'utf8')) as LabelledText[];
}

export async function prepareFixture(log: (message: string) => void): Promise<Fixture> {
  const sources = [
    join(DATA_DIR, 'dataset.csv'),
    join(DATA_DIR, 'holdout.csv'),
    ...filesUnder(join(REPO, 'src', 'model'), isTs),
    ...filesUnder(join(REPO, 'src', 'train'), isTs),
    ...filesUnder(join(REPO, 'src', 'tracking', 'file'), isTs),
    ...filesUnder(join(REPO, 'src', 'tracking', 'sql'), isTs),
    join(REPO, 'bench', 'fixture.ts'),
  ];
  const dir = join(CACHE_ROOT, `fixture-${hashFiles(sources)}`);
  const sqliteDir = `${dir}-sqlite`;
  // The databases live outside the cached folder: without them the fixture is built again.
  if (!existsSync(join(sqliteDir, 'store-1000.db'))) rmSync(join(dir, '.complete'), { force: true });
  if (!existsSync(join(dir, '.complete')))
    log(`building the model and stores in ${relative(REPO, dir)} (cached)`);
  await cached(dir, async (tmp) => {
    await buildStores(tmp, sqliteDir);
    const toRows = (rows: LabelledText[]) => rows.map((r) => ({ text: r.text, tag: r.tag }));
    writeFileSync(
      join(tmp, 'holdout.json'),
      JSON.stringify(toRows(await readDataset(join(DATA_DIR, 'holdout.csv')))),
    );
    writeFileSync(
      join(tmp, 'train.json'),
      JSON.stringify(toRows(await readDataset(join(DATA_DIR, 'dataset.csv')))),
    );
  });
  const meta = JSON.parse(readFileSync(join(dir, 'fixture.json'), 'utf8')) as {
    runId: string;
    modelDir: string;
  };
  return {
    dir,
    store1: join(dir, 'store-1'),
    store1000: join(dir, 'store-1000'),
    sqlite1: sqliteUri(join(sqliteDir, 'store-1.db')),
    sqlite1000: sqliteUri(join(sqliteDir, 'store-1000.db')),
    modelDir: join(dir, meta.modelDir),
    runId: meta.runId,
    texts: readTexts(join(dir, 'holdout.json')).map((r) => r.text),
    trainRows: readTexts(join(dir, 'train.json')),
  };
}

/**
 * The compiled CLI to start as `tagger serve`: dist/cli/main.js when it is newer than every source file
 * (CI builds it in `npm ci`), else a transpile-only build of src/ in the cache (about a second).
 */
export function resolveCli(log: (message: string) => void): string {
  const srcFiles = filesUnder(join(REPO, 'src'), isTs);
  const dist = join(REPO, 'dist', 'cli', 'main.js');
  const newestSrc = Math.max(...srcFiles.map((f) => statSync(f).mtimeMs));
  if (existsSync(dist) && statSync(dist).mtimeMs >= newestSrc) return dist;
  const out = join(CACHE_ROOT, `dist-${hashFiles(srcFiles)}`);
  if (!existsSync(join(out, 'cli', 'main.js'))) {
    log(`dist/ is missing or older than src/: transpiling src/ to ${relative(REPO, out)}`);
    const tmp = `${out}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    for (const file of srcFiles) {
      const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
        fileName: file,
        compilerOptions: {
          target: ts.ScriptTarget.ES2023,
          // ESNext, not NodeNext: transpileModule cannot see package.json's "type": "module".
          module: ts.ModuleKind.ESNext,
          verbatimModuleSyntax: true,
        },
      });
      const target = join(tmp, relative(join(REPO, 'src'), file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, outputText);
    }
    rmSync(out, { recursive: true, force: true });
    renameSync(tmp, out);
  }
  return join(out, 'cli', 'main.js');
}
