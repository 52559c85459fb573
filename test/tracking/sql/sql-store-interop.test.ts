/**
 * The SQL adapter against real MLflow (the venv's pinned version): the schema Tagger creates is the one
 * MLflow creates (tables, columns, indexes, constraints, alembic head) on SQLite and PostgreSQL; MLflow's
 * client and `mlflow server` read a database Tagger wrote with no migration; Tagger reads a database
 * Python MLflow wrote. One Python process per scenario (`python/mlflow_interop.py`).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../../src/tracking/file/file-store.js';
import { registerModelVersion, versionByAlias } from '../../../src/tracking/model-registry.js';
import { RestTrackingStore } from '../../../src/tracking/rest/rest-store.js';
import { ALEMBIC_HEAD, MLFLOW_VERSION } from '../../../src/tracking/sql/mlflow-schema.js';
import { SqlTrackingStore } from '../../../src/tracking/sql/sql-store.js';
import { venvPython } from '../../support/components.js';
import {
  expectMlflowSeesTaggerRuns,
  expectTaggerSeesPythonRuns,
  logTaggerRuns,
  mlflowCreatesDatabase,
  PYTHON_RUNS,
  type PyAnswer,
  runInteropScript,
} from '../../support/mlflow-interop.js';
import { type PyModelVersion, pythonRegistry } from '../../support/mlflow-registry.js';
import { startMlflowServer, venvMlflow } from '../../support/mlflow-server.js';
import { type Postgres, postgresBin, startPostgres } from '../../support/stack.js';
import { useTempDir } from '../../support/temp-dir.js';

const python = venvPython();
const mlflow = venvMlflow();
const pgBin = postgresBin();
/** Python runs in a temp folder: its default artifact root for database URIs is ./mlruns. */
const pythonCwd = useTempDir('tagger-python-cwd-');
const runPython = (command: Record<string, unknown>): Promise<PyAnswer> =>
  runInteropScript(python!, command, pythonCwd.path);

const mlflowCreates = (uri: string, artifactRoot: string): Promise<string> =>
  mlflowCreatesDatabase(python!, uri, artifactRoot);

const SPECS = [
  { name: 'good', start: 1_000, f1: 0.8 },
  { name: 'best', start: 2_000, f1: 0.9 },
  { name: 'tie-newer', start: 3_000, f1: 0.8 },
  { name: 'nan', start: 4_000, f1: Number.NaN },
  { name: 'no-f1', start: 5_000 },
];

/**
 * A CREATE TABLE with its table constraints in a fixed order. MLflow's batch migrations on SQLite
 * recreate tables with the constraints in whatever order SQLAlchemy's sets give (two databases MLflow
 * itself created differed that way); columns keep their order, which does matter.
 */
function constraintsSorted(sql: string): string {
  if (!sql.startsWith('CREATE TABLE')) return sql;
  const lines = sql.split('\n').map((line) => line.trim().replace(/,$/, ''));
  const isConstraint = (line: string) => /^(CONSTRAINT|CHECK|FOREIGN KEY|PRIMARY KEY|UNIQUE)\b/.test(line);
  return [...lines.filter((line) => !isConstraint(line)), ...lines.filter(isConstraint).sort()].join('\n');
}

/** What MLflow would find different between two SQLite schemas: every DDL statement, by name. */
function sqliteSchema(file: string): { head: string; ddl: Record<string, string> } {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const ddl: Record<string, string> = {};
    for (const row of db.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY type, name').all()) {
      ddl[`${String(row.type)} ${String(row.name)}`] = constraintsSorted(String(row.sql ?? '(implicit)'));
    }
    const head = String(db.prepare('SELECT version_num FROM alembic_version').get()?.version_num);
    return { head, ddl };
  } finally {
    db.close();
  }
}

/**
 * A CHECK constraint without casts and parentheses: PostgreSQL deparses `x IN ('a', 'b')` as
 * `ANY ((ARRAY['a'::varchar, …])::text[])` when MLflow creates it and re-parses pg_dump's text with the
 * casts moved inside the array; the two mean the same.
 */
const withoutCasts = (definition: string): string =>
  definition.replace(/::[a-z ]+(\[\])?/g, '').replace(/[()]/g, '');

