/**
 * `TrackingStore` over an MLflow tracking server's REST API (`/api/2.0/mlflow/...`) and its artifact
 * proxy (`/api/2.0/mlflow-artifacts/artifacts/...`). Verified against MLflow 3.17.2 with a SQLite
 * backend; see docs in `rest-http.ts` (transport) and `rest-json.ts` (answer shapes).
 *
 * Retrying creates: `runs/create` and `experiments/create` are not idempotent. They are re-sent only
 * when the server provably did not act on them (connection refused, HTTP 429/503). After a timeout,
 * a reset connection or a 500/502/504 they fail with UNAVAILABLE saying the request may have been
 * applied, instead of risking a second run; `getOrCreateExperiment` recovers the experiment case by
 * looking the name up again. Every other call is idempotent on MLflow (log-batch re-sends dedupe:
 * params must keep their value, tags overwrite, and the SQL store's metric key includes
 * (key, timestamp, step, value)), so it is retried on every transient failure.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pointsByModel } from '../dataset-and-model-rules.js';
import { artifactSegments, collectPages, statusUpdate, validateBatch } from '../mlflow-rules.js';
import { redactUri } from '../redact.js';
import {
  type ArtifactEntry,
  type CreateLoggedModelOptions,
  type CreateRunOptions,
  type DatasetInput,
  type Experiment,
  type LogBatch,
  type LoggedModel,
  type LoggedModelStatus,
  type MetricPoint,
  type ModelOutput,
  type Run,
  type RunStatus,
  type SearchRunsOptions,
  TrackingError,
  type TrackingStore,
} from '../store.js';
import { RestRunIo, runInputsAndOutputs } from './datasets-and-models.js';
import { RestModelRegistry } from './model-registry.js';
import { type RequestSpec, type RestCalls, RestHttpClient, type RestHttpOptions } from './rest-http.js';
import {
  type Answer,
  Answers,
  decodeAnswer,
  encodeDouble,
  type FileInfoJson,
  int64ToNumber,
  toExperiment,
  toMetricPoint,
  toRun,
} from './rest-json.js';

/** The transport's options: URI, credentials source, timeout and retry tuning (documented there). */
export type RestTrackingStoreOptions = RestHttpOptions;

/** MLflow's limits (`mlflow/utils/validation.py`). */
const MAX_PARAMS_TAGS_PER_BATCH = 100;
const MAX_METRICS_PER_BATCH = 1000;
const MAX_ENTITIES_PER_BATCH = 1000;
/** MAX_BATCH_LOG_REQUEST_SIZE is 1e6 bytes; leave room for the envelope. */
const MAX_BATCH_BYTES = 900_000;
/** Page sizes: MLflow's default for runs (max 50,000) and its cap for metric history. */
const SEARCH_PAGE_SIZE = 1000;
const HISTORY_PAGE_SIZE = 25_000;
const ARTIFACT_SERVICE_PATH = '/api/2.0/mlflow-artifacts/artifacts';

/** Where a run's artifacts are, as far as this process can reach them. */
type ArtifactLocation =
  | { kind: 'proxy'; uri: string; fileUrl: (path: string) => URL; listUrl: (path: string) => URL }
  | { kind: 'local'; uri: string; root: string }
  | { kind: 'unreachable'; uri: string };

export class RestTrackingStore implements TrackingStore {
  readonly displayUri: string;
  readonly registry: RestModelRegistry;
  private readonly http: RestHttpClient;
  /** A run's artifact_uri never changes, so one lookup per run is enough. Bounded. */
  private readonly artifactUris = new Map<string, string>();
  /** Dataset inputs, run outputs and logged models (`datasets-and-models.ts`). */
  private readonly io: RestRunIo;

