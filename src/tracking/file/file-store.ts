/**
 * `FileTrackingStore`: reads and writes MLflow's local file store ("mlruns") layout exactly, so runs
 * logged by Tagger show up in `mlflow.search_runs` / `mlflow ui` and runs logged by Python MLflow are
 * served by Tagger. The layout and every rule mirrored here come from MLflow's
 * `mlflow/store/tracking/file_store.py` (checked against MLflow 3.17.2); see `../README.md`. The file
 * formats are in `formats.ts`, reading helpers in `read.ts`.
 *
 * Crash safety: every file that is replaced (YAML, params, tags, artifacts) is written to a temp file and
 * renamed into place; temp files are dot-files at experiment (or root) level, where MLflow only looks for
 * directories. A run folder counts as a run only once its `meta.yaml` exists, and `meta.yaml` is written
 * last, so a crash mid-create leaves a folder both MLflow and Tagger skip. Metric lines are appended with
 * one `write` per batch of whole lines.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { atomicWrite, errno, fsError, LocalArtifacts, probeWritable } from '../local-artifacts.js';
import { withLockFile } from '../lock-file.js';
import {
  invalid,
  newRunFields,
  newRunInfo,
  paramChanged,
  RUN_NAME_TAG,
  sortRuns,
  statusUpdate,
  validateBatch,
  validateExperimentName,
  validateKey,
} from '../mlflow-rules.js';
import { redactUri } from '../redact.js';
import type {
  ArtifactEntry,
  CreateLoggedModelOptions,
  CreateRunOptions,
  DatasetInput,
  Experiment,
  LogBatch,
  LoggedModel,
  LoggedModelStatus,
  MetricPoint,
  ModelOutput,
  Run,
  RunInfo,
  RunStatus,
  SearchRunsOptions,
  TrackingStore,
} from '../store.js';
import { TrackingError } from '../store.js';
import { FileRunIo } from './datasets-and-models.js';
import {
  dumpMeta,
  formatMetricValue,
  latestMetricValue,
  malformed,
  metaInt,
  metaLifecycle,
  metaString,
  parseMeta,
  parseMetricLine,
} from './formats.js';
import { FileModelRegistry } from './model-registry.js';
import { exists, existsSync, readText, readTextSync, subdirectoriesSync, walkFilesSync } from './read.js';

export interface FileTrackingStoreOptions {
  /**
   * Called for every run or experiment folder a listing skips because it cannot be read (malformed
   * `meta.yaml`, bad metric file, ...). MLflow logs these and carries on; so do we.
   */
  onWarning?: (message: string) => void;
  /** Read-only use: a missing folder is NOT_FOUND instead of created (with `Default` and `.trash`). */
  readOnly?: boolean;
}

// Names from MLflow's FileStore.
const TRASH = '.trash';
const META = 'meta.yaml';
const METRICS = 'metrics';
const PARAMS = 'params';
const TAGS = 'tags';
const ARTIFACTS = 'artifacts';
const DEFAULT_EXPERIMENT_ID = '0';
/** Held while an experiment is created (a dot-file: MLflow only treats sub-folders as experiments). */
const EXPERIMENTS_LOCK = '.tagger-experiments.lock';
/** Experiment-level folders that are not runs (`RESERVED_EXPERIMENT_FOLDERS`). */
const RESERVED_EXPERIMENT_FOLDERS = new Set(['tags', 'datasets', 'traces', 'models']);
/** Root-level folders that are not experiments (`.trash`, and the model registry's `models`). */
const NON_EXPERIMENT_FOLDERS = new Set([TRASH, 'models']);
/**
 * searchRuns reads runs synchronously (see `readTextSync`) but hands the event loop back after this
 * many milliseconds, so a reload of a big experiment never stalls requests being served meanwhile.
 */
const SEARCH_SLICE_MS = 10;
/** Prefix of our temp files; MLflow never looks at files at experiment/root level. */

