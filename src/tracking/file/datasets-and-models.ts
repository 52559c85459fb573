/**
 * What a run used and produced, in MLflow's file layout (`mlflow/store/tracking/file_store.py` 3.17.2,
 * `log_inputs`, `log_outputs`, `create_logged_model`, `_log_model_metric`), checked against files
 * MLflow wrote:
 *
 * ```
 * <experiment>/datasets/<md5(name + digest)>/meta.yaml     digest, name, profile, schema, source, source_type
 * <experiment>/<run>/inputs/<md5(dataset id + run)>/meta.yaml   source_type DATASET, source_id, tags {context}
 * <experiment>/<run>/outputs/<model id>/meta.yaml          source_type RUN_OUTPUT, destination MODEL_OUTPUT, step
 * <experiment>/models/<model id>/meta.yaml                 the LoggedModel (status as int 1..3)
 *                               params/<key>, tags/<key>, metrics/<key> ("<ts> <value> <step> <run id>")
 *                               artifacts/                  its MLflow Model directory (default location)
 * ```
 *
 * Each record is a folder with one `meta.yaml`, written last (temp file at experiment level, renamed),
 * so a crash leaves a folder without `meta.yaml`, which readers here skip like an unfinished run.
 */
import { createHash } from 'node:crypto';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMap, parseDocument, stringify } from 'yaml';
import {
  compareLoggedModels,
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
import { atomicWrite, fsError, LocalArtifacts, localArtifactPath } from '../local-artifacts.js';
import { invalid, validateKey } from '../mlflow-rules.js';
import type {
  CreateLoggedModelOptions,
  Dataset,
  DatasetInput,
  Experiment,
  LoggedModel,
  LoggedModelStatus,
  MetricPoint,
  ModelOutput,
} from '../store.js';
import { TrackingError } from '../store.js';
import {
  formatMetricValue,
  malformed,
  metaInt,
  metaLifecycle,
  metaString,
  parseMeta,
  parseMetricValue,
} from './formats.js';
import { existsSync, readTextSync, subdirectoriesSync, walkFilesSync } from './read.js';

const META = 'meta.yaml';
const DATASETS = 'datasets';
const INPUTS = 'inputs';
const OUTPUTS = 'outputs';
const MODELS = 'models';
const ARTIFACTS = 'artifacts';

/** What the file store lends this module: where experiments and runs are (its private lookups). */
export interface FileStoreAccess {
  displayUri: string;
  onWarning: (message: string) => void;
  /** Active and deleted experiment folders. */
  experimentFolders(): Promise<{ id: string; dir: string }[]>;
  findExperiment(id: string): Promise<{ dir: string; experiment: Experiment } | null>;
  /** An active run's folders; NOT_FOUND / INVALID_ARGUMENT otherwise. */
  activeRun(runId: string): Promise<{ experimentId: string; experimentDir: string; runDir: string }>;
  /** The experiment's artifact location as an existing local folder; null when it is not one. */
  artifactBase(experiment: Experiment): Promise<string | null>;
}

const md5 = (...parts: string[]): string => {
  const hash = createHash('md5');
  for (const part of parts) hash.update(part, 'utf8');
  return hash.digest('hex');
};

/** YAML as MLflow's `write_yaml` (PyYAML safe_dump: sorted keys, block style) with nested mappings. */
const dumpYaml = (data: Record<string, unknown>): string =>
  stringify(data, { version: '1.1', sortMapEntries: true, lineWidth: 0, singleQuote: true });

/** A `meta.yaml` with nested values (inputs, outputs), read with the failsafe schema: every scalar a string. */
function readNested(text: string, file: string): Record<string, unknown> {
  const doc = parseDocument(text, { schema: 'failsafe', uniqueKeys: true });
  if (doc.errors.length > 0) throw malformed(file, `invalid YAML (${doc.errors[0]!.message.split('\n')[0]})`);
  if (!isMap(doc.contents)) throw malformed(file, 'expected a mapping of fields');
  const value = doc.toJS() as unknown;
  return value as Record<string, unknown>;
}

function field(meta: Record<string, unknown>, name: string, file: string): string {
  const value = meta[name];
  if (typeof value !== 'string' || value === '')
    throw malformed(file, `field '${name}' must be a non-empty string`);
  return value;
}

function stringMap(value: unknown, what: string, file: string): Record<string, string> {
  if (value === undefined || value === null || value === '') return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw malformed(file, `${what} must be a mapping`);
  const result: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
    if (typeof entry !== 'string') throw malformed(file, `${what} '${key}' must be a string`);
    result[key] = entry;
  }
  return result;
}

