/**
 * Prediction records in a SQL database: SQLite or PostgreSQL through the tracking store's driver
 * (src/tracking/sql/driver.ts: one async interface, `?` placeholders, the same SQL on both), in three
 * tables of Tagger's own — `tagger_predictions`, `tagger_feedback`, `tagger_records_meta` — created
 * beside MLflow's when missing. MLflow's tables are never touched: MLflow ignores tables it does not
 * know (its migrations name theirs), and these carry no foreign key into its schema.
 *
 * Predictions are keyed by their version-7 ids, which sort by time (see `idBound`): no other index is
 * written per prediction. Created once even when several replicas start together (an advisory lock on
 * PostgreSQL, SQLite's write lock), and versioned (`tagger_records_meta.schema`), so a later Tagger can migrate them and an
 * older one refuses a newer layout instead of misreading it.
 */
import type { SqlDriver, SqlExecutor, SqlRow, SqlValue } from '../tracking/sql/driver.js';
import {
  type FeedbackEntry,
  type FeedbackQuery,
  type FeedbackWindow,
  type LabelledQuery,
  type LabelledRecord,
  type LabelReview,
  type Lease,
  type PredictionRecord,
  type RecordedPrediction,
  type RecordStore,
  RecordStoreError,
  type ReviewCandidate,
  type ReviewQuery,
  type WindowCounts,
  type WindowQuery,
  type WriterMark,
} from './record-store.js';
import * as loop from './sql-loop-tables.js';
import { jsonList } from './sql-loop-tables.js';

export const RECORDS_SCHEMA_VERSION = 1;
/** Serialises table creation across replicas on PostgreSQL (fixed, distinct from the tracking store's). */
const POSTGRES_RECORDS_LOCK = 7_170_652_618;

const DDL = [
  `CREATE TABLE IF NOT EXISTS tagger_records_meta (
    key VARCHAR(64) NOT NULL PRIMARY KEY,
    value VARCHAR(256) NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS tagger_predictions (
    prediction_id VARCHAR(36) NOT NULL PRIMARY KEY,
    created_ms BIGINT NOT NULL,
    scope TEXT NOT NULL,
    run_id VARCHAR(64) NOT NULL,
    model_version TEXT,
    multi_label SMALLINT NOT NULL,
    predicted_tag TEXT NOT NULL,
    predicted_tags TEXT,
    probabilities TEXT NOT NULL,
    confidence DOUBLE PRECISION NOT NULL,
    unseen_share DOUBLE PRECISION NOT NULL,
    text_length INTEGER NOT NULL,
    text TEXT,
    text_sha256 CHAR(64)
  )`,
  `CREATE TABLE IF NOT EXISTS tagger_feedback (
    prediction_id VARCHAR(36) NOT NULL PRIMARY KEY,
    scope TEXT NOT NULL,
    run_id VARCHAR(64) NOT NULL,
    tags TEXT NOT NULL,
    received_ms BIGINT NOT NULL,
    updates INTEGER NOT NULL
  )`,
  'CREATE INDEX IF NOT EXISTS tagger_feedback_window ON tagger_feedback (scope, run_id, received_ms)',
];

const COLUMNS = [
  'prediction_id',
  'created_ms',
  'scope',
  'run_id',
  'model_version',
  'multi_label',
  'predicted_tag',
  'predicted_tags',
  'probabilities',
  'confidence',
  'unseen_share',
  'text_length',
  'text',
  'text_sha256',
  'stage',
  'protocol',
] as const;

/**
 * The smallest prediction id of a prediction made at or after `ms`: ids are version-7 UUIDs (ids.ts), whose
 * first 48 bits are the millisecond, so in text order they are in time order. The primary key alone
 * then serves the window (newest first from a bound), retention (everything below a bound) and lookups,
 * and each insert lands at the end of one index instead of in two more (about 2 µs a record, measured).
 */