// Validation rules from `mlflow/utils/validation.py`.
const RUN_ID_RE = /^[a-zA-Z0-9][\w-]{0,255}$/;
const EXPERIMENT_ID_RE = /^[a-zA-Z0-9][\w-]{0,63}$/;

/** RunStatus as MLflow persists it in run `meta.yaml` (an int enum). */
const STATUS_TO_INT: Record<RunStatus, number> = {
  RUNNING: 1,
  SCHEDULED: 2,
  FINISHED: 3,
  FAILED: 4,
  KILLED: 5,
};
const INT_TO_STATUS = new Map<number, RunStatus>(
  Object.entries(STATUS_TO_INT).map(([name, value]) => [value, name as RunStatus]),
);

/** Where a run lives on disk. */
interface RunLocation {
  experimentId: string;
  experimentDir: string;
  runDir: string;
}

interface LoadedRunInfo {
  info: RunInfo;
  location: RunLocation;
  /** Absolute path of the run's artifact folder (relocated to the store when the recorded one is gone). */
  artifactDir: string | null;
  /** The fields of `meta.yaml` we rewrite on update. */
  recordedArtifactUri: string;
}

/** Parses a file URI or a path into an absolute path (relative paths against the working directory). */
export function storeRootFromUri(uri: string): string {
  if (uri.startsWith('file:')) {
    try {
      return fileURLToPath(uri);
    } catch (error) {
      throw new TrackingError(
        'INVALID_ARGUMENT',
        `tracking: '${redactUri(uri)}' is not a usable file URI (use file:///absolute/path or a plain path)`,
        { cause: error },
      );
    }
  }
  return resolve(uri);
}

/** A new experiment id like MLflow's `_generate_unique_integer_id`: 18 decimal digits, no leading zero. */
function newExperimentId(): string {
  let id = String(randomInt(1, 10));
  for (let i = 0; i < 17; i += 1) id += String(randomInt(0, 10));
  return id;
}

const fileUri = (path: string): string => pathToFileURL(path).href;

export class FileTrackingStore implements TrackingStore {
  /** Absolute path of the mlruns folder. */
  readonly root: string;
  readonly displayUri: string;
  readonly registry: FileModelRegistry;
  private readonly onWarning: (message: string) => void;
  private readonly readOnly: boolean;
  private initialized: Promise<void> | undefined;
  /** Run id -> location; verified on use, since runs can move (experiment deleted to `.trash`). */
  private readonly runLocations = new Map<string, RunLocation>();
  /** Dataset inputs, run outputs and logged models (`datasets-and-models.ts`). */
  private readonly io: FileRunIo;

  /** `root` is a folder path or a `file://` URI; it is created (with experiment `0`) on first use. */
  constructor(root: string, options: FileTrackingStoreOptions = {}) {
    this.root = storeRootFromUri(root);
    this.displayUri = fileUri(this.root);
    this.registry = new FileModelRegistry(this.root, this.displayUri);
    this.onWarning = options.onWarning ?? (() => {});
    this.readOnly = options.readOnly ?? false;
    this.io = new FileRunIo({
      displayUri: this.displayUri,
      onWarning: (message) => this.onWarning(message),
      experimentFolders: () => this.experimentFolders(),
      findExperiment: (id) => this.findExperiment(id),
      activeRun: async (runId) => (await this.requireActiveRun(runId)).location,
      artifactBase: (experiment) => this.artifactBase(experiment),
    });
  }

  /** Creates the store and its folder now (rather than on first use), surfacing permission errors early. */
  static async open(root: string, options: FileTrackingStoreOptions = {}): Promise<FileTrackingStore> {
    const store = new FileTrackingStore(root, options);
    await store.ready();
    return store;
  }

  async close(): Promise<void> {}