/** One line of a logged model's metric file: `<ts> <value> <step> <run id> [<dataset name> <digest>]`. */
function parseModelMetricLine(key: string, line: string, file: string): MetricPoint {
  const fields = line.trim().split(' ');
  if (fields.length !== 4 && fields.length !== 6) {
    throw malformed(file, `a line has ${fields.length} fields, expected 4 or 6: '${line.slice(0, 80)}'`);
  }
  const [timestamp, valueText, step] = fields as [string, string, string];
  const value = parseMetricValue(valueText);
  if (!/^[+-]?\d+$/.test(timestamp) || !/^[+-]?\d+$/.test(step) || value === null) {
    throw malformed(file, `'${line.slice(0, 80)}' is not '<timestamp> <value> <step> <run id>'`);
  }
  return { key, value, timestamp: Number(timestamp), step: Number(step) };
}

export class FileRunIo {
  /** Model id -> folders; checked on use (an experiment may move to `.trash`). Bounded. */
  private readonly modelLocations = new Map<
    string,
    { dir: string; experimentDir: string; experimentId: string }
  >();

  constructor(private readonly store: FileStoreAccess) {}

  // ------------------------------------------------------------------ dataset inputs

  async logInputs(runId: string, datasets: DatasetInput[]): Promise<void> {
    validateDatasetInputs(datasets);
    const { runDir, experimentDir } = await this.store.activeRun(runId);
    for (const input of uniqueDatasetInputs(datasets)) {
      const { dataset } = input;
      // MLflow's ids: the same dataset is one folder per experiment, linked to each run that used it.
      const datasetId = md5(dataset.name, dataset.digest);
      const datasetDir = join(experimentDir, DATASETS, datasetId);
      if (!existsSync(join(datasetDir, META))) {
        await this.writeMeta(
          datasetDir,
          {
            digest: dataset.digest,
            name: dataset.name,
            profile: dataset.profile,
            schema: dataset.schema,
            source: dataset.source,
            source_type: dataset.sourceType,
          },
          experimentDir,
        );
      }
      const inputDir = join(runDir, INPUTS, md5(datasetId, runId));
      if (existsSync(join(inputDir, META))) continue;
      await this.writeMeta(
        inputDir,
        {
          // MLflow's `_FileStoreInput.write_yaml` writes the source id as destination_id too; it reads
          // only source_id, so the same is written for files MLflow and Tagger both read.
          destination_id: datasetId,
          destination_type: 'RUN',
          source_id: datasetId,
          source_type: 'DATASET',
          tags: { ...input.tags },
        },
        experimentDir,
      );
    }
  }

  /** The run's dataset inputs, skipping unfinished folders and inputs whose dataset is gone (as MLflow). */
  readInputs(experimentDir: string, runDir: string, runId: string): DatasetInput[] {
    const inputs: DatasetInput[] = [];
    for (const name of subdirectoriesSync(join(runDir, INPUTS)).sort()) {
      const file = join(runDir, INPUTS, name, META);
      const text = readTextSync(file);
      if (text === null) continue;
      const meta = readNested(text, file);
      if (field(meta, 'source_type', file) !== 'DATASET') continue;
      const datasetId = field(meta, 'source_id', file);
      if (!/^[\w-]+$/.test(datasetId)) throw malformed(file, `source_id '${datasetId}' is not a dataset id`);
      const tags = stringMap(meta.tags, 'tag', file);
      const dataset = this.readDataset(join(experimentDir, DATASETS, datasetId));
      if (dataset === null) {
        this.store.onWarning(`tracking: dataset ${datasetId}, an input of run ${runId}, is missing; skipped`);
        continue;
      }
      inputs.push({ dataset, tags });
    }
    return inputs;
  }

  private readDataset(dir: string): Dataset | null {
    const file = join(dir, META);
    const text = readTextSync(file);
    if (text === null) return null;
    const meta = parseMeta(text, file);
    const required = (name: string): string => {
      const value = metaString(meta, name, file);
      if (value === null) throw malformed(file, `field '${name}' is missing`);
      return value;
    };
    return {
      name: required('name'),
      digest: required('digest'),
      sourceType: required('source_type'),
      source: required('source'),
      schema: metaString(meta, 'schema', file),
      profile: metaString(meta, 'profile', file),
    };
  }

  // ------------------------------------------------------------------ run outputs

