/**
 * `SqlTrackingStore`: MLflow's relational store (`SqlAlchemyStore`), read and written in MLflow's own
 * schema, on SQLite (`sqlite:///path.db`, MLflow's default since 3.7) or PostgreSQL
 * (`postgresql://…`). The same SQL runs on both (see driver.ts). Every write is one transaction, so a
 * process killed mid-write leaves nothing half-written; the values follow MLflow's SQL store: NaN is
 * stored as 0 with `is_nan`, ±Infinity clamped to ±1.7976931348623157e308, `latest_metrics` kept by
 * MLflow's (step, timestamp, value) rule. Artifacts live in local (or mounted) folders under the
 * experiment's artifact location, like MLflow's client does without a server.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { LocalArtifacts, localArtifactPath, probeWritable } from '../local-artifacts.js';
import {
  invalid,
  isLater,
  latestMetric,
  newRunFields,
  newRunInfo,
  paramChanged,
  RUN_NAME_TAG,
  RUN_STATUSES,
  sortRuns,
  statusUpdate,
  validateBatch,
  validateExperimentName,
} from '../mlflow-rules.js';
import { redactUri } from '../redact.js';
import {
  type ArtifactEntry,
  type CreateLoggedModelOptions,
  type CreateRunOptions,
  type DatasetInput,
  type Experiment,
  type LifecycleStage,
  type LogBatch,
  type LoggedModel,
  type LoggedModelStatus,
  type MetricPoint,
  type ModelOutput,
  type Run,
  type RunInfo,
  type RunStatus,
  type SearchRunsOptions,
  TrackingError,
  type TrackingStore,
} from '../store.js';
import { SqlRunIo } from './datasets-and-models.js';
import {
  databaseError,
  isUniqueViolation,
  PostgresDriver,
  type SqlDriver,
  type SqlExecutor,
  SqliteDriver,
  type SqlRow,
} from './driver.js';
import { SqlModelRegistry } from './model-registry.js';
import { ensureSchema } from './schema.js';

export interface SqlTrackingStoreOptions {
  /**
   * Where new experiments keep artifacts (`<root>/<experiment id>/<run id>/artifacts`). Default: `mlruns`
   * beside a SQLite database file; `./mlruns` in the working directory for PostgreSQL (MLflow's own
   * default), which replicas sharing a database must point at a shared mount.
   */
  artifactRoot?: string;
  /** Problems that do not stop the store (a run with an unknown status is skipped, a newer schema). */
  onWarning?: (message: string) => void;
  /**
   * Read-only use (serving, `tagger predict`): nothing is created — no folder, no database file, no
   * schema — and a SQLite file is opened read-only, so a store on a read-only volume can be read.
   */
  readOnly?: boolean;
}

/** MLflow's SQL store clamps infinities to the largest double (`sanitize_metric_value`). */
const MAX_DOUBLE = 1.7976931348623157e308;
const DEFAULT_WORKSPACE = 'default';

