/**
 * What a run used and produced, in MLflow's relational schema, as `SqlAlchemyStore` 3.17.2 writes it
 * (`_log_inputs_impl`, `log_outputs`, `create_logged_model`, `finalize_logged_model`,
 * `_log_model_metrics`), checked against rows MLflow wrote:
 *
 * - a dataset is one `datasets` row per (experiment, name, digest); a run's use of it is an `inputs` row
 *   (`DATASET` → `RUN`) with its `input_tags` (`mlflow.data.context`);
 * - a run output is an `inputs` row `RUN_OUTPUT` (run id) → `MODEL_OUTPUT` (model id), with its step;
 * - a logged model is a `logged_models` row (status 1 PENDING, 2 READY, 3 UPLOAD_FAILED) with
 *   `logged_model_params`, `logged_model_tags` and `logged_model_metrics` (one row per point, run id kept).
 *
 * Every write is one transaction. A logged model's artifacts live at its `artifact_location`
 * (`<experiment artifact location>/models/<id>/artifacts`), a local or mounted folder like run artifacts.
 */
import { randomUUID } from 'node:crypto';
import {
  compareLoggedModels,
  latestByKey,
  MODEL_STATUS_TO_INT,
  modelStatusFromInt,
  newModelId,
  pointsByModel,
  uniqueDatasetInputs,
  validateCreateLoggedModel,
  validateDatasetInputs,
  validateModelId,
  validateModelOutputs,
  validateModelStatus,
} from '../dataset-and-model-rules.js';
import { LocalArtifacts, localArtifactPath } from '../local-artifacts.js';
import { invalid } from '../mlflow-rules.js';
import {
  type CreateLoggedModelOptions,
  type DatasetInput,
  type LoggedModel,
  type LoggedModelStatus,
  type MetricPoint,
  type ModelOutput,
  TrackingError,
} from '../store.js';
import { databaseError, type SqlDriver, type SqlExecutor, type SqlRow } from './driver.js';

const MAX_DOUBLE = 1.7976931348623157e308;
const uuidHex = (): string => randomUUID().replaceAll('-', '');
const str = (value: unknown): string => (value === null || value === undefined ? '' : String(value));
const optional = (value: unknown): string | null =>
  value === null || value === undefined ? null : String(value);

/** MLflow's `sanitize_metric_value`: NaN is stored as 0 (this table has no is_nan), infinities clamped. */
function storedValue(value: number): number {
  if (Number.isNaN(value)) return 0;
  return Math.max(-MAX_DOUBLE, Math.min(MAX_DOUBLE, value));
}

const MODEL_COLUMNS =
  'model_id, CAST(experiment_id AS TEXT) AS experiment_id, name, artifact_location, creation_timestamp_ms, last_updated_timestamp_ms, status, model_type, source_run_id';

