/**
 * A temp MLflow file store with runs of known f1 for serving tests: real models trained on
 * samples/projects.csv (a few epochs, so it stays quick), logged through the TrackingStore interface.
 *
 * Experiment `best`, in the order GET /runs must list them:
 *   broken  f1 0.99  good args/performance, undecodable model  → skipped at startup, predict is a 409
 *   alpha   f1 0.90  model A (the default soft vote, char_wb)    → the best loadable run, serves /predict;
 *                                                                 the only one with test errors, losses
 *                                                                 and label issues
 *   beta    f1 0.70  model B (SGD one-vs-rest, word analyzer)    → predict loads it lazily
 *   noperf  f1 0.30  model A, performance.json not JSON         → GET /runs/{id} is a 409
 *   nan     f1 NaN   model B
 *   nof1    no f1    model A
 * Experiment `empty`: no runs. Experiment `allbroken`: two runs, neither loadable.
 */
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import {
  type ConfusionAndMistakes,
  encodeModel,
  evaluateWithErrors,
  type LabelledText,
  MODEL_FILES,
  type Performance,
  parseTrainingArgs,
  type TagModel,
  type TrainingArgs,
  trainTagger,
} from '../../src/model/index.js';
import { getOrCreateExperiment, openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { findLabelIssues, type LabelIssuesReport } from '../../src/train/label-issues.js';
import { SAMPLE_DATA } from './components.js';

export interface TrainedModel {
  model: TagModel;
  args: TrainingArgs;
  performance: Performance;
  /** A confusion matrix and mistakes as training logs them (on test rows with some tags moved). */
  errors: ConfusionAndMistakes;
  files: Record<string, Uint8Array>;
}

/**
 * Label issues as training logs them, for model A's args on the sample rows with every 25th row's tag moved
 * to the next tag (the sample data is too clean to have many).
 */
export function sampleLabelIssues(args: TrainingArgs): LabelIssuesReport {
  const rows = sampleTexts();
  const tags = [...new Set(rows.map((row) => row.tag))].sort();
  const moved = rows.map((row, i) => ({
    ...row,
    line: i + 2,
    ...(i % 25 === 0 ? { tag: tags[(tags.indexOf(row.tag) + 1) % tags.length]! } : {}),
  }));
  return findLabelIssues(moved, { args, seed: 7, top: 30 });
}

export const RUN_NAMES = ['broken', 'alpha', 'beta', 'noperf', 'nan', 'nof1'] as const;
export type RunName = (typeof RUN_NAMES)[number];

export interface ServingFixture {
  /** The mlruns folder (also usable as a tracking URI). */
  dir: string;
  store: TrackingStore;
  /** Run ids by fixture name. */
  runs: Record<RunName, string>;
  modelA: TrainedModel;
  modelB: TrainedModel;
  /** A saved model directory (single-model mode) holding model A. */
  modelDir: string;
  /** Run ids of experiment `allbroken`. */
  allBroken: string[];
  /** Alpha's label_issues.json: model A's args on the sample data with some tags moved. */
  labelIssues: LabelIssuesReport;
  close(): Promise<void>;
}

/** The sample projects as labelled texts (title + description, as training joins them). */
export function sampleTexts(): LabelledText[] {
  const rows = parse(readFileSync(SAMPLE_DATA, 'utf8'), { columns: true, skip_empty_lines: true }) as Record<
    string,
    string
  >[];
  return rows.map((row) => ({ text: `${row.title} ${row.description}`, tag: row.tag! }));
}

export function trainModel(overrides: Partial<TrainingArgs>): TrainedModel {
  const rows = sampleTexts();
  const train = rows.filter((_, i) => i % 5 !== 0);
  const test = rows.filter((_, i) => i % 5 === 0);
  const args = parseTrainingArgs({ num_epochs: 5, min_freq: 5, threshold: 'argmax', ...overrides });
  const { model } = trainTagger(train, test, args, { seed: 7 });
  const { performance } = evaluateWithErrors(model, test);
  // The sample data is too easy to give a test mistake: every fifth test row gets the next tag, so the
  // logged errors have some to show.
  const tags = [...new Set(rows.map((row) => row.tag))].sort();
  const relabelled = test.map((row, i) =>
    i % 5 === 0 ? { ...row, tag: tags[(tags.indexOf(row.tag) + 1) % tags.length]! } : row,
  );
  const { errors } = evaluateWithErrors(model, relabelled);
  return { model, args, performance, errors, files: encodeModel(model) };
}

const encoder = new TextEncoder();
const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value, null, 2));

