/**
 * The record store of a serving process, opened lazily and again after a failure: a store that cannot be
 * opened at startup (PostgreSQL down, a read-only volume) must not stop the server — predictions are
 * served and their records dropped and counted meanwhile — and is tried again at most every `retryMs`,
 * or every PROBE_OPEN_MS when the recorder probes it because records wait. A failure is logged when it
 * first happens and when the store opens again, not at every attempt.
 */
import { completeBatch } from './batch.js';
import type { CapturedBatch, RecordStore } from './record-store.js';
import { RecordStoreError } from './record-store.js';
import type { MonitoringLog, RecordSink } from './sink-queue.js';

/** How often a probe may try to open a store that could not be opened (each try starts a thread). */
export const PROBE_OPEN_MS = 1_000;

export class StoreHandle {
  private store: RecordStore | undefined;
  private opening: Promise<RecordStore> | undefined;
  private failure: { at: number; error: Error } | undefined;
  private closed = false;

  constructor(
    /** For logs and messages (no password). */
    readonly displayUri: string,
    private readonly open: () => Promise<RecordStore>,
    private readonly log: MonitoringLog,
    private readonly retryMs = 10_000,
  ) {}

  /** The store if it is open now, without opening it. */
  peek(): RecordStore | undefined {
    return this.store;
  }

  /**
   * The open store; rejects at once (with the last error) while a failed open is less than `retryMs`
   * (the handle's, by default) old.
   */
  get(retryMs = this.retryMs): Promise<RecordStore> {
    if (this.store) return Promise.resolve(this.store);
    if (this.closed)
      return Promise.reject(new RecordStoreError('UNAVAILABLE', `records: ${this.displayUri} is closed`));
    if (this.opening) return this.opening;
    if (this.failure && Date.now() - this.failure.at < retryMs) return Promise.reject(this.failure.error);
    this.opening = this.open().then(
      (store) => {
        this.opening = undefined;
        if (this.closed) {
          void store.close();
          throw new RecordStoreError('UNAVAILABLE', `records: ${this.displayUri} is closed`);
        }
        if (this.failure)
          this.log.info({ store: this.displayUri }, 'the prediction record store is open again');
        this.failure = undefined;
        this.store = store;
        return store;
      },
      (error: unknown) => {
        this.opening = undefined;
        const failure = error instanceof Error ? error : new Error(String(error));
        if (!this.failure) {
          this.log.warn(
            { store: this.displayUri, error: failure.message, retryMs: this.retryMs },
            'the prediction record store cannot be opened; predictions are served without records, feedback and live monitoring until it can',
          );
        }
        this.failure = { at: Date.now(), error: failure };
        throw failure;
      },
    );
    return this.opening;
  }

  /** The store as a sink of the recorder. */
  sink(): RecordSink {
    return {
      name: 'store',
      target: this.displayUri,
      // A SQL store's writes queue in its worker thread (see RecordSink.concurrency); others one at a time
      // is as good (memory) — the store is not known before it opens, and 8 is harmless for either.
      concurrency: 8,
      // Records wait for the store: open it if it is not (at most every PROBE_OPEN_MS), and ask it.
      probe: async () => {
        const store = await this.get(PROBE_OPEN_MS);
        await store.ping?.();
      },
      write: async (batch: CapturedBatch) => {
        const store = await this.get();
        // A SQL store completes the batch in its worker thread; any other store gets it completed here.
        return store.appendCaptured
          ? store.appendCaptured(batch)
          : store.append(completeBatch(batch, batch.vocabularies));
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const store = this.store ?? (await this.opening?.catch(() => undefined));
    this.store = undefined;
    await store?.close();
  }
}