  async logOutputs(runId: string, models: ModelOutput[]): Promise<void> {
    validateModelOutputs(models);
    const { runDir, experimentDir } = await this.store.activeRun(runId);
    for (const model of models) {
      const outputDir = join(runDir, OUTPUTS, model.modelId);
      if (existsSync(join(outputDir, META))) continue;
      await this.writeMeta(
        outputDir,
        {
          // As MLflow writes it: both ids are the model's (it reads destination_id as the model id).
          destination_id: model.modelId,
          destination_type: 'MODEL_OUTPUT',
          source_id: model.modelId,
          source_type: 'RUN_OUTPUT',
          step: model.step,
          tags: {},
        },
        experimentDir,
      );
    }
  }

  readOutputs(runDir: string): ModelOutput[] {
    const outputs: ModelOutput[] = [];
    for (const name of subdirectoriesSync(join(runDir, OUTPUTS)).sort()) {
      const file = join(runDir, OUTPUTS, name, META);
      const text = readTextSync(file);
      if (text === null) continue;
      const meta = readNested(text, file);
      if (field(meta, 'destination_type', file) !== 'MODEL_OUTPUT') continue;
      const modelId = field(meta, 'destination_id', file);
      try {
        validateModelId(modelId);
      } catch {
        throw malformed(file, `destination_id '${modelId}' is not a logged model id`);
      }
      const stepText = meta.step ?? '0';
      if (typeof stepText !== 'string' || !/^\d+$/.test(stepText))
        throw malformed(file, "field 'step' must be an integer");
      outputs.push({ modelId, step: Number(stepText) });
    }
    return outputs;
  }

  // ------------------------------------------------------------------ logged models

