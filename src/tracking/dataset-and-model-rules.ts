/**
 * MLflow's rules for what a run used and produced, once for every adapter: dataset inputs
 * (`log_inputs`), logged models (MLflow 3's `m-<uuid hex>`, `create_logged_model`, `finalize_logged_model`)
 * and run outputs (`log_outputs`). Limits are MLflow 3.17.2's (`mlflow/utils/validation.py`), column sizes
 * its schema's (`datasets.digest` VARCHAR(36), `logged_models.model_id` VARCHAR(36), ...), so a value the
 * SQL store would truncate or PostgreSQL refuse is refused here first, on every backend. Pure: no I/O.
 */
import { randomUUID } from 'node:crypto';
import { invalid, latestMetric, validateParam, validateTag } from './mlflow-rules.js';
import type {
  CreateLoggedModelOptions,
  DatasetInput,
  LoggedModelStatus,
  MetricPoint,
  ModelOutput,
} from './store.js';

/** MLflow's input tag saying what a dataset was used for (`mlflow.utils.mlflow_tags.MLFLOW_DATASET_CONTEXT`). */
export const DATASET_CONTEXT_TAG = 'mlflow.data.context';

const MAX_DATASET_NAME = 500;
const MAX_DATASET_DIGEST = 36;
const MAX_DATASET_SOURCE_TYPE = 36;
const MAX_DATASET_SOURCE = 65_535;
const MAX_DATASET_SCHEMA = 1_048_575;
const MAX_DATASET_PROFILE = 16_777_215;
const MAX_INPUT_TAG_KEY = 255;
const MAX_INPUT_TAG_VALUE = 500;
const MAX_MODEL_NAME = 500;
const MAX_MODEL_TYPE = 500;

/**
 * A logged model id as stored: MLflow makes `m-` + 32 hex digits; anything of id characters that fits
 * the 36-character column is accepted, since it also names a folder of the file store.
 */
const MODEL_ID_RE = /^[A-Za-z0-9][\w-]{0,35}$/;

/** MLflow's `LoggedModelStatus.to_int()`, as the file and SQL stores persist it. */
export const MODEL_STATUS_TO_INT: Record<LoggedModelStatus, number> = {
  PENDING: 1,
  READY: 2,
  UPLOAD_FAILED: 3,
};
const INT_TO_MODEL_STATUS = new Map<number, LoggedModelStatus>(
  Object.entries(MODEL_STATUS_TO_INT).map(([name, value]) => [value, name as LoggedModelStatus]),
);

/** The status of a persisted int; null for anything MLflow would not write (0 is UNSPECIFIED). */
export function modelStatusFromInt(value: number): LoggedModelStatus | null {
  return INT_TO_MODEL_STATUS.get(value) ?? null;
}

/** A new logged model id, MLflow's way: `m-` and a uuid4 without dashes. */
export function newModelId(): string {
  return `m-${randomUUID().replaceAll('-', '')}`;
}

export function validateModelId(modelId: string): void {
  if (typeof modelId !== 'string' || !MODEL_ID_RE.test(modelId)) {
    throw invalid(`'${String(modelId).slice(0, 60)}' is not a logged model id (like m-<32 hex digits>)`);
  }
}

function checkText(what: string, value: unknown, max: number, allowEmpty = false): void {
  if (typeof value !== 'string') throw invalid(`${what} must be a string`);
  if (!allowEmpty && value === '') throw invalid(`${what} must not be empty`);
  if (value.length > max) throw invalid(`${what} is longer than MLflow's ${max} characters`);
}

