/**
 * A SQL record store (SQLite or PostgreSQL) whose connection lives in a worker thread
 * (record-store-worker.ts): no SQLite call — synchronous in `node:sqlite` — and none of the completing of
 * captured records ever runs on the thread that answers requests. The main thread posts each
 * `RecordStore` call and awaits its answer; the worker runs them one after another.
 *
 * Captured batches go as columns (batch.ts); a run's training words go to the worker once, not with
 * every batch (both sides keep the last VOCABULARIES_KEPT, evicting in the same order). The worker may
 * wait for the database (another process's write lock, PostgreSQL restarting) up to its timeouts;
 * meanwhile calls queue here, and the recorder's own bound decides what is dropped. A worker that dies
 * fails the calls in flight and is started again by the next call.
 */
import { Worker } from 'node:worker_threads';
import { VOCABULARIES_KEPT } from './batch.js';
import type {
  CapturedBatch,
  FeedbackEntry,
  FeedbackQuery,
  FeedbackWindow,
  LabelledQuery,
  LabelledRecord,
  LabelReview,
  Lease,
  PredictionRecord,
  RecordedPrediction,
  RecordStore,
  RecordStoreErrorCode,
  ReviewCandidate,
  ReviewQuery,
  WindowCounts,
  WindowQuery,
  WriterMark,
} from './record-store.js';
import { RecordStoreError } from './record-store.js';
import type { CallMessage, PostedBatch, WorkerAnswer, WorkerSetup } from './record-store-worker.js';

/** How long the worker waits for another process's SQLite write lock before a call fails (busy). */
const BUSY_TIMEOUT_MS = 5_000;
/** The worker's heap cap: a batch, a page of results and a few vocabularies at a time. */
const WORKER_HEAP_MB = 96;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export interface ThreadedRecordStoreOptions {
  displayUri: string;
  readOnly?: boolean;
}

export class ThreadedRecordStore implements RecordStore {
  private worker: Worker | undefined;
  private starting: Promise<Worker> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;
  /** Vocabulary keys the current worker has, oldest first. */
  private sent: string[] = [];

  private constructor(
    private readonly target: WorkerSetup['target'],
    private readonly options: ThreadedRecordStoreOptions,
  ) {}

  get displayUri(): string {
    return this.options.displayUri;
  }

  /** Starts the worker and opens (creating unless read-only) the tables; rejects with a RecordStoreError. */
  static async open(
    target: WorkerSetup['target'],
    options: ThreadedRecordStoreOptions,
  ): Promise<ThreadedRecordStore> {
    const store = new ThreadedRecordStore(target, options);
    await store.start();
    return store;
  }