  async createLoggedModel(experimentId: string, options: CreateLoggedModelOptions): Promise<LoggedModel> {
    validateCreateLoggedModel(options);
    const found = await this.store.findExperiment(experimentId);
    if (!found) {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: experiment ${experimentId} not found in ${this.store.displayUri}`,
      );
    }
    if (found.experiment.lifecycleStage !== 'active') {
      throw invalid(`experiment ${experimentId} is deleted; restore it before logging models to it`);
    }
    const modelId = newModelId();
    const modelDir = join(found.dir, MODELS, modelId);
    const base = await this.store.artifactBase(found.experiment);
    // MLflow: `<experiment artifact_location>/models/<id>/artifacts`; a store that was moved keeps
    // them beside meta.yaml.
    const artifactLocation =
      base !== null
        ? `${found.experiment.artifactLocation.replace(/\/+$/, '')}/${MODELS}/${modelId}/${ARTIFACTS}`
        : pathToFileURL(join(modelDir, ARTIFACTS)).href;
    try {
      for (const folder of ['metrics', 'params', 'tags'])
        await mkdir(join(modelDir, folder), { recursive: true });
    } catch (error) {
      throw fsError(error, 'create logged model folder', modelDir);
    }
    // One file per param and tag (MLflow's layout); distinct files, so written side by side.
    await Promise.all([
      ...Object.entries(options.params ?? {}).map(([key, value]) =>
        atomicWrite(join(modelDir, 'params', ...key.split('/')), value, found.dir),
      ),
      ...Object.entries(options.tags ?? {}).map(([key, value]) =>
        atomicWrite(join(modelDir, 'tags', ...key.split('/')), value, found.dir),
      ),
    ]);
    const now = Date.now();
    const model: LoggedModel = {
      modelId,
      experimentId,
      name: options.name,
      artifactLocation,
      creationTimestamp: now,
      lastUpdatedTimestamp: now,
      status: 'PENDING',
      sourceRunId: options.sourceRunId ?? null,
      modelType: options.modelType ?? null,
      tags: { ...options.tags },
      params: { ...options.params },
      metrics: {},
    };
    // Last: from here on MLflow lists the model.
    await this.writeModelMeta(modelDir, model, found.dir);
    this.remember(modelId, { dir: modelDir, experimentDir: found.dir, experimentId });
    return model;
  }

  private async writeModelMeta(modelDir: string, model: LoggedModel, experimentDir: string): Promise<void> {
    await atomicWrite(
      join(modelDir, META),
      dumpYaml({
        artifact_location: model.artifactLocation,
        creation_timestamp: model.creationTimestamp,
        experiment_id: model.experimentId,
        last_updated_timestamp: model.lastUpdatedTimestamp,
        lifecycle_stage: 'active',
        model_id: model.modelId,
        model_type: model.modelType,
        name: model.name,
        source_run_id: model.sourceRunId,
        status: MODEL_STATUS_TO_INT[model.status],
        status_message: null,
      }),
      experimentDir,
    );
  }

  async finalizeLoggedModel(
    modelId: string,
    status: Exclude<LoggedModelStatus, 'PENDING'>,
  ): Promise<LoggedModel> {
    validateModelStatus(status);
    const { dir, experimentDir, model } = await this.requireModel(modelId);
    const updated = { ...model, status, lastUpdatedTimestamp: Date.now() };
    await this.writeModelMeta(dir, updated, experimentDir);
    return updated;
  }

  async getLoggedModel(modelId: string): Promise<LoggedModel | null> {
    validateModelId(modelId);
    return (await this.locateModel(modelId))?.model ?? null;
  }

  async searchLoggedModels(
    experimentId: string,
    options: { sourceRunId?: string } = {},
  ): Promise<LoggedModel[]> {
    const found = await this.store.findExperiment(experimentId);
    if (!found) return [];
    const models: LoggedModel[] = [];
    for (const name of subdirectoriesSync(join(found.dir, MODELS))) {
      try {
        const model = this.readModel(join(found.dir, MODELS, name), name, experimentId);
        if (model === null) continue;
        if (options.sourceRunId !== undefined && model.sourceRunId !== options.sourceRunId) continue;
        models.push(model);
      } catch (error) {
        if (!(error instanceof TrackingError && error.code === 'MALFORMED')) throw error;
        this.store.onWarning(`${error.message} (logged model ${name} skipped)`);
      }
    }
    return models.sort(compareLoggedModels);
  }

  async logLoggedModelArtifact(modelId: string, path: string, content: Uint8Array): Promise<void> {
    const { artifacts, experimentDir } = await this.modelArtifacts(modelId);
    await artifacts.write(path, content, experimentDir);
  }

  async readLoggedModelArtifact(modelId: string, path: string): Promise<Uint8Array> {
    return (await this.modelArtifacts(modelId)).artifacts.read(path);
  }

  private async modelArtifacts(
    modelId: string,
  ): Promise<{ artifacts: LocalArtifacts; experimentDir: string }> {
    const { dir, experimentDir, model } = await this.requireModel(modelId);
    const recorded = localArtifactPath(model.artifactLocation);
    if (recorded === null) {
      throw new TrackingError(
        'UNSUPPORTED',
        `tracking: logged model ${modelId} keeps its artifacts at ${model.artifactLocation}, which a local file store cannot reach; use the tracking server's URI instead`,
      );
    }
    // Like runs: a moved store keeps them beside meta.yaml.
    const local = existsSync(dirname(recorded)) ? recorded : join(dir, ARTIFACTS);
    return { artifacts: new LocalArtifacts(local, model.artifactLocation, modelId), experimentDir };
  }

  private async requireModel(
    modelId: string,
  ): Promise<{ dir: string; experimentDir: string; model: LoggedModel }> {
    validateModelId(modelId);
    const located = await this.locateModel(modelId);
    if (located === null) {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: logged model ${modelId} not found in ${this.store.displayUri}`,
      );
    }
    return located;
  }

  private async locateModel(
    modelId: string,
    withData = true,
  ): Promise<{ dir: string; experimentDir: string; model: LoggedModel } | null> {
    const cached = this.modelLocations.get(modelId);
    if (cached !== undefined) {
      const model = this.readModel(cached.dir, modelId, cached.experimentId, withData);
      if (model !== null) return { dir: cached.dir, experimentDir: cached.experimentDir, model };
      this.modelLocations.delete(modelId);
    }
    for (const { id, dir: experimentDir } of await this.store.experimentFolders()) {
      const dir = join(experimentDir, MODELS, modelId);
      const model = this.readModel(dir, modelId, id, withData);
      if (model !== null) {
        this.remember(modelId, { dir, experimentDir, experimentId: id });
        return { dir, experimentDir, model };
      }
    }
    return null;
  }

  private remember(
    modelId: string,
    location: { dir: string; experimentDir: string; experimentId: string },
  ): void {
    if (this.modelLocations.size >= 10_000) this.modelLocations.clear();
    this.modelLocations.set(modelId, location);
  }

  /**
   * One logged model folder; null when it has no meta.yaml yet or the model is deleted. Without
   * `withData`, only meta.yaml is read (params, tags and metrics left empty).
   */
  private readModel(dir: string, modelId: string, experimentId: string, withData = true): LoggedModel | null {
    const file = join(dir, META);
    const text = readTextSync(file);
    if (text === null) return null;
    const meta = parseMeta(text, file);
    if (metaLifecycle(meta, file) === 'deleted') return null;
    const recordedId = metaString(meta, 'model_id', file);
    if (recordedId !== modelId) throw malformed(file, `model_id '${recordedId}' does not match its folder`);
    if (metaString(meta, 'experiment_id', file) !== experimentId) {
      throw malformed(file, `experiment_id does not match its experiment folder '${experimentId}'`);
    }
    const statusInt = metaInt(meta, 'status', file);
    const status = statusInt === null ? null : modelStatusFromInt(statusInt);
    if (status === null)
      throw malformed(file, `status ${statusInt} is not one of 1 (PENDING), 2 (READY), 3 (UPLOAD_FAILED)`);
    const name = metaString(meta, 'name', file);
    const artifactLocation = metaString(meta, 'artifact_location', file);
    const created = metaInt(meta, 'creation_timestamp', file);
    if (name === null || artifactLocation === null || created === null) {
      throw malformed(file, 'name, artifact_location and creation_timestamp are required');
    }
    return {
      modelId,
      experimentId,
      name,
      artifactLocation,
      creationTimestamp: created,
      lastUpdatedTimestamp: metaInt(meta, 'last_updated_timestamp', file) ?? created,
      status,
      sourceRunId: metaString(meta, 'source_run_id', file),
      modelType: metaString(meta, 'model_type', file),
      tags: withData ? this.readValues(join(dir, 'tags')) : {},
      params: withData ? this.readValues(join(dir, 'params')) : {},
      metrics: withData ? this.readModelMetrics(join(dir, 'metrics')) : {},
    };
  }

  private readValues(dir: string): Record<string, string> {
    const values: Record<string, string> = {};
    for (const key of walkFilesSync(dir)) {
      if (key.split('/').some((part) => part.startsWith('.'))) continue;
      const text = readTextSync(join(dir, ...key.split('/')));
      if (text !== null) values[key] = text;
    }
    return values;
  }

  private readModelMetrics(dir: string): Record<string, number> {
    const latest: Record<string, number> = {};
    for (const key of walkFilesSync(dir)) {
      const file = join(dir, ...key.split('/'));
      const text = readTextSync(file);
      if (text === null) continue;
      const lines = text.split('\n').filter((line) => line.trim() !== '');
      if (lines.length === 0) throw malformed(file, 'no data');
      let best: MetricPoint | undefined;
      for (const line of lines) {
        const point = parseModelMetricLine(key, line, file);
        if (
          best === undefined ||
          point.step > best.step ||
          (point.step === best.step &&
            (point.timestamp > best.timestamp ||
              (point.timestamp === best.timestamp && point.value > best.value)))
        ) {
          best = point;
        }
      }
      latest[key] = (best as MetricPoint).value;
    }
    return latest;
  }

  // ------------------------------------------------------------------ metrics of logged models

  /**
   * For logBatch: checks that every model a point names is a model of the run's experiment, before the
   * batch writes anything, and returns the step that appends those points to the models' metric files.
   */
  async modelMetricWriter(
    experimentDir: string,
    runId: string,
    metrics: readonly MetricPoint[],
  ): Promise<() => Promise<void>> {
    const byModel = pointsByModel(metrics);
    for (const modelId of byModel.keys()) {
      if (!existsSync(join(experimentDir, MODELS, modelId, META))) {
        throw new TrackingError(
          'NOT_FOUND',
          `tracking: logged model ${modelId} is not a model of the experiment of run ${runId}`,
        );
      }
    }
    return async () => {
      for (const [modelId, points] of byModel) {
        const lines = new Map<string, string>();
        for (const point of points) {
          lines.set(
            point.key,
            `${lines.get(point.key) ?? ''}${point.timestamp} ${formatMetricValue(point.value)} ${point.step} ${runId}\n`,
          );
        }
        for (const [key, text] of lines) {
          validateKey('metric', key);
          const file = join(experimentDir, MODELS, modelId, 'metrics', ...key.split('/'));
          try {
            await mkdir(dirname(file), { recursive: true });
            await appendFile(file, text);
          } catch (error) {
            throw fsError(error, 'append to', file);
          }
        }
      }
    };
  }

  // ------------------------------------------------------------------ helpers

  /** A record folder and its meta.yaml (written last, atomically; temp file at experiment level). */
  private async writeMeta(dir: string, data: Record<string, unknown>, experimentDir: string): Promise<void> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      throw fsError(error, 'create', dir);
    }
    await atomicWrite(join(dir, META), dumpYaml(data), experimentDir);
  }
}
