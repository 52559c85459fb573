import type { HashedVocabulary } from '../model/index.js';

/**
 * The one interface of prediction-record stores: where served predictions are recorded and feedback
 * labels are joined to them. Adapters: `sql-record-store.ts` (SQLite — run in a worker thread by
 * `threaded-record-store.ts` — and PostgreSQL, in tables of Tagger's own beside MLflow's) and
 * `memory-record-store.ts` (one process, bounded). All of them pass one contract suite
 * (test/monitoring/contract.ts).
 *
 * Records are written once and never changed: feedback lives in its own table, keyed by the prediction
 * id, so a label can be given again (the later one wins) but can never alter what was predicted. Every
 * lookup is confined to a `scope` (the served experiment, or one saved model), so feedback sent to one
 * server never reaches another experiment's predictions in a shared database.
 */

/** One served prediction as it is recorded. */
export interface PredictionRecord {
  /** The `prediction_id` the client got (a UUID). */
  predictionId: string;
  createdMs: number;
  /** The experiment id in run-based mode, `model:<directory>` in single-model mode (see `recordScope`). */
  scope: string;
  /** The run whose model answered; '' in single-model mode. */
  runId: string;
  /** Registry mode: `<name>/<version>` of the registered model version; null otherwise. */
  modelVersion: string | null;
  multiLabel: boolean;
  /** The model's answer (`predicted_tag`). */
  predictedTag: string;
  /** The model's own tags: `[predicted_tag]`, or a multi-label model's (before a request's top_k/threshold). */
  predictedTags: readonly string[];
  /** Every tag's probability: its keys are the tags the run knows. */
  probabilities: Readonly<Record<string, number>>;
  confidence: number;
  unseenShare: number;
  textLength: number;
  /** The text as sent; null when only its hash is kept (TAGGER_RECORD_TEXT=hash). */
  text: string | null;
  /** SHA-256 of the text, hex, when only the hash is kept (TAGGER_RECORD_TEXT=hash); else null. */
  textSha256: string | null;
}

/**
 * Captured predictions on their way to a store, column by column (see batch.ts, which completes them
 * into records). Where some of a batch's predictions came from (one entry per served run seen in the batch). */
export interface BatchOrigin {
  scope: string;
  runId: string;
  modelVersion: string | null;
  multiLabel: boolean;
  /** The tags the model knows, in the order of `probabilities`. */
  tags: readonly string[];
  /** Names the run's training words (see `vocabularies`); null: no reference profile. */
  vocabularyKey: string | null;
}

export interface CapturedBatch {
  origins: BatchOrigin[];
  /** Per record: its origin's index. */
  origin: number[];
  ids: string[];
  createdMs: number[];
  texts: string[];
  predictedTag: string[];
  /** A multi-label model's own tags; null for a single-label one (`[predictedTag]`). */
  predictedTags: (string[] | null)[];
  /** Every record's probabilities in its origin's tag order, one after another. */
  probabilities: Float64Array;
  /** Whether the text is kept (else only its SHA-256). */
  keepText: boolean;
  /**
   * The training words of the vocabulary keys the origins name, by reference: a worker thread is sent a
   * vocabulary once (see threaded-record-store.ts), not with every batch.
   */
  vocabularies: ReadonlyMap<string, Vocabulary>;
}

/** A run's training words (its reference profile's), as a list and as a set. */
export interface Vocabulary {
  words: readonly string[];
  set: ReadonlySet<string>;
  /** The words by hash, for the fast path (src/model/drift/profile.ts: unseenShareHashed). */
  hashed: HashedVocabulary;
}

/** What feedback needs to know about a recorded prediction. */
export interface RecordedPrediction {
  predictionId: string;
  runId: string;
  multiLabel: boolean;
  /** The tags the run knows (the recorded probabilities' keys), sorted. */
  tags: string[];
  createdMs: number;
}

/** A feedback label for a recorded prediction. */
export interface FeedbackEntry {
  predictionId: string;
  /** The recorded prediction's scope and run (copied, so live quality reads one table's index). */
  scope: string;
  runId: string;
  /** The right tags (one for a single-label run). */
  tags: readonly string[];
  receivedMs: number;
}

