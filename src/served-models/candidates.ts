/**
 * How the run to serve is chosen: the experiment's runs in f1 order, then the first FINISHED run that
 * passes the promotion gates (./gates.ts) and whose artifacts load — or, explicitly, a pinned run, the
 * run a cluster's other workers serve, or what a model URI points at. Runs that outrank the served one
 * but are not served are reported (`HeldRun`) and logged once per reason (`SkipLog`).
 */
import { type ModelUri, resolveModelUri, versionLabel } from '../tracking/model-uri.js';
import { type Run, TrackingError, type TrackingStore } from '../tracking/store.js';
import { loadServedModel, type ModelLoading, type ServedModel } from './artifacts.js';
import { StartupError } from './errors.js';
import { gateFailure, type PromotionGates, referenceRun } from './gates.js';
import type { ServiceLog } from './log.js';
import { readerFor, type ServedSnapshot, type ServedTarget, toRunLoadError } from './served-snapshot.js';

/**
 * What to do when there is nothing to serve, appended to every startup failure about runs: a training
 * into the experiment and store that were asked for (before issue 42 it named neither, so `serve
 * --experiment nope` suggested a training into `best`, which would not have helped). A store's display URI
 * is masked (no credentials), so it is safe to print.
 */
export function trainHint(experiment: string, storeUri: string): string {
  const quote = (value: string) =>
    /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
  const flags = [
    ...(experiment === 'best' ? [] : ['--experiment', quote(experiment)]),
    '--tracking-uri',
    quote(storeUri),
  ];
  return `train one first, e.g. \`tagger train --data samples/projects.csv ${flags.join(' ')}\``;
}

/** The experiment's runs in f1 order, or why there are none to serve (`hint`: what a person can do). */
export type RunsRead =
  | { ok: true; runs: Run[] }
  | { ok: false; reason: string; hint?: string; cause?: unknown };

export async function readRuns(store: TrackingStore, name: string): Promise<RunsRead> {
  const where = `experiment "${name}" in ${store.displayUri}`;
  try {
    const experiment = await store.getExperimentByName(name);
    if (experiment === null) {
      return {
        ok: false,
        reason: `${where} does not exist`,
        hint: `${trainHint(name, store.displayUri)}, or pick another with --experiment / --tracking-uri`,
      };
    }
    if (experiment.lifecycleStage === 'deleted') {
      return {
        ok: false,
        reason: `${where} is deleted`,
        hint: 'restore it or pick another with --experiment',
      };
    }
    const runs = await store.searchRuns(experiment.experimentId, {
      orderByMetric: { key: 'f1', descending: true },
    });
    if (runs.length === 0)
      return { ok: false, reason: `${where} has no runs`, hint: trainHint(name, store.displayUri) };
    return { ok: true, runs };
  } catch (error) {
    return { ok: false, reason: `cannot read ${where}: ${(error as Error).message}`, cause: error };
  }
}

/** The pinned run's model, or a StartupError saying why it cannot be served. */
export async function loadPinned(
  store: TrackingStore,
  runs: readonly Run[],
  runId: string,
  experiment: string,
  loading: ModelLoading = {},
): Promise<ServedModel> {
  const run = runs.find((candidate) => candidate.info.runId === runId);
  if (run === undefined) {
    throw new StartupError(
      `--run-id ${runId} is not a run of experiment "${experiment}" in ${store.displayUri} (it has ${runs.length} runs); pick one from GET /runs, or drop --run-id to serve the best run`,
    );
  }
  try {
    return await loadServedModel(readerFor(store, runId), loading);
  } catch (error) {
    throw new StartupError(
      `--run-id ${runId} (status ${run.info.status}) cannot be served: ${toRunLoadError(runId, error).reason}`,
      { cause: error },
    );
  }
}

export interface FoundTarget {
  runId: string;
  target: ServedTarget;
  /** The active runs of the target run's experiment, in f1 order. */
  runs: Run[];
}

/** Resolves a model URI to a run of an active experiment, with that experiment's runs. */
export async function findTarget(store: TrackingStore, uri: ModelUri): Promise<FoundTarget> {
  const resolved = await resolveModelUri(store, uri);
  const via = resolved.version
    ? `${versionLabel(resolved.version)} points at run ${resolved.runId}`
    : `run ${resolved.runId}`;
  const run = await store.getRun(resolved.runId);
  if (run === null) throw new TrackingError('NOT_FOUND', `tracking: ${via}, which does not exist`);
  if (run.info.lifecycleStage === 'deleted')
    throw new TrackingError('NOT_FOUND', `tracking: ${via}, which is deleted`);
  const runs = await store.searchRuns(run.info.experimentId, {
    orderByMetric: { key: 'f1', descending: true },
  });
  // Listed runs come from a search made after getRun: keep the target even if the search missed it.
  if (!runs.some((candidate) => candidate.info.runId === run.info.runId)) runs.push(run);
  return { runId: resolved.runId, target: { uri: uri.uri, version: resolved.version }, runs };
}

/** A store failure in words fit for clients (no paths or URIs of the server). */
export function publicTrackingReason(error: unknown): string {
  const reasons: Partial<Record<TrackingError['code'], string>> = {
    NOT_FOUND: 'the model, alias, version or run it names does not exist',
    INVALID_ARGUMENT: 'the tracking store refused the request',
    UNAVAILABLE: 'the tracking store cannot be reached',
    UNAUTHENTICATED: 'the tracking store refused this server',
    PERMISSION_DENIED: 'the tracking store refused this server',
    MALFORMED: 'the tracking store answered with malformed data',
    UNSUPPORTED: 'the tracking store has no Model Registry this server can use',
  };
  return (error instanceof TrackingError && reasons[error.code]) || 'unexpected error';
}