  constructor(options: RestTrackingStoreOptions) {
    this.http = new RestHttpClient(options);
    this.displayUri = this.http.displayUri;
    const calls: RestCalls = {
      displayUri: this.displayUri,
      call: (spec, validator) => this.call(spec, validator),
      callOrNull: (spec, validator) => this.callOrNull(spec, validator),
      api: (path, query) => this.api(path, query),
    };
    this.registry = new RestModelRegistry(calls);
    this.io = new RestRunIo({
      ...calls,
      http: this.http,
      proxiedFile: (uri, path) => {
        const location = resolveArtifactUri(uri, this.http.base);
        return location.kind === 'proxy' ? location.fileUrl(path) : null;
      },
    });
  }

  /**
   * Waits until `GET /health` answers 200, polling, for at most `maxWaitMs` (a duration). For service
   * startup next to a server that is still booting. UNAVAILABLE after the deadline.
   */
  async waitUntilReady(maxWaitMs: number): Promise<void> {
    const deadline = Date.now() + maxWaitMs;
    let delay = 100;
    let last = 'no attempt made';
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      try {
        const response = await fetch(this.http.url('health'), {
          signal: AbortSignal.timeout(Math.max(1, Math.min(this.http.timeoutMs, remaining))),
          redirect: 'manual',
        });
        await response.arrayBuffer();
        if (response.status === 200) return;
        last = `HTTP ${response.status}`;
      } catch (error) {
        last = describeFetchError(error);
      }
      const pause = Math.min(delay, deadline - Date.now());
      if (pause <= 0) break;
      await new Promise((resolve) => setTimeout(resolve, pause));
      delay = Math.min(delay * 2, 1000);
    }
    throw new TrackingError(
      'UNAVAILABLE',
      `tracking: ${this.displayUri} was not ready within ${maxWaitMs} ms (last answer from /health: ${this.http.redact(last)}); ` +
        'start the MLflow tracking server or fix MLFLOW_TRACKING_URI',
    );
  }

  async getExperimentByName(name: string): Promise<Experiment | null> {
    const answer = await this.callOrNull(
      {
        method: 'GET',
        url: this.api('experiments/get-by-name', { experiment_name: name }),
        idempotent: true,
        what: `look up experiment '${name}'`,
      },
      Answers.getExperiment,
    );
    return answer === null ? null : toExperiment(answer.experiment);
  }

  async createExperiment(name: string): Promise<string> {
    const answer = await this.call(
      {
        method: 'POST',
        url: this.api('experiments/create'),
        json: { name },
        idempotent: false,
        what: `create experiment '${name}'`,
      },
      Answers.createExperiment,
    );
    return answer.experiment_id;
  }

  async searchRuns(experimentId: string, options: SearchRunsOptions = {}): Promise<Run[]> {
    const orderBy = options.orderByMetric
      ? [
          `metrics.${quoteKey(options.orderByMetric.key)} ${options.orderByMetric.descending ? 'DESC' : 'ASC'}`,
        ]
      : [];
    return collectPages(async (pageToken) => {
      const answer = await this.call(
        {
          method: 'POST',
          url: this.api('runs/search'),
          json: {
            experiment_ids: [experimentId],
            run_view_type: 'ACTIVE_ONLY',
            max_results: SEARCH_PAGE_SIZE,
            ...(orderBy.length > 0 ? { order_by: orderBy } : {}),
            ...(options.finishedOnly ? { filter: "attributes.status = 'FINISHED'" } : {}),
            ...(pageToken !== undefined ? { page_token: pageToken } : {}),
          },
          idempotent: true,
          what: `search runs of experiment ${experimentId}`,
        },
        Answers.searchRuns,
      );
      return { items: (answer.runs ?? []).map(toRun), nextPageToken: answer.next_page_token };
    }, `${this.displayUri}, searching runs of experiment ${experimentId}`);
  }

  async getRun(runId: string): Promise<Run | null> {
    const answer = await this.callOrNull(
      {
        method: 'GET',
        url: this.api('runs/get', { run_id: runId }),
        idempotent: true,
        what: `get run ${runId}`,
      },
      Answers.getRun,
    );
    if (answer === null) return null;
    const run = toRun(answer.run);
    this.rememberArtifactUri(run.info.runId, run.info.artifactUri);
    return { ...run, ...(await runInputsAndOutputs(answer.run, () => `GET runs/get of run ${runId}`)) };
  }

  async createRun(experimentId: string, options: CreateRunOptions): Promise<Run> {
    const tags = Object.entries(options.tags ?? {}).map(([key, value]) => ({ key, value }));
    const answer = await this.call(
      {
        method: 'POST',
        url: this.api('runs/create'),
        json: {
          experiment_id: experimentId,
          run_name: options.runName,
          // The proto default is 0, which the server would store as-is.
          start_time: requireInteger(options.startTime ?? Date.now(), 'startTime'),
          ...(options.userId !== undefined ? { user_id: options.userId } : {}),
          ...(tags.length > 0 ? { tags } : {}),
        },
        idempotent: false,
        what: `create run '${options.runName}' in experiment ${experimentId}`,
      },
      Answers.getRun,
    );
    const run = toRun(answer.run);
    this.rememberArtifactUri(run.info.runId, run.info.artifactUri);
    return run;
  }

  async logBatch(runId: string, batch: LogBatch): Promise<void> {
    // The server checks too, but the whole batch is checked before its first chunk is sent.
    validateBatch(batch);
    pointsByModel(batch.metrics ?? []);
    for (const chunk of chunkBatch(batch)) {
      await this.call(
        {
          method: 'POST',
          url: this.api('runs/log-batch'),
          json: { run_id: runId, ...chunk },
          idempotent: true,
          what: `log a batch to run ${runId}`,
        },
        Answers.empty,
      );
    }
  }

  async getMetricHistory(runId: string, key: string): Promise<MetricPoint[]> {
    return collectPages(async (pageToken) => {
      const answer = await this.call(
        {
          method: 'GET',
          url: this.api('metrics/get-history', {
            run_id: runId,
            metric_key: key,
            max_results: String(HISTORY_PAGE_SIZE),
            page_token: pageToken,
          }),
          idempotent: true,
          what: `get the history of metric '${key}' of run ${runId}`,
        },
        Answers.metricHistory,
      );
      return { items: (answer.metrics ?? []).map(toMetricPoint), nextPageToken: answer.next_page_token };
    }, `${this.displayUri}, history of metric '${key}' of run ${runId}`);
  }

  async updateRun(runId: string, update: { status: RunStatus; endTime?: number }): Promise<void> {
    statusUpdate(update, null);
    await this.call(
      {
        method: 'POST',
        url: this.api('runs/update'),
        json: {
          run_id: runId,
          status: update.status,
          ...(update.endTime !== undefined ? { end_time: requireInteger(update.endTime, 'endTime') } : {}),
        },
        idempotent: true,
        what: `update run ${runId}`,
      },
      Answers.updateRun,
    );
  }

  async logArtifact(runId: string, path: string, content: Uint8Array): Promise<void> {
    const segments = artifactSegments(path, false);
    const location = await this.artifactLocation(runId);
    const target = `${location.uri}/${segments.join('/')}`;
    if (location.kind === 'proxy') {
      const spec: RequestSpec = {
        method: 'PUT',
        url: location.fileUrl(segments.join('/')),
        bytes: content,
        idempotent: true,
        what: `upload artifact ${target}`,
      };
      // The proxy answers an upload with an empty 200; only the status matters.
      const response = await this.http.send(spec);
      if (response.status < 200 || response.status >= 300) throw this.http.errorFromResponse(spec, response);
      return;
    }
    if (location.kind === 'local') {
      const file = join(location.root, ...segments);
      try {
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, content);
      } catch (cause) {
        throw new TrackingError(
          'UNAVAILABLE',
          `tracking: cannot write artifact ${target}: ${describeFsError(cause)}`,
          {
            cause,
          },
        );
      }
      return;
    }
    throw unreachable(location.uri, runId);
  }

  async listArtifacts(runId: string, path = ''): Promise<ArtifactEntry[]> {
    const segments = artifactSegments(path, true);
    const relative = segments.join('/');
    const location = await this.artifactLocation(runId);
    if (location.kind === 'proxy') {
      const answer = await this.call(
        {
          method: 'GET',
          url: location.listUrl(relative),
          idempotent: true,
          what: `list artifacts ${location.uri}/${relative}`,
        },
        Answers.listArtifacts,
      );
      // The proxy answers with basenames; the interface speaks run-relative paths.
      return (answer.files ?? []).map((file) => toEntry(file, (name) => joinPosix(relative, name)));
    }
    if (location.kind === 'unreachable') throw unreachable(location.uri, runId);
    const local = await listLocal(join(location.root, ...segments), relative);
    if (local !== null) return local;
    // A missing local folder means either "nothing logged yet" or "a path on the server's machine":
    // the server's own listing tells them apart.
    const listed = await this.listViaTrackingApi(runId, relative);
    if (listed.length > 0) throw unreachable(location.uri, runId);
    return [];
  }

  async readArtifact(runId: string, path: string): Promise<Uint8Array> {
    const segments = artifactSegments(path, false);
    const location = await this.artifactLocation(runId);
    const target = `${location.uri}/${segments.join('/')}`;
    if (location.kind === 'proxy') {
      const notFound = () =>
        new TrackingError('NOT_FOUND', `tracking: artifact ${target} does not exist (run ${runId})`);
      const spec: RequestSpec = {
        method: 'GET',
        url: location.fileUrl(segments.join('/')),
        idempotent: true,
        what: `download artifact ${target}`,
        // With S3 (or GCS, Azure) behind the proxy, a missing file is an unhandled boto error: a 500,
        // which would be retried for seconds. The folder's listing tells a missing file from a failing
        // server; an optional artifact (an older run's reference_profile.json) is then absent at once.
        insteadOfRetry: async (status) => {
          if (status !== 500) return undefined;
          const folder = segments.slice(0, -1).join('/');
          const listed = await this.listArtifacts(runId, folder).catch(() => undefined);
          return listed && !listed.some((entry) => entry.path === segments.join('/'))
            ? notFound()
            : undefined;
        },
      };
      const response = await this.http.send(spec);
      if (response.status === 200) return response.body;
      const error = this.http.errorFromResponse(spec, response);
      if (response.status === 404 || error.code === 'NOT_FOUND') throw notFound();
      if (response.status === 400) {
        // The proxy answers 400 `{"detail": "... refers to a directory ..."}` for folders.
        throw new TrackingError(
          'INVALID_ARGUMENT',
          `tracking: artifact ${target} is not a file (run ${runId})`,
        );
      }
      throw error;
    }
    if (location.kind === 'local') {
      const file = join(location.root, ...segments);
      try {
        return new Uint8Array(await readFile(file));
      } catch (cause) {
        const code = (cause as { code?: unknown }).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') {
          if (await isDirectory(location.root)) {
            throw new TrackingError(
              'NOT_FOUND',
              `tracking: artifact ${target} does not exist (run ${runId})`,
              {
                cause,
              },
            );
          }
          throw unreachable(location.uri, runId);
        }
        if (code === 'EISDIR') {
          throw new TrackingError(
            'INVALID_ARGUMENT',
            `tracking: artifact ${target} is not a file (run ${runId})`,
          );
        }
        throw new TrackingError(
          'UNAVAILABLE',
          `tracking: cannot read artifact ${target}: ${describeFsError(cause)}`,
          {
            cause,
          },
        );
      }
    }
    throw unreachable(location.uri, runId);
  }

  /**
   * MLflow's REST API has no side-effect-free write test: this checks that the server answers and
   * accepts the credentials (and that the experiment exists, when given); a user without write
   * permission is found at the first write.
   */
  async checkWritable(experimentId?: string): Promise<void> {
    if (experimentId === undefined) {
      await this.getExperimentByName('Default');
      return;
    }
    await this.call(
      {
        method: 'GET',
        url: this.api('experiments/get', { experiment_id: experimentId }),
        idempotent: true,
        what: `look up experiment ${experimentId}`,
      },
      Answers.getExperiment,
    );
  }

  async close(): Promise<void> {
    this.http.close();
  }

  // ---------------------------------------------------------------- inputs, outputs, logged models

  logInputs(runId: string, datasets: DatasetInput[]): Promise<void> {
    return this.io.logInputs(runId, datasets);
  }

  logOutputs(runId: string, models: ModelOutput[]): Promise<void> {
    return this.io.logOutputs(runId, models);
  }

  createLoggedModel(experimentId: string, options: CreateLoggedModelOptions): Promise<LoggedModel> {
    return this.io.createLoggedModel(experimentId, options);
  }

  logLoggedModelArtifact(modelId: string, path: string, content: Uint8Array): Promise<void> {
    return this.io.logLoggedModelArtifact(modelId, path, content);
  }

  readLoggedModelArtifact(modelId: string, path: string): Promise<Uint8Array> {
    return this.io.readLoggedModelArtifact(modelId, path);
  }

  finalizeLoggedModel(modelId: string, status: Exclude<LoggedModelStatus, 'PENDING'>): Promise<LoggedModel> {
    return this.io.finalizeLoggedModel(modelId, status);
  }

  getLoggedModel(modelId: string): Promise<LoggedModel | null> {
    return this.io.getLoggedModel(modelId);
  }

  searchLoggedModels(experimentId: string, options?: { sourceRunId?: string }): Promise<LoggedModel[]> {
    return this.io.searchLoggedModels(experimentId, options);
  }

  private api(path: string, query?: Record<string, string | undefined>): URL {
    return this.http.url(`api/2.0/mlflow/${path}`, query);
  }

  /** Sends the request and decodes a 2xx answer with the validator; other answers become errors. */
  private async call<T>(spec: RequestSpec, expected: Answer<T>): Promise<T> {
    const response = await this.http.send(spec);
    if (response.status >= 200 && response.status < 300) {
      return decodeAnswer(expected, response.body, () => `${spec.method} ${this.http.redact(spec.url.href)}`);
    }
    throw this.http.errorFromResponse(spec, response);
  }

  /** Like `call`, but MLflow's RESOURCE_DOES_NOT_EXIST (HTTP 404 with an MLflow error body) yields null. */
  private async callOrNull<T>(spec: RequestSpec, expected: Answer<T>): Promise<T | null> {
    try {
      return await this.call(spec, expected);
    } catch (error) {
      if (error instanceof TrackingError && error.code === 'NOT_FOUND') return null;
      throw error;
    }
  }

  private rememberArtifactUri(runId: string, uri: string): void {
    if (!uri) return;
    if (this.artifactUris.size >= 10_000) this.artifactUris.clear();
    this.artifactUris.set(runId, uri);
  }

  private async artifactLocation(runId: string): Promise<ArtifactLocation> {
    let uri = this.artifactUris.get(runId);
    if (uri === undefined) {
      const run = await this.getRun(runId);
      if (run === null) {
        throw new TrackingError('NOT_FOUND', `tracking: run ${runId} does not exist in ${this.displayUri}`);
      }
      uri = run.info.artifactUri;
      if (!uri) {
        throw new TrackingError(
          'MALFORMED',
          `tracking: ${this.displayUri} sent run ${runId} without an artifact_uri`,
        );
      }
    }
    return resolveArtifactUri(uri, this.http.base);
  }

  /** `GET /api/2.0/mlflow/artifacts/list?run_id=&path=`: run-relative paths, for roots the server reads. */
  private async listViaTrackingApi(runId: string, relative: string): Promise<ArtifactEntry[]> {
    return collectPages(async (pageToken) => {
      const answer = await this.call(
        {
          method: 'GET',
          url: this.api('artifacts/list', {
            run_id: runId,
            ...(relative ? { path: relative } : {}),
            page_token: pageToken,
          }),
          idempotent: true,
          what: `list artifacts of run ${runId}`,
        },
        Answers.listRunArtifacts,
      );
      return {
        items: (answer.files ?? []).map((file) => toEntry(file, (p) => p)),
        nextPageToken: answer.next_page_token,
      };
    }, `${this.displayUri}, listing artifacts of run ${runId}`);
  }
}

