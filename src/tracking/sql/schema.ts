/**
 * Creating and checking MLflow's relational schema. A new database gets exactly the DDL the pinned
 * MLflow creates (`mlflow-schema.ts`, generated), its seed rows and the `Default` experiment `0`, in one
 * transaction under a lock, so several processes opening the same new database create it once. An
 * existing database must be MLflow's: same alembic head, or at least the tables and columns Tagger uses
 * (then a warning says which heads differ).
 */
import { TrackingError } from '../store.js';
import type { SqlDriver, SqlExecutor } from './driver.js';
import {
  ALEMBIC_HEAD,
  MLFLOW_VERSION,
  POSTGRESQL_SCHEMA,
  SEED_ROWS,
  SQLITE_SCHEMA,
} from './mlflow-schema.js';

/** The columns Tagger reads and writes, per table; a database lacking one cannot be used. */
const USED_COLUMNS: Record<string, readonly string[]> = {
  experiments: [
    'experiment_id',
    'name',
    'artifact_location',
    'lifecycle_stage',
    'creation_time',
    'last_update_time',
    'workspace',
  ],
  runs: [
    'run_uuid',
    'name',
    'source_type',
    'source_name',
    'entry_point_name',
    'user_id',
    'status',
    'start_time',
    'end_time',
    'source_version',
    'lifecycle_stage',
    'artifact_uri',
    'experiment_id',
  ],
  metrics: ['key', 'value', 'timestamp', 'run_uuid', 'step', 'is_nan'],
  latest_metrics: ['key', 'value', 'timestamp', 'step', 'is_nan', 'run_uuid'],
  params: ['key', 'value', 'run_uuid'],
  tags: ['key', 'value', 'run_uuid'],
};

/** Serialises schema creation across processes on PostgreSQL (an arbitrary, fixed advisory-lock key). */
const POSTGRES_SCHEMA_LOCK = 7_170_652_617;

async function tableExists(tx: SqlExecutor, dialect: SqlDriver['dialect'], table: string): Promise<boolean> {
  const rows =
    dialect === 'sqlite'
      ? await tx.all("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?", [table])
      : await tx.all(
          'SELECT 1 AS found FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = ?',
          [table],
        );
  return rows.length > 0;
}

const quoted = (name: string): string => `"${name}"`;

async function missingColumns(tx: SqlExecutor): Promise<string[]> {
  const missing: string[] = [];
  for (const [table, columns] of Object.entries(USED_COLUMNS)) {
    try {
      await tx.all(`SELECT ${columns.map(quoted).join(', ')} FROM ${quoted(table)} WHERE 1 = 0`);
    } catch {
      missing.push(table);
    }
  }
  return missing;
}

export interface SchemaOptions {
  /** Where the Default experiment keeps artifacts: `<root>/0`, as MLflow records it. */
  defaultArtifactRoot: string;
  /** For messages. */
  displayUri: string;
  onWarning: (message: string) => void;
  /** Only check: a database without MLflow's schema is refused instead of given one. */
  readOnly?: boolean;
}

/**
 * Creates MLflow's schema in an empty database, or checks that an existing one is MLflow's. Checking
 * only reads, so a database this process may not write (a server's read-only mount) still opens.
 */
export async function ensureSchema(driver: SqlDriver, options: SchemaOptions): Promise<void> {
  if (await checkExisting(driver, driver.dialect, options)) return;
  if (options.readOnly) {
    throw new TrackingError(
      'NOT_FOUND',
      `tracking: ${options.displayUri} has no MLflow tables: nothing was ever logged there, and nothing was created`,
    );
  }
  await driver.transaction(async (tx) => {
    if (driver.dialect === 'postgresql')
      await tx.all('SELECT pg_advisory_xact_lock(?)', [POSTGRES_SCHEMA_LOCK]);
    // Another process may have created it since the check above (it held the lock meanwhile).
    if (await checkExisting(tx, driver.dialect, options)) return;
    await createSchema(tx, driver.dialect, options.defaultArtifactRoot);
  });
}

/** True when the database has MLflow's schema (warning about another head); false when it is empty. */
async function checkExisting(
  tx: SqlExecutor,
  dialect: SqlDriver['dialect'],
  options: SchemaOptions,
): Promise<boolean> {
  // `runs` first: a creator commits every table at once, so once `runs` is visible alembic_version is too.
  // (The other order raced: no alembic_version yet, then a `runs` committed in between → "not MLflow's".)
  const hasRuns = await tableExists(tx, dialect, 'runs');
  if (!(await tableExists(tx, dialect, 'alembic_version'))) {
    if (hasRuns) {
      throw new TrackingError(
        'MALFORMED',
        `tracking: ${options.displayUri} has a 'runs' table but no alembic_version: it is not a database MLflow created; use an empty database or one made by MLflow`,
      );
    }
    return false;
  }
  const head = (await tx.all('SELECT version_num FROM alembic_version'))[0]?.version_num;
  if (head === ALEMBIC_HEAD) return true;
  const missing = await missingColumns(tx);
  const which = `schema head ${String(head)}, while Tagger writes MLflow ${MLFLOW_VERSION}'s head ${ALEMBIC_HEAD}`;
  if (missing.length > 0) {
    throw new TrackingError(
      'UNSUPPORTED',
      `tracking: ${options.displayUri} has MLflow ${which}, and its tables ${missing.join(', ')} lack columns Tagger needs; upgrade it with \`mlflow db upgrade <uri>\` (MLflow ${MLFLOW_VERSION})`,
    );
  }
  options.onWarning(
    `tracking: ${options.displayUri} has MLflow ${which}; the tables Tagger uses match, so it goes on`,
  );
  return true;
}

async function createSchema(
  tx: SqlExecutor,
  dialect: SqlDriver['dialect'],
  artifactRoot: string,
): Promise<void> {
  if (dialect === 'sqlite') {
    for (const statement of SQLITE_SCHEMA) await tx.exec(statement);
  } else {
    await tx.exec(POSTGRESQL_SCHEMA);
  }
  for (const { table, row } of SEED_ROWS) {
    const columns = Object.keys(row);
    await tx.run(
      `INSERT INTO ${quoted(table)} (${columns.map(quoted).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      Object.values(row),
    );
  }
  const now = Date.now();
  await tx.run(
    "INSERT INTO experiments (experiment_id, name, artifact_location, lifecycle_stage, creation_time, last_update_time, workspace) VALUES (0, 'Default', ?, 'active', ?, ?, 'default')",
    [`${artifactRoot.replace(/\/+$/, '')}/0`, now, now],
  );
}