export class SqlRunIo {
  constructor(
    private readonly db: SqlDriver,
    private readonly displayUri: string,
  ) {}

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      // A database MLflow 2 created lacks MLflow 3's tables: say how to fix that, not just "no such table".
      const message = error instanceof Error ? error.message : '';
      if (
        !(error instanceof TrackingError) &&
        /no such table|relation "[a-z_]+" does not exist/.test(message)
      ) {
        throw new TrackingError(
          'UNSUPPORTED',
          `tracking: ${this.displayUri} lacks MLflow 3's tables for datasets and logged models (${message}); run \`mlflow db upgrade <database URI>\``,
          { cause: error },
        );
      }
      throw databaseError(error, this.displayUri);
    }
  }

  /** The experiment of an active run (as text); NOT_FOUND / INVALID_ARGUMENT otherwise. */
  private async activeRunExperiment(tx: SqlExecutor, runId: string): Promise<string> {
    const [row] = await tx.all(
      'SELECT lifecycle_stage, CAST(experiment_id AS TEXT) AS experiment_id FROM runs WHERE run_uuid = ?',
      [runId],
    );
    if (!row) throw new TrackingError('NOT_FOUND', `tracking: run ${runId} not found in ${this.displayUri}`);
    if (str(row.lifecycle_stage) !== 'active') throw invalid(`run ${runId} is deleted; it cannot be changed`);
    return str(row.experiment_id);
  }

  // ------------------------------------------------------------------ dataset inputs

  async logInputs(runId: string, datasets: DatasetInput[]): Promise<void> {
    validateDatasetInputs(datasets);
    await this.call(() =>
      this.db.transaction(async (tx) => {
        const experimentId = await this.activeRunExperiment(tx, runId);
        for (const { dataset, tags } of uniqueDatasetInputs(datasets)) {
          const [existing] = await tx.all(
            'SELECT dataset_uuid FROM datasets WHERE experiment_id = ? AND name = ? AND digest = ?',
            [experimentId, dataset.name, dataset.digest],
          );
          let datasetUuid = optional(existing?.dataset_uuid);
          if (datasetUuid === null) {
            datasetUuid = uuidHex();
            await tx.run(
              'INSERT INTO datasets (dataset_uuid, experiment_id, name, digest, dataset_source_type, dataset_source, dataset_schema, dataset_profile) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
              [
                datasetUuid,
                experimentId,
                dataset.name,
                dataset.digest,
                dataset.sourceType,
                dataset.source,
                dataset.schema,
                dataset.profile,
              ],
            );
          }
          const [linked] = await tx.all(
            "SELECT input_uuid FROM inputs WHERE source_type = 'DATASET' AND source_id = ? AND destination_type = 'RUN' AND destination_id = ?",
            [datasetUuid, runId],
          );
          if (linked) continue;
          const inputUuid = uuidHex();
          await tx.run(
            "INSERT INTO inputs (input_uuid, source_type, source_id, destination_type, destination_id, step) VALUES (?, 'DATASET', ?, 'RUN', ?, 0)",
            [inputUuid, datasetUuid, runId],
          );
          for (const [name, value] of Object.entries(tags)) {
            await tx.run('INSERT INTO input_tags (input_uuid, name, value) VALUES (?, ?, ?)', [
              inputUuid,
              name,
              value,
            ]);
          }
        }
      }),
    );
  }

  async readInputs(runId: string): Promise<DatasetInput[]> {
    return this.call(async () => {
      const rows = await this.db.all(
        "SELECT i.input_uuid, d.name, d.digest, d.dataset_source_type, d.dataset_source, d.dataset_schema, d.dataset_profile FROM inputs i JOIN datasets d ON d.dataset_uuid = i.source_id WHERE i.source_type = 'DATASET' AND i.destination_type = 'RUN' AND i.destination_id = ? ORDER BY d.name, d.digest",
        [runId],
      );
      if (rows.length === 0) return [];
      const tags = await this.db.all(
        "SELECT t.input_uuid, t.name, t.value FROM input_tags t JOIN inputs i ON i.input_uuid = t.input_uuid WHERE i.source_type = 'DATASET' AND i.destination_type = 'RUN' AND i.destination_id = ?",
        [runId],
      );
      return rows.map((row: SqlRow) => ({
        dataset: {
          name: str(row.name),
          digest: str(row.digest),
          sourceType: str(row.dataset_source_type),
          source: str(row.dataset_source),
          schema: optional(row.dataset_schema),
          profile: optional(row.dataset_profile),
        },
        tags: Object.fromEntries(
          tags
            .filter((tag) => tag.input_uuid === row.input_uuid)
            .map((tag) => [str(tag.name), str(tag.value)]),
        ),
      }));
    });
  }

  // ------------------------------------------------------------------ run outputs

  async logOutputs(runId: string, models: ModelOutput[]): Promise<void> {
    validateModelOutputs(models);
    await this.call(() =>
      this.db.transaction(async (tx) => {
        await this.activeRunExperiment(tx, runId);
        for (const model of models) {
          // The primary key is (source, destination): recording the same output again changes nothing.
          await tx.run(
            "INSERT INTO inputs (input_uuid, source_type, source_id, destination_type, destination_id, step) VALUES (?, 'RUN_OUTPUT', ?, 'MODEL_OUTPUT', ?, ?) ON CONFLICT DO NOTHING",
            [uuidHex(), runId, model.modelId, model.step],
          );
        }
      }),
    );
  }

  async readOutputs(runId: string): Promise<ModelOutput[]> {
    const rows = await this.call(() =>
      this.db.all(
        "SELECT destination_id, step FROM inputs WHERE source_type = 'RUN_OUTPUT' AND source_id = ? AND destination_type = 'MODEL_OUTPUT' ORDER BY destination_id",
        [runId],
      ),
    );
    return rows.map((row) => ({ modelId: str(row.destination_id), step: Number(row.step ?? 0) }));
  }

  // ------------------------------------------------------------------ logged models

  async createLoggedModel(
    experimentId: string,
    experimentParameter: string | null,
    options: CreateLoggedModelOptions,
  ): Promise<LoggedModel> {
    validateCreateLoggedModel(options);
    const modelId = newModelId();
    const now = Date.now();
    await this.call(() =>
      this.db.transaction(async (tx) => {
        const [experiment] =
          experimentParameter === null
            ? []
            : await tx.all(
                'SELECT artifact_location, lifecycle_stage FROM experiments WHERE experiment_id = ?',
                [experimentParameter],
              );
        if (!experiment) {
          throw new TrackingError(
            'NOT_FOUND',
            `tracking: experiment ${experimentId} not found in ${this.displayUri}`,
          );
        }
        if (str(experiment.lifecycle_stage) !== 'active') {
          throw invalid(`experiment ${experimentId} is deleted; restore it before logging models to it`);
        }
        const base = str(experiment.artifact_location);
        if (localArtifactPath(base) === null) throw remoteArtifacts(base);
        const artifactLocation = `${base.replace(/\/+$/, '')}/models/${modelId}/artifacts`;
        await tx.run(
          "INSERT INTO logged_models (model_id, experiment_id, name, artifact_location, creation_timestamp_ms, last_updated_timestamp_ms, status, lifecycle_stage, model_type, source_run_id, status_message) VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, NULL)",
          [
            modelId,
            experimentParameter,
            options.name,
            artifactLocation,
            now,
            now,
            MODEL_STATUS_TO_INT.PENDING,
            options.modelType ?? null,
            options.sourceRunId ?? null,
          ],
        );
        for (const [key, value] of Object.entries(options.params ?? {})) {
          await tx.run(
            'INSERT INTO logged_model_params (model_id, experiment_id, param_key, param_value) VALUES (?, ?, ?, ?)',
            [modelId, experimentParameter, key, value],
          );
        }
        for (const [key, value] of Object.entries(options.tags ?? {})) {
          await tx.run(
            'INSERT INTO logged_model_tags (model_id, experiment_id, tag_key, tag_value) VALUES (?, ?, ?, ?)',
            [modelId, experimentParameter, key, value],
          );
        }
      }),
    );
    return (await this.getLoggedModel(modelId)) as LoggedModel;
  }

  async finalizeLoggedModel(
    modelId: string,
    status: Exclude<LoggedModelStatus, 'PENDING'>,
  ): Promise<LoggedModel> {
    validateModelStatus(status);
    validateModelId(modelId);
    const changed = await this.call(() =>
      this.db.run(
        "UPDATE logged_models SET status = ?, last_updated_timestamp_ms = ? WHERE model_id = ? AND (lifecycle_stage IS NULL OR lifecycle_stage <> 'deleted')",
        [MODEL_STATUS_TO_INT[status], Date.now(), modelId],
      ),
    );
    const model = changed > 0 ? await this.getLoggedModel(modelId) : null;
    if (model === null) throw notFound(modelId, this.displayUri);
    return model;
  }

  async getLoggedModel(modelId: string): Promise<LoggedModel | null> {
    validateModelId(modelId);
    const [model] = await this.loadModels(
      "model_id = ? AND (lifecycle_stage IS NULL OR lifecycle_stage <> 'deleted')",
      [modelId],
    );
    return model ?? null;
  }

  async searchLoggedModels(
    experimentParameter: string | null,
    options: { sourceRunId?: string } = {},
  ): Promise<LoggedModel[]> {
    if (experimentParameter === null) return [];
    const bySource = options.sourceRunId !== undefined ? ' AND source_run_id = ?' : '';
    const models = await this.loadModels(
      `experiment_id = ? AND (lifecycle_stage IS NULL OR lifecycle_stage <> 'deleted')${bySource}`,
      options.sourceRunId !== undefined ? [experimentParameter, options.sourceRunId] : [experimentParameter],
    );
    return models.sort(compareLoggedModels);
  }

  /** Models matching `where` on `logged_models`, with params, tags and latest metrics. */
  private async loadModels(where: string, params: string[]): Promise<LoggedModel[]> {
    return this.call(async () => {
      const models = new Map<string, LoggedModel>();
      for (const row of await this.db.all(
        `SELECT ${MODEL_COLUMNS} FROM logged_models WHERE ${where}`,
        params,
      )) {
        const modelId = str(row.model_id);
        const status = modelStatusFromInt(Number(row.status));
        if (status === null) {
          throw new TrackingError(
            'MALFORMED',
            `tracking: logged model ${modelId} in ${this.displayUri} has status ${str(row.status)}, which MLflow would not write`,
          );
        }
        models.set(modelId, {
          modelId,
          experimentId: str(row.experiment_id),
          name: str(row.name),
          artifactLocation: str(row.artifact_location),
          creationTimestamp: Number(row.creation_timestamp_ms),
          lastUpdatedTimestamp: Number(row.last_updated_timestamp_ms),
          status,
          sourceRunId: optional(row.source_run_id),
          modelType: optional(row.model_type),
          tags: {},
          params: {},
          metrics: {},
        });
      }
      if (models.size === 0) return [];
      const join = `JOIN logged_models m ON m.model_id = x.model_id WHERE ${where.replaceAll(/\b(model_id|experiment_id|lifecycle_stage|source_run_id)\b/g, 'm.$1')}`;
      for (const row of await this.db.all(
        `SELECT x.model_id, x.param_key, x.param_value FROM logged_model_params x ${join}`,
        params,
      )) {
        const model = models.get(str(row.model_id));
        if (model) model.params[str(row.param_key)] = str(row.param_value);
      }
      for (const row of await this.db.all(
        `SELECT x.model_id, x.tag_key, x.tag_value FROM logged_model_tags x ${join}`,
        params,
      )) {
        const model = models.get(str(row.model_id));
        if (model) model.tags[str(row.tag_key)] = str(row.tag_value);
      }
      const points = new Map<string, MetricPoint[]>();
      for (const row of await this.db.all(
        `SELECT x.model_id, x.metric_name, x.metric_value, x.metric_timestamp_ms, x.metric_step FROM logged_model_metrics x ${join}`,
        params,
      )) {
        const list = points.get(str(row.model_id)) ?? [];
        list.push({
          key: str(row.metric_name),
          value: Number(row.metric_value ?? Number.NaN),
          timestamp: Number(row.metric_timestamp_ms),
          step: Number(row.metric_step),
        });
        points.set(str(row.model_id), list);
      }
      for (const [modelId, list] of points) {
        const model = models.get(modelId);
        if (model) model.metrics = latestByKey(list);
      }
      return [...models.values()];
    });
  }

  async modelArtifacts(modelId: string): Promise<LocalArtifacts> {
    const model = await this.getLoggedModel(modelId);
    if (model === null) throw notFound(modelId, this.displayUri);
    const dir = localArtifactPath(model.artifactLocation);
    if (dir === null) throw remoteArtifacts(model.artifactLocation);
    return new LocalArtifacts(dir, model.artifactLocation, modelId);
  }

  // ------------------------------------------------------------------ metrics of logged models

  /**
   * The points of a logBatch that name a logged model, also as that model's metrics (MLflow's
   * `_log_model_metrics`), in the batch's transaction. The model must belong to the run's experiment.
   */
  async logModelMetrics(tx: SqlExecutor, runId: string, metrics: readonly MetricPoint[]): Promise<void> {
    const byModel = pointsByModel(metrics);
    if (byModel.size === 0) return;
    const experimentId = await this.activeRunExperiment(tx, runId);
    for (const [modelId, list] of byModel) {
      const [row] = await tx.all(
        'SELECT CAST(experiment_id AS TEXT) AS experiment_id FROM logged_models WHERE model_id = ?',
        [modelId],
      );
      if (!row || str(row.experiment_id) !== experimentId) {
        throw new TrackingError(
          'NOT_FOUND',
          `tracking: logged model ${modelId} is not a model of the experiment of run ${runId}`,
        );
      }
      for (const point of list) {
        // MLflow skips a point already logged (the key covers model, name, time, step and run).
        await tx.run(
          'INSERT INTO logged_model_metrics (model_id, metric_name, metric_timestamp_ms, metric_step, metric_value, experiment_id, run_id, dataset_uuid, dataset_name, dataset_digest) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL) ON CONFLICT DO NOTHING',
          [modelId, point.key, point.timestamp, point.step, storedValue(point.value), experimentId, runId],
        );
      }
    }
  }
}

function notFound(modelId: string, displayUri: string): TrackingError {
  return new TrackingError('NOT_FOUND', `tracking: logged model ${modelId} not found in ${displayUri}`);
}

function remoteArtifacts(location: string): TrackingError {
  return new TrackingError(
    'UNSUPPORTED',
    `tracking: artifacts at ${location} are not a local or mounted path, which is all a database store can reach; point Tagger at an MLflow tracking server with artifact proxying instead`,
  );
}
