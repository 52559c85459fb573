/**
 * The worker thread of a SQL record store (threaded-record-store.ts): it owns the database connection —
 * SQLite or PostgreSQL — and runs every call of the `RecordStore` interface the main thread posts, one
 * after another. It also completes captured batches (batch.ts: unseen-word shares, hashes, JSON) before
 * writing them. `node:sqlite` is synchronous — a write waiting for another process's lock, an fsync or a
 * large delete would stop a whole event loop — and completing records costs a few microseconds each:
 * here they stop only this thread, never one answering requests.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { hashVocabulary } from '../model/index.js';
import { PostgresDriver, type SqlDriver, SqliteDriver } from '../tracking/sql/driver.js';
import { completeBatch, VOCABULARIES_KEPT } from './batch.js';
import { type CapturedBatch, type RecordStore, RecordStoreError, type Vocabulary } from './record-store.js';
import { SqlRecordStore } from './sql-record-store.js';

export interface WorkerSetup {
  mark: 'tagger-record-store';
  target: { dialect: 'sqlite'; file: string } | { dialect: 'postgresql'; url: string };
  displayUri: string;
  readOnly: boolean;
  busyTimeoutMs: number;
}

/** A batch as posted: its vocabularies only as word lists, and only those this worker lacks. */
export type PostedBatch = Omit<CapturedBatch, 'vocabularies'> & { newVocabularies: [string, string[]][] };

export type CallMessage =
  | { id: number; method: Exclude<keyof RecordStore, 'displayUri' | 'appendCaptured'>; args: unknown[] }
  | { id: number; method: 'appendCaptured'; args: [PostedBatch] };
export type WorkerAnswer =
  | { kind: 'ready' }
  | { kind: 'failed'; code: string; message: string }
  | { kind: 'result'; id: number; value: unknown }
  | { kind: 'error'; id: number; code: string; message: string };

const describe = (error: unknown): { code: string; message: string } => ({
  code: error instanceof RecordStoreError ? error.code : 'UNAVAILABLE',
  message: error instanceof Error ? error.message : String(error),
});

async function open(setup: WorkerSetup): Promise<SqlRecordStore> {
  const driver: SqlDriver =
    setup.target.dialect === 'sqlite'
      ? SqliteDriver.open(setup.target.file, {
          busyTimeoutMs: setup.busyTimeoutMs,
          readOnly: setup.readOnly,
          // Records are a stream: an fsync per batch cost half of each write (measured), and WAL stays
          // consistent without it.
          synchronous: 'normal',
        })
      : await PostgresDriver.open(setup.target.url, { maxConnections: 2 });
  return SqlRecordStore.open(driver, { displayUri: setup.displayUri, readOnly: setup.readOnly });
}

async function serve(setup: WorkerSetup): Promise<void> {
  const port = parentPort!;
  let store: SqlRecordStore;
  try {
    store = await open(setup);
  } catch (error) {
    const failure = describe(error);
    port.postMessage({
      kind: 'failed',
      code: failure.code,
      message:
        error instanceof RecordStoreError
          ? failure.message
          : `records: cannot open ${setup.displayUri}: ${failure.message}`,
    } satisfies WorkerAnswer);
    return;
  }
  port.postMessage({ kind: 'ready' } satisfies WorkerAnswer);
  const vocabularies = new Map<string, Pick<Vocabulary, 'set' | 'hashed'>>();
  const call = async (message: CallMessage): Promise<unknown> => {
    if (message.method === 'appendCaptured') {
      const [batch] = message.args;
      for (const [key, words] of batch.newVocabularies) {
        vocabularies.set(key, { set: new Set(words), hashed: hashVocabulary(words) });
        // The oldest first, as the main thread forgets them (threaded-record-store.ts).
        while (vocabularies.size > VOCABULARIES_KEPT) vocabularies.delete(vocabularies.keys().next().value!);
      }
      return store.append(completeBatch(batch, vocabularies));
    }
    const method = store[message.method] as (...args: unknown[]) => Promise<unknown>;
    return method.apply(store, message.args);
  };
  // One call at a time, in arrival order: the connection has one transaction at a time anyway.
  let queue: Promise<unknown> = Promise.resolve();
  port.on('message', (message: CallMessage) => {
    queue = queue.then(async () => {
      try {
        const value = await call(message);
        port.postMessage({ kind: 'result', id: message.id, value } satisfies WorkerAnswer);
      } catch (error) {
        port.postMessage({ kind: 'error', id: message.id, ...describe(error) } satisfies WorkerAnswer);
      }
    });
  });
}

const setup = workerData as WorkerSetup | undefined;
if (parentPort && setup?.mark === 'tagger-record-store') void serve(setup);
