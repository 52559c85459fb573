/**
 * The SQL of what closes the loop from a person's label to a retrained model (issue 32), kept apart from
 * sql-record-store.ts's predictions and feedback: writers' marks (so feedback for a prediction still on
 * its way is never refused as unknown), the review queue's candidates, decisions on label issues, and
 * leases (one `tagger retrain` at a time).
 *
 * These are layout revision 2 of the records' tables: additions only — a `selection` column with a
 * default on `tagger_feedback` and three new tables — so a Tagger of revision 1 keeps reading and writing
 * a revised database unchanged (a rolling upgrade mixes both). `tagger_records_meta.revision` says which
 * additions a database has; `schema` stays the layout version an older Tagger must refuse.
 * Revision 3 (issue 33) adds a nullable `stage` column to `tagger_predictions` (which stage of a cascade
 * answered): an older Tagger names its columns when it inserts, so it keeps writing (null stage).
 * Revision 4 (issue 41) adds a nullable `protocol` column to `tagger_predictions` (which protocol the
 * request came in by: tagger, oip, hf), the same way.
 */
import type { SqlDriver, SqlExecutor, SqlRow } from '../tracking/sql/driver.js';
import type {
  FeedbackSelection,
  LabelReview,
  Lease,
  ReviewCandidate,
  ReviewQuery,
  WriterMark,
} from './record-store.js';
import { FEEDBACK_SELECTIONS } from './record-store.js';

/** The additions this Tagger makes (and reads); see the module comment. */
export const RECORDS_REVISION = 4;

/** The statements that take a revision-1 database to revision 2 (each one idempotent where SQL allows). */
export const REVISION_2_DDL = [
  `CREATE TABLE IF NOT EXISTS tagger_record_writers (
    writer_id VARCHAR(64) NOT NULL PRIMARY KEY,
    written_through_ms BIGINT NOT NULL,
    heartbeat_ms BIGINT NOT NULL,
    flush_ms INTEGER NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS tagger_label_reviews (
    scope TEXT NOT NULL,
    text_key CHAR(64) NOT NULL,
    text TEXT NOT NULL,
    given_tags TEXT NOT NULL,
    decision VARCHAR(8) NOT NULL,
    tags TEXT NOT NULL,
    run_id VARCHAR(64) NOT NULL,
    received_ms BIGINT NOT NULL,
    PRIMARY KEY (scope, text_key)
  )`,
  `CREATE TABLE IF NOT EXISTS tagger_leases (
    name VARCHAR(200) NOT NULL PRIMARY KEY,
    holder VARCHAR(200) NOT NULL,
    acquired_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
  )`,
];

/** The revision a database has (1 when the key is missing: it predates revisions). */
export async function revisionOf(tx: SqlExecutor): Promise<number> {
  const rows = await tx.all("SELECT value FROM tagger_records_meta WHERE key = 'revision'");
  const value = rows[0]?.value;
  return value === undefined ? 1 : Number(value);
}

/** Whether `table` has `column` (asked of the catalog, never by a failing query). */
async function hasColumn(db: SqlDriver, tx: SqlExecutor, table: string, column: string): Promise<boolean> {
  const rows =
    db.dialect === 'sqlite'
      ? await tx.all('SELECT 1 AS found FROM pragma_table_info(?) WHERE name = ?', [table, column])
      : await tx.all(
          'SELECT 1 AS found FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?',
          [table, column],
        );
  return rows.length > 0;
}

/** Applies the additions of revisions 2 to 4 inside the caller's (locked) transaction (each at most once). */
export async function reviseToLatest(db: SqlDriver, tx: SqlExecutor): Promise<void> {
  if (!(await hasColumn(db, tx, 'tagger_predictions', 'stage'))) {
    await tx.exec('ALTER TABLE tagger_predictions ADD COLUMN stage VARCHAR(16)');
  }
  if (!(await hasColumn(db, tx, 'tagger_predictions', 'protocol'))) {
    await tx.exec('ALTER TABLE tagger_predictions ADD COLUMN protocol VARCHAR(16)');
  }
  if (!(await hasColumn(db, tx, 'tagger_feedback', 'selection'))) {
    await tx.exec(
      "ALTER TABLE tagger_feedback ADD COLUMN selection VARCHAR(32) NOT NULL DEFAULT 'unspecified'",
    );
  }
  for (const statement of REVISION_2_DDL) await tx.exec(statement);
  await tx.run(
    "INSERT INTO tagger_records_meta (key, value) VALUES ('revision', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    [String(RECORDS_REVISION)],
  );
}

