/**
 * What `tagger retrain` (and `tagger feedback export --merged`) start from: the run it would replace (the
 * experiment's served run, a registry alias's run, or `--run-id`), that run's own training data — read
 * again through the dataset inputs the run recorded and refused unless its digest is the one recorded —,
 * its test rows reproduced exactly (the same digest as the run's), and every correction people gave: the
 * feedback labels on served predictions of its experiment and the label-issue fixes, less a held-out
 * part of the random share, which scores the old and the new model instead.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { EVALUATION_TAGS, parseSavedArgs, RUN_ARTIFACTS, type TrainingArgs } from '../model/index.js';
import {
  defaultRecordStoreUri,
  openRecordStore,
  type RecordStore,
  recordScope,
} from '../monitoring/index.js';
import type { LabelledRecord } from '../monitoring/record-store.js';
import { readRuns } from '../served-models/candidates.js';
import { servingVerdict } from '../served-models/gates.js';
import { type ModelUri, parseModelUri, resolveModelUri } from '../tracking/model-uri.js';
import type { DatasetInput, Run, TrackingStore } from '../tracking/store.js';
import { DataError, type DatasetRow, parseDatasetBytes } from '../train/data.js';
import { fileDigest } from '../train/dataset-input.js';
import { separateTestRepeats } from '../train/duplicates.js';
import { textKey } from '../train/label-issues.js';
import { type Correction, type MergeResult, mergeCorrections } from '../train/merge-corrections.js';
import { splitData, testSetDigest } from '../train/pipeline.js';
import {
  type DataColumnFlags,
  dataColumns,
  describeDataColumns,
  runDataColumns,
  servingGates,
  UsageError,
} from './inputs.js';

/** Where a promotion goes: the experiment's best run, or a registry alias. */
export type PromotionTarget = { kind: 'best' } | { kind: 'alias'; uri: string; name: string; alias: string };

export function promotionTarget(value: string | boolean | undefined): PromotionTarget {
  if (value === undefined || value === true || value === 'best') return { kind: 'best' };
  if (value === false) return { kind: 'best' };
  let parsed: ModelUri;
  try {
    parsed = parseModelUri(value);
  } catch {
    throw new UsageError(
      `--promote takes 'best' (the experiment's best run, what tagger serve --experiment serves) or a registry alias models:/<name>@<alias>, got '${value}'`,
    );
  }
  if (parsed.kind !== 'alias') {
    throw new UsageError(
      `--promote ${value}: a promotion moves an alias; give models:/<name>@<alias> (or 'best')`,
    );
  }
  return { kind: 'alias', uri: value, name: parsed.name, alias: parsed.alias };
}

export interface ParentRun {
  run: Run;
  experimentId: string;
  experimentName: string;
  /** The record scope of its experiment (feedback and decisions live there). */
  scope: string;
  args: TrainingArgs;
  seed: number;
  /** How it was chosen, for the output. */
  chosen: string;
  /**
   * The columns of its data files (as recorded with the run, or the flags overriding them): a file it
   * was trained on is read with them; data Tagger wrote (a retrain's merged artifact) has its own.
   */
  columns: DataColumnFlags;
}

export interface ParentFlags extends DataColumnFlags {
  experiment: string;
  runId?: string;
}

/**
 * The run a retrain would replace: `--run-id`, the run the promotion target's alias points at, or the
 * run `tagger serve --experiment` serves (the best FINISHED run that passes the promotion gates). A target
 * that does not exist is refused here, before anything is trained.
 */
