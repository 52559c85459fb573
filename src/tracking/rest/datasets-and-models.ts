/**
 * What a run used and produced, over an MLflow tracking server's REST API (MLflow 3.17.2,
 * `service.proto`): `POST runs/log-inputs`, `POST runs/outputs`, `POST logged-models`,
 * `PATCH logged-models/{id}` (finalize), `GET logged-models/{id}`, `POST logged-models/search`, and a
 * logged model's files through the artifact proxy at its `artifact_uri` (`mlflow-artifacts:/…`), the
 * way MLflow's client uploads a model. Every answer is validated; a shape MLflow would not send is
 * MALFORMED, never a crash.
 */
import Type, { type Static } from 'typebox';
import {
  compareLoggedModels,
  latestByKey,
  validateCreateLoggedModel,
  validateDatasetInputs,
  validateModelId,
  validateModelOutputs,
  validateModelStatus,
} from '../dataset-and-model-rules.js';
import { artifactSegments, collectPages, invalid } from '../mlflow-rules.js';
import {
  type CreateLoggedModelOptions,
  type DatasetInput,
  type LoggedModel,
  type LoggedModelStatus,
  type ModelOutput,
  type Run,
  TrackingError,
} from '../store.js';
import type { RequestSpec, RestCalls, RestHttpClient } from './rest-http.js';
import {
  answer,
  decodeAnswer,
  Int64,
  int64ToNumber,
  KeyValue,
  MetricJson,
  toMetricPoint,
} from './rest-json.js';

const ModelStatus = Type.Union([
  Type.Literal('LOGGED_MODEL_PENDING'),
  Type.Literal('LOGGED_MODEL_READY'),
  Type.Literal('LOGGED_MODEL_UPLOAD_FAILED'),
]);
const LoggedModelJson = Type.Object({
  info: Type.Object({
    model_id: Type.String({ minLength: 1 }),
    experiment_id: Type.String({ minLength: 1 }),
    name: Type.String(),
    artifact_uri: Type.String({ minLength: 1 }),
    creation_timestamp_ms: Int64,
    last_updated_timestamp_ms: Type.Optional(Int64),
    status: ModelStatus,
    model_type: Type.Optional(Type.String()),
    source_run_id: Type.Optional(Type.String()),
    tags: Type.Optional(Type.Array(KeyValue)),
  }),
  data: Type.Optional(
    Type.Object({
      params: Type.Optional(Type.Array(KeyValue)),
      metrics: Type.Optional(Type.Array(MetricJson)),
    }),
  ),
});
const RunIoJson = Type.Object({
  inputs: Type.Optional(
    Type.Object({
      dataset_inputs: Type.Optional(
        Type.Array(
          Type.Object({
            tags: Type.Optional(Type.Array(KeyValue)),
            dataset: Type.Object({
              name: Type.String(),
              digest: Type.String(),
              source_type: Type.String(),
              source: Type.String(),
              schema: Type.Optional(Type.String()),
              profile: Type.Optional(Type.String()),
            }),
          }),
        ),
      ),
    }),
  ),
  outputs: Type.Optional(
    Type.Object({
      model_outputs: Type.Optional(
        Type.Array(Type.Object({ model_id: Type.String({ minLength: 1 }), step: Type.Optional(Int64) })),
      ),
    }),
  ),
});

const Answers = {
  model: answer(Type.Object({ model: LoggedModelJson })),
  search: answer(
    Type.Object({
      models: Type.Optional(Type.Array(LoggedModelJson)),
      next_page_token: Type.Optional(Type.String()),
    }),
  ),
  empty: answer(Type.Object({})),
  runIo: answer(RunIoJson),
};

const STATUS_NAME: Record<LoggedModelStatus, Static<typeof ModelStatus>> = {
  PENDING: 'LOGGED_MODEL_PENDING',
  READY: 'LOGGED_MODEL_READY',
  UPLOAD_FAILED: 'LOGGED_MODEL_UPLOAD_FAILED',
};
const STATUS_FROM_NAME = new Map(
  Object.entries(STATUS_NAME).map(([status, name]) => [name, status as LoggedModelStatus]),
);
/** Page size of logged-model searches (MLflow's default and cap is 100 per page here). */
const SEARCH_PAGE_SIZE = 100;

/** What the REST store lends this module: its calls and URLs (as to the registry), and the artifact proxy. */
export interface RestAccess extends RestCalls {
  http: RestHttpClient;
  /** The proxy's URL of one file under an artifact URI; null when the URI is not proxied by a server. */
  proxiedFile(uri: string, path: string): URL | null;
}