const SELECTIONS: ReadonlySet<string> = new Set(FEEDBACK_SELECTIONS);

/** A `selection` value as read (anything unexpected is `unspecified`, never trusted). */
export const selectionOf = (value: unknown): FeedbackSelection =>
  typeof value === 'string' && SELECTIONS.has(value) ? (value as FeedbackSelection) : 'unspecified';

/** A JSON list column written by the SQL adapter; anything else is read as empty rather than trusted. */
export function jsonList(value: unknown): string[] {
  try {
    const parsed: unknown = JSON.parse(String(value));
    return Array.isArray(parsed) ? parsed.filter((tag): tag is string => typeof tag === 'string') : [];
  } catch {
    return [];
  }
}

function jsonNumbers(value: unknown): Record<string, number> {
  try {
    const parsed: unknown = JSON.parse(String(value));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
    const out: Record<string, number> = {};
    for (const [key, entry] of Object.entries(parsed)) if (typeof entry === 'number') out[key] = entry;
    return out;
  } catch {
    return {};
  }
}

export async function putWriterMark(db: SqlDriver, mark: WriterMark): Promise<void> {
  await db.run(
    `INSERT INTO tagger_record_writers (writer_id, written_through_ms, heartbeat_ms, flush_ms) VALUES (?, ?, ?, ?)
     ON CONFLICT (writer_id) DO UPDATE SET written_through_ms = excluded.written_through_ms,
       heartbeat_ms = excluded.heartbeat_ms, flush_ms = excluded.flush_ms`,
    [
      mark.writerId,
      Math.trunc(mark.writtenThroughMs),
      Math.trunc(mark.heartbeatMs),
      Math.trunc(mark.flushMs),
    ],
  );
}

export async function removeWriterMark(db: SqlDriver, writerId: string): Promise<void> {
  await db.run('DELETE FROM tagger_record_writers WHERE writer_id = ?', [writerId]);
}

export async function writerMarks(db: SqlDriver): Promise<WriterMark[]> {
  const rows = await db.all(
    'SELECT writer_id, written_through_ms, heartbeat_ms, flush_ms FROM tagger_record_writers',
  );
  return rows.map((row) => ({
    writerId: String(row.writer_id),
    writtenThroughMs: Number(row.written_through_ms),
    heartbeatMs: Number(row.heartbeat_ms),
    flushMs: Number(row.flush_ms),
  }));
}

/** Writers not heard of since before `beforeMs` (crashed ones) are forgotten with old records. */
export async function pruneWriterMarks(tx: SqlExecutor, beforeMs: number): Promise<void> {
  await tx.run('DELETE FROM tagger_record_writers WHERE heartbeat_ms < ?', [beforeMs]);
}

/**
 * The run's most recent unlabelled predictions with a text, newest first. Walks the primary key down
 * from the newest id (the window's bound is an id: see idBound), so it reads about `limit` rows plus the
 * labelled ones it skips.
 */
export async function reviewCandidates(
  db: SqlDriver,
  query: ReviewQuery,
  lowestId: string,
): Promise<ReviewCandidate[]> {
  const rows: SqlRow[] = await db.all(
    `SELECT p.prediction_id, p.created_ms, p.run_id, p.multi_label, p.predicted_tag, p.predicted_tags,
            p.probabilities, p.confidence, p.unseen_share, p.text
     FROM tagger_predictions p
     WHERE p.prediction_id >= ? AND p.scope = ? AND p.run_id = ? AND p.text IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM tagger_feedback f WHERE f.prediction_id = p.prediction_id)
     ORDER BY p.prediction_id DESC LIMIT ?`,
    [lowestId, query.scope, query.runId, query.limit],
  );
  return rows.map((row) => ({
    predictionId: String(row.prediction_id),
    createdMs: Number(row.created_ms),
    runId: String(row.run_id),
    multiLabel: Number(row.multi_label) === 1,
    predictedTag: String(row.predicted_tag),
    predictedTags: row.predicted_tags === null ? [String(row.predicted_tag)] : jsonList(row.predicted_tags),
    probabilities: jsonNumbers(row.probabilities),
    confidence: Number(row.confidence),
    unseenShare: Number(row.unseen_share),
    text: row.text === null || row.text === undefined ? null : String(row.text),
  }));
}

