/**
 * What several commands read the same way: integer flags, the training arguments of `--args`, the
 * hand-written `--behaviour` / `--slices` files, the data files, the tracking store, the model to
 * predict with, and the options they share. A problem is a `UsageError`: its message is the whole
 * explanation, printed after `tagger:`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import {
  encodingOf,
  parseBehaviourSuite,
  parseDelimiter,
  parseSliceDefinitions,
  parseTrainingArgs,
  type TrainingArgs,
} from '../model/index.js';
import { EncoderPool } from '../served-models/encoders.js';
import type { PromotionGates } from '../served-models/gates.js';
import { type LoadedForPrediction, loadModelForPrediction } from '../served-models/predict-command.js';
import { resolveSettings } from '../server/config.js';
import { defaultEncoderThreads } from '../server/worker-count.js';
import { openTrackingStore, resolveTrackingUri } from '../tracking/index.js';
import type { TrackingStore } from '../tracking/store.js';
import type { DatasetColumns } from '../train/data.js';
import { readDataWithInput } from '../train/dataset-input.js';
import { failOrphanedRuns } from '../train/run-ends.js';
import type { CliIo } from './io.js';

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

/**
 * `--text-column`, `--tag-column`, `--tags-column`: which columns of a data file hold the text and tags;
 * `--encoding`, `--delimiter`: how the file is read.
 */
export interface DataColumnFlags {
  textColumn?: string;
  tagColumn?: string;
  tagsColumn?: string;
  encoding?: string;
  delimiter?: string;
}

/** `--encoding` and `--delimiter`, for every command that reads a data file (labelled or to tag). */
export function fileReadingOptions(command: Command): Command {
  return command
    .option(
      '--encoding <name>',
      "the data file's encoding, e.g. latin1, windows-1252, utf-16le (default: UTF-8, or UTF-16 by its byte-order mark)",
    )
    .option('--delimiter <char>', "CSV: the field delimiter, e.g. ';' or tab (default: sniffed: , ; or tab)");
}

