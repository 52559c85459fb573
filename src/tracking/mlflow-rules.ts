/**
 * MLflow's rules, stated once for every adapter (file layout, REST, SQL): what a key, a value, an
 * experiment name, a run status and an artifact path may be, which metric value is "the latest", and
 * how to walk a paged listing safely. Before this module the adapters each restated them and disagreed
 * (the file store accepted `a//b.txt`, the REST store refused it). Pure: no I/O.
 *
 * The limits are MLflow's (`mlflow/utils/validation.py`): keys ≤ 250 characters of `[/\w.\- :]`,
 * param values ≤ 6000, tag values ≤ 8000 characters. Keys must also be normalised relative paths,
 * because the file layout stores a key with `/` as nested files.
 */
import { posix } from 'node:path';
import type { CreateRunOptions, LogBatch, MetricPoint, RunInfo, RunStatus } from './store.js';
import { TrackingError } from './store.js';

export { compareByMetric, compareNatural, sortRuns } from './order.js';

export const MAX_KEY_LENGTH = 250;
export const MAX_PARAM_VALUE_LENGTH = 6000;
export const MAX_TAG_VALUE_LENGTH = 8000;
export const MAX_EXPERIMENT_NAME_LENGTH = 256;
export const RUN_NAME_TAG = 'mlflow.runName';
export const RUN_STATUSES: readonly RunStatus[] = ['RUNNING', 'SCHEDULED', 'FINISHED', 'FAILED', 'KILLED'];
const TERMINAL: ReadonlySet<RunStatus> = new Set(['FINISHED', 'FAILED', 'KILLED']);

const KEY_RE = /^[/\w.\- :]*$/;

export const invalid = (message: string): TrackingError =>
  new TrackingError('INVALID_ARGUMENT', `tracking: ${message}`);

/** A metric, param or tag key: MLflow's characters and length, and a normalised relative path. */
export function validateKey(kind: 'metric' | 'param' | 'tag', key: string): void {
  if (typeof key !== 'string' || key.length === 0) throw invalid(`${kind} key must be a non-empty string`);
  if (key.length > MAX_KEY_LENGTH) {
    throw invalid(`${kind} key '${key.slice(0, 40)}...' is longer than ${MAX_KEY_LENGTH} characters`);
  }
  if (!KEY_RE.test(key)) {
    throw invalid(
      `${kind} key '${key}' has characters MLflow does not allow; use letters, digits, '_', '-', '.', ' ', ':' and '/'`,
    );
  }
  const normalized = posix.normalize(key);
  if (normalized !== key || normalized === '.' || normalized.startsWith('..') || normalized.startsWith('/')) {
    throw invalid(
      `${kind} key '${key}' is not a normalized relative path (no '..', '.', leading or double '/')`,
    );
  }
}

export function validateMetric(point: MetricPoint): void {
  validateKey('metric', point.key);
  if (typeof point.value !== 'number') throw invalid(`metric '${point.key}' value must be a number`);
  if (!Number.isSafeInteger(point.timestamp)) {
    throw invalid(`metric '${point.key}' timestamp must be an integer (epoch milliseconds)`);
  }
  if (!Number.isSafeInteger(point.step)) throw invalid(`metric '${point.key}' step must be an integer`);
}

export function validateParam(key: string, value: string): void {
  validateKey('param', key);
  if (typeof value !== 'string') throw invalid(`param '${key}' value must be a string`);
  if (value.length > MAX_PARAM_VALUE_LENGTH) {
    throw invalid(`param '${key}' value is longer than MLflow's ${MAX_PARAM_VALUE_LENGTH} characters`);
  }
}

export function validateTag(key: string, value: string): void {
  validateKey('tag', key);
  if (typeof value !== 'string') throw invalid(`tag '${key}' value must be a string`);
  if (value.length > MAX_TAG_VALUE_LENGTH) {
    throw invalid(`tag '${key}' value is longer than MLflow's ${MAX_TAG_VALUE_LENGTH} characters`);
  }
}

/** A whole batch, validated before anything is written, so a rejected batch writes nothing. */
export interface ValidBatch {
  metrics: MetricPoint[];
  params: [string, string][];
  tags: [string, string][];
}

export function validateBatch(batch: LogBatch): ValidBatch {
  const metrics = batch.metrics ?? [];
  const params = Object.entries(batch.params ?? {});
  const tags = Object.entries(batch.tags ?? {});
  for (const point of metrics) validateMetric(point);
  for (const [key, value] of params) validateParam(key, value);
  for (const [key, value] of tags) validateTag(key, value);
  return { metrics, params, tags };
}

/** The error for a param logged again with another value (MLflow: params are immutable). */
export function paramChanged(runId: string, key: string, existing: string, value: string): TrackingError {
  return invalid(
    `param '${key}' of run ${runId} is already '${existing}'; params cannot change (tried '${value}'), use a tag or a new run`,
  );
}

export function validateExperimentName(name: string): void {
  if (typeof name !== 'string' || name.trim() === '')
    throw invalid('experiment name must be a non-empty string');
  if (name.length > MAX_EXPERIMENT_NAME_LENGTH) {
    throw invalid(`experiment name is longer than ${MAX_EXPERIMENT_NAME_LENGTH} characters`);
  }
}

