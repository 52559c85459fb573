/**
 * The one run-store interface of Tagger. Two adapters implement it: `FileTrackingStore` (MLflow's
 * `mlruns/` file layout) and `RestTrackingStore` (an MLflow tracking server's REST API). Both pass the
 * shared contract suite in `test/tracking/contract.ts`, so training and serving never know which one
 * they talk to.
 *
 * Each store also carries MLflow's Model Registry, kept where MLflow keeps it for that store
 * (`registry`, see `model-registry.ts`).
 *
 * Semantics follow MLflow's own store (`AbstractStore`): experiment ids and run ids are opaque strings,
 * metric values are finite or non-finite doubles, params are immutable strings, tags are overwritable.
 */

import { TrackingError } from './errors.js';
import type { ModelRegistry } from './model-registry.js';

export type RunStatus = 'RUNNING' | 'SCHEDULED' | 'FINISHED' | 'FAILED' | 'KILLED';
export type LifecycleStage = 'active' | 'deleted';

export interface Experiment {
  /** Opaque string; MLflow's 18-digit ids exceed 2^53 and must never be parsed as numbers. */
  experimentId: string;
  name: string;
  artifactLocation: string;
  lifecycleStage: LifecycleStage;
  creationTime: number | null;
  lastUpdateTime: number | null;
}

export interface MetricPoint {
  key: string;
  /** May be NaN or ±Infinity: MLflow stores them as such. */
  value: number;
  /** Epoch milliseconds. */
  timestamp: number;
  step: number;
  /**
   * MLflow 3's `Metric.model_id`: logBatch also records the point as a metric of this logged model
   * (which must belong to the run's experiment). Never set on points read back.
   */
  modelId?: string;
}

export interface RunInfo {
  runId: string;
  experimentId: string;
  runName: string;
  userId: string;
  status: RunStatus;
  /** Epoch milliseconds. */
  startTime: number;
  endTime: number | null;
  artifactUri: string;
  lifecycleStage: LifecycleStage;
}

export interface Run {
  info: RunInfo;
  /** Latest value of each metric, MLflow's rule: max by (step, timestamp, value). */
  metrics: Record<string, number>;
  params: Record<string, string>;
  tags: Record<string, string>;
  /** The datasets the run used (MLflow's `run.inputs.dataset_inputs`); set by getRun, not by listings. */
  inputs?: DatasetInput[];
  /** The logged models the run produced (MLflow's `run.outputs.model_outputs`); set by getRun only. */
  outputs?: ModelOutput[];
}

/** A dataset as MLflow records it (`mlflow.entities.Dataset`): `source`, `schema`, `profile` are JSON text. */
export interface Dataset {
  name: string;
  /** MLflow: at most 36 characters; one dataset record per (experiment, name, digest). */
  digest: string;
  /** E.g. `local` (MLflow's LocalArtifactDatasetSource), `http`, `s3`. */
  sourceType: string;
  source: string;
  schema: string | null;
  profile: string | null;
}

/** A dataset used by a run; the tag `mlflow.data.context` says how (`training`, `testing`, ...). */
export interface DatasetInput {
  dataset: Dataset;
  tags: Record<string, string>;
}

/** A logged model a run produced (MLflow's `LoggedModelOutput`). */
export interface ModelOutput {
  modelId: string;
  step: number;
}

/** MLflow 3's `LoggedModelStatus`: PENDING while its artifacts are uploaded, then READY or UPLOAD_FAILED. */
export type LoggedModelStatus = 'PENDING' | 'READY' | 'UPLOAD_FAILED';

/** An MLflow 3 logged model (`m-<uuid hex>`), what MLflow's model views list. */
export interface LoggedModel {
  modelId: string;
  experimentId: string;
  name: string;
  /** Where its artifacts (the MLflow Model directory with `MLmodel`) live. */
  artifactLocation: string;
  creationTimestamp: number;
  lastUpdatedTimestamp: number;
  status: LoggedModelStatus;
  sourceRunId: string | null;
  modelType: string | null;
  tags: Record<string, string>;
  params: Record<string, string>;
  /** Latest value of each metric logged with this model's id (MLflow's (step, timestamp, value) rule). */
  metrics: Record<string, number>;
}

export interface CreateLoggedModelOptions {
  name: string;
  sourceRunId?: string;
  modelType?: string;
  params?: Record<string, string>;
  tags?: Record<string, string>;
}

export interface ArtifactEntry {
  /** Run-relative POSIX path, e.g. `model/weights.bin`. */
  path: string;
  isDir: boolean;
  /** Size in bytes for files; null for directories or when the store does not say. */
  size: number | null;
}

export interface SearchRunsOptions {
  /**
   * Order by one metric, MLflow's `order_by=["metrics.<key> DESC|ASC"]` semantics: real values sorted,
   * then NaN, then runs lacking the metric; ties by newest start time, then run id ascending.
   * Without it: newest start time first, then run id.
   */
  orderByMetric?: { key: string; descending: boolean };
  /** Only `FINISHED` runs when true. Default false (MLflow's default includes every active run). */
  finishedOnly?: boolean;
}

export interface CreateRunOptions {
  runName: string;
  /** Epoch milliseconds; defaults to now. */
  startTime?: number;
  tags?: Record<string, string>;
  userId?: string;
}

export interface LogBatch {
  metrics?: MetricPoint[];
  params?: Record<string, string>;
  tags?: Record<string, string>;
}

export { TrackingError, type TrackingErrorCode } from './errors.js';