/**
 * MLflow's `MlflowArtifactsRepository.resolve_uri`: `mlflow-artifacts:/<p>` is served by the tracking
 * server at `<tracking>/api/2.0/mlflow-artifacts/artifacts/<p>`; `mlflow-artifacts://host:port/<p>`
 * by that host with the tracking URI's scheme and prefix.
 */
export function resolveArtifactUri(uri: string, trackingBase: URL): ArtifactLocation {
  let parsed: URL;
  try {
    parsed = new URL(uri);
  } catch {
    // A bare absolute path is how old servers wrote local roots.
    if (uri.startsWith('/')) return { kind: 'local', uri, root: uri };
    return { kind: 'unreachable', uri };
  }
  const display = uri.replace(/\/+$/, '');
  if (parsed.protocol === 'mlflow-artifacts:') {
    // WHATWG URL leaves `mlflow-artifacts:/1/abc` with an empty host and the path as is.
    const origin = parsed.host ? `${trackingBase.protocol}//${parsed.host}` : trackingBase.origin;
    const prefix = trackingBase.pathname.replace(/\/+$/, '');
    const service = `${origin}${prefix}${ARTIFACT_SERVICE_PATH}`;
    const root = parsed.pathname.replace(/^\/+|\/+$/g, '');
    return proxy(display, service, root);
  }
  if (parsed.protocol === 'http:' || parsed.protocol === 'https:') {
    const at = parsed.pathname.indexOf(ARTIFACT_SERVICE_PATH);
    if (at >= 0) {
      const service = `${parsed.origin}${parsed.pathname.slice(0, at)}${ARTIFACT_SERVICE_PATH}`;
      const root = parsed.pathname.slice(at + ARTIFACT_SERVICE_PATH.length).replace(/^\/+|\/+$/g, '');
      return proxy(display, service, root);
    }
    return { kind: 'unreachable', uri: display };
  }
  if (parsed.protocol === 'file:' && (parsed.host === '' || parsed.host === 'localhost')) {
    return { kind: 'local', uri: display, root: fileURLToPath(parsed) };
  }
  return { kind: 'unreachable', uri: display };
}