interface RunPlan {
  name: string;
  f1?: number;
  model: TrainedModel;
  args?: Uint8Array;
  performance?: Uint8Array;
  modelFiles?: Record<string, Uint8Array>;
  /** Also log what training logs for the inspection page: test errors and per-epoch losses. */
  inspection?: boolean;
  labelIssues?: LabelIssuesReport;
}

async function logRun(
  store: TrackingStore,
  experimentId: string,
  plan: RunPlan,
  startTime: number,
): Promise<string> {
  const run = await store.createRun(experimentId, { runName: plan.name, startTime });
  const runId = run.info.runId;
  const metrics = [
    { key: 'precision', value: plan.model.performance.overall.precision, timestamp: startTime, step: 0 },
  ];
  if (plan.f1 !== undefined) metrics.push({ key: 'f1', value: plan.f1, timestamp: startTime, step: 0 });
  const params = Object.fromEntries(Object.entries(plan.model.args).map(([k, v]) => [k, JSON.stringify(v)]));
  await store.logBatch(runId, { metrics, params });
  await store.logArtifact(runId, 'args.json', plan.args ?? json(plan.model.args));
  await store.logArtifact(runId, 'performance.json', plan.performance ?? json(plan.model.performance));
  for (const [name, bytes] of Object.entries(plan.modelFiles ?? plan.model.files)) {
    await store.logArtifact(runId, `model/${name}`, bytes);
  }
  if (plan.inspection) {
    await store.logArtifact(runId, 'confusion_matrix.json', json(plan.model.errors.confusion));
    await store.logArtifact(runId, 'test_mistakes.json', json(plan.model.errors.mistakes));
    const losses = [0.9, 0.5, 0.4].flatMap((value, index) => [
      { key: 'train_loss', value, timestamp: startTime + index, step: index + 1 },
      { key: 'val_loss', value: value + 0.1, timestamp: startTime + index, step: index + 1 },
    ]);
    await store.logBatch(runId, { metrics: losses });
  }
  if (plan.labelIssues) await store.logArtifact(runId, 'label_issues.json', json(plan.labelIssues));
  await store.updateRun(runId, { status: 'FINISHED', endTime: startTime + 1000 });
  return runId;
}

/** Model files with every file truncated to half: present but undecodable. */
const truncated = (files: Record<string, Uint8Array>): Record<string, Uint8Array> =>
  Object.fromEntries(
    MODEL_FILES.map((name) => [name, files[name]!.slice(0, Math.floor(files[name]!.length / 2))]),
  );

/**
 * The fixture's models and label issues, trained once per module instance and never changed by tests: once
 * per test file in the full suite (its files are isolated), once per worker in `npm run test:unit`, whose
 * files share modules (vitest.config.ts) — half the subset's CPU time was ten files training the same.
 */
let trained: { modelA: TrainedModel; modelB: TrainedModel; labelIssues: LabelIssuesReport } | undefined;
function fixtureModels(): NonNullable<typeof trained> {
  if (trained === undefined) {
    const modelA = trainModel({ analyzer: 'char_wb', ngram_max_range: 4 });
    // The SGD model (the defaults before issue 25), so the fixture serves both kinds of model.
    const modelB = trainModel({
      classifier: 'ovr',
      oversample: true,
      analyzer: 'word',
      ngram_max_range: 2,
      alpha: 1e-3,
    });
    trained = { modelA, modelB, labelIssues: sampleLabelIssues(modelA.args) };
  }
  return trained;
}

/** The fixture's store as first built: what every fixture of this process copies. */
interface Template {
  /** The mlruns folder, never handed to a test. */
  root: string;
  best: string;
  runs: Record<RunName, string>;
  allBroken: string[];
}