export async function findParent(
  store: TrackingStore,
  flags: ParentFlags,
  target: PromotionTarget,
): Promise<ParentRun> {
  let runId = flags.runId;
  let chosen = `--run-id ${flags.runId}`;
  if (target.kind === 'alias') {
    const model = await store.registry.getRegisteredModel(target.name);
    if (model === null) {
      throw new UsageError(
        `--promote ${target.uri}: there is no registered model '${target.name}' in ${store.displayUri}; register one first (tagger train --register ${target.name}, then tagger alias set ${target.name} ${target.alias} <version>)`,
      );
    }
    if (model.aliases[target.alias] === undefined && target.alias !== 'latest') {
      throw new UsageError(
        `--promote ${target.uri}: model '${target.name}' has no alias '${target.alias}' (it has ${Object.keys(model.aliases).join(', ') || 'none'}); point it at the served version first (tagger alias set ${target.name} ${target.alias} <version>)`,
      );
    }
    if (runId === undefined) {
      runId = (await resolveModelUri(store, parseModelUri(target.uri))).runId;
      chosen = `the run ${target.uri} points at`;
    }
  }
  let run: Run | null;
  if (runId === undefined) {
    const read = await readRuns(store, flags.experiment);
    if (!read.ok) throw new UsageError(`retrain: ${read.reason}${read.hint ? `; ${read.hint}` : ''}`);
    const served = servingVerdict(read.runs, '', servingGates()).served;
    if (served === undefined) {
      throw new UsageError(
        `retrain: experiment '${flags.experiment}' has no run tagger serve would serve (none FINISHED passes the promotion gates); name one with --run-id`,
      );
    }
    runId = served.info.runId;
    chosen = `the run tagger serve --experiment ${flags.experiment} serves`;
  }
  run = await store.getRun(runId);
  if (run === null) throw new UsageError(`retrain: run ${runId} not found in ${store.displayUri}`);
  if (run.info.status !== 'FINISHED') {
    throw new UsageError(
      `retrain: run ${runId} is ${run.info.status}, not FINISHED: retrain from a finished run`,
    );
  }
  const experiment = await experimentName(store, run.info.experimentId, flags.experiment);
  let argsText: string;
  try {
    argsText = Buffer.from(await store.readArtifact(runId, RUN_ARTIFACTS.args)).toString('utf8');
  } catch (error) {
    throw new UsageError(
      `retrain: run ${runId} has no readable ${RUN_ARTIFACTS.args} (${(error as Error).message}); give its arguments with --args`,
    );
  }
  const seedText = run.params.seed;
  return {
    run,
    experimentId: run.info.experimentId,
    experimentName: experiment,
    scope: recordScope({ experimentId: run.info.experimentId }),
    args: parseSavedArgs(JSON.parse(argsText)),
    seed: seedText !== undefined && /^\d+$/.test(seedText) ? Number(seedText) : 42,
    chosen,
    columns: runDataColumns(run.params, flags),
  };
}

/** The experiment's name: the flag's, which must be the run's experiment (runs name only its id). */
async function experimentName(store: TrackingStore, id: string, given: string): Promise<string> {
  const named = await store.getExperimentByName(given);
  if (named?.experimentId === id) return given;
  throw new UsageError(
    `retrain: the run to replace belongs to experiment id ${id}, not to '${given}' (${named === null ? 'no such experiment' : `id ${named.experimentId}`}); name its experiment with --experiment, so the new run joins it`,
  );
}

/** A data file as a run recorded it, and where it was read from. */
export interface DataSource {
  name: string;
  digest: string;
  /** The file or artifact read (for the output). */
  where: string;
  rows: DatasetRow[];
  bytes: Uint8Array;
}

export interface ParentData {
  /** The rows the parent learnt from (train + validation). */
  pool: DatasetRow[];
  /** The rows it was tested on, reproduced (their digest is the run's). */
  test: DatasetRow[];
  multiLabel: boolean;
  training: DataSource;
  testing: DataSource | null;
}

const contextOf = (input: DatasetInput): string | undefined => input.tags['mlflow.data.context'];

/** Reads a recorded file with its run's columns, encoding and delimiter (runDataColumns has them). */
function parseBytes(bytes: Uint8Array, name: string, columns: DataColumnFlags): DatasetRow[] {
  return parseDatasetBytes(bytes, name, dataColumns(columns));
}

/** `{"uri": …}` of a dataset input's source, or null. */
function sourceUri(input: DatasetInput): string | null {
  try {
    const parsed = JSON.parse(input.dataset.source) as { uri?: unknown };
    return typeof parsed.uri === 'string' ? parsed.uri : null;
  } catch {
    return null;
  }
}

/**
 * Reads one recorded data file again — from `override` (`--data`, `--test-data`) when that is the file
 * recorded (its digest), else where the run recorded it (a local file, or `runs:/<id>/<path>`: an
 * artifact, as `tagger retrain` records its merged data) — and refuses it unless its digest is the recorded
 * one. An override that is not the run's file is passed over when the recorded one can be read (a
 * scheduled `retrain --data` keeps working once the served run is a retrained one, whose data is an
 * artifact); else its mismatch is the error.
 */