/** `2 RUNNING, 1 FAILED`: how many runs have each status. */
export function describeStatuses(runs: readonly Run[]): string {
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.info.status, (counts.get(run.info.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
}

export interface Picked {
  best?: { runId: string; model: ServedModel };
  /** `runId: reason` of each run skipped (and of the served run whose artifacts no longer load). */
  failures: string[];
  /** Runs ranked above the picked one that are not served, and why (words fit for clients). */
  held?: HeldRun[];
}

/** A run that outranks the served one but is not served. */
export interface HeldRun {
  runId: string;
  kind: 'gates' | 'unloadable';
  /** Why, without the store's paths or URIs. */
  reason: string;
  /** Registry mode: the version the model URI points at (`models:/tagger/4`), which is this run. */
  target?: string;
}

/** What readiness and metrics report beyond "a model is loaded". */
export interface ServingProblems {
  /** Why the last reload could not read the store (then the runs loaded before keep serving), or null. */
  store: string | null;
  heldBack: readonly HeldRun[];
}

/**
 * The first run in f1 order whose artifacts load. On a reload the currently served run counts as
 * loadable whatever its artifacts say now: its model is in memory and keeps serving; its artifacts are
 * still read once to notice (and log) a store that lost them.
 */
/** The preferred run when it is one of `runs` and loads; undefined otherwise (then the best is picked). */
export async function loadPreferred(
  store: TrackingStore,
  runs: readonly Run[],
  runId: string | undefined,
  log: ServiceLog,
  loading: ModelLoading = {},
): Promise<Picked | undefined> {
  if (runId === undefined || !runs.some((run) => run.info.runId === runId && isCandidate(run)))
    return undefined;
  try {
    return {
      best: { runId, model: await loadServedModel(readerFor(store, runId), loading) },
      failures: [],
    };
  } catch (error) {
    log.warn(
      { runId, reason: toRunLoadError(runId, error).reason },
      'the run the other workers serve cannot be loaded here; serving the best loadable run',
    );
    return undefined;
  }
}

/**
 * Logs a skipped run once per (run, reason) for the life of the served runs, not at every poll: a broken
 * run that outranks the served one is otherwise re-read and re-logged every reload interval.
 */
export class SkipLog {
  private readonly seen = new Map<string, string>();
  constructor(
    private readonly log: ServiceLog,
    /** False: another process of the group reports these; log them at debug level only. */
    private readonly reports = true,
  ) {}

  warn(runId: string, reason: string, message: string): void {
    if (this.seen.get(runId) === reason) return;
    this.seen.set(runId, reason);
    if (this.reports) this.log.warn({ runId, reason }, message);
    else this.log.debug?.({ runId, reason }, message);
  }
}

/** Only finished runs are candidates: a RUNNING run is still logging (or was killed), a FAILED one broke. */
export const isCandidate = (run: Run): boolean => run.info.status === 'FINISHED';

/**
 * The served model of run `runId`, or — for a cascade served without its encoder (allowDegraded) whose
 * encoder opens here now — the run's model loaded again with it: a reload gives the cascade its encoder
 * back once it is installed. Any failure keeps the served model (its artifacts are checked as any served
 * run's).
 */
export async function withEncoderRestored(
  store: TrackingStore,
  runId: string,
  served: ServedModel,
  loading: ModelLoading,
): Promise<ServedModel> {
  if (served.degraded === undefined) return served;
  try {
    const model = await loadServedModel(readerFor(store, runId), loading);
    return model.degraded === undefined ? model : served;
  } catch {
    return served;
  }
}

export async function pickBest(
  store: TrackingStore,
  runs: readonly Run[],
  skips: SkipLog,
  current: ServedSnapshot | undefined,
  gates: PromotionGates,
  loading: ModelLoading = {},
): Promise<Picked> {
  const failures: string[] = [];
  const held: HeldRun[] = [];
  // From the runs alone, never from what this process served: every process picks the same run.
  const reference = referenceRun(runs, gates);
  for (const run of runs) {
    const runId = run.info.runId;
    if (runId === current?.bestRunId && gateFailure(run, gates, reference) === null) {
      const restored = await withEncoderRestored(store, runId, current.best, loading);
      if (restored !== current.best) return { best: { runId, model: restored }, failures, held };
      try {
        // A check only: the served model (and its encoder) stays as it is.
        await loadServedModel(readerFor(store, runId), { ...loading, checkOnly: true });
      } catch (error) {
        const reason = toRunLoadError(runId, error).reason;
        failures.push(`${runId}: ${reason}`);
        skips.warn(
          runId,
          reason,
          "the served run's artifacts cannot be loaded any more; still serving the model loaded before",
        );
      }
      return { best: { runId, model: current.best }, failures, held };
    }
    if (!isCandidate(run)) continue;
    const gate = gateFailure(run, gates, reference);
    if (gate !== null) {
      held.push({ runId, kind: 'gates', reason: gate });
      skips.warn(runId, gate, 'not serving a run that does not pass the promotion gates');
      continue;
    }
    try {
      return {
        best: { runId, model: await loadServedModel(readerFor(store, runId), loading) },
        failures,
        held,
      };
    } catch (error) {
      const loadError = toRunLoadError(runId, error);
      failures.push(`${runId}: ${loadError.reason}`);
      held.push({ runId, kind: 'unloadable', reason: loadError.publicReason });
      skips.warn(runId, loadError.reason, 'skipping a run whose artifacts cannot be loaded');
    }
  }
  return { failures, held };
}