/** `--encoding` and `--delimiter` checked: a usage error names what is accepted. */
export function fileReading(flags: { encoding?: string; delimiter?: string }): {
  encoding?: string;
  delimiter?: string;
} {
  try {
    return {
      ...(flags.encoding === undefined ? {} : { encoding: encodingOf(flags.encoding) }),
      ...(flags.delimiter === undefined ? {} : { delimiter: parseDelimiter(flags.delimiter) }),
    };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** Adds the data-column options to a command that reads labelled data (as `predict --input` has its own). */
export function dataColumnOptions(command: Command): Command {
  return fileReadingOptions(command)
    .option(
      '--text-column <names>',
      "the column (a key in JSON) holding each row's text, instead of title + description; several separated by commas are joined by a space",
    )
    .option('--tag-column <name>', 'the column holding the tag, one per row, instead of tag')
    .option(
      '--tags-column <name>',
      'the column holding several tags per row (separated by | , or ;), instead of tags',
    );
}

/** The columns the data-column flags name (the defaults where they are not given). */
export function dataColumns(flags: DataColumnFlags): DatasetColumns {
  if (flags.tagColumn !== undefined && flags.tagsColumn !== undefined) {
    throw new UsageError('give --tag-column (one tag per row) or --tags-column (several), not both');
  }
  return { text: flags.textColumn, tag: flags.tagColumn, tags: flags.tagsColumn, ...fileReading(flags) };
}

/** The data-column flags given, as the params a run records them with (`text_column`, …). */
export function dataColumnParams(flags: DataColumnFlags): Record<string, string> {
  return {
    ...(flags.textColumn === undefined ? {} : { text_column: flags.textColumn }),
    ...(flags.tagColumn === undefined ? {} : { tag_column: flags.tagColumn }),
    ...(flags.tagsColumn === undefined ? {} : { tags_column: flags.tagsColumn }),
    // How the data file was read, so `tagger retrain` reads it again the same way.
    ...(flags.encoding === undefined ? {} : { data_encoding: encodingOf(flags.encoding) }),
    ...(flags.delimiter === undefined ? {} : { data_delimiter: parseDelimiter(flags.delimiter) }),
  };
}

/**
 * The data columns of a run's data files: the ones it recorded (`text_column`, `tag_column`,
 * `tags_column`, as `dataColumnParams` writes them), each overridden by the flag given (a tag flag
 * replaces both recorded tag columns: a file is single- or multi-label).
 */
export function runDataColumns(
  params: Readonly<Record<string, string>>,
  flags: DataColumnFlags,
): DataColumnFlags {
  const labelGiven = flags.tagColumn !== undefined || flags.tagsColumn !== undefined;
  const pick = (flag: string | undefined, recorded: string | undefined) => flag ?? recorded;
  const columns: DataColumnFlags = {};
  const text = pick(flags.textColumn, params.text_column);
  if (text !== undefined) columns.textColumn = text;
  const tag = labelGiven ? flags.tagColumn : params.tag_column;
  if (tag !== undefined) columns.tagColumn = tag;
  const tags = labelGiven ? flags.tagsColumn : params.tags_column;
  if (tags !== undefined) columns.tagsColumn = tags;
  // How its files were read (`data_encoding`, `data_delimiter`), so they are read so again.
  const encoding = pick(flags.encoding, params.data_encoding);
  if (encoding !== undefined) columns.encoding = encoding;
  const delimiter = pick(flags.delimiter, params.data_delimiter);
  if (delimiter !== undefined) columns.delimiter = delimiter;
  return columns;
}

/**
 * The columns to read a data file with: the flags given, else those the run `runId` was trained with
 * (its `text_column`, … params; null: no run, the defaults), so a file of a run's kind is read as it was.
 */
export async function recordedColumns(
  runId: string | null | undefined,
  flags: DataColumnFlags & { trackingUri?: string | undefined },
): Promise<DataColumnFlags> {
  if (runId === null || runId === undefined || hasDataColumnFlags(flags)) return flags;
  const store = await openTrackingStore(resolveTrackingUri(flags.trackingUri, process.env), {
    readOnly: true,
  });
  try {
    const run = await store.getRun(runId);
    if (run === null) throw new UsageError(`--run-id: run ${runId} not found in ${store.displayUri}`);
    return runDataColumns(run.params, flags);
  } finally {
    await store.close();
  }
}

/** Whether any data-column flag was given. */
export const hasDataColumnFlags = (flags: DataColumnFlags): boolean =>
  flags.textColumn !== undefined || flags.tagColumn !== undefined || flags.tagsColumn !== undefined;

/** What the data columns say in a message: `--text-column summary --tag-column section`, or the defaults. */
export function describeDataColumns(columns: DataColumnFlags): string {
  const parts = [
    ...(columns.textColumn === undefined ? [] : [`--text-column ${columns.textColumn}`]),
    ...(columns.tagColumn === undefined ? [] : [`--tag-column ${columns.tagColumn}`]),
    ...(columns.tagsColumn === undefined ? [] : [`--tags-column ${columns.tagsColumn}`]),
  ];
  return parts.length === 0 ? 'the default columns (title, description, tag or tags)' : parts.join(' ');
}

/**
 * Marks FAILED the runs of `experiment` that a tagger left RUNNING when it stopped while logging them
 * (the store lost late, SIGKILL), and says so; `train` and `optimize` do it before training.
 */
export async function failOrphanedRunsOf(store: TrackingStore, experiment: string, io: CliIo): Promise<void> {
  for (const run of await failOrphanedRuns(store, experiment)) {
    io.stderr.write(
      `tagger: run ${run.runId} (${run.runName}) of experiment '${experiment}' was left RUNNING by a tagger that stopped while logging it (${run.process}); marked FAILED\n`,
    );
  }
}

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
export async function readTrainingFiles(flags: { data: string; testData?: string } & DataColumnFlags) {
  const columns = dataColumns(flags);
  const train = await readDataWithInput(flags.data, 'training', columns);
  const test =
    flags.testData === undefined ? undefined : await readDataWithInput(flags.testData, 'testing', columns);
  return {
    data: train.rows,
    testData: test?.rows,
    datasets: test ? [train.input, test.input] : [train.input],
  };
}

export function defaultRunName(prefix: string): string {
  return `${prefix}-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')}`;
}

/**
 * The file or folder a local tracking URI names (a SQLite database, an mlruns folder), absolute; null for
 * a server (PostgreSQL, MLflow) or a URI that names nothing (opening it says why).
 */
export async function localStorePath(uri: string): Promise<string | null> {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase();
  if (scheme?.split('+')[0] === 'sqlite') {
    const { parseSqlUri } = await import('../tracking/sql/sql-store.js');
    try {
      const target = parseSqlUri(uri);
      return target.dialect === 'sqlite' ? target.file : null;
    } catch {
      return null;
    }
  }
  if (scheme === 'file') {
    try {
      return fileURLToPath(uri);
    } catch {
      return null;
    }
  }
  return scheme === undefined || scheme.length === 1 ? resolve(uri) : null;
}

/** What a message calls the store: its URI (no credentials) and, for a local one, the absolute path. */
export function storeLabel(displayUri: string, path: string | null): string {
  return path === null || displayUri.includes(path) ? displayUri : `${displayUri} (${path})`;
}

/** Whether `dir` is an mlruns file store (an experiment folder with its meta.yaml), not an artifact folder. */
function isFileStore(dir: string): boolean {
  try {
    return readdirSync(dir).some((name) => existsSync(join(dir, name, 'meta.yaml')));
  } catch {
    return false;
  }
}

/** Other tracking stores in `folder` (SQLite files, mlruns file stores), for "did you mean" lines. */
function storesBeside(folder: string, except: string): string[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
      .filter(
        (entry) =>
          join(folder, entry.name) !== except &&
          ((entry.isFile() && /\.(db|sqlite3?)$/i.test(entry.name)) ||
            (entry.isDirectory() && isFileStore(join(folder, entry.name)))),
      )
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
}

/**
 * Runs `work` on the store of `--tracking-uri` (or MLflow's variable and default), closed afterwards.
 * With `announce` (the commands that write runs), a store that did not exist before — created by this
 * open, maybe from a mistyped URI — is said on `announce`, with the stores beside it.
 */
export async function withStore<T>(
  trackingUri: string | undefined,
  work: (store: TrackingStore, label: string) => Promise<T>,
  artifactRoot?: string,
  announce?: CliIo['stderr'],
): Promise<T> {
  const uri = resolveTrackingUri(trackingUri, process.env);
  const path = await localStorePath(uri);
  const existed = path === null || existsSync(path);
  const store = await openTrackingStore(
    uri,
    artifactRoot !== undefined && artifactRoot !== '' ? { artifactRoot } : {},
  );
  const label = storeLabel(store.displayUri, path);
  if (announce !== undefined && !existed && path !== null) {
    const others = storesBeside(dirname(path), path);
    announce.write(
      `tagger: created a new tracking store, ${label}: nothing was there. If you meant an existing store, stop and check --tracking-uri (or MLFLOW_TRACKING_URI)` +
        `${others.length > 0 ? `; beside it: ${others.join(', ')}` : ''}.\n`,
    );
  }
  try {
    return await work(store, label);
  } finally {
    await store.close();
  }
}

/**
 * The promotion gates as `tagger serve` would apply them here: from the same variables
 * (TAGGER_MIN_TEST_SIZE, TAGGER_MIN_TAGS, TAGGER_ALLOW_INCOMPARABLE, TAGGER_MIN_BEHAVIOURAL_PASS_RATE,
 * TAGGER_ALLOW_TEST_LEAK)
 * and TAGGER_CONFIG's file, else the defaults.
 */
export function servingGates(): PromotionGates {
  let settings: ReturnType<typeof resolveSettings>;
  try {
    settings = resolveSettings({}, process.env);
  } catch (error) {
    throw new UsageError(
      `the run is chosen as \`tagger serve\` chooses it, with its promotion-gate settings, and its settings cannot be read: ${(error as Error).message}`,
    );
  }
  const value = (key: Parameters<typeof settings.get>[0]): unknown => settings.get(key)?.value;
  return {
    minTestSize: value('min_test_size') as number,
    minTags: value('min_tags') as number,
    allowIncomparable: value('allow_incomparable') as boolean,
    minBehaviouralPassRate: value('min_behavioural_pass_rate') as number,
    allowTestLeak: value('allow_test_leak') as boolean,
  };
}

/**
 * How `tagger predict` and `evaluate` run an encoder run's encoder: in its own thread, with every CPU
 * the quota allows (TAGGER_ENCODER_THREADS to choose), in large batches sorted by length inside, with no
 * queue bound (a file is read ahead by at most a few batches anyway), the file's batches in order (fair
 * shares between them made the first one, which the output waits for, finish with the last read ahead).
 */
function cliEncoderPool(): EncoderPool {
  const threads = Number(process.env.TAGGER_ENCODER_THREADS);
  return new EncoderPool(
    {
      threads: Number.isInteger(threads) && threads >= 1 ? threads : defaultEncoderThreads(1),
      maxBatch: 256,
      maxWaitMs: 0,
      maxQueue: 0,
      inOrder: true,
      nice: 0,
    },
    {},
    0,
  );
}

/**
 * A model loaded for a command, with its encoder when it is an encoder run's; `close()` when done
 * (`{ abandon: true }` when the command was stopped: the encoder's queued work is dropped, not finished).
 */
export type CommandModel = LoadedForPrediction & { close(options?: { abandon?: boolean }): Promise<void> };

/**
 * The model `--model`, `--run-id` or the experiment's best run names, for predict and evaluate. The best
 * run is the one `tagger serve` serves (same gates); better-ranked runs it holds back are named on stderr.
 * An encoder run comes with its encoder (its `predictor` holds it), loaded and checked like serving loads it.
 */
export async function loadModelOfFlags(
  flags: {
    model?: string;
    runId?: string;
    experiment: string;
    trackingUri?: string;
  },
  io: CliIo,
): Promise<CommandModel> {
  const chooses = flags.model === undefined && flags.runId === undefined;
  const encoders = cliEncoderPool();
  let found: LoadedForPrediction;
  try {
    found = await loadModelForPrediction({
      ...(flags.model === undefined ? {} : { modelDir: flags.model }),
      ...(flags.runId === undefined ? {} : { runId: flags.runId }),
      experiment: flags.experiment,
      trackingUri: resolveTrackingUri(flags.trackingUri, process.env),
      ...(chooses ? { gates: servingGates() } : {}),
      encoders,
    });
  } catch (error) {
    await encoders.close();
    throw error;
  }
  const loaded: CommandModel = { ...found, close: (options) => encoders.close(options) };
  const shown = loaded.heldBack.slice(0, 5);
  for (const held of shown) {
    io.stderr.write(
      `tagger: run ${held.runId} ranks above run ${loaded.runId} but is not used: ${held.reason}${held.kind === 'gates' ? '' : ' (its artifacts cannot be loaded)'}; \`tagger serve\` holds it back too (--run-id ${held.runId} uses it anyway)\n`,
    );
  }
  if (loaded.heldBack.length > shown.length) {
    io.stderr.write(`tagger: … and ${loaded.heldBack.length - shown.length} more runs held back\n`);
  }
  return loaded;
}
