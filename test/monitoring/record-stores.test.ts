/**
 * Every prediction-record store adapter through the contract (memory, SQLite in its worker thread,
 * PostgreSQL on a real server), and what only the SQL adapter has: its own tables beside MLflow's in a
 * tracking database without touching MLflow's, a newer layout refused, a read-only open that creates
 * nothing.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_BINS } from '../../src/model/index.js';
import { MemoryRecordStore } from '../../src/monitoring/memory-record-store.js';
import { defaultRecordStoreUri, openRecordStore } from '../../src/monitoring/open.js';
import { SqlTrackingStore } from '../../src/tracking/sql/sql-store.js';
import { type Postgres, postgresBin, startPostgres } from '../support/stack.js';
import { useTempDir } from '../support/temp-dir.js';
import { newScope, record, runRecordStoreContract } from './contract.js';

const BINS = {
  confidence: DEFAULT_BINS.confidence,
  unseen_ngrams: DEFAULT_BINS.unseen_ngrams,
  text_length: DEFAULT_BINS.text_length,
};

const scratch = useTempDir('tagger-records-');

runRecordStoreContract(
  'memory',
  async () => {
    const store = new MemoryRecordStore();
    return { open: async () => store, cleanup: async () => undefined };
  },
  { shared: false },
);

let n = 0;
runRecordStoreContract(
  'SQLite (worker thread)',
  async () => {
    const uri = `sqlite:///${join(scratch.path, `contract-${++n}.db`)}`;
    return { open: () => openRecordStore(uri), cleanup: async () => undefined };
  },
  { shared: true },
);

const pgBin = postgresBin();
let postgresPromise: Promise<Postgres> | undefined;
afterAll(async () => {
  if (postgresPromise) await (await postgresPromise).stop();
});
if (pgBin) {
  runRecordStoreContract(
    'PostgreSQL',
    async () => {
      postgresPromise ??= startPostgres(pgBin);
      const uri = (await postgresPromise).sqlalchemyUri('records');
      return { open: () => openRecordStore(uri), cleanup: async () => undefined };
    },
    { shared: true },
  );
} else {
  it.skip('RecordStore contract: PostgreSQL [skipped: PostgreSQL not installed]', () => {});
}

describe('the SQL adapter beside MLflow', () => {
  it('adds its own tables to a tracking database and leaves MLflow’s exactly as they were', async () => {
    const file = join(scratch.path, 'mlflow.db');
    const uri = `sqlite:///${file}`;
    const tracking = await SqlTrackingStore.open(uri, 'mlflow.db');
    await tracking.close();
    const schemaOf = (where: string) => {
      const db = new DatabaseSync(file, { readOnly: true });
      try {
        return db.prepare(`SELECT type, name, sql FROM sqlite_master WHERE ${where} ORDER BY name`).all();
      } finally {
        db.close();
      }
    };
    const mlflowBefore = schemaOf("tbl_name NOT LIKE 'tagger_%'");
    expect(defaultRecordStoreUri(uri)).toBe(uri);
    const records = await openRecordStore(uri);
    await records.append([record(newScope())]);
    await records.close();
    expect(schemaOf("tbl_name NOT LIKE 'tagger_%'")).toEqual(mlflowBefore);
    expect(schemaOf("type = 'table' AND name LIKE 'tagger_%'").map((row) => row.name)).toEqual([
      'tagger_feedback',
      'tagger_label_reviews',
      'tagger_leases',
      'tagger_predictions',
      'tagger_record_writers',
      'tagger_records_meta',
    ]);
    // And MLflow's store still opens it as its own.
    await (await SqlTrackingStore.open(uri, 'mlflow.db', { readOnly: true })).close();
  });

  it('refuses a layout newer than it knows, and a read-only open creates nothing', async () => {
    const file = join(scratch.path, 'newer.db');
    const store = await openRecordStore(`sqlite:///${file}`);
    await store.close();
    const db = new DatabaseSync(file);
    db.exec("UPDATE tagger_records_meta SET value = '99' WHERE key = 'schema'");
    db.close();
    await expect(openRecordStore(`sqlite:///${file}`)).rejects.toThrow(
      /layout 99, newer than this Tagger's 1/,
    );
    await expect(
      openRecordStore(`sqlite:///${join(scratch.path, 'none.db')}`, { readOnly: true }),
    ).rejects.toThrow(/there is no database at .*none\.db.*no server recorded predictions there/);
    const empty = join(scratch.path, 'empty.db');
    new DatabaseSync(empty).close();
    await expect(openRecordStore(`sqlite:///${empty}`, { readOnly: true })).rejects.toThrow(
      /holds no prediction records/,
    );
  });

  it('takes a database of revision 1 to the latest by additions only: read-only it is read as it is', async () => {
    const file = join(scratch.path, 'revision-1.db');
    const uri = `sqlite:///${file}`;
    const scope = newScope();
    const made = await openRecordStore(uri);
    const labelled = record(scope);
    await made.append([labelled]);
    await made.putFeedback([
      { predictionId: labelled.predictionId, scope, runId: 'run-a', tags: ['cv'], receivedMs: 5 },
    ]);
    await made.close();
    // What a Tagger before revisions wrote: no revision key, no selection or stage column, no new tables.
    const db = new DatabaseSync(file);
    db.exec(`DELETE FROM tagger_records_meta WHERE key = 'revision';
      DROP TABLE tagger_record_writers; DROP TABLE tagger_label_reviews; DROP TABLE tagger_leases;
      ALTER TABLE tagger_feedback DROP COLUMN selection; ALTER TABLE tagger_predictions DROP COLUMN stage;`);
    db.close();
    const readOnly = await openRecordStore(uri, { readOnly: true });
    expect(await readOnly.labelled({ scope, limit: 10 })).toMatchObject([{ selection: 'unspecified' }]);
    expect(
      (await readOnly.feedbackWindow({ scope, runId: 'run-a', sinceMs: 0, limit: 10 })).labelled,
    ).toEqual([{ predicted: ['nlp'], truth: ['cv'], selection: 'unspecified', stage: null }]);
    expect(
      (await readOnly.windowCounts({ scope, runId: 'run-a', sinceMs: 0, limit: 10, bins: BINS })).stages,
    ).toEqual({});
    expect(await readOnly.writerMarks()).toEqual([]);
    expect(await readOnly.labelReviews(scope)).toEqual([]);
    await expect(readOnly.takeLease('x', 'y', 1, 1)).rejects.toThrow(/opened read-only and predates leases/);
    await readOnly.close();
    const writable = await openRecordStore(uri);
    expect(
      (await writable.feedbackWindow({ scope, runId: 'run-a', sinceMs: 0, limit: 10 })).labelled,
    ).toEqual([{ predicted: ['nlp'], truth: ['cv'], selection: 'unspecified', stage: null }]);
    expect((await writable.takeLease('x', 'y', 10, 1)).holder).toBe('y');
    // Revision 3: a cascade's stage is recorded.
    await writable.append([record(scope, { stage: 'encoder' })]);
    expect(
      (await writable.windowCounts({ scope, runId: 'run-a', sinceMs: 0, limit: 10, bins: BINS })).stages,
    ).toEqual({ encoder: 1 });
    // Revision 4: the protocol the request came in by.
    await writable.append([record(scope, { protocol: 'oip' })]);
    await writable.close();
    const check = new DatabaseSync(file, { readOnly: true });
    try {
      expect(check.prepare("SELECT value FROM tagger_records_meta WHERE key = 'revision'").get()).toEqual({
        value: '4',
      });
      expect(
        check.prepare('SELECT protocol FROM tagger_predictions WHERE protocol IS NOT NULL').all(),
      ).toEqual([{ protocol: 'oip' }]);
    } finally {
      check.close();
    }
  });

  it('names the forms a record store URI can take', async () => {
    await expect(openRecordStore('mysql://x/y')).rejects.toThrow(
      /use sqlite:\/\/\/path\.db, postgresql:\/\/… or memory:/,
    );
    await expect(openRecordStore('sqlite://')).rejects.toThrow(/^records: .*names no database file/);
    expect(defaultRecordStoreUri('./mlruns')).toBe('sqlite:///tagger-records.db');
    expect(defaultRecordStoreUri('http://mlflow:5000')).toBe('sqlite:///tagger-records.db');
    expect(defaultRecordStoreUri('postgresql+psycopg2://u@h/db')).toBe('postgresql+psycopg2://u@h/db');
  });
});
