/**
 * The SQL adapter on SQLite (a temp file) and on a real PostgreSQL server (Debian's, on loopback): the
 * shared contract suite on both, plus what only a database store has (MLflow's stored forms of NaN and
 * infinities, transactions, schema checks, index use, artifact locations it cannot reach).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../../src/tracking/index.js';
import { parseSqlUri, SqlTrackingStore } from '../../../src/tracking/sql/sql-store.js';
import { checkCanLog, type TrackingStore } from '../../../src/tracking/store.js';
import { type Postgres, postgresBin, startPostgres } from '../../support/stack.js';
import { useTempDir } from '../../support/temp-dir.js';
import { expectTrackingError, runTrackingStoreContract, uniqueName } from '../contract.js';

const scratch = useTempDir('tagger-sql-');

const sqliteUri = (name: string): string => `sqlite:///${join(scratch.path, name)}`;

runTrackingStoreContract('SQL store on SQLite', async () => {
  const store = await SqlTrackingStore.open(sqliteUri(`${uniqueName('contract')}.db`), 'contract.db');
  return { store, cleanup: () => store.close() };
});

const pgBin = postgresBin();
let postgresPromise: Promise<Postgres> | undefined;
const postgres = (): Promise<Postgres> => {
  if (!pgBin) throw new Error('PostgreSQL is not installed');
  postgresPromise ??= startPostgres(pgBin);
  return postgresPromise;
};
afterAll(async () => {
  if (postgresPromise) await (await postgresPromise).stop();
});

if (pgBin) {
  runTrackingStoreContract('SQL store on PostgreSQL', async () => {
    const uri = (await postgres()).sqlalchemyUri('contract');
    const store = await SqlTrackingStore.open(uri, 'postgresql://contract', {
      artifactRoot: join(scratch.path, 'pg-artifacts'),
    });
    return { store, cleanup: () => store.close() };
  });
} else {
  it.skip('TrackingStore contract: SQL store on PostgreSQL [skipped: PostgreSQL not installed]', () => {});
}

describe('parseSqlUri: the URIs SQLAlchemy (and so MLflow) accepts', () => {
  it('reads relative and absolute SQLite paths and PostgreSQL URLs with or without a driver', () => {
    expect(parseSqlUri('sqlite:///mlflow.db')).toEqual({
      dialect: 'sqlite',
      file: join(process.cwd(), 'mlflow.db'),
    });
    expect(parseSqlUri('sqlite:////tmp/x/mlflow.db')).toEqual({
      dialect: 'sqlite',
      file: '/tmp/x/mlflow.db',
    });
    expect(parseSqlUri('postgresql+psycopg2://u:p@h:5432/db')).toEqual({
      dialect: 'postgresql',
      url: 'postgresql://u:p@h:5432/db',
    });
    expect(parseSqlUri('postgres://h/db')).toEqual({ dialect: 'postgresql', url: 'postgresql://h/db' });
  });

  it('refuses in-memory SQLite and unknown drivers with a message', async () => {
    for (const uri of ['sqlite://', 'sqlite:///:memory:']) {
      await expectTrackingError(async () => parseSqlUri(uri), 'INVALID_ARGUMENT');
    }
    await expectTrackingError(async () => parseSqlUri('postgresql+asyncpg://h/db'), 'UNSUPPORTED');
  });
});

describe('SQL store: a database that cannot be reached', () => {
  it('PostgreSQL refusing connections is UNAVAILABLE, and the message never shows the password', async () => {
    const error = await expectTrackingError(
      () => openTrackingStore('postgresql://tagger:s3cr3t@127.0.0.1:1/mlflow'),
      'UNAVAILABLE',
    );
    expect(error.message).toMatch(/postgresql:\/\/127\.0\.0\.1:1\/mlflow/);
    expect(error.message).not.toMatch(/s3cr3t/);
  });

  it('a SQLite file that is not a database is a clear error', async () => {
    const file = join(scratch.path, 'not-a-database.db');
    await writeFile(file, 'hello, I am text\n'.repeat(100));
    const error = await expectTrackingError(() => openTrackingStore(`sqlite:///${file}`), 'UNAVAILABLE');
    expect(error.message).toMatch(/not-a-database\.db.*not a database/);
  });
});

describe('SQL store on SQLite: what only a database store has', () => {
  let store: TrackingStore;
  let file: string;
  beforeAll(async () => {
    file = join(scratch.path, 'nested', 'folder', 'mlflow.db');
    store = await openTrackingStore(`sqlite:///${file}`);
  });
  afterAll(async () => {
    await store.close();
  });

  it('creates the file, its folder, MLflow schema and Default experiment, artifacts beside it', async () => {
    const experiment = await store.getExperimentByName('Default');
    expect(experiment).toMatchObject({ experimentId: '0', lifecycleStage: 'active' });
    expect(experiment?.artifactLocation).toBe(join(scratch.path, 'nested', 'folder', 'mlruns', '0'));
    const id = await store.createExperiment(uniqueName('exp'));
    expect(id).toMatch(/^[1-9]\d*$/);
    const { info } = await store.createRun(id, { runName: 'r' });
    expect(info.artifactUri).toBe(
      join(scratch.path, 'nested', 'folder', 'mlruns', id, info.runId, 'artifacts'),
    );
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    } finally {
      db.close();
    }
  });

  it('stores NaN as MLflow does (0 with is_nan) and clamps infinities like MLflow', async () => {
    const id = await store.createExperiment(uniqueName('values'));
    const { info } = await store.createRun(id, { runName: 'values' });
    await store.logBatch(info.runId, {
      metrics: [
        { key: 'nan', value: Number.NaN, timestamp: 1, step: 0 },
        { key: 'inf', value: Number.POSITIVE_INFINITY, timestamp: 1, step: 0 },
        { key: 'ninf', value: Number.NEGATIVE_INFINITY, timestamp: 1, step: 0 },
      ],
    });
    const run = await store.getRun(info.runId);
    expect(run?.metrics).toEqual({
      nan: Number.NaN,
      inf: 1.7976931348623157e308,
      ninf: -1.7976931348623157e308,
    });
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      expect(
        db.prepare("SELECT value, is_nan FROM metrics WHERE run_uuid = ? AND key = 'nan'").get(info.runId),
      ).toEqual({
        value: 0,
        is_nan: 1,
      });
    } finally {
      db.close();
    }
  });

  it('a rejected batch writes nothing (one transaction)', async () => {
    const id = await store.createExperiment(uniqueName('tx'));
    const { info } = await store.createRun(id, { runName: 'tx' });
    await store.logBatch(info.runId, { params: { lr: '0.1' } });
    await expectTrackingError(
      () =>
        store.logBatch(info.runId, {
          metrics: [{ key: 'f1', value: 0.5, timestamp: 1, step: 0 }],
          tags: { note: 'x' },
          params: { lr: '0.2' },
        }),
      'INVALID_ARGUMENT',
    );
    const run = await store.getRun(info.runId);
    expect(run?.metrics).toEqual({});
    expect(run?.tags).not.toHaveProperty('note');
    expect(await store.getMetricHistory(info.runId, 'f1')).toEqual([]);
  });

  it('search by f1 reads latest_metrics through its index, never scanning every metric', () => {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const plan = db
        .prepare(
          "EXPLAIN QUERY PLAN SELECT x.run_uuid, x.key, x.value, x.is_nan FROM latest_metrics x JOIN runs r ON r.run_uuid = x.run_uuid WHERE r.experiment_id = ? AND r.lifecycle_stage = 'active'",
        )
        .all(1)
        .map((row) => String(row.detail));
      expect(plan.join('\n')).toMatch(/SEARCH x USING INDEX/);
      expect(plan.join('\n')).not.toMatch(/SCAN x|\bmetrics\b/);
    } finally {
      db.close();
    }
  });

  it('an experiment whose artifacts are not local is refused with a pointer to the artifact proxy', async () => {
    const name = uniqueName('remote');
    const id = await store.createExperiment(name);
    const db = new DatabaseSync(file);
    try {
      db.prepare('UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?').run(
        's3://bucket/x',
        Number(id),
      );
    } finally {
      db.close();
    }
    const error = await expectTrackingError(() => store.createRun(id, { runName: 'r' }), 'UNSUPPORTED');
    expect(error.message).toMatch(/s3:\/\/bucket\/x.*mlflow server/);
    // Found before training (`checkCanLog`), not when the first run is created.
    const early = await expectTrackingError(() => checkCanLog(store, name), 'UNSUPPORTED');
    expect(early.message).toMatch(/s3:\/\/bucket\/x/);
  });

  it('checkCanLog probes an experiment artifact location outside the artifact root', async () => {
    const name = uniqueName('elsewhere');
    const id = await store.createExperiment(name);
    const blocker = join(scratch.path, 'a-file-not-a-folder');
    await writeFile(blocker, 'x');
    const db = new DatabaseSync(file);
    try {
      db.prepare('UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?').run(
        join(blocker, 'artifacts'),
        Number(id),
      );
    } finally {
      db.close();
    }
    const error = await expectTrackingError(() => checkCanLog(store, name), 'UNAVAILABLE');
    expect(error.message).toMatch(
      new RegExp(`the artifact folder of experiment '${name}' .*runs cannot be logged there`),
    );
    await store.checkWritable();
    await expectTrackingError(() => store.checkWritable('424242'), 'NOT_FOUND');
  });
});

describe('SQL store on SQLite: databases that are not the MLflow schema Tagger knows', () => {
  it('a database with a runs table but no alembic_version is MALFORMED', async () => {
    const file = join(scratch.path, 'foreign.db');
    const db = new DatabaseSync(file);
    db.exec('CREATE TABLE runs (id INTEGER)');
    db.close();
    const error = await expectTrackingError(() => openTrackingStore(`sqlite:///${file}`), 'MALFORMED');
    expect(error.message).toMatch(/not a database MLflow created/);
  });

  it('another alembic head: a warning when the tables Tagger uses match, UNSUPPORTED when they do not', async () => {
    const file = join(scratch.path, 'other-head.db');
    await (await openTrackingStore(`sqlite:///${file}`)).close();
    const db = new DatabaseSync(file);
    db.exec("UPDATE alembic_version SET version_num = 'future0head'");
    db.close();
    const warnings: string[] = [];
    const store = await openTrackingStore(`sqlite:///${file}`, {
      onWarning: (message) => warnings.push(message),
    });
    await store.close();
    expect(warnings.join('\n')).toMatch(
      /schema head future0head, while Tagger writes MLflow 3\.17\.2's head dc11669786a5/,
    );

    const broken = new DatabaseSync(file);
    broken.exec('ALTER TABLE runs DROP COLUMN source_version');
    broken.close();
    const error = await expectTrackingError(() => openTrackingStore(`sqlite:///${file}`), 'UNSUPPORTED');
    expect(error.message).toMatch(/tables runs lack columns.*mlflow db upgrade/);
  });
});