/** Dataset inputs as MLflow's `_validate_dataset_inputs` checks them, plus the schema's column sizes. */
export function validateDatasetInputs(datasets: readonly DatasetInput[]): void {
  if (!Array.isArray(datasets)) throw invalid('datasets must be a list');
  for (const input of datasets) {
    const dataset = input?.dataset;
    if (typeof dataset !== 'object' || dataset === null) throw invalid('a dataset input needs a dataset');
    checkText('dataset name', dataset.name, MAX_DATASET_NAME);
    checkText(`digest of dataset '${dataset.name}'`, dataset.digest, MAX_DATASET_DIGEST);
    checkText(`source type of dataset '${dataset.name}'`, dataset.sourceType, MAX_DATASET_SOURCE_TYPE);
    checkText(`source of dataset '${dataset.name}'`, dataset.source, MAX_DATASET_SOURCE, true);
    if (dataset.schema !== null) {
      checkText(`schema of dataset '${dataset.name}'`, dataset.schema, MAX_DATASET_SCHEMA, true);
    }
    if (dataset.profile !== null) {
      checkText(`profile of dataset '${dataset.name}'`, dataset.profile, MAX_DATASET_PROFILE, true);
    }
    if (typeof input.tags !== 'object' || input.tags === null)
      throw invalid('dataset input tags must be an object');
    for (const [key, value] of Object.entries(input.tags)) {
      checkText('input tag key', key, MAX_INPUT_TAG_KEY);
      checkText(`input tag '${key}'`, value, MAX_INPUT_TAG_VALUE, true);
    }
  }
}

/**
 * The inputs to record: one per (name, digest), the first kept, as MLflow's `_log_inputs_impl` dedups.
 */
export function uniqueDatasetInputs(datasets: readonly DatasetInput[]): DatasetInput[] {
  const seen = new Map<string, DatasetInput>();
  for (const input of datasets) {
    const key = JSON.stringify([input.dataset.name, input.dataset.digest]);
    if (!seen.has(key)) seen.set(key, input);
  }
  return [...seen.values()];
}

export function validateModelOutputs(models: readonly ModelOutput[]): void {
  if (!Array.isArray(models)) throw invalid('models must be a list');
  for (const model of models) {
    validateModelId(model?.modelId);
    if (!Number.isSafeInteger(model.step))
      throw invalid(`step of model output ${model.modelId} must be an integer`);
  }
}

/** What createLoggedModel records, checked before anything is written. */
export function validateCreateLoggedModel(options: CreateLoggedModelOptions): void {
  checkText('logged model name', options.name, MAX_MODEL_NAME);
  // MLflow's `_validate_logged_model_name`: the name becomes part of URIs and paths.
  if (/[/:.%"']/.test(options.name)) {
    throw invalid(`logged model name '${options.name}' must not contain '/', ':', '.', '%', '"' or "'"`);
  }
  if (options.sourceRunId !== undefined && !/^[a-zA-Z0-9][\w-]{0,31}$/.test(options.sourceRunId)) {
    throw invalid(`'${options.sourceRunId}' is not a run id`);
  }
  if (options.modelType !== undefined) checkText('model type', options.modelType, MAX_MODEL_TYPE);
  for (const [key, value] of Object.entries(options.params ?? {})) validateParam(key, value);
  for (const [key, value] of Object.entries(options.tags ?? {})) validateTag(key, value);
}

export function validateModelStatus(status: string): asserts status is Exclude<LoggedModelStatus, 'PENDING'> {
  if (status !== 'READY' && status !== 'UPLOAD_FAILED') {
    throw invalid(`'${status}' is not a final logged model status (READY or UPLOAD_FAILED)`);
  }
}

/** The metric points of a batch that also belong to a logged model, by model id. */
export function pointsByModel(metrics: readonly MetricPoint[]): Map<string, MetricPoint[]> {
  const byModel = new Map<string, MetricPoint[]>();
  for (const point of metrics) {
    if (point.modelId === undefined) continue;
    validateModelId(point.modelId);
    byModel.set(point.modelId, [...(byModel.get(point.modelId) ?? []), point]);
  }
  return byModel;
}

/** Latest value per key of a logged model's metric points (MLflow's (step, timestamp, value) rule). */
export function latestByKey(points: readonly MetricPoint[]): Record<string, number> {
  const byKey = new Map<string, MetricPoint[]>();
  for (const point of points) byKey.set(point.key, [...(byKey.get(point.key) ?? []), point]);
  const latest: Record<string, number> = {};
  for (const [key, list] of byKey) latest[key] = (latestMetric(list) as MetricPoint).value;
  return latest;
}

/** MLflow's default logged-model order: newest creation first, then model id. */
export function compareLoggedModels(
  a: { creationTimestamp: number; modelId: string },
  b: { creationTimestamp: number; modelId: string },
): number {
  if (a.creationTimestamp !== b.creationTimestamp) return b.creationTimestamp - a.creationTimestamp;
  return a.modelId < b.modelId ? -1 : a.modelId > b.modelId ? 1 : 0;
}
