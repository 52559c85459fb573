/**
 * The Model Registry in MLflow's relational schema (`mlflow/store/model_registry/sqlalchemy_store.py`,
 * MLflow 3.17.2): `registered_models`, `model_versions`, `registered_model_aliases`, all in workspace
 * `default`. Versions MLflow deleted stay as rows in stage `Deleted_Internal` (so their numbers are never
 * reused); they count for numbering and are invisible otherwise, as in MLflow.
 *
 * A new version takes max(version) + 1 in one transaction. SQLite serialises writers (BEGIN IMMEDIATE);
 * on PostgreSQL the registered model's row is locked first (six concurrent registrations exhausted
 * MLflow's way, retrying on the primary key, in a test); a clash with a writer that does not lock (Python
 * MLflow) still retries.
 */
import {
  type ModelRegistry,
  type ModelVersion,
  type RegisteredModel,
  validateAlias,
  validateModelName,
  validateSettableAlias,
  validateVersion,
} from '../model-registry.js';
import { TrackingError } from '../store.js';
import { databaseError, isUniqueViolation, type SqlDriver, type SqlExecutor, type SqlRow } from './driver.js';

const WORKSPACE = 'default';
const DELETED_STAGE = 'Deleted_Internal';
const LIVE = `(current_stage IS NULL OR current_stage <> '${DELETED_STAGE}')`;
const CREATE_VERSION_ATTEMPTS = 5;

const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export class SqlModelRegistry implements ModelRegistry {
  constructor(
    private readonly db: SqlDriver,
    private readonly displayUri: string,
  ) {}

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw databaseError(error, this.displayUri);
    }
  }

  private notFound(name: string): TrackingError {
    return new TrackingError(
      'NOT_FOUND',
      `tracking: no registered model named '${name}' in ${this.displayUri}`,
    );
  }

  /**
   * Whether the model exists. With `lock`, PostgreSQL also locks its row until the transaction ends, so
   * concurrent version creators take turns instead of colliding on max + 1 (SQLite's writers already do).
   */
  private async modelExists(tx: SqlExecutor, name: string, lock = false): Promise<boolean> {
    const forUpdate = lock && this.db.dialect === 'postgresql' ? ' FOR UPDATE' : '';
    const rows = await tx.all(
      `SELECT name FROM registered_models WHERE workspace = ? AND name = ?${forUpdate}`,
      [WORKSPACE, name],
    );
    return rows.length > 0;
  }

  async getRegisteredModel(name: string): Promise<RegisteredModel | null> {
    validateModelName(name);
    return this.call(async () => {
      if (!(await this.modelExists(this.db, name))) return null;
      const aliases: Record<string, number> = {};
      for (const row of await this.db.all(
        'SELECT alias, version FROM registered_model_aliases WHERE workspace = ? AND name = ?',
        [WORKSPACE, name],
      )) {
        aliases[String(row.alias)] = Number(row.version);
      }
      const [latest] = await this.db.all(
        `SELECT MAX(version) AS version FROM model_versions WHERE workspace = ? AND name = ? AND ${LIVE}`,
        [WORKSPACE, name],
      );
      return { name, aliases, latestVersion: num(latest?.version) };
    });
  }

  async createRegisteredModel(name: string): Promise<void> {
    validateModelName(name);
    const now = Date.now();
    try {
      await this.db.run(
        'INSERT INTO registered_models (name, creation_time, last_updated_time, description, workspace) VALUES (?, ?, ?, NULL, ?)',
        [name, now, now, WORKSPACE],
      );
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new TrackingError(
          'ALREADY_EXISTS',
          `tracking: model '${name}' already exists in ${this.displayUri}`,
        );
      }
      throw databaseError(error, this.displayUri);
    }
  }

  async createModelVersion(
    name: string,
    input: { source: string; runId: string | null },
  ): Promise<ModelVersion> {
    validateModelName(name);
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.db.transaction(async (tx) => {
          if (!(await this.modelExists(tx, name, true))) throw this.notFound(name);
          const [max] = await tx.all(
            'SELECT MAX(version) AS version FROM model_versions WHERE workspace = ? AND name = ?',
            [WORKSPACE, name],
          );
          const version = (num(max?.version) ?? 0) + 1;
          const now = Date.now();
          await tx.run(
            "INSERT INTO model_versions (name, version, creation_time, last_updated_time, description, user_id, current_stage, source, run_id, status, status_message, run_link, storage_location, workspace) VALUES (?, ?, ?, ?, NULL, NULL, 'None', ?, ?, 'READY', NULL, NULL, ?, ?)",
            [name, version, now, now, input.source, input.runId, input.source, WORKSPACE],
          );
          await tx.run(
            'UPDATE registered_models SET last_updated_time = ? WHERE workspace = ? AND name = ?',
            [now, WORKSPACE, name],
          );
          return {
            name,
            version,
            runId: input.runId,
            source: input.source,
            status: 'READY',
            creationTime: now,
          };
        });
      } catch (error) {
        if (isUniqueViolation(error) && attempt < CREATE_VERSION_ATTEMPTS) continue;
        throw databaseError(error, this.displayUri);
      }
    }
  }

  async getModelVersion(name: string, version: number): Promise<ModelVersion | null> {
    validateModelName(name);
    validateVersion(version);
    const rows = await this.call(() =>
      this.db.all(
        `SELECT source, run_id, status, creation_time FROM model_versions WHERE workspace = ? AND name = ? AND version = ? AND ${LIVE}`,
        [WORKSPACE, name, version],
      ),
    );
    const row: SqlRow | undefined = rows[0];
    if (row === undefined) return null;
    return {
      name,
      version,
      runId: row.run_id === null || row.run_id === undefined || row.run_id === '' ? null : String(row.run_id),
      source: String(row.source ?? ''),
      status: String(row.status ?? 'READY'),
      creationTime: num(row.creation_time),
    };
  }

  async setAlias(name: string, alias: string, version: number): Promise<void> {
    validateModelName(name);
    validateSettableAlias(alias);
    validateVersion(version);
    await this.call(() =>
      this.db.transaction(async (tx) => {
        if (!(await this.modelExists(tx, name))) throw this.notFound(name);
        const found = await tx.all(
          `SELECT version FROM model_versions WHERE workspace = ? AND name = ? AND version = ? AND ${LIVE}`,
          [WORKSPACE, name, version],
        );
        if (found.length === 0) {
          throw new TrackingError(
            'NOT_FOUND',
            `tracking: model '${name}' has no version ${version} in ${this.displayUri}`,
          );
        }
        // SQLite ≥ 3.24 and PostgreSQL both take this upsert.
        await tx.run(
          'INSERT INTO registered_model_aliases (alias, version, name, workspace) VALUES (?, ?, ?, ?) ON CONFLICT (workspace, name, alias) DO UPDATE SET version = excluded.version',
          [alias, version, name, WORKSPACE],
        );
        await tx.run('UPDATE registered_models SET last_updated_time = ? WHERE workspace = ? AND name = ?', [
          Date.now(),
          WORKSPACE,
          name,
        ]);
      }),
    );
  }

  async deleteAlias(name: string, alias: string): Promise<void> {
    validateModelName(name);
    validateAlias(alias);
    await this.call(() =>
      this.db.transaction(async (tx) => {
        if (!(await this.modelExists(tx, name))) throw this.notFound(name);
        await tx.run('DELETE FROM registered_model_aliases WHERE workspace = ? AND name = ? AND alias = ?', [
          WORKSPACE,
          name,
          alias,
        ]);
      }),
    );
  }
}