/** Where a `sqlite:` or `postgresql:` URI points, in the form SQLAlchemy (and so MLflow) reads it. */
export function parseSqlUri(
  uri: string,
): { dialect: 'sqlite'; file: string } | { dialect: 'postgresql'; url: string } {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase() ?? '';
  const [dialect, driver] = scheme.split('+');
  if (dialect === 'sqlite') {
    // SQLAlchemy: sqlite:///relative/path.db, sqlite:////absolute/path.db; sqlite:// is in-memory.
    const match = /^sqlite(?:\+[a-z0-9]+)?:\/\/\/([^?#]+)$/i.exec(uri);
    if (!match?.[1] || match[1] === ':memory:') {
      throw new TrackingError(
        'INVALID_ARGUMENT',
        `tracking: '${redactUri(uri)}' names no database file; use sqlite:///relative/path.db or sqlite:////absolute/path.db`,
      );
    }
    return { dialect: 'sqlite', file: resolve(match[1]) };
  }
  if (dialect === 'postgresql' || dialect === 'postgres') {
    if (driver !== undefined && driver !== 'psycopg2' && driver !== 'psycopg' && driver !== 'pg8000') {
      throw new TrackingError(
        'UNSUPPORTED',
        `tracking: PostgreSQL driver '${driver}' in '${scheme}:' is not known`,
      );
    }
    // pg reads postgresql:// URLs; SQLAlchemy's '+driver' part names a Python driver, dropped here.
    return { dialect: 'postgresql', url: uri.replace(/^[^:]+:/, 'postgresql:') };
  }
  throw new TrackingError('UNSUPPORTED', `tracking: '${scheme}:' is not a SQL tracking URI`);
}

const str = (value: unknown): string => (value === null || value === undefined ? '' : String(value));
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

function metricValue(row: SqlRow): number {
  return row.is_nan ? Number.NaN : Number(row.value);
}

/** MLflow's stored form of a metric value: NaN as (0, is_nan), infinities clamped. */
function storedValue(value: number): { value: number; isNan: boolean } {
  if (Number.isNaN(value)) return { value: 0, isNan: true };
  if (value === Number.POSITIVE_INFINITY) return { value: MAX_DOUBLE, isNan: false };
  if (value === Number.NEGATIVE_INFINITY) return { value: -MAX_DOUBLE, isNan: false };
  return { value, isNan: false };
}

/**
 * Experiment ids are read as text: MLflow's SQL ids are small, but `mlflow migrate-filestore` keeps the
 * file layout's 18-digit ids, beyond 2^53 (and node:sqlite refuses to read such integers as numbers).
 */
const EXPERIMENT_COLUMNS =
  'CAST(experiment_id AS TEXT) AS experiment_id, name, artifact_location, lifecycle_stage, creation_time, last_update_time';
const RUN_COLUMNS =
  'r.run_uuid, r.name, r.user_id, r.status, r.start_time, r.end_time, r.artifact_uri, r.lifecycle_stage, CAST(r.experiment_id AS TEXT) AS experiment_id';

export class SqlTrackingStore implements TrackingStore {
  readonly registry: SqlModelRegistry;
  private readonly onWarning: (message: string) => void;
  /** Dataset inputs, run outputs and logged models (`datasets-and-models.ts`). */
  private readonly io: SqlRunIo;

  private constructor(
    private readonly db: SqlDriver,
    readonly displayUri: string,
    private readonly artifactRoot: string,
    options: SqlTrackingStoreOptions,
  ) {
    this.onWarning = options.onWarning ?? (() => undefined);
    this.registry = new SqlModelRegistry(db, displayUri);
    this.io = new SqlRunIo(db, displayUri);
  }

  /** Opens the database (creating the file and MLflow's schema when new) and checks it is MLflow's. */
  static async open(
    uri: string,
    displayUri: string,
    options: SqlTrackingStoreOptions = {},
  ): Promise<SqlTrackingStore> {
    const target = parseSqlUri(uri);
    let db: SqlDriver;
    let artifactRoot: string;
    const readOnly = options.readOnly ?? false;
    try {
      if (target.dialect === 'sqlite') {
        if (readOnly) {
          if (!existsSync(target.file)) {
            throw new TrackingError(
              'NOT_FOUND',
              `tracking: there is no SQLite database at ${target.file} (${displayUri}); nothing was created`,
            );
          }
        } else {
          mkdirSync(dirname(target.file), { recursive: true });
        }
        db = SqliteDriver.open(target.file, { readOnly });
        artifactRoot = resolve(options.artifactRoot ?? resolve(dirname(target.file), 'mlruns'));
      } else {
        db = await PostgresDriver.open(target.url);
        artifactRoot = resolve(options.artifactRoot ?? 'mlruns');
      }
    } catch (error) {
      throw databaseError(error, `cannot open ${displayUri}`);
    }
    const store = new SqlTrackingStore(db, displayUri, artifactRoot, options);
    if (db instanceof SqliteDriver) {
      // A file moved over the database (a backup restored) must be MLflow's too; it is only checked.
      db.onReplaced = () =>
        ensureSchema(db, {
          defaultArtifactRoot: artifactRoot,
          displayUri,
          onWarning: store.onWarning,
          readOnly: true,
        });
    }
    try {
      await ensureSchema(db, {
        defaultArtifactRoot: artifactRoot,
        displayUri,
        onWarning: store.onWarning,
        readOnly,
      });
    } catch (error) {
      await db.close().catch(() => undefined);
      throw databaseError(error, displayUri);
    }
    return store;
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  /**
   * A write the database rolls back (it needs the same rights as logging a run), then the artifact
   * folder new experiments use and, with `experimentId`, the experiment's own artifact location (set by
   * whoever created it, possibly elsewhere, or not local at all).
   */
  async checkWritable(experimentId?: string): Promise<void> {
    const rolledBack = new Error('rolled back on purpose');
    try {
      await this.db.transaction(async (tx) => {
        await tx.run('UPDATE alembic_version SET version_num = version_num');
        throw rolledBack;
      });
    } catch (error) {
      if (error !== rolledBack) {
        const failure = databaseError(error, this.displayUri);
        throw new TrackingError(failure.code, `${failure.message}; runs cannot be logged there`, {
          cause: error,
        });
      }
    }
    await probeWritable(this.artifactRoot, 'the artifact folder');
    if (experimentId === undefined) return;
    const experiment = await this.call(() => this.experimentById(this.db, experimentId));
    if (!experiment) {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: experiment ${experimentId} not found in ${this.displayUri}`,
      );
    }
    const location = localArtifactPath(experiment.artifactLocation);
    if (location === null) throw this.remoteArtifacts(experiment.artifactLocation);
    if (resolve(location) !== resolve(this.artifactRoot, experimentId)) {
      await probeWritable(location, `the artifact folder of experiment '${experiment.name}'`);
    }
  }

  /** Runs a database call, turning driver errors into TrackingErrors that name the store. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw databaseError(error, this.displayUri);
    }
  }

  // -------------------------------------------------------------- experiments

  private toExperiment(row: SqlRow): Experiment {
    const stage = str(row.lifecycle_stage);
    return {
      experimentId: str(row.experiment_id),
      name: str(row.name),
      artifactLocation: str(row.artifact_location),
      lifecycleStage: stage === 'deleted' ? 'deleted' : 'active',
      creationTime: num(row.creation_time),
      lastUpdateTime: num(row.last_update_time),
    };
  }

  async getExperimentByName(name: string): Promise<Experiment | null> {
    const rows = await this.call(() =>
      this.db.all(`SELECT ${EXPERIMENT_COLUMNS} FROM experiments WHERE name = ? AND workspace = ?`, [
        name,
        DEFAULT_WORKSPACE,
      ]),
    );
    return rows[0] ? this.toExperiment(rows[0]) : null;
  }

  /**
   * The id as a query parameter, or null when no experiment can have it. Passed as text: SQLite compares
   * it as an integer (column affinity), PostgreSQL's column is a 32-bit integer.
   */
  private idParameter(experimentId: string): string | null {
    if (typeof experimentId !== 'string' || !/^\d{1,19}$/.test(experimentId)) return null;
    if (this.db.dialect === 'postgresql' && BigInt(experimentId) > 2_147_483_647n) return null;
    return experimentId;
  }

  private async experimentById(tx: SqlExecutor, experimentId: string): Promise<Experiment | null> {
    const id = this.idParameter(experimentId);
    if (id === null) return null;
    const rows = await tx.all(`SELECT ${EXPERIMENT_COLUMNS} FROM experiments WHERE experiment_id = ?`, [id]);
    return rows[0] ? this.toExperiment(rows[0]) : null;
  }

  async createExperiment(name: string): Promise<string> {
    validateExperimentName(name);
    const now = Date.now();
    try {
      return await this.db.transaction(async (tx) => {
        const [row] = await tx.all(
          "INSERT INTO experiments (name, artifact_location, lifecycle_stage, creation_time, last_update_time, workspace) VALUES (?, NULL, 'active', ?, ?, ?) RETURNING CAST(experiment_id AS TEXT) AS experiment_id",
          [name, now, now, DEFAULT_WORKSPACE],
        );
        const id = str(row?.experiment_id);
        // MLflow: `<default artifact root>/<experiment id>`, known only once the id is.
        await tx.run('UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?', [
          `${this.artifactRoot}/${id}`,
          id,
        ]);
        return id;
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new TrackingError(
          'ALREADY_EXISTS',
          `tracking: experiment '${name}' already exists in ${this.displayUri}`,
        );
      }
      throw databaseError(error, this.displayUri);
    }
  }

  // --------------------------------------------------------------------- runs

  /** Runs matching `where` (on `runs r`), with latest metrics, params and tags; unusable rows warned about. */
  private async loadRuns(where: string, params: (string | number)[]): Promise<Run[]> {
    return this.call(async () => {
      const runs = new Map<string, Run>();
      for (const row of await this.db.all(`SELECT ${RUN_COLUMNS} FROM runs r WHERE ${where}`, params)) {
        const run = this.toRun(row);
        if (run) runs.set(run.info.runId, run);
      }
      if (runs.size === 0) return [];
      const join = `JOIN runs r ON r.run_uuid = x.run_uuid WHERE ${where}`;
      for (const row of await this.db.all(
        `SELECT x.run_uuid, x.key, x.value, x.is_nan FROM latest_metrics x ${join}`,
        params,
      )) {
        const run = runs.get(str(row.run_uuid));
        if (run) run.metrics[str(row.key)] = metricValue(row);
      }
      for (const row of await this.db.all(
        `SELECT x.run_uuid, x.key, x.value FROM params x ${join}`,
        params,
      )) {
        const run = runs.get(str(row.run_uuid));
        if (run) run.params[str(row.key)] = str(row.value);
      }
      for (const row of await this.db.all(`SELECT x.run_uuid, x.key, x.value FROM tags x ${join}`, params)) {
        const run = runs.get(str(row.run_uuid));
        if (run) run.tags[str(row.key)] = str(row.value);
      }
      return [...runs.values()];
    });
  }

  private toRun(row: SqlRow): Run | null {
    const runId = str(row.run_uuid);
    const status = str(row.status) as RunStatus;
    const startTime = num(row.start_time);
    if (!RUN_STATUSES.includes(status) || startTime === null || !Number.isFinite(startTime)) {
      this.onWarning(
        `tracking: run ${runId} in ${this.displayUri} has status '${str(row.status)}' and start time '${str(row.start_time)}', which MLflow would not write; skipped`,
      );
      return null;
    }
    const info: RunInfo = {
      runId,
      experimentId: str(row.experiment_id),
      runName: str(row.name),
      userId: str(row.user_id),
      status,
      startTime,
      endTime: num(row.end_time),
      artifactUri: str(row.artifact_uri),
      lifecycleStage: (str(row.lifecycle_stage) === 'deleted' ? 'deleted' : 'active') as LifecycleStage,
    };
    return { info, metrics: {}, params: {}, tags: {} };
  }

  async searchRuns(experimentId: string, options: SearchRunsOptions = {}): Promise<Run[]> {
    const id = this.idParameter(experimentId);
    if (id === null) return [];
    const finished = options.finishedOnly ? " AND r.status = 'FINISHED'" : '';
    const runs = await this.loadRuns(`r.experiment_id = ? AND r.lifecycle_stage = 'active'${finished}`, [id]);
    return sortRuns(runs, options.orderByMetric);
  }

  async getRun(runId: string): Promise<Run | null> {
    if (typeof runId !== 'string' || runId === '') return null;
    const run = (await this.loadRuns('r.run_uuid = ?', [runId]))[0];
    if (run === undefined) return null;
    return { ...run, inputs: await this.io.readInputs(runId), outputs: await this.io.readOutputs(runId) };
  }

  async createRun(experimentId: string, options: CreateRunOptions): Promise<Run> {
    const fields = newRunFields(options);
    const { runName, tags, startTime, userId } = fields;
    const runId = randomUUID().replaceAll('-', '');
    const artifactUri = await this.call(() =>
      this.db.transaction(async (tx) => {
        const experiment = await this.experimentById(tx, experimentId);
        if (!experiment) {
          throw new TrackingError(
            'NOT_FOUND',
            `tracking: experiment ${experimentId} not found in ${this.displayUri}`,
          );
        }
        if (experiment.lifecycleStage !== 'active') {
          throw invalid(`experiment ${experimentId} is deleted; restore it before creating runs in it`);
        }
        if (localArtifactPath(experiment.artifactLocation) === null)
          throw this.remoteArtifacts(experiment.artifactLocation);
        const uri = `${experiment.artifactLocation.replace(/\/+$/, '')}/${runId}/artifacts`;
        await tx.run(
          "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, user_id, status, start_time, end_time, source_version, lifecycle_stage, artifact_uri, experiment_id) VALUES (?, ?, 'UNKNOWN', '', '', ?, 'RUNNING', ?, NULL, '', 'active', ?, ?)",
          [runId, runName, userId, startTime, uri, experimentId],
        );
        for (const [key, value] of Object.entries(tags)) {
          await tx.run('INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?)', [key, value, runId]);
        }
        return uri;
      }),
    );
    return { info: newRunInfo({ runId, experimentId, artifactUri }, fields), metrics: {}, params: {}, tags };
  }

  private remoteArtifacts(location: string): TrackingError {
    return new TrackingError(
      'UNSUPPORTED',
      `tracking: artifacts at ${location} are not a local or mounted path, which is all a database store can reach; run an MLflow tracking server with artifact proxying (\`mlflow server --backend-store-uri <this database>\`) and point Tagger at its http:// URI`,
    );
  }

  /** The run's row in a transaction; NOT_FOUND when absent, INVALID_ARGUMENT when deleted. */
  private async requireActiveRun(tx: SqlExecutor, runId: string): Promise<SqlRow> {
    const [row] = await tx.all('SELECT run_uuid, lifecycle_stage, end_time FROM runs WHERE run_uuid = ?', [
      runId,
    ]);
    if (!row) throw new TrackingError('NOT_FOUND', `tracking: run ${runId} not found in ${this.displayUri}`);
    if (str(row.lifecycle_stage) !== 'active') throw invalid(`run ${runId} is deleted; it cannot be changed`);
    return row;
  }

  async logBatch(runId: string, batch: LogBatch): Promise<void> {
    const { metrics, params, tags } = validateBatch(batch);
    await this.call(() =>
      this.db.transaction(async (tx) => {
        await this.requireActiveRun(tx, runId);
        for (const [key, value] of params) {
          const [existing] = await tx.all('SELECT value FROM params WHERE run_uuid = ? AND key = ?', [
            runId,
            key,
          ]);
          if (existing === undefined) {
            await tx.run('INSERT INTO params (key, value, run_uuid) VALUES (?, ?, ?)', [key, value, runId]);
          } else if (str(existing.value) !== value) {
            throw paramChanged(runId, key, str(existing.value), value);
          }
        }
        await this.logMetrics(tx, runId, metrics);
        await this.io.logModelMetrics(tx, runId, metrics);
        for (const [key, value] of tags) {
          await tx.run(
            'INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?) ON CONFLICT (key, run_uuid) DO UPDATE SET value = excluded.value',
            [key, value, runId],
          );
          // MLflow keeps runs.name in step with the mlflow.runName tag.
          if (key === RUN_NAME_TAG)
            await tx.run('UPDATE runs SET name = ? WHERE run_uuid = ?', [value, runId]);
        }
      }),
    );
  }

  private async logMetrics(tx: SqlExecutor, runId: string, metrics: MetricPoint[]): Promise<void> {
    const byKey = new Map<string, MetricPoint[]>();
    for (const point of metrics) {
      const stored = storedValue(point.value);
      // MLflow skips a point identical to one already logged (the primary key covers every column).
      await tx.run(
        'INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
        [point.key, stored.value, point.timestamp, runId, point.step, stored.isNan],
      );
      byKey.set(point.key, [...(byKey.get(point.key) ?? []), point]);
    }
    for (const [key, points] of byKey) {
      const candidate = latestMetric(points) as MetricPoint;
      const [row] = await tx.all(
        'SELECT value, timestamp, step, is_nan FROM latest_metrics WHERE run_uuid = ? AND key = ?',
        [runId, key],
      );
      const current = row
        ? { key, value: metricValue(row), timestamp: Number(row.timestamp), step: Number(row.step) }
        : undefined;
      if (current && !isLater(candidate, current)) continue;
      const stored = storedValue(candidate.value);
      await tx.run(
        'INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key, run_uuid) DO UPDATE SET value = excluded.value, timestamp = excluded.timestamp, step = excluded.step, is_nan = excluded.is_nan',
        [key, stored.value, candidate.timestamp, candidate.step, stored.isNan, runId],
      );
    }
  }

  async getMetricHistory(runId: string, key: string): Promise<MetricPoint[]> {
    // SQLite keeps insertion order in rowid; PostgreSQL has no such order, so time then step.
    const order = this.db.dialect === 'sqlite' ? 'rowid' : 'timestamp, step';
    const rows = await this.call(() =>
      this.db.all(
        `SELECT key, value, timestamp, step, is_nan FROM metrics WHERE run_uuid = ? AND key = ? ORDER BY ${order}`,
        [runId, key],
      ),
    );
    return rows.map((row) => ({
      key,
      value: metricValue(row),
      timestamp: Number(row.timestamp),
      step: Number(row.step),
    }));
  }

  async updateRun(runId: string, update: { status: RunStatus; endTime?: number }): Promise<void> {
    await this.call(() =>
      this.db.transaction(async (tx) => {
        const row = await this.requireActiveRun(tx, runId);
        const next = statusUpdate(update, num(row.end_time));
        await tx.run('UPDATE runs SET status = ?, end_time = ? WHERE run_uuid = ?', [
          next.status,
          next.endTime,
          runId,
        ]);
      }),
    );
  }

  // ---------------------------------------------------------------- artifacts

  private async artifacts(runId: string): Promise<LocalArtifacts> {
    const [row] = await this.call(() =>
      this.db.all('SELECT artifact_uri FROM runs WHERE run_uuid = ?', [runId]),
    );
    if (!row) throw new TrackingError('NOT_FOUND', `tracking: run ${runId} not found in ${this.displayUri}`);
    const uri = str(row.artifact_uri);
    const dir = localArtifactPath(uri);
    if (dir === null) throw this.remoteArtifacts(uri);
    return new LocalArtifacts(dir, uri, runId);
  }

  async logArtifact(runId: string, path: string, content: Uint8Array): Promise<void> {
    await (await this.artifacts(runId)).write(path, content);
  }

  async listArtifacts(runId: string, path = ''): Promise<ArtifactEntry[]> {
    return (await this.artifacts(runId)).list(path);
  }

  async readArtifact(runId: string, path: string): Promise<Uint8Array> {
    return (await this.artifacts(runId)).read(path);
  }

  // ---------------------------------------------------------------- inputs, outputs, logged models

  logInputs(runId: string, datasets: DatasetInput[]): Promise<void> {
    return this.io.logInputs(runId, datasets);
  }

  logOutputs(runId: string, models: ModelOutput[]): Promise<void> {
    return this.io.logOutputs(runId, models);
  }

  createLoggedModel(experimentId: string, options: CreateLoggedModelOptions): Promise<LoggedModel> {
    return this.io.createLoggedModel(experimentId, this.idParameter(experimentId), options);
  }

  async logLoggedModelArtifact(modelId: string, path: string, content: Uint8Array): Promise<void> {
    await (await this.io.modelArtifacts(modelId)).write(path, content);
  }

  async readLoggedModelArtifact(modelId: string, path: string): Promise<Uint8Array> {
    return (await this.io.modelArtifacts(modelId)).read(path);
  }

  finalizeLoggedModel(modelId: string, status: Exclude<LoggedModelStatus, 'PENDING'>): Promise<LoggedModel> {
    return this.io.finalizeLoggedModel(modelId, status);
  }

  getLoggedModel(modelId: string): Promise<LoggedModel | null> {
    return this.io.getLoggedModel(modelId);
  }

  searchLoggedModels(experimentId: string, options?: { sourceRunId?: string }): Promise<LoggedModel[]> {
    return this.io.searchLoggedModels(this.idParameter(experimentId), options);
  }
}