async function readRecorded(
  store: TrackingStore,
  runId: string,
  input: DatasetInput,
  override: string | undefined,
  flag: '--data' | '--test-data',
  runColumns: DataColumnFlags,
): Promise<DataSource> {
  // What Tagger wrote itself (a retrain's merged data, runs:/…) is in its own columns.
  const columns = sourceUri(input)?.startsWith('runs:/') ? {} : runColumns;
  const recorded = input.dataset.digest;
  let refused: UsageError | undefined;
  if (override !== undefined) {
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(override));
    } catch (error) {
      throw new UsageError(`${flag}: cannot read ${override}: ${(error as Error).message}`);
    }
    const digest = fileDigest(bytes);
    if (digest === recorded) return parsed(input, override, digest, bytes, columns);
    refused = new UsageError(
      `${flag} ${override} is not the ${contextOf(input)} data of run ${runId}: its digest is ${digest}, the run recorded ${recorded} (${input.dataset.name}); give the file the run was trained on`,
    );
  }
  try {
    const { bytes, where } = await readSource(store, runId, input, flag);
    const digest = fileDigest(bytes);
    if (digest !== recorded) {
      throw new UsageError(
        `retrain: the ${contextOf(input)} data of run ${runId}, ${where}, changed since the run was trained: its digest is ${digest}, the run recorded ${recorded}; give the file it was trained on with ${flag} <file>`,
      );
    }
    return parsed(input, where, digest, bytes, columns);
  } catch (error) {
    throw refused ?? error;
  }
}

/** Where the run recorded its data, read: a local file, or an artifact (`runs:/<id>/<path>`). */
async function readSource(
  store: TrackingStore,
  runId: string,
  input: DatasetInput,
  flag: '--data' | '--test-data',
): Promise<{ bytes: Uint8Array; where: string }> {
  const recorded = input.dataset.digest;
  const uri = sourceUri(input);
  if (uri?.startsWith('runs:/')) {
    const match = /^runs:\/([^/]+)\/(.+)$/.exec(uri);
    if (match === null) {
      throw new UsageError(
        `retrain: run ${runId} records its data at ${uri}, which is not runs:/<id>/<path>`,
      );
    }
    try {
      return { bytes: await store.readArtifact(match[1]!, match[2]!), where: uri };
    } catch (error) {
      throw new UsageError(
        `retrain: the ${contextOf(input)} data of run ${runId} (${uri}) cannot be read: ${(error as Error).message}; give the file with ${flag}`,
      );
    }
  }
  if (uri?.startsWith('file:')) {
    const where = fileURLToPath(uri);
    try {
      return { bytes: new Uint8Array(await readFile(where)), where };
    } catch (error) {
      const gone = (error as NodeJS.ErrnoException).code === 'ENOENT';
      throw new UsageError(
        `retrain: the ${contextOf(input)} data of run ${runId}, ${where}, ${gone ? 'is gone' : `cannot be read (${(error as Error).message})`}: give the file it was trained on with ${flag} <file> (digest ${recorded})`,
      );
    }
  }
  throw new UsageError(
    `retrain: run ${runId} records its ${contextOf(input)} data as ${input.dataset.name} at ${uri ?? 'no location'}, which Tagger cannot read: give the file with ${flag} <file> (digest ${recorded})`,
  );
}

function parsed(
  input: DatasetInput,
  where: string,
  digest: string,
  bytes: Uint8Array,
  columns: DataColumnFlags,
): DataSource {
  let rows: DatasetRow[];
  try {
    rows = parseBytes(bytes, input.dataset.name, columns);
  } catch (error) {
    const reason = (error as Error).message
      .replace(/^data: /, '')
      .replace(/\. (Name the columns|A dataset needs) .*$/s, '');
    throw new UsageError(
      `retrain: ${where}: ${reason}; read with ${describeDataColumns(columns)}, as the run recorded them (or as given): name the file's columns with --text-column, --tag-column or --tags-column`,
    );
  }
  return { name: input.dataset.name, digest, where, rows, bytes };
}

/**
 * The parent's training and test rows, as it was trained and tested on them: its recorded data (digest
 * checked), `subset` applied, and its test rows either its test file or the split of its seed — refused
 * unless their digest is the run's `tagger.test_set.digest`, so the new run is tested on the very same rows.
 */