export async function putLabelReviews(db: SqlDriver, reviews: readonly LabelReview[]): Promise<void> {
  await db.transaction(async (tx) => {
    for (const review of reviews) {
      await tx.run(
        `INSERT INTO tagger_label_reviews (scope, text_key, text, given_tags, decision, tags, run_id, received_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (scope, text_key) DO UPDATE SET text = excluded.text, given_tags = excluded.given_tags,
           decision = excluded.decision, tags = excluded.tags, run_id = excluded.run_id,
           received_ms = excluded.received_ms`,
        [
          review.scope,
          review.textKey,
          review.text.replaceAll('\u0000', '\uFFFD'),
          JSON.stringify(review.givenTags),
          review.decision,
          JSON.stringify(review.tags),
          review.runId,
          Math.trunc(review.receivedMs),
        ],
      );
    }
  });
}

export async function labelReviews(db: SqlDriver, scope: string): Promise<LabelReview[]> {
  const rows = await db.all(
    `SELECT scope, text_key, text, given_tags, decision, tags, run_id, received_ms FROM tagger_label_reviews
     WHERE scope = ? ORDER BY received_ms, text_key`,
    [scope],
  );
  return rows.map((row) => ({
    scope: String(row.scope),
    textKey: String(row.text_key).trim(),
    text: String(row.text),
    givenTags: jsonList(row.given_tags),
    decision: String(row.decision) === 'fix' ? 'fix' : 'keep',
    tags: jsonList(row.tags),
    runId: String(row.run_id),
    receivedMs: Number(row.received_ms),
  }));
}

const leaseOf = (row: SqlRow): Lease => ({
  name: String(row.name),
  holder: String(row.holder),
  acquiredMs: Number(row.acquired_ms),
  expiresMs: Number(row.expires_ms),
});

/**
 * One transaction: read the lease, take it when it is free, expired or the holder's own, and read it back.
 * SQLite's write lock and PostgreSQL's row lock (`FOR UPDATE` after the insert-if-missing) make two
 * takers at once see each other.
 */
export async function takeLease(
  db: SqlDriver,
  name: string,
  holder: string,
  ttlMs: number,
  nowMs: number,
): Promise<Lease> {
  return db.transaction(async (tx) => {
    await tx.run(
      'INSERT INTO tagger_leases (name, holder, acquired_ms, expires_ms) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING',
      [name, holder, nowMs, nowMs + ttlMs],
    );
    const lock = db.dialect === 'postgresql' ? ' FOR UPDATE' : '';
    const [row] = await tx.all(
      `SELECT name, holder, acquired_ms, expires_ms FROM tagger_leases WHERE name = ?${lock}`,
      [name],
    );
    const current = leaseOf(row!);
    if (current.holder === holder || current.expiresMs <= nowMs) {
      const acquiredMs = current.holder === holder ? current.acquiredMs : nowMs;
      await tx.run('UPDATE tagger_leases SET holder = ?, acquired_ms = ?, expires_ms = ? WHERE name = ?', [
        holder,
        acquiredMs,
        nowMs + ttlMs,
        name,
      ]);
      return { name, holder, acquiredMs, expiresMs: nowMs + ttlMs };
    }
    return current;
  });
}

export async function releaseLease(db: SqlDriver, name: string, holder: string): Promise<void> {
  await db.run('DELETE FROM tagger_leases WHERE name = ? AND holder = ?', [name, holder]);
}