/** The bins of the numeric signals, by lower edges (see src/model/drift/profile.ts). */
export interface WindowBins {
  confidence: readonly number[];
  unseen_ngrams: readonly number[];
  text_length: readonly number[];
}

export interface WindowQuery {
  scope: string;
  runId: string;
  /** Only predictions made at or after this time (epoch ms). */
  sinceMs: number;
  /** At most this many, the most recent. */
  limit: number;
  bins: WindowBins;
}

/** Histograms of the prediction window (counts per bin, in the query's bins; tags by name). */
export interface WindowCounts {
  predictions: number;
  predicted_tag: Record<string, number>;
  confidence: number[];
  unseen_ngrams: number[];
  text_length: number[];
}

export interface FeedbackQuery {
  scope: string;
  runId: string;
  /** Only feedback received at or after this time (epoch ms). */
  sinceMs: number;
  /** At most this many, the most recently received. */
  limit: number;
}

export interface FeedbackWindow {
  /** Each labelled prediction: the model's tags and the tags given. */
  labelled: { predicted: string[]; truth: string[] }[];
  /** When the run's most recent feedback arrived (any time, not only in the window); null: never. */
  lastReceivedMs: number | null;
}

/** A labelled record for a training file. */
export interface LabelledRecord {
  predictionId: string;
  runId: string;
  createdMs: number;
  /** null: only the hash was kept, so it cannot become a training row. */
  text: string | null;
  multiLabel: boolean;
  tags: string[];
}

export interface LabelledQuery {
  /** Only this scope (an experiment id, or `model:<dir>`); undefined: every scope. */
  scope?: string | undefined;
  runId?: string | undefined;
  /** Feedback received at or after this time. */
  sinceMs?: number | undefined;
  /** Keyset paging: records with a prediction id after this one. */
  after?: string | undefined;
  limit: number;
}

export interface RecordStore {
  /** For messages and logs (passwords masked). */
  readonly displayUri: string;
  /** Appends records (one transaction); an id recorded before is kept as it was. */
  append(records: readonly PredictionRecord[]): Promise<void>;
  /**
   * Completes and appends a captured batch where the store does its work (a worker thread), so the
   * completing never runs on the caller's thread; stores without it get `append(completeBatch(…))`.
   */
  appendCaptured?(batch: CapturedBatch): Promise<void>;
  /** The recorded predictions of `scope` among `ids` (unknown ids are left out). */
  find(scope: string, ids: readonly string[]): Promise<Map<string, RecordedPrediction>>;
  /** Stores feedback, replacing earlier feedback for the same prediction; resolves with the ids replaced. */
  putFeedback(entries: readonly FeedbackEntry[]): Promise<Set<string>>;
  /** Histograms of a run's most recent predictions. */
  windowCounts(query: WindowQuery): Promise<WindowCounts>;
  /** A run's recently labelled predictions. */
  feedbackWindow(query: FeedbackQuery): Promise<FeedbackWindow>;
  /** Labelled records in prediction-id order, one page at a time. */
  labelled(query: LabelledQuery): Promise<LabelledRecord[]>;
  /**
   * Deletes predictions made before `beforeMs` and, with `keepRows`, all but the `keepRows` newest of
   * the whole store (every scope: the bound is about the disk), with their feedback, in transactions of
   * a bounded size; resolves with how many predictions.
   */
  prune(beforeMs: number, keepRows?: number): Promise<number>;
  /**
   * One cheap round trip to the database (SQL: `SELECT 1`), rejecting while it cannot be reached; the
   * recorder probes a store that failed with it. Stores without a database (memory) have none.
   */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

export type RecordStoreErrorCode = 'UNAVAILABLE' | 'NOT_FOUND' | 'INVALID_ARGUMENT' | 'UNSUPPORTED';

/** A failure of a record store, with a message for a person (`records: …`). */
export class RecordStoreError extends Error {
  override readonly name = 'RecordStoreError';
  constructor(
    readonly code: RecordStoreErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The scope of a served experiment's predictions, or of a saved model's (single-model mode). */
export const recordScope = (served: { experimentId: string } | { modelDir: string }): string =>
  'experimentId' in served ? served.experimentId : `model:${served.modelDir}`;