export interface TrackingStore {
  /** Where the store lives, safe to print (credentials removed). */
  readonly displayUri: string;
  /** The Model Registry kept with these runs (MLflow's registry URI defaults to the tracking URI). */
  readonly registry: ModelRegistry;

  /** Looks up an experiment by exact name, active or deleted (check `lifecycleStage`); null when absent. */
  getExperimentByName(name: string): Promise<Experiment | null>;
  /** Creates an active experiment and returns its id; `ALREADY_EXISTS` if the name is taken. */
  createExperiment(name: string): Promise<string>;

  /** All active runs of the experiment (every page), in the requested order. */
  searchRuns(experimentId: string, options?: SearchRunsOptions): Promise<Run[]>;
  /** One run by id (active or deleted); null when no such run exists. */
  getRun(runId: string): Promise<Run | null>;

  /** Creates a RUNNING run in the experiment. Sets `mlflow.runName` from `runName`. */
  createRun(experimentId: string, options: CreateRunOptions): Promise<Run>;
  /** Logs metrics (appended to history), params (immutable) and tags (overwritten) in one call. */
  logBatch(runId: string, batch: LogBatch): Promise<void>;
  /** Every logged value of one metric, in logging order. */
  getMetricHistory(runId: string, key: string): Promise<MetricPoint[]>;
  /** Marks the run terminated (or otherwise changes its status). */
  updateRun(runId: string, update: { status: RunStatus; endTime?: number }): Promise<void>;

  /** Stores one artifact file at a run-relative POSIX path (parents created as needed). */
  logArtifact(runId: string, path: string, content: Uint8Array): Promise<void>;
  /** Lists one level of the run's artifacts under `path` ('' = root). Empty when nothing is there. */
  listArtifacts(runId: string, path?: string): Promise<ArtifactEntry[]>;
  /** Reads one artifact file; `NOT_FOUND` when missing, with a message naming the artifact URI. */
  readArtifact(runId: string, path: string): Promise<Uint8Array>;

  /** Records datasets as inputs of the run (MLflow's `log_inputs`); logging one again changes nothing. */
  logInputs(runId: string, datasets: DatasetInput[]): Promise<void>;
  /** Records logged models as outputs of the run (MLflow's `log_outputs`). */
  logOutputs(runId: string, models: ModelOutput[]): Promise<void>;
  /** Creates a PENDING logged model in the experiment (MLflow's `create_logged_model`). */
  createLoggedModel(experimentId: string, options: CreateLoggedModelOptions): Promise<LoggedModel>;
  /** Stores one file of the logged model at a model-relative POSIX path under its artifact location. */
  logLoggedModelArtifact(modelId: string, path: string, content: Uint8Array): Promise<void>;
  /** Reads one file of the logged model; `NOT_FOUND` when missing. */
  readLoggedModelArtifact(modelId: string, path: string): Promise<Uint8Array>;
  /** Sets the final status (READY once its artifacts are stored, UPLOAD_FAILED otherwise). */
  finalizeLoggedModel(modelId: string, status: Exclude<LoggedModelStatus, 'PENDING'>): Promise<LoggedModel>;
  /** One logged model (not deleted); null when there is none. */
  getLoggedModel(modelId: string): Promise<LoggedModel | null>;
  /** The active logged models of the experiment, optionally only those of one source run; newest first. */
  searchLoggedModels(experimentId: string, options?: { sourceRunId?: string }): Promise<LoggedModel[]>;

  /**
   * Fails with `PERMISSION_DENIED` (or `UNAVAILABLE`) when this process could not log a run here, so
   * `tagger train` finds a read-only store before training rather than after. Writes nothing that stays.
   * With `experimentId` (an existing, active experiment), also checks that runs can be created in that
   * experiment: its folder or artifact location may belong to another user than the store's root.
   * Callers use `checkCanLog`, which looks the experiment up first.
   */
  checkWritable(experimentId?: string): Promise<void>;

  /** Releases resources (sockets, timers). Idempotent. */
  close(): Promise<void>;
}

/** Convenience built on the primitives: the id of the active experiment `name`, created when absent. */
export async function getOrCreateExperiment(store: TrackingStore, name: string): Promise<string> {
  const existing = await activeExperiment(store, name);
  if (existing) return existing.experimentId;
  try {
    return await store.createExperiment(name);
  } catch (error) {
    // Another process may have created it between our lookup and create.
    if (error instanceof TrackingError && error.code === 'ALREADY_EXISTS') {
      const raced = await store.getExperimentByName(name);
      if (raced) return raced.experimentId;
    }
    throw error;
  }
}

/** Experiment `name`, null when there is none; runs cannot be logged to a deleted one (INVALID_ARGUMENT). */
async function activeExperiment(store: TrackingStore, name: string): Promise<Experiment | null> {
  const existing = await store.getExperimentByName(name);
  if (existing?.lifecycleStage === 'deleted') {
    throw new TrackingError(
      'INVALID_ARGUMENT',
      `tracking: experiment '${name}' is deleted in ${store.displayUri}; restore it or choose another name`,
    );
  }
  return existing;
}

/**
 * Fails now with what logging a run to experiment `name` would fail with later: the store or the
 * experiment cannot be written, or the experiment is deleted. `tagger train` and `optimize` call it
 * before training, so a training is never spent on a store that cannot keep it. Creates nothing.
 */
export async function checkCanLog(store: TrackingStore, name: string): Promise<void> {
  const existing = await activeExperiment(store, name);
  await store.checkWritable(existing?.experimentId);
}