export const idBound = (ms: number): string => {
  const hex = Math.max(0, Math.trunc(ms)).toString(16).padStart(12, '0').slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8)}`;
};

/** Rows per INSERT statement: 16 columns × 50 stays far below SQLite's and PostgreSQL's parameter caps. */
const INSERT_ROWS = 50;
/** Ids per lookup statement. */
const LOOKUP_IDS = 200;
/** Predictions deleted per transaction when pruning. */
const PRUNE_CHUNK = 20_000;

const placeholders = (n: number): string => `(${new Array<string>(n).fill('?').join(', ')})`;

/** The values of one record, in COLUMNS order. */
function rowValues(record: PredictionRecord): SqlValue[] {
  return [
    record.predictionId,
    record.createdMs,
    record.scope,
    record.runId,
    record.modelVersion,
    record.multiLabel ? 1 : 0,
    record.predictedTag,
    // A single-label model's tags are its one answer: not written again (null), read back as [predicted_tag].
    record.multiLabel ? JSON.stringify(record.predictedTags) : null,
    JSON.stringify(record.probabilities),
    Number.isFinite(record.confidence) ? record.confidence : 0,
    Number.isFinite(record.unseenShare) ? record.unseenShare : 0,
    record.textLength,
    // PostgreSQL's text cannot hold NUL (SQLite's can): both keep U+FFFD instead, so they agree.
    record.text === null ? null : record.text.replaceAll('\u0000', '\uFFFD'),
    record.textSha256,
    record.stage ?? null,
    record.protocol ?? null,
  ];
}

function jsonKeys(value: unknown): string[] {
  try {
    const parsed: unknown = JSON.parse(String(value));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? Object.keys(parsed).sort()
      : [];
  } catch {
    return [];
  }
}

/** `CASE WHEN col >= ? THEN k … ELSE 0 END` over lower edges, highest first (the edges are parameters). */
function binCase(column: string, lower: readonly number[]): { sql: string; params: number[] } {
  if (lower.length <= 1) return { sql: '0', params: [] };
  const whens: string[] = [];
  const params: number[] = [];
  for (let k = lower.length - 1; k >= 1; k--) {
    whens.push(`WHEN ${column} >= ? THEN ${k}`);
    params.push(lower[k]!);
  }
  return { sql: `CASE ${whens.join(' ')} ELSE 0 END`, params };
}

export interface SqlRecordStoreOptions {
  /** For messages (passwords masked). */
  displayUri: string;
  /** Only read: missing tables are NOT_FOUND instead of created (`tagger feedback export`). */
  readOnly?: boolean;
}

export class SqlRecordStore implements RecordStore {
  /** The additions the database has (sql-loop-tables.ts); below RECORDS_REVISION only when opened read-only. */
  private revision = loop.RECORDS_REVISION;

  private constructor(
    private readonly db: SqlDriver,
    readonly displayUri: string,
  ) {}

  /** Checks (or creates, unless read-only) the tables on an open driver; closes it when that fails. */
  static async open(db: SqlDriver, options: SqlRecordStoreOptions): Promise<SqlRecordStore> {
    const store = new SqlRecordStore(db, options.displayUri);
    try {
      await store.ensureTables(options.readOnly ?? false);
    } catch (error) {
      await db.close().catch(() => undefined);
      throw store.failure(error, 'cannot open the prediction records');
    }
    return store;
  }

  /** The layout version, or null when there are no tables yet (asked of the catalog: a failing SELECT
   * would abort a PostgreSQL transaction). */
  private async schemaVersion(tx: SqlExecutor): Promise<number | null> {
    const exists =
      this.db.dialect === 'sqlite'
        ? await tx.all(
            "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'tagger_records_meta'",
          )
        : await tx.all(
            "SELECT 1 AS found FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'tagger_records_meta'",
          );
    if (exists.length === 0) return null;
    const rows: SqlRow[] = await tx.all("SELECT value FROM tagger_records_meta WHERE key = 'schema'");
    const value = rows[0]?.value;
    return value === undefined ? null : Number(value);
  }

  private checkVersion(version: number): void {
    if (!(version <= RECORDS_SCHEMA_VERSION)) {
      throw new RecordStoreError(
        'UNSUPPORTED',
        `records: ${this.displayUri} holds prediction records in layout ${version}, newer than this Tagger's ${RECORDS_SCHEMA_VERSION}; upgrade Tagger`,
      );
    }
  }

  private async ensureTables(readOnly: boolean): Promise<void> {
    const found = await this.schemaVersion(this.db);
    if (found !== null) {
      this.checkVersion(found);
      return this.revise(readOnly);
    }
    if (readOnly) {
      throw new RecordStoreError(
        'NOT_FOUND',
        `records: ${this.displayUri} holds no prediction records (no tagger_predictions table): no server recorded predictions there`,
      );
    }
    await this.db.transaction(async (tx) => {
      if (this.db.dialect === 'postgresql')
        await tx.all('SELECT pg_advisory_xact_lock(?)', [POSTGRES_RECORDS_LOCK]);
      const now = await this.schemaVersion(tx);
      if (now !== null) return this.checkVersion(now);
      for (const statement of DDL) await tx.exec(statement);
      await tx.run(
        "INSERT INTO tagger_records_meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO NOTHING",
        [String(RECORDS_SCHEMA_VERSION)],
      );
      await loop.reviseToLatest(this.db, tx);
    });
  }

  /** Adds what a database of an older revision lacks (additions only: see sql-loop-tables.ts). */
  private async revise(readOnly: boolean): Promise<void> {
    const found = await loop.revisionOf(this.db);
    if (found >= loop.RECORDS_REVISION) return;
    if (readOnly) {
      this.revision = found;
      return;
    }
    await this.db.transaction(async (tx) => {
      if (this.db.dialect === 'postgresql')
        await tx.all('SELECT pg_advisory_xact_lock(?)', [POSTGRES_RECORDS_LOCK]);
      if ((await loop.revisionOf(tx)) < loop.RECORDS_REVISION) await loop.reviseToLatest(this.db, tx);
    });
  }

  /** The feedback's `selection` as a select expression (a read-only database of revision 1 has none). */
  private get selectionColumn(): string {
    return this.revision >= 2 ? 'f.selection' : "'unspecified'";
  }

  /** A cascade's stage as a select expression (a read-only database before revision 3 has none). */
  private stageColumn(table: string): string {
    return this.revision >= 3 ? `${table}stage` : 'NULL';
  }

  /** Writing what revision 2 added to a read-only database of revision 1 cannot happen. */
  private needRevision(what: string): void {
    if (this.revision < 2) {
      throw new RecordStoreError(
        'UNSUPPORTED',
        `records: ${this.displayUri} was opened read-only and predates ${what}; open it writable once (tagger serve does) to add it`,
      );
    }
  }

  /** A database error as a RecordStoreError naming the store (never its password). */
  private failure(error: unknown, what: string): RecordStoreError {
    if (error instanceof RecordStoreError) return error;
    const reason = error instanceof Error ? error.message : String(error);
    return new RecordStoreError('UNAVAILABLE', `records: ${what} in ${this.displayUri}: ${reason}`, {
      cause: error,
    });
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw this.failure(error, what);
    }
  }

  append(records: readonly PredictionRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.call('cannot write prediction records', () =>
      this.db.transaction(async (tx) => {
        for (let start = 0; start < records.length; start += INSERT_ROWS) {
          const chunk = records.slice(start, start + INSERT_ROWS);
          await tx.run(
            `INSERT INTO tagger_predictions (${COLUMNS.join(', ')}) VALUES ${chunk.map(() => placeholders(COLUMNS.length)).join(', ')} ON CONFLICT (prediction_id) DO NOTHING`,
            chunk.flatMap(rowValues),
          );
        }
      }),
    );
  }

  find(scope: string, ids: readonly string[]): Promise<Map<string, RecordedPrediction>> {
    return this.call('cannot read prediction records', async () => {
      const found = new Map<string, RecordedPrediction>();
      const unique = [...new Set(ids)];
      for (let start = 0; start < unique.length; start += LOOKUP_IDS) {
        const chunk = unique.slice(start, start + LOOKUP_IDS);
        const rows = await this.db.all(
          `SELECT prediction_id, run_id, multi_label, probabilities, created_ms FROM tagger_predictions WHERE scope = ? AND prediction_id IN ${placeholders(chunk.length)}`,
          [scope, ...chunk],
        );
        for (const row of rows) {
          found.set(String(row.prediction_id), {
            predictionId: String(row.prediction_id),
            runId: String(row.run_id),
            multiLabel: Number(row.multi_label) === 1,
            tags: jsonKeys(row.probabilities),
            createdMs: Number(row.created_ms),
          });
        }
      }
      return found;
    });
  }

  putFeedback(entries: readonly FeedbackEntry[]): Promise<Set<string>> {
    return this.call('cannot write feedback', () =>
      this.db.transaction(async (tx) => {
        const replaced = new Set<string>();
        const ids = [...new Set(entries.map((entry) => entry.predictionId))];
        for (let start = 0; start < ids.length; start += LOOKUP_IDS) {
          const chunk = ids.slice(start, start + LOOKUP_IDS);
          const rows = await tx.all(
            `SELECT prediction_id FROM tagger_feedback WHERE prediction_id IN ${placeholders(chunk.length)}`,
            chunk,
          );
          for (const row of rows) replaced.add(String(row.prediction_id));
        }
        for (const entry of entries) {
          await tx.run(
            `INSERT INTO tagger_feedback (prediction_id, scope, run_id, tags, received_ms, updates, selection) VALUES (?, ?, ?, ?, ?, 0, ?)
             ON CONFLICT (prediction_id) DO UPDATE SET tags = excluded.tags, received_ms = excluded.received_ms, updates = tagger_feedback.updates + 1, selection = excluded.selection`,
            [
              entry.predictionId,
              entry.scope,
              entry.runId,
              JSON.stringify(entry.tags),
              entry.receivedMs,
              entry.selection ?? 'unspecified',
            ],
          );
        }
        return replaced;
      }),
    );
  }

  windowCounts(query: WindowQuery): Promise<WindowCounts> {
    return this.call('cannot read prediction records', async () => {
      const cases = {
        confidence: binCase('confidence', query.bins.confidence),
        unseen_ngrams: binCase('unseen_share', query.bins.unseen_ngrams),
        text_length: binCase('text_length', query.bins.text_length),
      };
      const signals = Object.entries(cases);
      // One round trip: the window once (a CTE), each signal's histogram grouped from it.
      const sql = `WITH w AS (
          SELECT predicted_tag, confidence, unseen_share, text_length, ${this.stageColumn('')} AS stage FROM tagger_predictions
          WHERE prediction_id >= ? AND scope = ? AND run_id = ? ORDER BY prediction_id DESC LIMIT ?
        )
        SELECT 'predicted_tag' AS signal, predicted_tag AS bin, COUNT(*) AS n FROM w GROUP BY predicted_tag
        UNION ALL SELECT 'stage', stage, COUNT(*) FROM w WHERE stage IS NOT NULL GROUP BY stage
        ${signals.map(([name, c]) => `UNION ALL SELECT '${name}', CAST(${c.sql} AS TEXT), COUNT(*) FROM w GROUP BY 2`).join('\n')}`;
      const rows = await this.db.all(sql, [
        idBound(query.sinceMs),
        query.scope,
        query.runId,
        query.limit,
        ...signals.flatMap(([, c]) => c.params),
      ]);
      const counts: WindowCounts = {
        predictions: 0,
        predicted_tag: {},
        confidence: new Array<number>(query.bins.confidence.length).fill(0),
        unseen_ngrams: new Array<number>(query.bins.unseen_ngrams.length).fill(0),
        text_length: new Array<number>(query.bins.text_length.length).fill(0),
        stages: {},
      };
      for (const row of rows) {
        const n = Number(row.n);
        const signal = String(row.signal);
        if (signal === 'predicted_tag') {
          counts.predicted_tag[String(row.bin)] = n;
          counts.predictions += n;
        } else if (signal === 'stage') {
          counts.stages[String(row.bin)] = n;
        } else {
          const histogram = counts[signal as 'confidence' | 'unseen_ngrams' | 'text_length'];
          const bin = Number(row.bin);
          if (bin >= 0 && bin < histogram.length) histogram[bin] = n;
        }
      }
      return counts;
    });
  }

  feedbackWindow(query: FeedbackQuery): Promise<FeedbackWindow> {
    return this.call('cannot read feedback', async () => {
      const rows = await this.db.all(
        `SELECT p.predicted_tags AS predicted, p.predicted_tag AS tag, f.tags AS truth, ${this.selectionColumn} AS selection, ${this.stageColumn('p.')} AS stage FROM tagger_feedback f
         JOIN tagger_predictions p ON p.prediction_id = f.prediction_id
         WHERE f.scope = ? AND f.run_id = ? AND f.received_ms >= ? ORDER BY f.received_ms DESC LIMIT ?`,
        [query.scope, query.runId, query.sinceMs, query.limit],
      );
      const last = await this.db.all(
        'SELECT MAX(received_ms) AS last FROM tagger_feedback WHERE scope = ? AND run_id = ?',
        [query.scope, query.runId],
      );
      const lastValue = last[0]?.last;
      return {
        labelled: rows.map((row) => ({
          predicted: row.predicted === null ? [String(row.tag)] : jsonList(row.predicted),
          truth: jsonList(row.truth),
          selection: loop.selectionOf(row.selection),
          stage: typeof row.stage === 'string' ? row.stage : null,
        })),
        lastReceivedMs: lastValue === null || lastValue === undefined ? null : Number(lastValue),
      };
    });
  }

  labelled(query: LabelledQuery): Promise<LabelledRecord[]> {
    return this.call('cannot read labelled records', async () => {
      const where: string[] = [];
      const params: SqlValue[] = [];
      if (query.scope !== undefined) {
        where.push('f.scope = ?');
        params.push(query.scope);
      }
      if (query.runId !== undefined) {
        where.push('f.run_id = ?');
        params.push(query.runId);
      }
      if (query.sinceMs !== undefined) {
        where.push('f.received_ms >= ?');
        params.push(query.sinceMs);
      }
      if (query.after !== undefined) {
        where.push('f.prediction_id > ?');
        params.push(query.after);
      }
      const rows = await this.db.all(
        `SELECT p.prediction_id, p.run_id, p.created_ms, p.text, p.multi_label, f.tags, f.received_ms, ${this.selectionColumn} AS selection FROM tagger_feedback f
         JOIN tagger_predictions p ON p.prediction_id = f.prediction_id
         ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY f.prediction_id LIMIT ?`,
        [...params, query.limit],
      );
      return rows.map((row) => ({
        predictionId: String(row.prediction_id),
        runId: String(row.run_id),
        createdMs: Number(row.created_ms),
        text: row.text === null || row.text === undefined ? null : String(row.text),
        multiLabel: Number(row.multi_label) === 1,
        tags: jsonList(row.tags),
        receivedMs: Number(row.received_ms),
        selection: loop.selectionOf(row.selection),
      }));
    });
  }

  prune(beforeMs: number, keepRows?: number): Promise<number> {
    return this.call('cannot delete old prediction records', async () => {
      // Ids sort by time (idBound), so both bounds are one id: everything at or below it goes.
      const older = await this.db.all(
        'SELECT prediction_id FROM tagger_predictions WHERE prediction_id < ? ORDER BY prediction_id DESC LIMIT 1',
        [idBound(beforeMs)],
      );
      let cut = older[0] === undefined ? null : String(older[0].prediction_id);
      if (keepRows !== undefined && keepRows > 0) {
        // The newest prediction beyond the ones kept (an index walk of keepRows entries).
        const beyond = await this.db.all(
          'SELECT prediction_id FROM tagger_predictions ORDER BY prediction_id DESC LIMIT 1 OFFSET ?',
          [keepRows],
        );
        const id = beyond[0] === undefined ? null : String(beyond[0].prediction_id);
        if (id !== null && (cut === null || id > cut)) cut = id;
      }
      const deleted = cut === null ? 0 : await this.deleteThrough(cut);
      await this.db.transaction((tx) => loop.pruneWriterMarks(tx, beforeMs));
      return deleted;
    });
  }

  /**
   * Deletes the predictions with ids up to `cut` (and their feedback, keyed by the same ids) oldest first,
   * PRUNE_CHUNK at a time: a transaction never holds the write lock long, whatever the backlog.
   */
  private async deleteThrough(cut: string): Promise<number> {
    let deleted = 0;
    for (;;) {
      const chunk = await this.db.all(
        'SELECT prediction_id FROM tagger_predictions WHERE prediction_id <= ? ORDER BY prediction_id LIMIT 1 OFFSET ?',
        [cut, PRUNE_CHUNK - 1],
      );
      const upTo = chunk[0] === undefined ? cut : String(chunk[0].prediction_id);
      deleted += await this.db.transaction(async (tx) => {
        await tx.run('DELETE FROM tagger_feedback WHERE prediction_id <= ?', [upTo]);
        return tx.run('DELETE FROM tagger_predictions WHERE prediction_id <= ?', [upTo]);
      });
      if (upTo === cut) return deleted;
    }
  }

  ping(): Promise<void> {
    return this.call('cannot reach the database', async () => {
      await this.db.all('SELECT 1 AS ok');
    });
  }

  async putWriterMark(mark: WriterMark): Promise<void> {
    this.needRevision('writer marks');
    return this.call('cannot publish what was written', () => loop.putWriterMark(this.db, mark));
  }

  async removeWriterMark(writerId: string): Promise<void> {
    this.needRevision('writer marks');
    return this.call('cannot remove a writer', () => loop.removeWriterMark(this.db, writerId));
  }

  writerMarks(): Promise<WriterMark[]> {
    if (this.revision < 2) return Promise.resolve([]);
    return this.call('cannot read what was written', () => loop.writerMarks(this.db));
  }

  reviewCandidates(query: ReviewQuery): Promise<ReviewCandidate[]> {
    return this.call('cannot read prediction records', () =>
      loop.reviewCandidates(this.db, query, idBound(query.sinceMs)),
    );
  }

  async putLabelReviews(reviews: readonly LabelReview[]): Promise<void> {
    this.needRevision('label-issue reviews');
    if (reviews.length === 0) return;
    return this.call('cannot write label-issue reviews', () => loop.putLabelReviews(this.db, reviews));
  }

  labelReviews(scope: string): Promise<LabelReview[]> {
    if (this.revision < 2) return Promise.resolve([]);
    return this.call('cannot read label-issue reviews', () => loop.labelReviews(this.db, scope));
  }

  async takeLease(name: string, holder: string, ttlMs: number, nowMs: number): Promise<Lease> {
    this.needRevision('leases');
    return this.call('cannot take a lease', () => loop.takeLease(this.db, name, holder, ttlMs, nowMs));
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    this.needRevision('leases');
    return this.call('cannot release a lease', () => loop.releaseLease(this.db, name, holder));
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