export async function readParentData(
  store: TrackingStore,
  parent: ParentRun,
  flags: { data?: string; testData?: string },
): Promise<ParentData> {
  const { run } = parent;
  const runId = run.info.runId;
  const inputs = run.inputs ?? [];
  const trainingInput = inputs.find((input) => contextOf(input) === 'training');
  const testingInput = inputs.find((input) => contextOf(input) === 'testing');
  if (trainingInput === undefined) {
    throw new UsageError(
      `retrain: run ${runId} records no training dataset input (trained before Tagger recorded them, or by another tool), so its data cannot be read again and checked; retrain from a run trained with tagger train`,
    );
  }
  if (flags.testData !== undefined && testingInput === undefined) {
    throw new UsageError(
      `--test-data: run ${runId} was tested on a split of its training data, not on a test file; drop --test-data`,
    );
  }
  const training = await readRecorded(store, runId, trainingInput, flags.data, '--data', parent.columns);
  const testing =
    testingInput === undefined
      ? null
      : await readRecorded(store, runId, testingInput, flags.testData, '--test-data', parent.columns);
  const subset = parent.args.subset;
  const data = subset === null ? training.rows : training.rows.slice(0, subset);
  let pool: DatasetRow[];
  let test: DatasetRow[];
  if (testing !== null) {
    pool = data;
    test = testing.rows;
  } else {
    const split = splitData(data, false, parent.seed);
    pool = [...split.train, ...split.validation] as DatasetRow[];
    test = split.test as DatasetRow[];
  }
  const recorded = run.tags[EVALUATION_TAGS.testSetDigest];
  if (recorded !== undefined && testSetDigest(test) !== recorded) {
    // Since issue 40 a run is tested on its test rows less those that repeat a training row (duplicates.ts).
    const separated = separateTestRepeats(pool, test).test;
    if (testSetDigest(separated) === recorded) test = separated;
  }
  if (recorded !== undefined && testSetDigest(test) !== recorded) {
    throw new DataError(
      `retrain: the test rows of run ${runId} cannot be reproduced from its data (seed ${parent.seed}): their digest differs from the run's ${EVALUATION_TAGS.testSetDigest}; the run was not trained by tagger train, or with options retrain cannot repeat`,
    );
  }
  return { pool, test, multiLabel: data.some((row) => row.tags !== undefined), training, testing };
}

/** Whether a label of the random share is held out of training (scoring instead), by its prediction id. */
export function heldOutLabel(predictionId: string, share: number): boolean {
  if (share <= 0) return false;
  const hash = createHash('sha256').update(predictionId).digest();
  return hash.readUInt32BE(0) / 2 ** 32 < share;
}

/** A held-out live label: a prediction of the random share with the tags a person gave. */
export interface HeldOutLabel {
  predictionId: string;
  text: string;
  tags: string[];
}

export interface Labels {
  corrections: Correction[];
  heldOut: HeldOutLabel[];
  /** Feedback labels of the experiment (all of them, held out included). */
  feedback: number;
  /** Labelled predictions that kept only a hash of their text (TAGGER_RECORD_TEXT=hash). */
  hashedOnly: number;
  /** Label-issue fixes applied, and those whose row is not in the data any more. */
  fixes: number;
  fixesNotFound: number;
  /**
   * What followed its texts from other experiments (issue 40): feedback labels of experiments whose runs
   * were trained on the same data (the same original file, by digest), and label-issue fixes of any
   * experiment for rows of this data; the record scopes they came from.
   */
  followed: { feedback: number; fixes: number; scopes: string[] };
}

/** The run tag naming a retrained run's parent (`LINEAGE_TAGS.parent` of retrain.ts). */
const PARENT_RUN_TAG = 'tagger.retrain.parent_run_id';

/**
 * The digest of the file a run's lineage started from: its training input's, or — for a retrained run,
 * whose training data is its merged artifact — its first ancestor's. null when it cannot be told.
 */
async function originDigest(
  store: TrackingStore,
  runId: string,
  seen: Map<string, string | null>,
): Promise<string | null> {
  const known = seen.get(runId);
  if (known !== undefined) return known;
  let digest: string | null = null;
  let id: string | undefined = runId;
  // A lineage is short; the bound only guards against a loop of hand-set tags.
  for (let hop = 0; id !== undefined && hop < 50; hop++) {
    const run: Run | null = await store.getRun(id).catch(() => null);
    if (run === null) break;
    const parentId: string | undefined = run.tags[PARENT_RUN_TAG];
    if (parentId === undefined) {
      digest = (run.inputs ?? []).find((input) => contextOf(input) === 'training')?.dataset.digest ?? null;
      break;
    }
    id = parentId;
  }
  seen.set(runId, digest);
  return digest;
}

/**
 * The record scopes of other experiments whose labelled predictions were made by runs trained on the
 * same original data as `parent` — where feedback given before a user started this experiment lives.
 */
