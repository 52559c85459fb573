/**
 * The worker thread of a SQLite record store (sqlite-record-store.ts): it owns the database connection
 * and runs every call of the `RecordStore` interface that the main thread posts, one after another.
 * `node:sqlite` is synchronous — a write waiting for another process's lock, an fsync or a large delete
 * would stop the whole event loop — so here it stops only this thread, never a request.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteDriver } from '../tracking/sql/driver.js';
import { type RecordStore, RecordStoreError } from './record-store.js';
import { SqlRecordStore } from './sql-record-store.js';

export interface WorkerSetup {
  mark: 'tagger-sqlite-records';
  file: string;
  displayUri: string;
  readOnly: boolean;
  busyTimeoutMs: number;
}

export type CallMessage = { id: number; method: keyof RecordStore; args: unknown[] };
export type WorkerAnswer =
  | { kind: 'ready' }
  | { kind: 'failed'; code: string; message: string }
  | { kind: 'result'; id: number; value: unknown }
  | { kind: 'error'; id: number; code: string; message: string };

const describe = (error: unknown): { code: string; message: string } => ({
  code: error instanceof RecordStoreError ? error.code : 'UNAVAILABLE',
  message: error instanceof Error ? error.message : String(error),
});

async function serve(setup: WorkerSetup): Promise<void> {
  const port = parentPort!;
  let store: SqlRecordStore;
  try {
    const driver = SqliteDriver.open(setup.file, {
      busyTimeoutMs: setup.busyTimeoutMs,
      readOnly: setup.readOnly,
    });
    store = await SqlRecordStore.open(driver, { displayUri: setup.displayUri, readOnly: setup.readOnly });
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
  // One call at a time, in arrival order: the connection has one transaction at a time anyway.
  let queue: Promise<unknown> = Promise.resolve();
  port.on('message', (message: CallMessage) => {
    queue = queue.then(async () => {
      try {
        const method = store[message.method] as (...args: unknown[]) => Promise<unknown>;
        const value = await method.apply(store, message.args);
        port.postMessage({ kind: 'result', id: message.id, value } satisfies WorkerAnswer);
      } catch (error) {
        port.postMessage({ kind: 'error', id: message.id, ...describe(error) } satisfies WorkerAnswer);
      }
    });
  });
}

const setup = workerData as WorkerSetup | undefined;
if (parentPort && setup?.mark === 'tagger-sqlite-records') void serve(setup);