function proxy(uri: string, service: string, root: string): ArtifactLocation {
  const encodedRoot = root
    .split('/')
    .filter((s) => s.length > 0)
    .map((s) => encodeURIComponent(decodeURIComponent(s)))
    .join('/');
  const full = (path: string): string => [root, path].filter((p) => p.length > 0).join('/');
  return {
    kind: 'proxy',
    uri,
    fileUrl: (path) => new URL(`${service}/${[encodedRoot, encodePath(path)].filter((p) => p).join('/')}`),
    listUrl: (path) => {
      const url = new URL(service);
      url.searchParams.set('path', decodeURIComponent(full(path)));
      return url;
    },
  };
}

function encodePath(path: string): string {
  return path
    .split('/')
    .filter((s) => s.length > 0)
    .map(encodeURIComponent)
    .join('/');
}

function unreachable(uri: string, runId: string): TrackingError {
  return new TrackingError(
    'UNSUPPORTED',
    `tracking: the artifacts of run ${runId} live at ${redactUri(uri)}, which Tagger cannot read or write from this machine; ` +
      'run the MLflow server with artifact proxying (`mlflow server` default, `--artifacts-destination`) so runs get ' +
      'mlflow-artifacts:/ URIs, or make that location available locally',
  );
}

function joinPosix(parent: string, name: string): string {
  return parent ? `${parent}/${name}` : name;
}