/** Logs the fixture's runs into a new temp store (the template), once per process. */
async function buildTemplate(): Promise<Template> {
  const dir = await mkdtemp(join(tmpdir(), 'tagger-serving-template-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const store = await openTrackingStore(join(dir, 'mlruns'));
  const { modelA, modelB, labelIssues } = fixtureModels();

  const best = await getOrCreateExperiment(store, 'best');
  const t0 = Date.UTC(2026, 0, 1);
  const plans: Record<RunName, RunPlan> = {
    broken: { name: 'broken', f1: 0.99, model: modelA, modelFiles: truncated(modelA.files) },
    alpha: { name: 'alpha', f1: 0.9, model: modelA, inspection: true, labelIssues },
    beta: { name: 'beta', f1: 0.7, model: modelB },
    noperf: { name: 'noperf', f1: 0.3, model: modelA, performance: encoder.encode('{"overall": ') },
    nan: { name: 'nan', f1: Number.NaN, model: modelB },
    nof1: { name: 'nof1', model: modelA },
  };
  const runs = {} as Record<RunName, string>;
  // Logged in an order unrelated to f1, so the ordering under test comes from the store's search.
  for (const [i, name] of (['nof1', 'beta', 'broken', 'nan', 'alpha', 'noperf'] as const).entries()) {
    runs[name] = await logRun(store, best, plans[name], t0 + i * 60_000);
  }

  await getOrCreateExperiment(store, 'empty');
  const broken = await getOrCreateExperiment(store, 'allbroken');
  const allBroken = [
    await logRun(
      store,
      broken,
      { name: 'b1', f1: 0.8, model: modelA, modelFiles: truncated(modelA.files) },
      t0,
    ),
    await logRun(
      store,
      broken,
      { name: 'b2', f1: 0.6, model: modelB, args: encoder.encode('[1, 2]') },
      t0 + 1,
    ),
  ];

  await store.close();
  return { root: join(dir, 'mlruns'), best, runs, allBroken };
}

let template: Promise<Template> | undefined;

/**
 * Builds the fixture described above; test files take it through useServingFixture() (serving-fixture.ts).
 * Each one is a copy of the process's template store (a native recursive copy, its meta.yaml files'
 * absolute artifact paths moved to the copy): logging its eight runs through the file store for every
 * test file cost `npm run test:unit` about half a second of CPU a file, most of it in the kernel.
 */
export async function buildServingFixture(): Promise<ServingFixture> {
  const { modelA, modelB, labelIssues } = fixtureModels();
  if (template === undefined) template = buildTemplate();
  const built = await template;
  const dir = await mkdtemp(join(tmpdir(), 'tagger-serving-'));
  const root = join(dir, 'mlruns');
  cpSync(built.root, root, { recursive: true });
  // The file store records experiments' and runs' artifact locations as absolute file URIs.
  const metas = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((experiment) => [
      join(root, experiment.name, 'meta.yaml'),
      ...readdirSync(join(root, experiment.name), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((run) => join(root, experiment.name, run.name, 'meta.yaml')),
    ]);
  for (const meta of metas) {
    let text: string;
    try {
      text = readFileSync(meta, 'utf8');
    } catch {
      continue; // a folder without meta.yaml (the registry's, a run's subfolder)
    }
    writeFileSync(meta, text.replaceAll(built.root, root));
  }
  const store = await openTrackingStore(root);
  // A run's artifacts folder has the saved-model layout; single-model mode serves alpha's.
  const modelDir = join(root, built.best, built.runs.alpha, 'artifacts');
  return {
    dir: root,
    store,
    runs: { ...built.runs },
    modelA,
    modelB,
    modelDir,
    allBroken: [...built.allBroken],
    labelIssues,
    close: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Counts artifact reads per run and can hold them back; every other call goes straight to the store. */
export interface InstrumentedStore extends TrackingStore {
  /** Artifact reads so far, as `runId/path`. */
  reads: string[];
  readsOf(runId: string): number;
}

export function instrumentStore(
  inner: TrackingStore,
  options: { beforeRead?: (runId: string, path: string) => Promise<void> | void } = {},
): InstrumentedStore {
  const reads: string[] = [];
  return {
    displayUri: inner.displayUri,
    registry: inner.registry,
    reads,
    readsOf: (runId) => reads.filter((r) => r.startsWith(`${runId}/`)).length,
    getExperimentByName: (name) => inner.getExperimentByName(name),
    createExperiment: (name) => inner.createExperiment(name),
    searchRuns: (id, o) => inner.searchRuns(id, o),
    getRun: (id) => inner.getRun(id),
    createRun: (id, o) => inner.createRun(id, o),
    logBatch: (id, b) => inner.logBatch(id, b),
    getMetricHistory: (id, k) => inner.getMetricHistory(id, k),
    updateRun: (id, u) => inner.updateRun(id, u),
    checkWritable: () => inner.checkWritable(),
    logArtifact: (id, p, c) => inner.logArtifact(id, p, c),
    listArtifacts: (id, p) => inner.listArtifacts(id, p),
    logInputs: (id, d) => inner.logInputs(id, d),
    logOutputs: (id, m) => inner.logOutputs(id, m),
    createLoggedModel: (id, o) => inner.createLoggedModel(id, o),
    logLoggedModelArtifact: (id, p, c) => inner.logLoggedModelArtifact(id, p, c),
    readLoggedModelArtifact: (id, p) => inner.readLoggedModelArtifact(id, p),
    finalizeLoggedModel: (id, s) => inner.finalizeLoggedModel(id, s),
    getLoggedModel: (id) => inner.getLoggedModel(id),
    searchLoggedModels: (id, o) => inner.searchLoggedModels(id, o),
    readArtifact: async (runId, path) => {
      reads.push(`${runId}/${path}`);
      await options.beforeRead?.(runId, path);
      return inner.readArtifact(runId, path);
    },
    close: () => inner.close(),
  };
}