async function postgresSchema(url: string): Promise<{ head: string; ddl: Record<string, string> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const ddl: Record<string, string> = {};
    const columns = await client.query(
      "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public'",
    );
    for (const row of columns.rows) ddl[`column ${row.table_name}.${row.column_name}`] = JSON.stringify(row);
    const indexes = await client.query(
      "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    );
    for (const row of indexes.rows) ddl[`index ${row.indexname}`] = String(row.indexdef);
    const constraints = await client.query(
      "SELECT c.conrelid::regclass::text AS tbl, c.conname, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = 'public'",
    );
    for (const row of constraints.rows)
      ddl[`constraint ${row.tbl}.${row.conname}`] = withoutCasts(String(row.def));
    const triggers = await client.query(
      "SELECT event_object_table, trigger_name, action_statement FROM information_schema.triggers WHERE trigger_schema = 'public'",
    );
    for (const row of triggers.rows)
      ddl[`trigger ${row.event_object_table}.${row.trigger_name}`] = String(row.action_statement);
    const head = String((await client.query('SELECT version_num FROM alembic_version')).rows[0]?.version_num);
    return { head, ddl };
  } finally {
    await client.end();
  }
}

/** The same schema, or a message that says what to do about a new MLflow pin. */
function expectSameSchema(
  tagger: { head: string; ddl: Record<string, string> },
  mlflowMade: { head: string; ddl: Record<string, string> },
  version: string,
): void {
  expect(
    tagger.head,
    `MLflow ${version} creates schema head ${mlflowMade.head}, Tagger's generated schema (MLflow ${MLFLOW_VERSION}) has ${ALEMBIC_HEAD}: run \`npx tsx scripts/mlflow-schema.ts\` and review the change`,
  ).toBe(mlflowMade.head);
  expect(tagger.ddl).toEqual(mlflowMade.ddl);
}

/**
 * Tagger and Python MLflow share one Model Registry in the database: versions numbered across both
 * clients, aliases set by either read by the other (`get_model_version_by_alias`).
 */
async function expectSharedRegistry(store: SqlTrackingStore, uri: string): Promise<void> {
  const experimentId = await store.createExperiment('registry');
  const a = (await store.createRun(experimentId, { runName: 'a' })).info.runId;
  const b = (await store.createRun(experimentId, { runName: 'b' })).info.runId;
  await registerModelVersion(store.registry, 'tagger', { source: `runs:/${a}/model`, runId: a });
  const byPython = await pythonRegistry<{ version: number }>(python!, uri, {
    action: 'register',
    name: 'tagger',
    run_id: b,
  });
  expect(byPython.version).toBe(2);
  await pythonRegistry(python!, uri, { action: 'set_alias', name: 'tagger', alias: 'champion', version: 2 });
  expect(await versionByAlias(store.registry, 'tagger', 'champion')).toMatchObject({
    version: 2,
    runId: b,
    source: `runs:/${b}/model`,
    status: 'READY',
  });
  await store.registry.setAlias('tagger', 'challenger', 1);
  const challenger = await pythonRegistry<PyModelVersion>(python!, uri, {
    action: 'get_by_alias',
    name: 'tagger',
    alias: 'challenger',
  });
  expect(challenger).toMatchObject({ version: 1, run_id: a, source: `runs:/${a}/model`, status: 'READY' });
  const listed = await pythonRegistry<{ versions: PyModelVersion[]; aliases: Record<string, number> }>(
    python!,
    uri,
    { action: 'versions', name: 'tagger' },
  );
  expect(listed.versions.map((v) => [v.version, v.run_id])).toEqual([
    [1, a],
    [2, b],
  ]);
  expect(listed.aliases).toEqual({ champion: 2, challenger: 1 });
}