  private start(): Promise<Worker> {
    this.starting ??= new Promise<Worker>((resolve, reject) => {
      const fromSource = import.meta.url.endsWith('.ts');
      const setup: WorkerSetup = {
        mark: 'tagger-record-store',
        target: this.target,
        displayUri: this.options.displayUri,
        readOnly: this.options.readOnly ?? false,
        busyTimeoutMs: BUSY_TIMEOUT_MS,
      };
      const worker = new Worker(
        new URL(`./record-store-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url),
        {
          workerData: setup,
          resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 16 },
          // Started from the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
          ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
        },
      );
      // Never the reason a process stays alive: the server and the CLI close the store themselves.
      worker.unref();
      let ready = false;
      worker.on('message', (answer: WorkerAnswer) => {
        if (answer.kind === 'ready') {
          ready = true;
          this.worker = worker;
          this.sent = [];
          resolve(worker);
        } else if (answer.kind === 'failed') {
          reject(new RecordStoreError(answer.code as RecordStoreErrorCode, answer.message));
        } else {
          const pending = this.pending.get(answer.id);
          if (pending === undefined) return;
          this.pending.delete(answer.id);
          if (answer.kind === 'result') pending.resolve(answer.value);
          else pending.reject(new RecordStoreError(answer.code as RecordStoreErrorCode, answer.message));
        }
      });
      const gone = (why: string): void => {
        const error = new RecordStoreError('UNAVAILABLE', `records: the thread of ${this.displayUri} ${why}`);
        if (!ready) reject(error);
        for (const pending of this.pending.values()) pending.reject(error);
        this.pending.clear();
        if (this.worker === worker) this.worker = undefined;
        this.starting = undefined;
      };
      worker.on('error', (error) => gone(`failed: ${error.message}`));
      worker.on('exit', (code) => gone(`stopped (exit code ${code})`));
    });
    // A failed start is not remembered: the next call tries again.
    this.starting.catch(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async post<T>(message: Omit<CallMessage, 'id'>): Promise<T> {
    if (this.closed) throw new RecordStoreError('UNAVAILABLE', `records: ${this.displayUri} is closed`);
    const worker = this.worker ?? (await this.start());
    return new Promise<T>((resolve, reject) => {
      const id = ++this.nextId;
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      worker.postMessage({ ...message, id } as CallMessage);
    });
  }

  private call<T>(method: Exclude<CallMessage['method'], 'appendCaptured'>, ...args: unknown[]): Promise<T> {
    return this.post({ method, args } as Omit<CallMessage, 'id'>);
  }

  append(records: readonly PredictionRecord[]): Promise<void> {
    return this.call('append', records);
  }

  async appendCaptured(batch: CapturedBatch): Promise<void> {
    if (this.worker === undefined) await this.start();
    const newVocabularies: [string, string[]][] = [];
    for (const origin of batch.origins) {
      const key = origin.vocabularyKey;
      if (key === null || this.sent.includes(key)) continue;
      const vocabulary = batch.vocabularies.get(key);
      if (vocabulary === undefined) continue;
      newVocabularies.push([key, [...vocabulary.words]]);
      this.sent.push(key);
    }
    // The worker forgets the oldest beyond VOCABULARIES_KEPT as it learns new ones, in the same order.
    if (this.sent.length > VOCABULARIES_KEPT) this.sent.splice(0, this.sent.length - VOCABULARIES_KEPT);
    const { vocabularies: _byReference, ...columns } = batch;
    const posted: PostedBatch = { ...columns, newVocabularies };
    return this.post({ method: 'appendCaptured', args: [posted] });
  }

  find(scope: string, ids: readonly string[]): Promise<Map<string, RecordedPrediction>> {
    return this.call('find', scope, ids);
  }

  putFeedback(entries: readonly FeedbackEntry[]): Promise<Set<string>> {
    return this.call('putFeedback', entries);
  }

  windowCounts(query: WindowQuery): Promise<WindowCounts> {
    return this.call('windowCounts', query);
  }

  feedbackWindow(query: FeedbackQuery): Promise<FeedbackWindow> {
    return this.call('feedbackWindow', query);
  }

  labelled(query: LabelledQuery): Promise<LabelledRecord[]> {
    return this.call('labelled', query);
  }

  prune(beforeMs: number, keepRows?: number): Promise<number> {
    return this.call('prune', beforeMs, keepRows);
  }

  ping(): Promise<void> {
    return this.call('ping');
  }

  putWriterMark(mark: WriterMark): Promise<void> {
    return this.call('putWriterMark', mark);
  }

  removeWriterMark(writerId: string): Promise<void> {
    return this.call('removeWriterMark', writerId);
  }

  writerMarks(): Promise<WriterMark[]> {
    return this.call('writerMarks');
  }

  reviewCandidates(query: ReviewQuery): Promise<ReviewCandidate[]> {
    return this.call('reviewCandidates', query);
  }

  putLabelReviews(reviews: readonly LabelReview[]): Promise<void> {
    return this.call('putLabelReviews', reviews);
  }

  labelReviews(scope?: string): Promise<LabelReview[]> {
    return this.call('labelReviews', scope);
  }

  takeLease(name: string, holder: string, ttlMs: number, nowMs: number): Promise<Lease> {
    return this.call('takeLease', name, holder, ttlMs, nowMs);
  }

  releaseLease(name: string, holder: string): Promise<void> {
    return this.call('releaseLease', name, holder);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    const worker = this.worker;
    if (worker !== undefined) {
      // Calls already posted finish first: the worker answers them in order, then closes.
      await this.call('close').catch(() => undefined);
    }
    this.closed = true;
    await worker?.terminate();
  }
}
