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
  /**
   * A cascade run's predictions: which stage answered (`fast`, `encoder`, or `fast_degraded`: routed, but
   * the fast model answered because the encoder's queue was full); null for every other run.
   */
  stage?: string | null;
  /**
   * The protocol the request came in by (issue 41): `tagger` (POST /predict, /runs/{run_id}/predict), `oip`
   * (the Open Inference Protocol), `hf` (the Hugging Face text-classification shape); null for records
   * written before Tagger kept it.
   */
  protocol?: string | null;
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
  /** A cascade's stage that answered each record; null for other runs (PredictionRecord.stage). */
  stage?: (string | null)[];
  /** The protocol each record's request came in by (PredictionRecord.protocol). */
  protocol?: string[];
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

/**
 * How a labelled prediction was chosen for a person to label (the feedback item's `selection`):
 * `random_share` — drawn at random from the served run's recent predictions (the review queue's random
 * share, or a client's own random sample): the only labels that are an unbiased sample of the traffic,
 * so the only ones live precision / recall / f1 are computed from; `uncertainty`, `drift`, `newest`,
 * `random` — the review queue's other orders; `correction` — a person flagging an answer they saw was
 * wrong ("wrong tag?"); `unspecified` — not said (an API client). Every label feeds retraining.
 */
export const FEEDBACK_SELECTIONS = [
  'random_share',
  'uncertainty',
  'drift',
  'newest',
  'random',
  'correction',
  'unspecified',
] as const;
export type FeedbackSelection = (typeof FEEDBACK_SELECTIONS)[number];

/** A feedback label for a recorded prediction. */
export interface FeedbackEntry {
  predictionId: string;
  /** The recorded prediction's scope and run (copied, so live quality reads one table's index). */
  scope: string;
  runId: string;
  /** The right tags (one for a single-label run). */
  tags: readonly string[];
  receivedMs: number;
  /** How the prediction was chosen for labelling; absent: `unspecified`. */
  selection?: FeedbackSelection;
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
  /** A cascade run's predictions by the stage that answered (records of other runs have none). */
  stages: Record<string, number>;
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
  /** Each labelled prediction: the model's tags, the tags given and how it was chosen for labelling. */
  labelled: { predicted: string[]; truth: string[]; selection: FeedbackSelection; stage: string | null }[];
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
  /** When the label arrived, and how the prediction was chosen for labelling. */
  receivedMs: number;
  selection: FeedbackSelection;
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

/**
 * What one recording process (a writer: a server, a `--workers` process) has written: every prediction it
 * captured at or before `writtenThroughMs` is in the store (or was dropped and counted). Published every
 * flush interval, so feedback for an id that is not (yet) found can tell "still on its way from some
 * writer" from "truly unknown" (see feedback.ts).
 */
export interface WriterMark {
  writerId: string;
  writtenThroughMs: number;
  /** When the writer last published (its clock). */
  heartbeatMs: number;
  /** How often it publishes (its flush interval). */
  flushMs: number;
}

/** A recorded prediction as the review queue lists it. */
export interface ReviewCandidate {
  predictionId: string;
  createdMs: number;
  runId: string;
  multiLabel: boolean;
  predictedTag: string;
  predictedTags: string[];
  probabilities: Record<string, number>;
  confidence: number;
  unseenShare: number;
  /** null: only the hash was kept (such records are not listed). */
  text: string | null;
}

export interface ReviewQuery {
  scope: string;
  runId: string;
  /** Only predictions made at or after this time. */
  sinceMs: number;
  /** At most this many of the run's most recent unlabelled predictions. */
  limit: number;
}

/**
 * A person's decision on a training row that label-issue finding flagged: `keep` (the given tags are
 * right; the row is not listed again while its tags stay) or `fix` (the right tags are `tags`: a
 * correction that retraining applies and the export writes).
 */
export interface LabelReview {
  scope: string;
  /** SHA-256 of the row's text as duplicate checks compare it (src/train: sameText), hex. */
  textKey: string;
  /** The text as the label issue showed it (possibly cut). */
  text: string;
  /** The row's tags as given in the data. */
  givenTags: string[];
  decision: 'keep' | 'fix';
  /** `fix`: the right tags; `keep`: the given ones. */
  tags: string[];
  /** The run whose label issues listed it. */
  runId: string;
  receivedMs: number;
}

/** A lease on a name (one `tagger retrain` at a time): who holds it, until when. */
export interface Lease {
  name: string;
  holder: string;
  acquiredMs: number;
  expiresMs: number;
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
  /** Publishes a writer's mark (replacing its previous one). */
  putWriterMark(mark: WriterMark): Promise<void>;
  /** Forgets a writer (it stopped with nothing left to write). */
  removeWriterMark(writerId: string): Promise<void>;
  /** Every writer's latest mark. */
  writerMarks(): Promise<WriterMark[]>;
  /** A run's most recent predictions that have no feedback and kept their text, newest first. */
  reviewCandidates(query: ReviewQuery): Promise<ReviewCandidate[]>;
  /** Stores decisions on label issues (a later one for the same text replaces an earlier one). */
  putLabelReviews(reviews: readonly LabelReview[]): Promise<void>;
  /** The decisions on label issues of a scope. */
  labelReviews(scope: string): Promise<LabelReview[]>;
  /**
   * Takes (or, for its holder, renews) the lease on `name` until `nowMs + ttlMs` unless another holder's
   * lease has not expired; resolves with the lease as it now stands (its holder says who won).
   */
  takeLease(name: string, holder: string, ttlMs: number, nowMs: number): Promise<Lease>;
  /** Gives up a lease (only its holder's). */
  releaseLease(name: string, holder: string): Promise<void>;
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