describe.skipIf(python === null)('SQL store on SQLite and Python MLflow', () => {
  const scratch = useTempDir('tagger-sql-interop-');

  it('the schema Tagger creates is the one MLflow creates: every table, column, index and the alembic head', async () => {
    const taggerFile = join(scratch.path, 'tagger-schema.db');
    await (await SqlTrackingStore.open(`sqlite:///${taggerFile}`, 'tagger-schema.db')).close();
    const mlflowFile = join(scratch.path, 'mlflow-schema.db');
    const version = await mlflowCreates(`sqlite:///${mlflowFile}`, join(scratch.path, 'artifacts'));
    expectSameSchema(sqliteSchema(taggerFile), sqliteSchema(mlflowFile), version);
  }, 120_000);

  it('MLflow reads runs written by Tagger with no migration: same values, history, artifacts and order', async () => {
    const file = join(scratch.path, 'tagger.db');
    const store = await SqlTrackingStore.open(`sqlite:///${file}`, 'tagger.db');
    const experimentId = await store.createExperiment('best');
    const ids = await logTaggerRuns(store, experimentId, SPECS);
    const tagger = await store.searchRuns(experimentId, { orderByMetric: { key: 'f1', descending: true } });
    const before = sqliteSchema(file);
    const answer = await runPython({
      command: 'read',
      tracking_uri: `sqlite:///${file}`,
      experiment_name: 'best',
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
    });
    expect(answer.order).toEqual([ids['best'], ids['tie-newer'], ids['good'], ids['nan'], ids['no-f1']]);
    await expectMlflowSeesTaggerRuns(store, tagger, answer);
    expect(sqliteSchema(file), 'MLflow migrated the database Tagger created').toEqual(before);
    await store.close();
  }, 120_000);

  it('Tagger reads runs logged by Python MLflow into SQLite, and keeps logging there', async () => {
    const file = join(scratch.path, 'python.db');
    const answer = await runPython({
      command: 'write',
      tracking_uri: `sqlite:///${file}`,
      experiment_name: 'best',
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
      runs: PYTHON_RUNS,
    });
    const warnings: string[] = [];
    const store = await SqlTrackingStore.open(`sqlite:///${file}`, 'python.db', {
      onWarning: (message) => warnings.push(message),
    });
    expect((await store.getExperimentByName('best'))?.experimentId).toBe(answer.experiment_id);
    await expectTaggerSeesPythonRuns(store, answer);
    const added = await store.createRun(answer.experiment_id, { runName: 'tagger-after-python' });
    expect((await store.getRun(added.info.runId))?.info.status).toBe('RUNNING');
    expect(warnings).toEqual([]);
    await store.close();
  }, 120_000);

  it('the Model Registry is shared with Python MLflow: versions and aliases from both clients', async () => {
    const file = join(scratch.path, 'registry.db');
    const store = await SqlTrackingStore.open(`sqlite:///${file}`, 'registry.db');
    try {
      await expectSharedRegistry(store, `sqlite:///${file}`);
    } finally {
      await store.close();
    }
  }, 120_000);

  it.skipIf(mlflow === null)(
    '`mlflow server --backend-store-uri sqlite:///…` serves what Tagger wrote',
    async () => {
      const file = join(scratch.path, 'served.db');
      const store = await SqlTrackingStore.open(`sqlite:///${file}`, 'served.db');
      const experimentId = await store.createExperiment('best');
      await logTaggerRuns(store, experimentId, SPECS);
      const order = { orderByMetric: { key: 'f1', descending: true } };
      const direct = await store.searchRuns(experimentId, order);
      const server = await startMlflowServer(mlflow!, { backendStoreUri: `sqlite:///${file}` });
      try {
        const rest = new RestTrackingStore({ uri: server.uri, env: {} });
        const viaServer = await rest.searchRuns(experimentId, order);
        expect(viaServer.map((run) => [run.info.runId, run.metrics, run.params, run.info.status])).toEqual(
          direct.map((run) => [run.info.runId, run.metrics, run.params, run.info.status]),
        );
        await rest.close();
      } finally {
        await server.stop();
        await store.close();
      }
    },
    180_000,
  );
});

