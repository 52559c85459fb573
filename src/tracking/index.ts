/**
 * Picks a `TrackingStore` from a tracking URI, the way MLflow reads `MLFLOW_TRACKING_URI`:
 * `http://` / `https://` → an MLflow tracking server (REST); `sqlite:///…` and `postgresql://…` → a
 * database in MLflow's relational schema; `file://` URIs and plain paths → an `mlruns` folder in MLflow's
 * file layout. Other schemes (`mysql:`, `databricks`, ...) are refused with a clear message rather than
 * guessed at.
 */
import { FileTrackingStore, type FileTrackingStoreOptions } from './file-store.js';
import { RestTrackingStore, type RestTrackingStoreOptions } from './rest-store.js';
import { SqlTrackingStore, type SqlTrackingStoreOptions } from './sql/sql-store.js';
import { TrackingError, type TrackingStore } from './store.js';

export { FileTrackingStore, type FileTrackingStoreOptions } from './file-store.js';
export { compareByMetric, compareNatural, sortRuns } from './order.js';
export { RestTrackingStore, type RestTrackingStoreOptions } from './rest-store.js';
export { SqlTrackingStore, type SqlTrackingStoreOptions } from './sql/sql-store.js';
export * from './store.js';

/** MLflow's default when nothing is configured (a folder relative to the working directory). */
export const DEFAULT_TRACKING_URI = './mlruns';

export interface OpenTrackingStoreOptions
  extends FileTrackingStoreOptions,
    SqlTrackingStoreOptions,
    Omit<RestTrackingStoreOptions, 'uri'> {}

/**
 * The URI without credentials (`scheme://user:password@host` → `scheme://host`), for messages and logs.
 * @example redactUri('http://admin:secret@127.0.0.1:5000') // 'http://127.0.0.1:5000'
 */
export function redactUri(uri: string): string {
  return uri.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^/?#]*@/, '$1');
}

/** The flag when given, else `MLFLOW_TRACKING_URI` (when non-empty), else `./mlruns`. */
export function resolveTrackingUri(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag !== undefined && flag !== '') return flag;
  const fromEnv = env.MLFLOW_TRACKING_URI;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return fromEnv.trim();
  return DEFAULT_TRACKING_URI;
}

/**
 * Opens the store for `uri`. A file store's folder is created (with MLflow's default experiment `0`)
 * if missing, so permission problems show up here rather than mid-training.
 */
export async function openTrackingStore(
  uri: string,
  options: OpenTrackingStoreOptions = {},
): Promise<TrackingStore> {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') {
    const { onWarning: _unused, artifactRoot: _local, ...restOptions } = options;
    return new RestTrackingStore({ ...restOptions, uri });
  }
  const dialect = scheme?.split('+')[0];
  if (dialect === 'sqlite' || dialect === 'postgresql' || dialect === 'postgres') {
    return SqlTrackingStore.open(uri, redactUri(uri), {
      ...(options.artifactRoot !== undefined ? { artifactRoot: options.artifactRoot } : {}),
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
  }
  // One-letter "schemes" are Windows drive letters (C:\mlruns), i.e. paths.
  if (scheme === undefined || scheme === 'file' || scheme.length === 1) {
    return FileTrackingStore.open(uri, options.onWarning ? { onWarning: options.onWarning } : {});
  }
  throw new TrackingError(
    'UNSUPPORTED',
    `tracking: tracking URI scheme '${scheme}:' is not supported (${redactUri(uri)}); use http(s)://host:port for an MLflow server, sqlite:///path.db or postgresql://… for a database in MLflow's schema, or a folder path / file:// URI for a local mlruns store`,
  );
}