/** What `createRun` records: the run name (option or `mlflow.runName` tag, which must agree), tags, start. */
export function newRunFields(options: CreateRunOptions): {
  runName: string;
  tags: Record<string, string>;
  startTime: number;
  userId: string;
} {
  const tags = { ...(options.tags ?? {}) };
  for (const [key, value] of Object.entries(tags)) validateTag(key, value);
  if (typeof options.runName !== 'string') throw invalid('runName must be a string');
  const taggedName = tags[RUN_NAME_TAG];
  if (taggedName !== undefined && options.runName !== '' && taggedName !== options.runName) {
    throw invalid(`runName '${options.runName}' differs from tag ${RUN_NAME_TAG} '${taggedName}'`);
  }
  const runName = options.runName !== '' ? options.runName : (taggedName ?? '');
  if (runName !== '') tags[RUN_NAME_TAG] = runName;
  const startTime = options.startTime ?? Date.now();
  if (!Number.isSafeInteger(startTime) || startTime < 0)
    throw invalid('startTime must be epoch milliseconds');
  const userId = options.userId ?? '';
  if (typeof userId !== 'string') throw invalid('userId must be a string');
  return { runName, tags, startTime, userId };
}

/** The record of a run `createRun` just made: RUNNING, active, not ended. */
export function newRunInfo(
  ids: { runId: string; experimentId: string; artifactUri: string },
  fields: { runName: string; startTime: number; userId: string },
): RunInfo {
  return {
    ...ids,
    runName: fields.runName,
    userId: fields.userId,
    status: 'RUNNING',
    startTime: fields.startTime,
    endTime: null,
    lifecycleStage: 'active',
  };
}

/**
 * A status change: the status must be one of MLflow's, `endTime` epoch milliseconds; for terminal
 * statuses the end time defaults to now (like `MlflowClient.set_terminated`), otherwise to `current`.
 */
export function statusUpdate(
  update: { status: RunStatus; endTime?: number },
  current: number | null,
): { status: RunStatus; endTime: number | null } {
  if (!RUN_STATUSES.includes(update.status)) throw invalid(`'${String(update.status)}' is not a run status`);
  if (update.endTime !== undefined && (!Number.isSafeInteger(update.endTime) || update.endTime < 0)) {
    throw invalid('endTime must be epoch milliseconds');
  }
  return {
    status: update.status,
    endTime: update.endTime ?? (TERMINAL.has(update.status) ? Date.now() : current),
  };
}

/**
 * A run-relative artifact path as POSIX segments. One rule for every adapter: a leading `./` and
 * trailing `/` are ignored; empty, `.` and `..` segments (`a//b`, `a/./b`, `../x`), absolute paths,
 * backslashes and NUL are refused. `''` is the artifact root, allowed only when `allowRoot` (listing).
 */
export function artifactSegments(path: string, allowRoot: boolean): string[] {
  if (typeof path !== 'string') throw invalid('artifact path must be a string');
  const trimmed = path.replace(/^(\.\/+)+/, '').replace(/\/+$/, '');
  if (trimmed === '' || trimmed === '.') {
    if (allowRoot && !path.startsWith('/')) return [];
    throw invalid(
      path.startsWith('/')
        ? `artifact path '${path}' must be a relative POSIX path`
        : 'artifact path must name a file, not the artifact root',
    );
  }
  const segments = trimmed.split('/');
  if (
    trimmed.startsWith('/') ||
    trimmed.includes('\\') ||
    trimmed.includes('\0') ||
    /^[a-zA-Z]:/.test(trimmed) ||
    segments.some((segment) => segment === '' || segment === '.' || segment === '..')
  ) {
    throw invalid(
      `'${path}' is not a run-relative artifact path (use POSIX segments without '.', '..', '//' or a leading '/')`,
    );
  }
  return segments;
}

/** MLflow's latest value: `max(points, key=(step, timestamp, value))`, first maximum wins. */
export function latestMetric(points: readonly MetricPoint[]): MetricPoint | undefined {
  let best: MetricPoint | undefined;
  for (const point of points) if (best === undefined || isLater(point, best)) best = point;
  return best;
}

/** True when `point` replaces `current` as the latest value (MLflow's `(step, timestamp, value)` order). */
export function isLater(point: MetricPoint, current: MetricPoint): boolean {
  return (
    point.step > current.step ||
    (point.step === current.step &&
      (point.timestamp > current.timestamp ||
        (point.timestamp === current.timestamp && point.value > current.value)))
  );
}

/** More pages than any real listing has: a server that keeps paging is broken. */
export const MAX_PAGES = 10_000;

/**
 * Collects every page of a paged listing (MLflow's `page_token` protocol). Stops on an empty or
 * missing token; a token seen before (a server that repeats a page) or more than `MAX_PAGES` pages
 * end with `MALFORMED` instead of looping or duplicating items.
 */
export async function collectPages<T>(
  fetchPage: (token: string | undefined) => Promise<{ items: T[]; nextPageToken?: string | undefined }>,
  what: string,
): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const answer = await fetchPage(token);
    items.push(...answer.items);
    token = answer.nextPageToken || undefined;
    if (token === undefined) return items;
    if (seen.has(token)) {
      throw new TrackingError(
        'MALFORMED',
        `tracking: ${what}: the server repeated the page token '${token}'`,
      );
    }
    seen.add(token);
  }
  throw new TrackingError(
    'MALFORMED',
    `tracking: ${what}: the server kept sending pages beyond ${MAX_PAGES}`,
  );
}