describe.skipIf(mlflow === null)('moving a file store into SQLite with `mlflow migrate-filestore`', () => {
  const scratch = useTempDir('tagger-migrate-');

  it('Tagger reads the migrated database like the folder it came from (18-digit experiment ids included)', async () => {
    const files = await FileTrackingStore.open(join(scratch.path, 'mlruns'));
    const experimentId = await files.createExperiment('best');
    expect(experimentId).toMatch(/^\d{18}$/);
    await logTaggerRuns(files, experimentId, SPECS);
    const order = { orderByMetric: { key: 'f1', descending: true } };
    const before = await files.searchRuns(experimentId, order);
    await promisify(execFile)(
      mlflow!,
      [
        'migrate-filestore',
        '--source',
        join(scratch.path, 'mlruns'),
        '--target',
        `sqlite:///${join(scratch.path, 'mlflow.db')}`,
      ],
      {
        env: { ...process.env, MLFLOW_ALLOW_FILE_STORE: 'true' },
      },
    );
    const store = await SqlTrackingStore.open(`sqlite:///${join(scratch.path, 'mlflow.db')}`, 'mlflow.db');
    try {
      expect((await store.getExperimentByName('best'))?.experimentId).toBe(experimentId);
      const after = await store.searchRuns(experimentId, order);
      const summary = (runs: typeof before) =>
        runs.map((run) => ({
          id: run.info.runId,
          status: run.info.status,
          metrics: run.metrics,
          params: run.params,
          tags: run.tags,
        }));
      expect(summary(after)).toEqual(summary(before));
      for (const run of after) {
        expect(await store.getMetricHistory(run.info.runId, 'f1')).toEqual(
          await files.getMetricHistory(run.info.runId, 'f1'),
        );
        expect(await store.readArtifact(run.info.runId, 'model/weights.bin')).toEqual(
          await files.readArtifact(run.info.runId, 'model/weights.bin'),
        );
      }
      // And Tagger keeps logging into it.
      const added = await store.createRun(experimentId, { runName: 'after-migration' });
      expect(added.info.experimentId).toBe(experimentId);
    } finally {
      await store.close();
    }
  }, 120_000);
});

describe.skipIf(python === null || pgBin === null)('SQL store on PostgreSQL and Python MLflow', () => {
  let server: Postgres;
  const scratch = useTempDir('tagger-pg-interop-');
  beforeAll(async () => {
    server = await startPostgres(pgBin!);
  });
  afterAll(async () => {
    await server?.stop();
  });

  const plain = (uri: string): string => uri.replace('postgresql+psycopg2:', 'postgresql:');

  it('the schema Tagger creates is the one MLflow creates (columns, indexes, constraints, triggers, head)', async () => {
    const taggerUri = server.sqlalchemyUri('tagger_schema');
    await (await SqlTrackingStore.open(taggerUri, 'tagger_schema', { artifactRoot: scratch.path })).close();
    const mlflowUri = server.sqlalchemyUri('mlflow_schema');
    const version = await mlflowCreates(mlflowUri, scratch.path);
    expectSameSchema(await postgresSchema(plain(taggerUri)), await postgresSchema(plain(mlflowUri)), version);
  }, 120_000);

  it('MLflow reads runs Tagger wrote to PostgreSQL, and Tagger reads runs Python wrote there', async () => {
    const taggerUri = server.sqlalchemyUri('tagger_runs');
    const store = await SqlTrackingStore.open(taggerUri, 'tagger_runs', {
      artifactRoot: join(scratch.path, 'a'),
    });
    const experimentId = await store.createExperiment('best');
    await logTaggerRuns(store, experimentId, SPECS);
    const tagger = await store.searchRuns(experimentId, { orderByMetric: { key: 'f1', descending: true } });
    const read = await runPython({
      command: 'read',
      tracking_uri: taggerUri,
      experiment_name: 'best',
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
    });
    await expectMlflowSeesTaggerRuns(store, tagger, read);
    await store.close();

    const pythonUri = server.sqlalchemyUri('python_runs');
    const written = await runPython({
      command: 'write',
      tracking_uri: pythonUri,
      experiment_name: 'best',
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
      runs: PYTHON_RUNS,
    });
    const reader = await SqlTrackingStore.open(pythonUri, 'python_runs', {
      artifactRoot: join(scratch.path, 'b'),
    });
    await expectTaggerSeesPythonRuns(reader, written);
    await reader.close();
  }, 180_000);

  it('the Model Registry is shared with Python MLflow: versions and aliases from both clients', async () => {
    const uri = server.sqlalchemyUri('registry');
    const store = await SqlTrackingStore.open(uri, 'registry', { artifactRoot: join(scratch.path, 'r') });
    try {
      await expectSharedRegistry(store, uri);
    } finally {
      await store.close();
    }
  }, 120_000);
});