const entries = (list: { key: string; value?: string | undefined }[] | undefined): Record<string, string> =>
  Object.fromEntries((list ?? []).map((item) => [item.key, item.value ?? '']));

function toLoggedModel(json: Static<typeof LoggedModelJson>): LoggedModel {
  const { info } = json;
  const created = int64ToNumber(info.creation_timestamp_ms);
  return {
    modelId: info.model_id,
    experimentId: info.experiment_id,
    name: info.name,
    artifactLocation: info.artifact_uri,
    creationTimestamp: created,
    lastUpdatedTimestamp:
      info.last_updated_timestamp_ms === undefined ? created : int64ToNumber(info.last_updated_timestamp_ms),
    status: STATUS_FROM_NAME.get(info.status) as LoggedModelStatus,
    sourceRunId: info.source_run_id ?? null,
    modelType: info.model_type ?? null,
    tags: entries(info.tags),
    params: entries(json.data?.params),
    metrics: latestByKey((json.data?.metrics ?? []).map(toMetricPoint)),
  };
}

/** A run's `inputs` and `outputs` as `runs/get` sends them (the JSON already parsed), checked. */
export async function runInputsAndOutputs(
  json: unknown,
  describe: () => string,
): Promise<Pick<Run, 'inputs' | 'outputs'>> {
  const body = new TextEncoder().encode(JSON.stringify(json));
  const parsed = await decodeAnswer(Answers.runIo, body, describe);
  return {
    inputs: (parsed.inputs?.dataset_inputs ?? []).map((input) => ({
      dataset: {
        name: input.dataset.name,
        digest: input.dataset.digest,
        sourceType: input.dataset.source_type,
        source: input.dataset.source,
        schema: input.dataset.schema ?? null,
        profile: input.dataset.profile ?? null,
      },
      tags: entries(input.tags),
    })),
    outputs: (parsed.outputs?.model_outputs ?? []).map((output) => ({
      modelId: output.model_id,
      step: output.step === undefined ? 0 : int64ToNumber(output.step),
    })),
  };
}

export class RestRunIo {
  /** A model's artifact URI never changes: one lookup per model is enough. Bounded. */
  private readonly artifactUris = new Map<string, string>();

  constructor(private readonly rest: RestAccess) {}

  private remember(model: LoggedModel): LoggedModel {
    if (this.artifactUris.size >= 10_000) this.artifactUris.clear();
    this.artifactUris.set(model.modelId, model.artifactLocation);
    return model;
  }

  async logInputs(runId: string, datasets: DatasetInput[]): Promise<void> {
    validateDatasetInputs(datasets);
    await this.rest.call(
      {
        method: 'POST',
        url: this.rest.api('runs/log-inputs'),
        json: {
          run_id: runId,
          datasets: datasets.map(({ dataset, tags }) => ({
            tags: Object.entries(tags).map(([key, value]) => ({ key, value })),
            dataset: {
              name: dataset.name,
              digest: dataset.digest,
              source_type: dataset.sourceType,
              source: dataset.source,
              ...(dataset.schema !== null ? { schema: dataset.schema } : {}),
              ...(dataset.profile !== null ? { profile: dataset.profile } : {}),
            },
          })),
        },
        // MLflow reuses a dataset and an input it already has: sending again changes nothing.
        idempotent: true,
        what: `log the inputs of run ${runId}`,
      },
      Answers.empty,
    );
  }

  async logOutputs(runId: string, models: ModelOutput[]): Promise<void> {
    validateModelOutputs(models);
    await this.rest.call(
      {
        method: 'POST',
        url: this.rest.api('runs/outputs'),
        json: {
          run_id: runId,
          models: models.map((model) => ({ model_id: model.modelId, step: model.step })),
        },
        // A second identical row breaks the SQL store's primary key: sent again only when not received.
        idempotent: false,
        what: `log the outputs of run ${runId}`,
      },
      Answers.empty,
    );
  }

  async createLoggedModel(experimentId: string, options: CreateLoggedModelOptions): Promise<LoggedModel> {
    validateCreateLoggedModel(options);
    const pairs = (values: Record<string, string> | undefined) =>
      Object.entries(values ?? {}).map(([key, value]) => ({ key, value }));
    const answer = await this.rest.call(
      {
        method: 'POST',
        url: this.rest.api('logged-models'),
        json: {
          experiment_id: experimentId,
          name: options.name,
          ...(options.sourceRunId !== undefined ? { source_run_id: options.sourceRunId } : {}),
          ...(options.modelType !== undefined ? { model_type: options.modelType } : {}),
          params: pairs(options.params),
          tags: pairs(options.tags),
        },
        idempotent: false,
        what: `create logged model '${options.name}' in experiment ${experimentId}`,
      },
      Answers.model,
    );
    return this.remember(toLoggedModel(answer.model));
  }