function toEntry(file: FileInfoJson, toPath: (path: string) => string): ArtifactEntry {
  const isDir = file.is_dir === true;
  return {
    path: toPath(file.path),
    isDir,
    size: isDir || file.file_size === undefined ? null : int64ToNumber(file.file_size),
  };
}

async function listLocal(dir: string, relative: string): Promise<ArtifactEntry[] | null> {
  let names: import('node:fs').Dirent[];
  try {
    names = await readdir(dir, { withFileTypes: true });
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'ENOENT') return null;
    if (code === 'ENOTDIR') return [];
    throw new TrackingError('UNAVAILABLE', `tracking: cannot list ${dir}: ${describeFsError(cause)}`, {
      cause,
    });
  }
  const entries: ArtifactEntry[] = [];
  for (const entry of names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const isDir = entry.isDirectory();
    entries.push({
      path: joinPosix(relative, entry.name),
      isDir,
      size: isDir ? null : (await stat(join(dir, entry.name))).size,
    });
  }
  return entries;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** Order-by keys with characters outside MLflow's identifier grammar are backtick-quoted. */
function quoteKey(key: string): string {
  if (/^[A-Za-z0-9_]+$/.test(key)) return key;
  if (key.includes('`')) {
    throw new TrackingError(
      'INVALID_ARGUMENT',
      `tracking: cannot order by metric '${key}' (contains a backtick)`,
    );
  }
  return `\`${key}\``;
}

function requireInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value)) {
    throw new TrackingError(
      'INVALID_ARGUMENT',
      `tracking: ${name} must be an integer (epoch ms), got ${value}`,
    );
  }
  return value;
}

interface BatchChunk {
  metrics: { key: string; value: number | string; timestamp: number; step: number; model_id?: string }[];
  params: { key: string; value: string }[];
  tags: { key: string; value: string }[];
}

/**
 * Splits a batch into log-batch requests within MLflow's limits: ≤100 params, ≤100 tags, ≤1000 metrics,
 * ≤1000 entities and < 1 MB each. Params go first (like MLflow's client), so a param conflict fails the
 * call before metrics are appended.
 */
export function chunkBatch(batch: LogBatch): BatchChunk[] {
  type Item =
    | { kind: 'params'; entry: { key: string; value: string } }
    | { kind: 'tags'; entry: { key: string; value: string } }
    | { kind: 'metrics'; entry: BatchChunk['metrics'][number] };
  const items: Item[] = [
    ...Object.entries(batch.params ?? {}).map(
      ([key, value]): Item => ({ kind: 'params', entry: { key, value } }),
    ),
    ...Object.entries(batch.tags ?? {}).map(
      ([key, value]): Item => ({ kind: 'tags', entry: { key, value } }),
    ),
    ...(batch.metrics ?? []).map(
      (m): Item => ({
        kind: 'metrics',
        entry: {
          key: m.key,
          value: encodeDouble(m.value),
          timestamp: requireInteger(m.timestamp, `timestamp of metric '${m.key}'`),
          step: requireInteger(m.step, `step of metric '${m.key}'`),
          // MLflow 3: the server also records the point as a metric of that logged model.
          ...(m.modelId !== undefined ? { model_id: m.modelId } : {}),
        },
      }),
    ),
  ];
  const limits = {
    params: MAX_PARAMS_TAGS_PER_BATCH,
    tags: MAX_PARAMS_TAGS_PER_BATCH,
    metrics: MAX_METRICS_PER_BATCH,
  };
  const chunks: BatchChunk[] = [];
  let current: BatchChunk = { metrics: [], params: [], tags: [] };
  let count = 0;
  let bytes = 0;
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item.entry)) + 1;
    const full =
      current[item.kind].length >= limits[item.kind] ||
      count >= MAX_ENTITIES_PER_BATCH ||
      (count > 0 && bytes + size > MAX_BATCH_BYTES);
    if (full) {
      chunks.push(current);
      current = { metrics: [], params: [], tags: [] };
      count = 0;
      bytes = 0;
    }
    (current[item.kind] as unknown[]).push(item.entry);
    count += 1;
    bytes += size;
  }
  if (count > 0) chunks.push(current);
  return chunks;
}

function describeFetchError(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return 'timed out';
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return error instanceof Error ? error.message : String(error);
}

function describeFsError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
}
