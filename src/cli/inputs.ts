/**
 * What several commands read the same way: integer flags, the training arguments of `--args`, the
 * hand-written `--behaviour` / `--slices` files, the data files, the tracking store, the model to
 * predict with, and the options they share. A problem is a `UsageError`: its message is the whole
 * explanation, printed after `tagger:`.
 */
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import {
  parseBehaviourSuite,
  parseSliceDefinitions,
  parseTrainingArgs,
  type TrainingArgs,
} from '../model/index.js';
import { loadModelForPrediction } from '../service/predict-command.js';
import { openTrackingStore, resolveTrackingUri } from '../tracking/index.js';
import type { TrackingStore } from '../tracking/store.js';
import { readDataWithInput } from '../train/dataset-input.js';

export const DEFAULT_SEED = 42;

/** Bad command-line input; the message says what to change. */
export class UsageError extends Error {}

export function parseInteger(name: string, min: number) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim()))
      throw new InvalidArgumentError(`${name} must be a whole number, got '${value}'`);
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed) || parsed < min) {
      throw new InvalidArgumentError(`${name} must be a whole number ≥ ${min}, got '${value}'`);
    }
    return parsed;
  };
}

/** The tracking store option of every command that reads or writes runs. */
export const trackingOption = () =>
  new Option(
    '--tracking-uri <uri>',
    'MLflow tracking URI: sqlite:///file.db (default sqlite:///mlflow.db), postgresql://…, http(s)://server or a folder (mlruns layout)',
  ).env('MLFLOW_TRACKING_URI');

/** Only commands that may create an experiment take it: the location is recorded on the experiment. */
export const artifactRootOption = () =>
  new Option(
    '--artifact-root <dir>',
    'database stores (sqlite:, postgresql:): where new experiments keep artifacts (default: mlruns beside a SQLite file, ./mlruns for PostgreSQL); replicas need it on a shared mount',
  ).env('TAGGER_ARTIFACT_ROOT');

/**
 * The training args of `--args` (inline JSON starting with `{`, or the path of a JSON file), and the
 * names it sets itself (the data decides some of the others: see argsForData).
 */
export async function readArgs(
  value: string | undefined,
): Promise<{ args: TrainingArgs; explicit: Set<string> }> {
  if (value === undefined) return { args: parseTrainingArgs({}), explicit: new Set() };
  let text = value;
  let source = 'the --args value';
  if (!value.trimStart().startsWith('{')) {
    source = value;
    try {
      text = await readFile(value, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new UsageError(
        code === 'ENOENT'
          ? `--args: file not found: ${value}`
          : `--args: cannot read ${value}: ${(error as Error).message}`,
      );
    }
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--args: ${source} is not valid JSON: ${(error as Error).message}`);
  }
  const args = parseTrainingArgs(raw);
  // parseTrainingArgs accepted it, so raw is an object (or null / undefined for the defaults).
  return { args, explicit: new Set(Object.keys(raw ?? {})) };
}

/** A hand-written definition file (`--behaviour`, `--slices`): YAML or JSON (YAML reads JSON too). */
async function readDefinitionFile(flag: string, path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT'
        ? `${flag}: file not found: ${path}`
        : `${flag}: cannot read ${path}: ${(error as Error).message}`,
    );
  }
  try {
    return parseYaml(text);
  } catch (error) {
    throw new UsageError(`${flag}: ${path} is not valid YAML or JSON: ${(error as Error).message}`);
  }
}

/**
 * The `--behaviour` suite and `--slices` definitions, read and checked before the data and the training:
 * a typo in a hand-written file should cost nothing. Absent flags give nothing (the defaults apply).
 */
export async function readDefinitions(flags: { behaviour?: string; slices?: string }) {
  return {
    ...(flags.behaviour === undefined
      ? {}
      : {
          behaviour: parseBehaviourSuite(
            await readDefinitionFile('--behaviour', flags.behaviour),
            flags.behaviour,
          ),
        }),
    ...(flags.slices === undefined
      ? {}
      : { slices: parseSliceDefinitions(await readDefinitionFile('--slices', flags.slices), flags.slices) }),
  };
}

/** The data files, each read once: rows to train on and the dataset inputs the runs record. */
export async function readTrainingFiles(flags: { data: string; testData?: string }) {
  const train = await readDataWithInput(flags.data, 'training');
  const test = flags.testData === undefined ? undefined : await readDataWithInput(flags.testData, 'testing');
  return {
    data: train.rows,
    testData: test?.rows,
    datasets: test ? [train.input, test.input] : [train.input],
  };
}

export function defaultRunName(prefix: string): string {
  return `${prefix}-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')}`;
}

/** Runs `work` on the store of `--tracking-uri` (or MLflow's variable and default), closed afterwards. */
export async function withStore<T>(
  trackingUri: string | undefined,
  work: (store: TrackingStore) => Promise<T>,
  artifactRoot?: string,
): Promise<T> {
  const store = await openTrackingStore(
    resolveTrackingUri(trackingUri, process.env),
    artifactRoot !== undefined && artifactRoot !== '' ? { artifactRoot } : {},
  );
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/** The model `--model`, `--run-id` or the experiment's best run names, for predict and evaluate. */
export function loadModelOfFlags(flags: {
  model?: string;
  runId?: string;
  experiment: string;
  trackingUri?: string;
}): ReturnType<typeof loadModelForPrediction> {
  return loadModelForPrediction({
    ...(flags.model === undefined ? {} : { modelDir: flags.model }),
    ...(flags.runId === undefined ? {} : { runId: flags.runId }),
    experiment: flags.experiment,
    trackingUri: resolveTrackingUri(flags.trackingUri, process.env),
  });
}
