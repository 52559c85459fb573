/**
 * Picks a prediction-record store from a URI (`TAGGER_RECORD_STORE`): `sqlite:///file.db` and
 * `postgresql://…` → the SQL adapter in a worker thread, `memory:` → this process only. Unset,
 * it is the tracking store's own database when that is SQLite or PostgreSQL — so every replica that
 * shares the runs shares the records — and otherwise a local SQLite file, `tagger-records.db` in the
 * working directory, shared by the `--workers` of one machine and read by `tagger feedback export`.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { redactUri } from '../tracking/redact.js';
import { MemoryRecordStore } from './memory-record-store.js';
import { type RecordStore, RecordStoreError } from './record-store.js';
import { ThreadedRecordStore } from './threaded-record-store.js';

/** The local default when the tracking store is not a database (a folder, an MLflow server, none). */
export const LOCAL_RECORD_STORE = 'sqlite:///tagger-records.db';
export const MEMORY_RECORD_STORE = 'memory:';

const schemeOf = (uri: string): string | undefined =>
  /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase().split('+')[0];

/** Where records go when TAGGER_RECORD_STORE is unset (see the module comment). */
export function defaultRecordStoreUri(trackingUri: string | null): string {
  const scheme = trackingUri === null ? undefined : schemeOf(trackingUri);
  return trackingUri !== null && (scheme === 'sqlite' || scheme === 'postgresql' || scheme === 'postgres')
    ? trackingUri
    : LOCAL_RECORD_STORE;
}

/** Refuses what cannot be a record store, with the forms that can (checked at startup, before opening). */
export function checkRecordStoreUri(uri: string): void {
  const scheme = schemeOf(uri);
  if (uri === MEMORY_RECORD_STORE || scheme === 'sqlite' || scheme === 'postgresql' || scheme === 'postgres')
    return;
  throw new RecordStoreError(
    'INVALID_ARGUMENT',
    `records: ${redactUri(uri)} is not a record store; use sqlite:///path.db, postgresql://… or memory:`,
  );
}

export interface OpenRecordStoreOptions {
  /** Only read (`tagger feedback export`): create nothing; a store without records is NOT_FOUND. */
  readOnly?: boolean;
}

/** Opens the store a URI names (creating its tables unless read-only); rejects with a RecordStoreError. */
export async function openRecordStore(
  uri: string,
  options: OpenRecordStoreOptions = {},
): Promise<RecordStore> {
  checkRecordStoreUri(uri);
  if (uri === MEMORY_RECORD_STORE) return new MemoryRecordStore();
  const displayUri = redactUri(uri);
  const readOnly = options.readOnly ?? false;
  // Loaded on first use, as the tracking store loads it; the database itself (node:sqlite or pg) is
  // opened in the record store's worker thread, not here.
  const { parseSqlUri } = await import('../tracking/sql/sql-store.js');
  let target: ReturnType<typeof parseSqlUri>;
  try {
    target = parseSqlUri(uri);
  } catch (error) {
    throw new RecordStoreError(
      'INVALID_ARGUMENT',
      (error as Error).message.replace(/^tracking: /, 'records: '),
    );
  }
  if (target.dialect === 'sqlite') {
    if (readOnly && !existsSync(target.file)) {
      throw new RecordStoreError(
        'NOT_FOUND',
        `records: there is no database at ${target.file} (${displayUri}): no server recorded predictions there`,
      );
    }
    if (!readOnly) {
      try {
        mkdirSync(dirname(target.file), { recursive: true });
      } catch (error) {
        throw new RecordStoreError(
          'UNAVAILABLE',
          `records: cannot create the folder of ${target.file}: ${(error as Error).message}`,
        );
      }
    }
  }
  return ThreadedRecordStore.open(
    target.dialect === 'sqlite'
      ? { dialect: 'sqlite', file: target.file }
      : { dialect: 'postgresql', url: target.url },
    { displayUri, readOnly },
  );
}
