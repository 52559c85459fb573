/**
 * A run is never left RUNNING for ever. A run is RUNNING only while `tagger train` (or `optimize`) logs
 * it — it is created after the training, so that is seconds — and a failure marks it FAILED. But when
 * the store itself is what failed (PostgreSQL lost late in logging), marking it FAILED fails too:
 *
 * - `markEnded` keeps trying for END_STATUS_WAIT_MS while the store is unreachable (a database that
 *   restarts is back within seconds);
 * - every run records which process logs it (LOGGING_PROCESS_TAG: host and pid, and when it started),
 *   and the next `train` or `optimize` on the experiment (`failOrphanedRuns`) marks FAILED the RUNNING
 *   runs whose process is gone: on this host, a pid that no longer runs; anywhere, a logging that
 *   started more than ORPHAN_AFTER_MS ago (no logging takes hours; pids are reused).
 */
import { hostname } from 'node:os';
import { type RunStatus, TrackingError, type TrackingStore } from '../tracking/store.js';

/** Tag: the process logging the run, `<host> <pid>`. */
export const LOGGING_PROCESS_TAG = 'tagger.logging.process';
/** Tag: when its logging started (epoch milliseconds). */
export const LOGGING_STARTED_TAG = 'tagger.logging.started';
/** Tag: why a run was marked FAILED by another process than the one logging it. */
export const FAILURE_TAG = 'tagger.failure';

/** How long a failed logging keeps trying to mark its run FAILED while the store is unreachable. */
export const END_STATUS_WAIT_MS = 20_000;
/** A RUNNING run whose logging started this long ago is orphaned, whatever host logged it. */
export const ORPHAN_AFTER_MS = 6 * 3_600_000;

/** The tags a run starts with: which process logs it, since when. */
export function loggingTags(now = Date.now()): Record<string, string> {
  return { [LOGGING_PROCESS_TAG]: `${hostname()} ${process.pid}`, [LOGGING_STARTED_TAG]: String(now) };
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/**
 * Sets the run's final status; while the store is unreachable (TrackingError UNAVAILABLE), tries again
 * with back-off for at most `waitMs` (none once `signal` is aborted: a person who pressed Ctrl-C is not
 * kept waiting). Resolves true when the status was stored.
 */
export async function markEnded(
  store: TrackingStore,
  runId: string,
  status: RunStatus,
  options: {
    waitMs?: number;
    signal?: AbortSignal;
    /** Told once, when the first attempt failed and it waits for the store (for a line to the user). */
    onWait?: (waitMs: number) => void;
  } = {},
): Promise<boolean> {
  const waitMs = options.waitMs ?? END_STATUS_WAIT_MS;
  const deadline = Date.now() + waitMs;
  for (let wait = 250, first = true; ; wait = Math.min(wait * 2, 2_000), first = false) {
    try {
      await store.updateRun(runId, { status, endTime: Date.now() });
      return true;
    } catch (error) {
      const unreachable = error instanceof TrackingError && error.code === 'UNAVAILABLE';
      if (!unreachable || options.signal?.aborted || Date.now() + wait > deadline) return false;
      if (first) options.onWait?.(waitMs);
      await sleep(wait);
    }
  }
}

/** Whether process `pid` runs on this host. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface OrphanedRun {
  runId: string;
  runName: string;
  /** The process that was logging it, `<host> <pid>`. */
  process: string;
}

/**
 * Marks FAILED the RUNNING runs of `experiment` whose logging process is gone (see the module comment),
 * with FAILURE_TAG saying so; resolves with them. Runs without LOGGING_PROCESS_TAG (another tool's) are
 * left alone.
 */
export async function failOrphanedRuns(
  store: TrackingStore,
  experiment: string,
  now = Date.now(),
  isRunning: (pid: number) => boolean = running,
): Promise<OrphanedRun[]> {
  const found = await store.getExperimentByName(experiment);
  if (found === null || found.lifecycleStage !== 'active') return [];
  const here = hostname();
  const orphaned: OrphanedRun[] = [];
  for (const run of await store.searchRuns(found.experimentId)) {
    const owner = run.tags[LOGGING_PROCESS_TAG];
    if (run.info.status !== 'RUNNING' || owner === undefined) continue;
    const [host, pidText] = owner.split(' ');
    const pid = Number(pidText);
    const started = Number(run.tags[LOGGING_STARTED_TAG]);
    const gone =
      (host === here && Number.isInteger(pid) && pid !== process.pid && !isRunning(pid)) ||
      (Number.isFinite(started) && now - started > ORPHAN_AFTER_MS);
    if (!gone) continue;
    await store.logBatch(run.info.runId, {
      tags: {
        [FAILURE_TAG]: `its tagger process (${owner}) ended while logging it, before it could mark it FAILED; marked FAILED by the next tagger on this experiment at ${new Date(now).toISOString()}`,
      },
    });
    await store.updateRun(run.info.runId, { status: 'FAILED', endTime: now });
    orphaned.push({ runId: run.info.runId, runName: run.info.runName, process: owner });
  }
  return orphaned;
}