async function sameDataScopes(
  store: TrackingStore,
  records: RecordStore,
  parent: ParentRun,
): Promise<Set<string>> {
  const digests = new Map<string, string | null>();
  const origin = await originDigest(store, parent.run.info.runId, digests);
  const scopes = new Set<string>();
  if (origin === null) return scopes;
  // The runs whose predictions people labelled, any experiment's; each run's experiment is its scope.
  const labelledRuns = new Set<string>();
  let after: string | undefined;
  for (;;) {
    const page = await records.labelled({ after, limit: 1_000 });
    if (page.length === 0) break;
    after = page.at(-1)!.predictionId;
    for (const record of page) labelledRuns.add(record.runId);
  }
  for (const runId of labelledRuns) {
    const run = await store.getRun(runId).catch(() => null);
    if (run === null) continue;
    const scope = recordScope({ experimentId: run.info.experimentId });
    if (scope === parent.scope || scopes.has(scope)) continue;
    if ((await originDigest(store, runId, digests)) === origin) scopes.add(scope);
  }
  return scopes;
}

/**
 * Every correction of the experiment: its feedback labels (a held-out part of the random share aside)
 * and the label-issue fixes, each fix matched to its row's whole text by the key its decision names.
 */
export async function readLabels(
  records: RecordStore,
  scope: string,
  rows: readonly DatasetRow[],
  liveHoldout: number,
  sameData: ReadonlySet<string> = new Set(),
): Promise<Labels> {
  const labels: Labels = {
    corrections: [],
    heldOut: [],
    feedback: 0,
    hashedOnly: 0,
    fixes: 0,
    fixesNotFound: 0,
    followed: { feedback: 0, fixes: 0, scopes: [] },
  };
  const from = new Set<string>();
  for (const labelScope of [scope, ...sameData]) {
    let after: string | undefined;
    for (;;) {
      const page = await records.labelled({ scope: labelScope, after, limit: 1_000 });
      if (page.length === 0) break;
      after = page.at(-1)!.predictionId;
      for (const record of page) readFeedback(labels, record, liveHoldout);
      if (labelScope !== scope) {
        labels.followed.feedback += page.length;
        from.add(labelScope);
      }
    }
  }
  const byKey = new Map(rows.map((row) => [textKey(row.text), row.text]));
  // Every experiment's decisions: a fix follows its row's text into another experiment on the same data.
  for (const review of await records.labelReviews()) {
    if (review.decision !== 'fix') continue;
    const own = review.scope === scope;
    // The decision names the row by the hash of its whole text (the one shown may be cut).
    const text =
      byKey.get(review.textKey) ?? (own && textKey(review.text) === review.textKey ? review.text : undefined);
    if (text === undefined) {
      if (own) labels.fixesNotFound++;
      continue;
    }
    labels.fixes++;
    if (!own) {
      labels.followed.fixes++;
      from.add(review.scope);
    }
    labels.corrections.push({
      text,
      tags: review.tags,
      source: 'label_issue',
      receivedMs: review.receivedMs,
    });
  }
  labels.followed.scopes = [...from].sort();
  return labels;
}

/** One labelled record into `labels`: a correction, a held-out live label, or a hash without its text. */
function readFeedback(labels: Labels, record: LabelledRecord, liveHoldout: number): void {
  labels.feedback++;
  if (record.text === null) {
    labels.hashedOnly++;
    return;
  }
  if (record.selection === 'random_share' && heldOutLabel(record.predictionId, liveHoldout)) {
    labels.heldOut.push({ predictionId: record.predictionId, text: record.text, tags: record.tags });
    return;
  }
  labels.corrections.push({
    text: record.text,
    tags: record.tags,
    source: 'feedback',
    receivedMs: record.receivedMs,
  });
}

/** The record store `tagger serve` writes for this tracking store (or `--record-store`), opened writable. */
export async function openRecords(
  trackingUri: string,
  recordStore: string | undefined,
): Promise<RecordStore> {
  const uri = recordStore ?? defaultRecordStoreUri(trackingUri);
  // Read-only first: a store no server ever wrote is said so, instead of created empty.
  const probe = await openRecordStore(uri, { readOnly: true });
  await probe.close();
  return openRecordStore(uri);
}

export interface Prepared {
  parent: ParentRun;
  data: ParentData;
  labels: Labels;
  merged: MergeResult;
}

/** Everything a retrain (or the merged export) starts from. */
export async function prepare(
  store: TrackingStore,
  records: RecordStore,
  parent: ParentRun,
  flags: { data?: string; testData?: string; liveHoldout: number },
): Promise<Prepared> {
  const data = await readParentData(store, parent, flags);
  const labels = await readLabels(
    records,
    parent.scope,
    [...data.pool, ...data.test],
    flags.liveHoldout,
    await sameDataScopes(store, records, parent),
  );
  const merged = mergeCorrections({
    pool: data.pool,
    test: data.test,
    corrections: labels.corrections,
    multiLabel: data.multiLabel || parent.args.multi_label,
  });
  return { parent, data, labels, merged };
}