  async finalizeLoggedModel(
    modelId: string,
    status: Exclude<LoggedModelStatus, 'PENDING'>,
  ): Promise<LoggedModel> {
    validateModelStatus(status);
    validateModelId(modelId);
    const answer = await this.rest.call(
      {
        method: 'PATCH',
        url: this.rest.api(`logged-models/${modelId}`),
        json: { model_id: modelId, status: STATUS_NAME[status] },
        idempotent: true,
        what: `finalize logged model ${modelId}`,
      },
      Answers.model,
    );
    return toLoggedModel(answer.model);
  }

  async getLoggedModel(modelId: string): Promise<LoggedModel | null> {
    validateModelId(modelId);
    const answer = await this.rest.callOrNull(
      {
        method: 'GET',
        url: this.rest.api(`logged-models/${modelId}`),
        idempotent: true,
        what: `get logged model ${modelId}`,
      },
      Answers.model,
    );
    return answer === null ? null : this.remember(toLoggedModel(answer.model));
  }

  async searchLoggedModels(
    experimentId: string,
    options: { sourceRunId?: string } = {},
  ): Promise<LoggedModel[]> {
    const { sourceRunId } = options;
    // The id goes into MLflow's filter grammar: only id characters, so it cannot end the quoted string.
    if (sourceRunId !== undefined && !/^[\w-]+$/.test(sourceRunId))
      throw invalid(`'${sourceRunId}' is not a run id`);
    const models = await collectPages(async (pageToken) => {
      const answer = await this.rest.call(
        {
          method: 'POST',
          url: this.rest.api('logged-models/search'),
          json: {
            experiment_ids: [experimentId],
            max_results: SEARCH_PAGE_SIZE,
            ...(sourceRunId !== undefined ? { filter: `source_run_id = '${sourceRunId}'` } : {}),
            ...(pageToken !== undefined ? { page_token: pageToken } : {}),
          },
          idempotent: true,
          what: `search logged models of experiment ${experimentId}`,
        },
        Answers.search,
      );
      return { items: (answer.models ?? []).map(toLoggedModel), nextPageToken: answer.next_page_token };
    }, `${this.rest.displayUri}, searching logged models of experiment ${experimentId}`);
    return models.sort(compareLoggedModels);
  }

  async logLoggedModelArtifact(modelId: string, path: string, content: Uint8Array): Promise<void> {
    const { url, target } = await this.fileUrl(modelId, path);
    const spec: RequestSpec = {
      method: 'PUT',
      url,
      bytes: content,
      idempotent: true,
      what: `upload ${target}`,
    };
    const response = await this.rest.http.send(spec);
    if (response.status < 200 || response.status >= 300)
      throw this.rest.http.errorFromResponse(spec, response);
  }

  async readLoggedModelArtifact(modelId: string, path: string): Promise<Uint8Array> {
    const { url, target } = await this.fileUrl(modelId, path);
    const spec: RequestSpec = { method: 'GET', url, idempotent: true, what: `download ${target}` };
    const response = await this.rest.http.send(spec);
    if (response.status === 200) return response.body;
    const error = this.rest.http.errorFromResponse(spec, response);
    if (response.status === 404 || error.code === 'NOT_FOUND') {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: artifact ${target} does not exist (logged model ${modelId})`,
      );
    }
    throw error;
  }

  /** The proxy URL of one file of the model; UNSUPPORTED when the server does not proxy its artifacts. */
  private async fileUrl(modelId: string, path: string): Promise<{ url: URL; target: string }> {
    const segments = artifactSegments(path, false);
    validateModelId(modelId);
    const location = this.artifactUris.get(modelId) ?? (await this.getLoggedModel(modelId))?.artifactLocation;
    if (location === undefined) {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: logged model ${modelId} does not exist in ${this.rest.displayUri}`,
      );
    }
    const target = `${location.replace(/\/+$/, '')}/${segments.join('/')}`;
    const url = this.rest.proxiedFile(location, segments.join('/'));
    if (url === null) {
      throw new TrackingError(
        'UNSUPPORTED',
        `tracking: logged model ${modelId} keeps its artifacts at ${location}, which Tagger cannot reach through the server; run the MLflow server with artifact proxying (its default)`,
      );
    }
    return { url, target };
  }
}
