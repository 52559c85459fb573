/**
 * Picks a `TrackingStore` from a tracking URI, the way MLflow reads `MLFLOW_TRACKING_URI`:
 * `http://` / `https://` → an MLflow tracking server (REST); `sqlite:///…` and `postgresql://…` → a
 * database in MLflow's relational schema; `file://` URIs and plain paths → an `mlruns` folder in MLflow's
 * file layout. Other schemes (`mysql:`, `databricks`, ...) are refused with a clear message rather than
 * guessed at.
 */
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FileTrackingStore, type FileTrackingStoreOptions, storeRootFromUri } from './file/file-store.js';
import { redactUri } from './redact.js';
import { RestTrackingStore, type RestTrackingStoreOptions } from './rest/rest-store.js';
import type { SqlTrackingStoreOptions } from './sql/sql-store.js';
import { TrackingError, type TrackingStore } from './store.js';

export { FileTrackingStore, type FileTrackingStoreOptions } from './file/file-store.js';
export * from './model-registry.js';
export * from './model-uri.js';
export { compareByMetric, compareNatural, sortRuns } from './order.js';
export { maskQuery, redactUri } from './redact.js';
export { RestTrackingStore, type RestTrackingStoreOptions } from './rest/rest-store.js';
export type { SqlTrackingStoreOptions } from './sql/sql-store.js';
export * from './store.js';

/** MLflow's default since 3.7 when nothing is configured: a SQLite file in the working directory. */
export const DEFAULT_TRACKING_URI = 'sqlite:///mlflow.db';
/** MLflow's default before 3.7, which it keeps using where it already holds experiments. */
export const LEGACY_TRACKING_URI = './mlruns';

/**
 * MLflow's default store (`_get_default_tracking_uri`): `./mlruns` when that folder already holds an
 * experiment (a numbered folder with meta.yaml), so existing stores keep working; else `sqlite:///mlflow.db`.
 */
export function defaultTrackingUri(cwd: string = process.cwd()): string {
  try {
    for (const entry of readdirSync(join(cwd, LEGACY_TRACKING_URI), { withFileTypes: true })) {
      if (
        entry.isDirectory() &&
        /^\d+$/.test(entry.name) &&
        existsSync(join(cwd, LEGACY_TRACKING_URI, entry.name, 'meta.yaml'))
      ) {
        return LEGACY_TRACKING_URI;
      }
    }
  } catch {
    // No ./mlruns (or unreadable): the new default.
  }
  return DEFAULT_TRACKING_URI;
}

export interface OpenTrackingStoreOptions
  extends FileTrackingStoreOptions,
    SqlTrackingStoreOptions,
    Omit<RestTrackingStoreOptions, 'uri'> {}

/** The first bytes of every SQLite 3 database file. */
const SQLITE_HEADER = 'SQLite format 3\u0000';

function startsLikeSqlite(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(SQLITE_HEADER.length);
    readSync(fd, head, 0, head.length, 0);
    return head.toString('latin1') === SQLITE_HEADER;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * A path given for a folder store (no scheme, or `file:`) that is a file, or a new path named like a
 * database (`mlflow.db`): the `sqlite:` scheme was most likely forgotten. Says so, with the URI meant,
 * instead of creating an mlruns folder under that name or failing to create folders inside a file.
 */
function notAFolderStore(uri: string, fileScheme: boolean): TrackingError | null {
  const root = storeRootFromUri(uri);
  const meant = `sqlite:///${fileScheme ? root : uri}`;
  const databaseName = /\.(db|sqlite3?)$/i.test(root);
  let isFile: boolean;
  let empty: boolean;
  try {
    const info = statSync(root);
    isFile = !info.isDirectory();
    empty = info.size === 0;
  } catch {
    if (fileScheme || !databaseName) return null;
    return new TrackingError(
      'INVALID_ARGUMENT',
      `tracking: ${uri} (${root}) does not exist, and a path without a scheme names an mlruns folder, which would be created under this database-like name: did you mean \`${meant}\`? (For a folder of that name, give file://${root}.)`,
    );
  }
  if (!isFile) return null;
  // An empty file is an empty SQLite database to SQLite.
  return startsLikeSqlite(root) || (empty && databaseName)
    ? new TrackingError(
        'INVALID_ARGUMENT',
        `tracking: ${uri} (${root}) is a SQLite file, not an mlruns folder: did you mean \`${meant}\`?`,
      )
    : new TrackingError(
        'INVALID_ARGUMENT',
        `tracking: ${uri} (${root}) is a file, not an mlruns folder; give a folder (MLflow's mlruns layout), sqlite:///path.db for a SQLite database, or http(s)://host:port for a tracking server`,
      );
}

/** The flag when given, else `MLFLOW_TRACKING_URI` (when non-empty), else MLflow's default (`defaultTrackingUri`). */
export function resolveTrackingUri(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag !== undefined && flag !== '') return flag;
  const fromEnv = env.MLFLOW_TRACKING_URI;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return fromEnv.trim();
  return defaultTrackingUri();
}

/**
 * Opens the store for `uri`. A file store's folder is created (with MLflow's default experiment `0`)
 * if missing, so permission problems show up here rather than mid-training — unless `readOnly`, which
 * creates nothing anywhere (a missing store is NOT_FOUND, naming the absolute path looked at). A path
 * for a folder store that is a SQLite file (or a new one named like a database) is refused with the
 * `sqlite:///…` URI that was most likely meant.
 */
export async function openTrackingStore(
  uri: string,
  options: OpenTrackingStoreOptions = {},
): Promise<TrackingStore> {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') {
    const { onWarning: _unused, artifactRoot: _local, readOnly: _reads, ...restOptions } = options;
    return new RestTrackingStore({ ...restOptions, uri });
  }
  const dialect = scheme?.split('+')[0];
  if (dialect === 'sqlite' || dialect === 'postgresql' || dialect === 'postgres') {
    // Loaded on first use: node:sqlite and pg cost startup time and memory a file or REST store never needs.
    const { SqlTrackingStore } = await import('./sql/sql-store.js');
    return SqlTrackingStore.open(uri, redactUri(uri), {
      ...(options.artifactRoot !== undefined ? { artifactRoot: options.artifactRoot } : {}),
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
      ...(options.readOnly ? { readOnly: true } : {}),
    });
  }
  // One-letter "schemes" are Windows drive letters (C:\mlruns), i.e. paths.
  if (scheme === undefined || scheme === 'file' || scheme.length === 1) {
    const mistake = notAFolderStore(uri, scheme === 'file');
    if (mistake) throw mistake;
    return FileTrackingStore.open(uri, {
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
      ...(options.readOnly ? { readOnly: true } : {}),
    });
  }
  throw new TrackingError(
    'UNSUPPORTED',
    `tracking: tracking URI scheme '${scheme}:' is not supported (${redactUri(uri)}); use http(s)://host:port for an MLflow server, sqlite:///path.db or postgresql://… for a database in MLflow's schema, or a folder path / file:// URI for a local mlruns store`,
  );
}