  async checkWritable(experimentId?: string): Promise<void> {
    await this.ready();
    await probeWritable(this.root, 'the tracking folder');
    if (experimentId === undefined) return;
    // A run is a folder in the experiment's folder, which may belong to someone else than the root
    // (created by another user or job), with artifacts where the experiment keeps them.
    const found = await this.findExperiment(experimentId);
    if (!found) {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: experiment ${experimentId} not found in ${this.displayUri}`,
      );
    }
    await probeWritable(found.dir, `the folder of experiment '${found.experiment.name}'`);
    const artifacts = await this.artifactBase(found.experiment);
    if (artifacts !== null && resolve(artifacts) !== found.dir) {
      await probeWritable(artifacts, `the artifact folder of experiment '${found.experiment.name}'`);
    }
  }

  // ---------------------------------------------------------------- setup and atomic writes

  /** Like `FileStore.__init__`: a missing root is created with the default experiment; `.trash` always. */
  private ready(): Promise<void> {
    this.initialized ??= this.initialize().catch((error: unknown) => {
      this.initialized = undefined;
      throw error;
    });
    return this.initialized;
  }

  private async initialize(): Promise<void> {
    if (this.readOnly) {
      if (!(await exists(this.root))) {
        throw new TrackingError(
          'NOT_FOUND',
          `tracking: there is no mlruns folder at ${this.root}; nothing was created`,
        );
      }
      return;
    }
    try {
      if (!(await exists(this.root))) {
        await mkdir(this.root, { recursive: true });
        const experimentDir = join(this.root, DEFAULT_EXPERIMENT_ID);
        await mkdir(experimentDir, { recursive: true });
        await this.writeExperimentMeta(experimentDir, DEFAULT_EXPERIMENT_ID, 'Default', Date.now());
      }
      await mkdir(join(this.root, TRASH), { recursive: true });
    } catch (error) {
      if (error instanceof TrackingError) throw error;
      throw fsError(error, 'create the tracking folder', this.root);
    }
  }

  private async writeExperimentMeta(dir: string, id: string, name: string, time: number): Promise<void> {
    const meta = dumpMeta({
      artifact_location: fileUri(dir),
      creation_time: time,
      experiment_id: id,
      last_update_time: time,
      lifecycle_stage: 'active',
      name,
    });
    await atomicWrite(join(dir, META), meta, dirname(dir));
  }

  // ---------------------------------------------------------------- experiments

  /** `[id, folder]` of every experiment folder, active first, then deleted ones in `.trash`. */
  private async experimentFolders(): Promise<{ id: string; dir: string }[]> {
    const active = subdirectoriesSync(this.root)
      .filter((name) => !NON_EXPERIMENT_FOLDERS.has(name))
      .map((name) => ({ id: name, dir: join(this.root, name) }));
    const trash = join(this.root, TRASH);
    const deleted = subdirectoriesSync(trash).map((name) => ({ id: name, dir: join(trash, name) }));
    return [...active, ...deleted];
  }

  /** Reads one experiment folder; null when it has no meta.yaml (not an experiment, like MLflow). */
  private async readExperiment(id: string, dir: string): Promise<Experiment | null> {
    const file = join(dir, META);
    const text = readTextSync(file);
    if (text === null) return null;
    const meta = parseMeta(text, file);
    const recordedId = metaString(meta, 'experiment_id', file);
    // Old MLflow wrote the id as a YAML int; the folder name is the id either way.
    if (recordedId !== id)
      throw malformed(file, `experiment_id '${recordedId}' does not match its folder '${id}'`);
    const name = metaString(meta, 'name', file);
    if (name === null) throw malformed(file, "field 'name' is missing");
    const artifactLocation = metaString(meta, 'artifact_location', file);
    if (artifactLocation === null) throw malformed(file, "field 'artifact_location' is missing");
    return {
      experimentId: id,
      name,
      artifactLocation,
      lifecycleStage: metaLifecycle(meta, file),
      creationTime: metaInt(meta, 'creation_time', file),
      lastUpdateTime: metaInt(meta, 'last_update_time', file),
    };
  }

  /** The folder of experiment `id` (active or deleted) and its metadata; null when absent. */
  private async findExperiment(id: string): Promise<{ dir: string; experiment: Experiment } | null> {
    if (!EXPERIMENT_ID_RE.test(id)) throw invalid(`'${id}' is not a valid experiment id`);
    for (const dir of [join(this.root, id), join(this.root, TRASH, id)]) {
      const experiment = await this.readExperiment(id, dir);
      if (experiment) return { dir, experiment };
    }
    return null;
  }

  async getExperimentByName(name: string): Promise<Experiment | null> {
    await this.ready();
    for (const { id, dir } of await this.experimentFolders()) {
      try {
        const experiment = await this.readExperiment(id, dir);
        if (experiment?.name === name) return experiment;
      } catch (error) {
        if (!(error instanceof TrackingError && error.code === 'MALFORMED')) throw error;
        this.onWarning(`${error.message} (experiment skipped)`);
      }
    }
    return null;
  }

  async createExperiment(name: string): Promise<string> {
    validateExperimentName(name);
    await this.ready();
    // Without the lock, Tagger processes creating the same name at once each made their own experiment.
    return withLockFile(join(this.root, EXPERIMENTS_LOCK), () => this.createExperimentLocked(name));
  }

  private async createExperimentLocked(name: string): Promise<string> {
    const existing = await this.getExperimentByName(name);
    if (existing) {
      const state = existing.lifecycleStage === 'deleted' ? ' (deleted, in .trash; restore or purge it)' : '';
      throw new TrackingError(
        'ALREADY_EXISTS',
        `tracking: experiment '${name}' already exists in ${this.displayUri}${state}`,
      );
    }
    for (;;) {
      const id = newExperimentId();
      const dir = join(this.root, id);
      try {
        await mkdir(dir);
      } catch (error) {
        if (errno(error) === 'EEXIST') continue; // 1 in 10^17; pick another.
        throw fsError(error, 'create experiment folder', dir);
      }
      await this.writeExperimentMeta(dir, id, name, Date.now());
      return id;
    }
  }

  // ---------------------------------------------------------------- runs: reading

  private assertRunId(runId: string): void {
    if (typeof runId !== 'string' || !RUN_ID_RE.test(runId))
      throw invalid(`'${runId}' is not a valid run id`);
  }

  /** Finds the folder of a run (any experiment, active or deleted) that has a meta.yaml. */
  private async locateRun(runId: string): Promise<RunLocation | null> {
    this.assertRunId(runId);
    await this.ready();
    const cached = this.runLocations.get(runId);
    if (cached && (await exists(join(cached.runDir, META)))) return cached;
    this.runLocations.delete(runId);
    for (const { id, dir } of await this.experimentFolders()) {
      const runDir = join(dir, runId);
      if (await exists(join(runDir, META))) {
        const location = { experimentId: id, experimentDir: dir, runDir };
        this.runLocations.set(runId, location);
        return location;
      }
    }
    return null;
  }

  /** Resolves where a run's artifacts are, relocating a stale absolute `file://` URI into this store. */
  private resolveArtifactDir(recorded: string, location: RunLocation): string | null {
    const fallback = join(location.runDir, ARTIFACTS);
    let recordedPath: string | null = null;
    if (recorded.startsWith('file:')) {
      try {
        recordedPath = fileURLToPath(recorded);
      } catch {
        recordedPath = null;
      }
    } else if (isAbsolute(recorded)) {
      recordedPath = recorded;
    } else if (recorded.includes(':')) {
      // mlflow-artifacts:/, s3://, ...: not on this machine.
      return null;
    }
    if (recordedPath !== null && existsSync(recordedPath)) return recordedPath;
    // The store was moved or copied: MLflow's own layout puts the artifacts beside meta.yaml.
    return fallback;
  }

  private readRunInfo(location: RunLocation, runId: string): LoadedRunInfo {
    const file = join(location.runDir, META);
    const text = readTextSync(file);
    if (text === null) throw new TrackingError('NOT_FOUND', `tracking: run ${runId} has no ${file}`);
    const meta = parseMeta(text, file);
    const recordedRunId = metaString(meta, 'run_id', file) ?? metaString(meta, 'run_uuid', file);
    if (recordedRunId !== runId) {
      throw malformed(file, `run_id '${recordedRunId}' does not match its folder '${runId}'`);
    }
    const experimentId = metaString(meta, 'experiment_id', file);
    if (experimentId !== location.experimentId) {
      throw malformed(file, `experiment_id '${experimentId}' does not match its experiment folder`);
    }
    const statusInt = metaInt(meta, 'status', file);
    const status = statusInt === null ? 'RUNNING' : INT_TO_STATUS.get(statusInt);
    if (status === undefined) throw malformed(file, `status ${statusInt} is not one of 1..5`);
    const recordedArtifactUri = metaString(meta, 'artifact_uri', file) ?? '';
    const artifactDir = this.resolveArtifactDir(recordedArtifactUri, location);
    const info: RunInfo = {
      runId,
      experimentId,
      runName: metaString(meta, 'run_name', file) ?? '',
      userId: metaString(meta, 'user_id', file) ?? '',
      status,
      startTime: metaInt(meta, 'start_time', file) ?? 0,
      endTime: metaInt(meta, 'end_time', file),
      artifactUri: artifactDir !== null ? fileUri(artifactDir) : recordedArtifactUri,
      lifecycleStage: metaLifecycle(meta, file),
    };
    return { info, location, artifactDir, recordedArtifactUri };
  }

  private readMetricFile(runDir: string, key: string): MetricPoint[] | null {
    const file = join(runDir, METRICS, ...key.split('/'));
    const text = readTextSync(file);
    if (text === null) return null;
    // Python's readlines(): a trailing newline does not start another line.
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (lines.length === 0) throw malformed(file, 'no data');
    return lines.map((line) => parseMetricLine(key, line, file));
  }

  private readValues(runDir: string, folder: string, kind: 'param' | 'tag'): Record<string, string> {
    const dir = join(runDir, folder);
    const values: Record<string, string> = {};
    const keys = walkFilesSync(dir);
    for (const key of keys) {
      try {
        validateKey(kind, key);
      } catch {
        throw malformed(join(dir, key), `'${key}' is not a valid ${kind} key`);
      }
    }
    for (const key of keys) {
      // Gone since the listing (deleted meanwhile): left out, as MLflow would not have listed it.
      const text = readTextSync(join(dir, ...key.split('/')));
      if (text !== null) values[key] = text;
    }
    return values;
  }

  private loadRun(location: RunLocation, runId: string): Run {
    const loaded = this.readRunInfo(location, runId);
    const { runDir } = location;
    const metrics: Record<string, number> = {};
    const metricKeys = walkFilesSync(join(runDir, METRICS));
    for (const key of metricKeys) {
      try {
        validateKey('metric', key);
      } catch {
        throw malformed(join(runDir, METRICS, key), `'${key}' is not a valid metric key`);
      }
    }
    for (const key of metricKeys) {
      const file = join(runDir, METRICS, ...key.split('/'));
      const text = readTextSync(file);
      // Gone since the listing: no value, as if it had not been listed.
      const latest = text === null ? undefined : latestMetricValue(key, text, file);
      if (latest !== undefined) metrics[key] = latest;
    }
    const params = this.readValues(runDir, PARAMS, 'param');
    const tags = this.readValues(runDir, TAGS, 'tag');
    // MLflow falls back to the mlflow.runName tag when meta.yaml has no run_name.
    const info =
      loaded.info.runName === '' ? { ...loaded.info, runName: tags[RUN_NAME_TAG] ?? '' } : loaded.info;
    return { info, metrics, params, tags };
  }

  async getRun(runId: string): Promise<Run | null> {
    const location = await this.locateRun(runId);
    if (!location) return null;
    const run = this.loadRun(location, runId);
    return {
      ...run,
      inputs: this.io.readInputs(location.experimentDir, location.runDir, runId),
      outputs: this.io.readOutputs(location.runDir),
    };
  }

  async searchRuns(experimentId: string, options: SearchRunsOptions = {}): Promise<Run[]> {
    await this.ready();
    const found = await this.findExperiment(experimentId);
    // MLflow's FileStore returns no runs for an unknown experiment.
    if (!found) return [];
    const names = subdirectoriesSync(found.dir).filter((name) => !RESERVED_EXPERIMENT_FOLDERS.has(name));
    // Runs are read one after the other with sync calls (see readTextSync), handing the event loop back
    // every SEARCH_SLICE_MS: at startup nothing else waits, and during a reload requests keep flowing.
    const runs: Run[] = [];
    let sliceStart = performance.now();
    for (const name of names) {
      const run = this.tryLoadRun(found.dir, experimentId, name);
      if (run !== null) runs.push(run);
      if (performance.now() - sliceStart >= SEARCH_SLICE_MS) {
        await new Promise((resume) => setImmediate(resume));
        sliceStart = performance.now();
      }
    }
    const selected = runs.filter(
      (run) =>
        run.info.lifecycleStage === 'active' && (!options.finishedOnly || run.info.status === 'FINISHED'),
    );
    return sortRuns(selected, options.orderByMetric);
  }

  /** One run of a listing, or null (reported) when it is not a readable run, as MLflow skips it. */
  private tryLoadRun(experimentDir: string, experimentId: string, name: string): Run | null {
    const runDir = join(experimentDir, name);
    // No meta.yaml: not a run (yet) — e.g. a run whose creation crashed. MLflow skips these silently.
    if (!RUN_ID_RE.test(name) || !existsSync(join(runDir, META))) return null;
    try {
      const location = { experimentId, experimentDir, runDir };
      const run = this.loadRun(location, name);
      this.runLocations.set(name, location);
      return run;
    } catch (error) {
      if (error instanceof TrackingError && (error.code === 'MALFORMED' || error.code === 'NOT_FOUND')) {
        this.onWarning(`${error.message} (run ${name} skipped)`);
        return null;
      }
      throw error;
    }
  }

  async getMetricHistory(runId: string, key: string): Promise<MetricPoint[]> {
    validateKey('metric', key);
    const location = await this.requireRun(runId);
    return this.readMetricFile(location.runDir, key) ?? [];
  }

  private async requireRun(runId: string): Promise<RunLocation> {
    const location = await this.locateRun(runId);
    if (!location)
      throw new TrackingError('NOT_FOUND', `tracking: run ${runId} not found in ${this.displayUri}`);
    return location;
  }

  /** The run's info, refusing writes to deleted runs like MLflow's `check_run_is_active`. */
  private async requireActiveRun(runId: string): Promise<LoadedRunInfo> {
    const location = await this.requireRun(runId);
    const loaded = this.readRunInfo(location, runId);
    if (loaded.info.lifecycleStage !== 'active') {
      throw invalid(`run ${runId} is deleted; restore it before logging to it`);
    }
    return loaded;
  }

  // ---------------------------------------------------------------- runs: writing

  private async writeRunMeta(loaded: Omit<LoadedRunInfo, 'artifactDir'>, creating: boolean): Promise<void> {
    const { info, location } = loaded;
    const data: Record<string, string | number | null | never[]> = {
      artifact_uri: loaded.recordedArtifactUri,
      end_time: info.endTime,
      entry_point_name: '',
      experiment_id: info.experimentId,
      lifecycle_stage: info.lifecycleStage,
      run_id: info.runId,
      run_name: info.runName,
      // MLflow 3 dropped run_uuid, but MLflow 2.x requires it to read the run.
      run_uuid: info.runId,
      source_name: '',
      source_type: 4,
      source_version: '',
      start_time: info.startTime,
      status: STATUS_TO_INT[info.status],
      tags: [],
      user_id: info.userId,
    };
    // MLflow writes deleted_time only at creation (null) and on deletion.
    if (creating) data['deleted_time'] = null;
    await atomicWrite(join(location.runDir, META), dumpMeta(data), location.experimentDir);
  }

  private async writeValue(location: RunLocation, folder: string, key: string, value: string): Promise<void> {
    await atomicWrite(join(location.runDir, folder, ...key.split('/')), value, location.experimentDir);
  }

  async createRun(experimentId: string, options: CreateRunOptions): Promise<Run> {
    await this.ready();
    const fields = newRunFields(options);
    const { tags } = fields;

    const found = await this.findExperiment(experimentId);
    if (!found) {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: experiment ${experimentId} not found in ${this.displayUri}`,
      );
    }
    if (found.experiment.lifecycleStage !== 'active') {
      throw invalid(`experiment ${experimentId} is deleted; restore it before creating runs in it`);
    }

    const runId = randomUUID().replaceAll('-', '');
    const runDir = join(found.dir, runId);
    const location: RunLocation = { experimentId, experimentDir: found.dir, runDir };
    const { recordedUri, dir: artifactDir } = await this.newRunArtifactDir(found.experiment, location, runId);
    try {
      await mkdir(runDir);
      // MLflow only finds runs that have metrics/, params/ and artifacts/ (even when the artifacts
      // themselves live elsewhere).
      for (const folder of [METRICS, PARAMS, TAGS, ARTIFACTS]) await mkdir(join(runDir, folder));
      await mkdir(artifactDir, { recursive: true });
    } catch (error) {
      throw fsError(error, 'create run folder', runDir);
    }
    for (const [key, value] of Object.entries(tags)) await this.writeValue(location, TAGS, key, value);
    const info = newRunInfo({ runId, experimentId, artifactUri: fileUri(artifactDir) }, fields);
    // Last: from here on the run is visible to readers.
    await this.writeRunMeta({ info, location, recordedArtifactUri: recordedUri }, true);
    this.runLocations.set(runId, location);
    return { info, metrics: {}, params: {}, tags };
  }

  /**
   * The artifact URI MLflow would record (`<experiment artifact_location>/<run>/artifacts`) when that
   * location is on this machine; otherwise (store moved, or a remote location) the store-local folder.
   */
  private async newRunArtifactDir(
    experiment: Experiment,
    location: RunLocation,
    runId: string,
  ): Promise<{ recordedUri: string; dir: string }> {
    const local = join(location.runDir, ARTIFACTS);
    const experimentArtifacts = await this.artifactBase(experiment);
    if (experimentArtifacts !== null) {
      const base = experiment.artifactLocation.replace(/\/+$/, '');
      return {
        recordedUri: `${base}/${runId}/${ARTIFACTS}`,
        dir: join(experimentArtifacts, runId, ARTIFACTS),
      };
    }
    return { recordedUri: fileUri(local), dir: local };
  }

  /** The existing local folder of the experiment's artifact location; null when runs keep theirs in the store. */
  private async artifactBase(experiment: Experiment): Promise<string | null> {
    if (!experiment.artifactLocation.startsWith('file:')) return null;
    let path: string;
    try {
      path = fileURLToPath(experiment.artifactLocation);
    } catch {
      return null; // Not a usable file URI: the store-local folder.
    }
    return (await exists(path)) ? path : null;
  }

  async logBatch(runId: string, batch: LogBatch): Promise<void> {
    const { metrics, params, tags } = validateBatch(batch);
    if (metrics.length === 0 && params.length === 0 && tags.length === 0) {
      await this.requireRun(runId);
      return;
    }
    const loaded = await this.requireActiveRun(runId);
    const { location } = loaded;
    const logModelMetrics = await this.io.modelMetricWriter(location.experimentDir, runId, metrics);

    const newParams: [string, string][] = [];
    for (const [key, value] of params) {
      const existing = await readText(join(location.runDir, PARAMS, ...key.split('/')));
      if (existing === null) newParams.push([key, value]);
      else if (existing !== value) throw paramChanged(runId, key, existing, value);
    }
    for (const [key, value] of newParams) await this.writeValue(location, PARAMS, key, value);

    const lines = new Map<string, string>();
    for (const point of metrics) {
      const line = `${point.timestamp} ${formatMetricValue(point.value)} ${point.step}\n`;
      lines.set(point.key, (lines.get(point.key) ?? '') + line);
    }
    for (const [key, text] of lines) {
      const file = join(location.runDir, METRICS, ...key.split('/'));
      try {
        await mkdir(dirname(file), { recursive: true });
        // One append of whole lines: readers never see a partial line from us.
        await appendFile(file, text, { flag: 'a' });
      } catch (error) {
        throw fsError(error, 'append to', file);
      }
    }
    await logModelMetrics();

    for (const [key, value] of tags) await this.writeValue(location, TAGS, key, value);
    const renamed = batch.tags?.[RUN_NAME_TAG];
    if (renamed !== undefined && renamed !== loaded.info.runName) {
      // MLflow keeps meta.yaml's run_name in sync with the mlflow.runName tag.
      await this.writeRunMeta({ ...loaded, info: { ...loaded.info, runName: renamed } }, false);
    }
  }

  /**
   * Sets the status. `endTime` defaults to now for terminal statuses (like `MlflowClient.set_terminated`)
   * and keeps the recorded one otherwise.
   */
  async updateRun(runId: string, update: { status: RunStatus; endTime?: number }): Promise<void> {
    statusUpdate(update, null);
    const loaded = await this.requireActiveRun(runId);
    const { status, endTime } = statusUpdate(update, loaded.info.endTime);
    await this.writeRunMeta({ ...loaded, info: { ...loaded.info, status, endTime } }, false);
  }

  // ---------------------------------------------------------------- artifacts

  /** The run's artifact folder (relocated to the store when the recorded one is gone). */
  private async artifacts(runId: string): Promise<{ artifacts: LocalArtifacts; experimentDir: string }> {
    const location = await this.requireRun(runId);
    const loaded = this.readRunInfo(location, runId);
    if (loaded.artifactDir === null) {
      throw new TrackingError(
        'UNSUPPORTED',
        `tracking: run ${runId} keeps its artifacts at ${loaded.recordedArtifactUri}, which a local file store cannot reach; use the tracking server's URI instead`,
      );
    }
    return {
      artifacts: new LocalArtifacts(loaded.artifactDir, loaded.info.artifactUri, runId),
      experimentDir: location.experimentDir,
    };
  }

  async logArtifact(runId: string, path: string, content: Uint8Array): Promise<void> {
    const { artifacts, experimentDir } = await this.artifacts(runId);
    // The temp file at experiment level, where MLflow looks only for folders.
    await artifacts.write(path, content, experimentDir);
  }

  async listArtifacts(runId: string, path = ''): Promise<ArtifactEntry[]> {
    return (await this.artifacts(runId)).artifacts.list(path);
  }

  async readArtifact(runId: string, path: string): Promise<Uint8Array> {
    return (await this.artifacts(runId)).artifacts.read(path);
  }

  // ---------------------------------------------------------------- inputs, outputs, logged models

  async logInputs(runId: string, datasets: DatasetInput[]): Promise<void> {
    await this.io.logInputs(runId, datasets);
  }

  async logOutputs(runId: string, models: ModelOutput[]): Promise<void> {
    await this.io.logOutputs(runId, models);
  }

  async createLoggedModel(experimentId: string, options: CreateLoggedModelOptions): Promise<LoggedModel> {
    await this.ready();
    return this.io.createLoggedModel(experimentId, options);
  }

  async logLoggedModelArtifact(modelId: string, path: string, content: Uint8Array): Promise<void> {
    await this.io.logLoggedModelArtifact(modelId, path, content);
  }

  async readLoggedModelArtifact(modelId: string, path: string): Promise<Uint8Array> {
    return this.io.readLoggedModelArtifact(modelId, path);
  }

  async finalizeLoggedModel(
    modelId: string,
    status: Exclude<LoggedModelStatus, 'PENDING'>,
  ): Promise<LoggedModel> {
    return this.io.finalizeLoggedModel(modelId, status);
  }

  async getLoggedModel(modelId: string): Promise<LoggedModel | null> {
    await this.ready();
    return this.io.getLoggedModel(modelId);
  }

  async searchLoggedModels(experimentId: string, options?: { sourceRunId?: string }): Promise<LoggedModel[]> {
    await this.ready();
    return this.io.searchLoggedModels(experimentId, options);
  }
}
