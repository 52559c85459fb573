/**
 * The run registry: the runs of one experiment, ordered best first, the best loadable run's model, and
 * other runs' models loaded on demand into a bounded cache. All of it lives in one immutable
 * `RegistrySnapshot`; `reload()` re-reads the experiment, loads a new best run in the background and
 * replaces the snapshot with one reference swap, so a request that started on the old snapshot finishes
 * on it. A run id from a request is looked up in the snapshot's run list (a Map) before anything is read.
 */
import { type ModelUri, resolveModelUri, versionLabel } from '../tracking/model-uri.js';
import type { ModelVersion } from '../tracking/registry.js';
import { type Run, type RunStatus, TrackingError, type TrackingStore } from '../tracking/store.js';
import {
  ArtifactFormatError,
  type ArtifactReader,
  loadServedModel,
  readPerformance,
  type ServedModel,
  type ServedPerformance,
} from './artifacts.js';
import { SingleFlightLru } from './cache.js';
import { NotLoggedError, RunLoadError, StartupError, UnknownRunError } from './errors.js';
import { DEFAULT_GATES, gateFailure, type PromotionGates } from './gates.js';
import { readHistory, readTestErrors, type ServedHistory, type ServedTestErrors } from './inspection.js';

/** The subset of a pino logger the service layer writes to. */
export interface ServiceLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  /** Optional: reloads that change nothing are logged here (once per poll would flood `info`). */
  debug?(obj: object, msg: string): void;
}

/** One run as listed by GET /runs, captured when the snapshot was made. */
export interface RunSummary {
  readonly runId: string;
  readonly experimentId: string;
  readonly runName: string;
  readonly status: RunStatus;
  /** Epoch milliseconds. */
  readonly startTime: number;
  /** Epoch milliseconds; null while the run has not ended. */
  readonly endTime: number | null;
  /** Latest value of each metric; may be NaN or ±Infinity. */
  readonly metrics: Readonly<Record<string, number>>;
  readonly params: Readonly<Record<string, string>>;
}

/**
 * What a reload did:
 * - `unchanged`: same runs, same best run; the snapshot is kept as is.
 * - `updated`: the run list changed (new, removed or changed runs) but the same run stays best; a new
 *   snapshot holds the new list and the same loaded model.
 * - `swapped`: another run is now the best loadable one; its model was loaded and now serves /predict.
 * - `failed`: the experiment could not be read (store down, experiment gone, no runs) or none of its
 *   runs is loadable; the current snapshot keeps serving.
 */
export type ReloadOutcome = 'unchanged' | 'updated' | 'swapped' | 'failed';

export interface ReloadResult {
  readonly outcome: ReloadOutcome;
  /** The run serving /predict after the reload (the previous one unless `swapped`). */
  readonly runId: string;
  readonly previousRunId: string;
  /**
   * What went wrong without stopping the reload (runs skipped because their artifacts cannot be loaded,
   * the served run's artifacts no longer loading) or, when `failed`, why it failed (first entry).
   */
  readonly problems: readonly string[];
}

export interface RunRegistryOptions {
  /** Experiment to serve, e.g. `best`. */
  experiment: string;
  /** How many non-best models to keep loaded (least recently used are dropped). */
  modelCacheSize: number;
  log: ServiceLog;
  /**
   * Called after every reload with its outcome and the run serving /predict afterwards (for metrics).
   * A listener that throws is ignored: reporting must not break serving.
   */
  onReload?: (outcome: ReloadOutcome, runId: string) => void;
  /**
   * A run to serve at first instead of the best one, when it is among the experiment's runs and loads:
   * a worker replacing one that died serves what its siblings serve (they may not have reloaded a newer
   * best run yet); the next reload moves it along with them.
   */
  preferRunId?: string | undefined;
  /** Which runs may go live (default DEFAULT_GATES). */
  gates?: PromotionGates;
  /**
   * Serve this run and never swap (`tagger serve --run-id`): reloads still refresh the run list. The
   * choice is explicit, so the gates do not apply; the run must be one of the experiment's and load.
   */
  pinRunId?: string | null | undefined;
  /**
   * Serve what a model URI points at (`tagger serve --model-uri models:/tagger@champion`) and follow it:
   * each reload resolves it again and swaps when it points at another run. An explicit choice, so the
   * gates do not apply; the listed runs are those of the served run's experiment.
   */
  modelUri?: ModelUri | null | undefined;
  /**
   * Whether this process logs skipped and held-back runs at warn level (default true). Cluster workers
   * all reload on their own; only one of them reports, the others log those lines at debug level.
   */
  reportsSkips?: boolean | undefined;
}

/** What a model URI resolved to when the snapshot was made (registry mode). */
export interface ServedTarget {
  /** The URI as configured, e.g. `models:/tagger@champion`. */
  readonly uri: string;
  /** The registered version behind it; null for `runs:/` URIs. */
  readonly version: ModelVersion | null;
}

/** What to do when there is nothing to serve, appended to every startup failure about runs. */
const TRAIN_HINT = 'train one first, e.g. `tagger train --data samples/projects.csv`';

const summarize = (run: Run): RunSummary =>
  Object.freeze({
    runId: run.info.runId,
    experimentId: run.info.experimentId,
    runName: run.info.runName,
    status: run.info.status,
    startTime: run.info.startTime,
    endTime: run.info.endTime,
    metrics: Object.freeze(Object.fromEntries(Object.entries(run.metrics))),
    params: Object.freeze(Object.fromEntries(Object.entries(run.params))),
  });

/** What a store failure means for a client, without the store's paths or URIs. */
const PUBLIC_STORE_REASONS: Partial<Record<TrackingError['code'], string>> = {
  NOT_FOUND: 'is missing from the tracking store',
  UNAVAILABLE: 'cannot be read: the tracking store cannot be reached; retry later',
  UNAUTHENTICATED: 'cannot be read: the tracking store refused this server',
  PERMISSION_DENIED: 'cannot be read: the tracking store refused this server',
  MALFORMED: 'cannot be read: the tracking store answered with malformed data',
  UNSUPPORTED: 'is stored where this server cannot read it',
};

/**
 * A RunLoadError for a failure while loading run `runId` (reading artifact `path` when known). Artifact
 * format errors name run-relative paths only and are shown as they are; store errors (which name paths
 * and URIs on the server) are shown to clients as what they mean, and logged in full.
 */
function toRunLoadError(runId: string, error: unknown, path?: string): RunLoadError {
  if (error instanceof RunLoadError) return error;
  if (error instanceof ArtifactFormatError)
    return new RunLoadError(runId, error.message, false, { cause: error });
  const artifact = path === undefined ? 'an artifact of the run' : `artifact ${path}`;
  if (error instanceof TrackingError) {
    const publicReason = `${artifact} ${PUBLIC_STORE_REASONS[error.code] ?? 'cannot be read'}`;
    return new RunLoadError(runId, error.message, error.code === 'UNAVAILABLE', {
      cause: error,
      publicReason,
    });
  }
  return new RunLoadError(runId, error instanceof Error ? error.message : String(error), false, {
    cause: error,
    publicReason: `${artifact} cannot be loaded`,
  });
}

const readerFor =
  (store: TrackingStore, runId: string): ArtifactReader =>
  (path) =>
    store.readArtifact(runId, path).catch((error: unknown) => {
      throw toRunLoadError(runId, error, path);
    });

/** The experiment's runs in f1 order, or why there are none to serve (`hint`: what a person can do). */
type RunsRead = { ok: true; runs: Run[] } | { ok: false; reason: string; hint?: string; cause?: unknown };

async function readRuns(store: TrackingStore, name: string): Promise<RunsRead> {
  const where = `experiment "${name}" in ${store.displayUri}`;
  try {
    const experiment = await store.getExperimentByName(name);
    if (experiment === null) {
      return {
        ok: false,
        reason: `${where} does not exist`,
        hint: `${TRAIN_HINT}, or pick another with --experiment / --tracking-uri`,
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
    if (runs.length === 0) return { ok: false, reason: `${where} has no runs`, hint: TRAIN_HINT };
    return { ok: true, runs };
  } catch (error) {
    return { ok: false, reason: `cannot read ${where}: ${(error as Error).message}`, cause: error };
  }
}

/**
 * Everything one version of the experiment serves. Immutable apart from its caches, which only ever
 * hold what the store returns for the runs of this snapshot.
 */
export class RegistrySnapshot {
  /** Runs in f1 order (MLflow's: real values descending, then NaN, then runs without f1). */
  readonly runs: readonly RunSummary[];
  private readonly byId: ReadonlyMap<string, RunSummary>;
  private readonly models: SingleFlightLru<ServedModel>;
  private readonly performances: SingleFlightLru<ServedPerformance>;
  /** A few runs' test errors: the page asks for one or two runs at a time, and they can be ~1 MB. */
  private readonly errors = new SingleFlightLru<ServedTestErrors>(4);

  /** @internal built by RunRegistry only */
  constructor(
    private readonly store: TrackingStore,
    runs: readonly RunSummary[],
    /** The best run with loadable artifacts; it serves /predict, /performance and /args. */
    readonly bestRunId: string,
    readonly best: ServedModel,
    private readonly modelCacheSize: number,
    /** Registry mode: the model URI and the version serving; null otherwise. */
    readonly target: ServedTarget | null = null,
  ) {
    this.runs = Object.freeze([...runs]);
    this.byId = new Map(runs.map((run) => [run.runId, run]));
    this.models = new SingleFlightLru(modelCacheSize);
    // Bounded by the number of runs of this snapshot; performance reports are small.
    this.performances = new SingleFlightLru(runs.length);
  }

  /** The run with this id, or UnknownRunError. Only ids of this snapshot ever reach the store. */
  run(runId: string): RunSummary {
    const run = this.byId.get(runId);
    if (run === undefined) throw new UnknownRunError(runId);
    return run;
  }

  /** The loaded model of a run: the best run's at once, others loaded once and cached (LRU). */
  async model(runId: string): Promise<ServedModel> {
    const run = this.run(runId);
    if (run.runId === this.bestRunId) return this.best;
    try {
      return await this.models.get(run.runId, () => loadServedModel(readerFor(this.store, run.runId)));
    } catch (error) {
      throw toRunLoadError(run.runId, error);
    }
  }

  /** A run's performance report (only performance.json is read; cached). */
  async performance(runId: string): Promise<ServedPerformance> {
    const run = this.run(runId);
    if (run.runId === this.bestRunId) return this.best.performance;
    try {
      return await this.performances.get(run.runId, () => readPerformance(readerFor(this.store, run.runId)));
    } catch (error) {
      throw toRunLoadError(run.runId, error);
    }
  }

  /**
   * A run's test-split confusion matrix and mistakes (cached). NotLoggedError when the run has none: runs
   * logged before training wrote them, or by another tool.
   */
  async testErrors(runId: string): Promise<ServedTestErrors> {
    const run = this.run(runId);
    try {
      return await this.errors.get(run.runId, () =>
        readTestErrors((path) => this.store.readArtifact(run.runId, path)),
      );
    } catch (error) {
      if (error instanceof TrackingError && error.code === 'NOT_FOUND') {
        throw new NotLoggedError(run.runId, 'test-set errors (confusion_matrix.json, test_mistakes.json)');
      }
      throw toRunLoadError(run.runId, error);
    }
  }

  /** A run's per-epoch losses, read from the store's metric history (not cached: it is small). */
  async history(runId: string): Promise<ServedHistory> {
    const run = this.run(runId);
    try {
      return await readHistory((key) => this.store.getMetricHistory(run.runId, key));
    } catch (error) {
      throw toRunLoadError(run.runId, error);
    }
  }

  /** Run ids whose models are cached now, least recently used first (for tests and diagnostics). */
  cachedModelRunIds(): string[] {
    return this.models.keys();
  }

  /**
   * The next snapshot. What this one already loaded is handed over for the runs that are still listed
   * (the old best model included, when it is no longer best), so a swap reads nothing twice; runs that
   * left the experiment are dropped with their cached models and become unknown (404).
   */
  successor(
    runs: readonly RunSummary[],
    bestRunId: string,
    best: ServedModel,
    target: ServedTarget | null = this.target,
  ): RegistrySnapshot {
    const next = new RegistrySnapshot(this.store, runs, bestRunId, best, this.modelCacheSize, target);
    const keep = (runId: string) => next.byId.has(runId) && runId !== bestRunId;
    for (const [runId, model] of this.models.entries()) if (keep(runId)) next.models.set(runId, model);
    if (keep(this.bestRunId)) next.models.set(this.bestRunId, this.best);
    for (const [runId, report] of this.performances.entries()) {
      if (keep(runId)) next.performances.set(runId, report);
    }
    if (keep(this.bestRunId)) next.performances.set(this.bestRunId, this.best.performance);
    return next;
  }
}

const sameMetrics = (a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean => {
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && Object.is(a[k], b[k]))
  );
};
const sameParams = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
};

/** Whether GET /runs would answer the same for both lists. */
function sameRuns(a: readonly RunSummary[], b: readonly RunSummary[]): boolean {
  return (
    a.length === b.length &&
    a.every((x, i) => {
      const y = b[i]!;
      return (
        x.runId === y.runId &&
        x.runName === y.runName &&
        x.status === y.status &&
        x.startTime === y.startTime &&
        x.endTime === y.endTime &&
        sameMetrics(x.metrics, y.metrics) &&
        sameParams(x.params, y.params)
      );
    })
  );
}

export class RunRegistry {
  private snapshot: RegistrySnapshot;
  private problemsNow: ServingProblems = { store: null, heldBack: [] };
  /** The reload under way, and at most one queued behind it (every caller meanwhile shares that one). */
  private running: Promise<ReloadResult> | undefined;
  private queued: Promise<ReloadResult> | undefined;

  private constructor(
    private readonly store: TrackingStore,
    readonly experimentName: string,
    first: RegistrySnapshot,
    private readonly options: RunRegistryOptions,
    private readonly skips: SkipLog,
  ) {
    this.snapshot = first;
  }

  /**
   * Loads the experiment's runs and the best loadable run's artifacts. Runs whose artifacts are broken
   * are logged and skipped; throws StartupError when there is nothing to serve.
   * @example const registry = await RunRegistry.load(store, { experiment: 'best', modelCacheSize: 4, log });
   */
  static async load(store: TrackingStore, options: RunRegistryOptions): Promise<RunRegistry> {
    const { experiment: name, log } = options;
    if (options.modelUri) return RunRegistry.loadTarget(store, options, options.modelUri);
    const read = await readRuns(store, name);
    if (!read.ok) {
      const message = read.hint === undefined ? read.reason : `${read.reason}; ${read.hint}`;
      throw new StartupError(message, { cause: read.cause });
    }
    const { runs } = read;
    const skips = new SkipLog(log, options.reportsSkips ?? true);
    if (options.pinRunId) {
      const model = await loadPinned(store, runs, options.pinRunId, name);
      log.info(
        { runId: options.pinRunId, experiment: name, runs: runs.length },
        'serving the pinned run (--run-id)',
      );
      const snapshot = new RegistrySnapshot(
        store,
        runs.map(summarize),
        options.pinRunId,
        model,
        options.modelCacheSize,
      );
      return new RunRegistry(store, name, snapshot, options, skips);
    }
    const picked =
      (await loadPreferred(store, runs, options.preferRunId, log)) ??
      (await pickBest(store, runs, skips, undefined, options.gates ?? DEFAULT_GATES));
    if (picked.best === undefined) {
      const finished = runs.filter(isCandidate).length;
      if (finished === 0) {
        throw new StartupError(
          `none of the ${runs.length} runs of experiment "${name}" in ${store.displayUri} is FINISHED (${describeStatuses(runs)}); only finished runs are served — a RUNNING run is still logging or its training was killed; ${TRAIN_HINT}`,
        );
      }
      const { failures } = picked;
      if (failures.length === 0) {
        throw new StartupError(
          `none of the finished runs of experiment "${name}" in ${store.displayUri} passes the promotion gates (the log says why for each); lower TAGGER_MIN_TEST_SIZE / TAGGER_MIN_TAGS / TAGGER_MIN_BEHAVIOURAL_PASS_RATE or train on more data`,
        );
      }
      const shown =
        failures.slice(0, 5).join('; ') + (failures.length > 5 ? `; … ${failures.length - 5} more` : '');
      throw new StartupError(
        `none of the ${runs.length} runs of experiment "${name}" in ${store.displayUri} has loadable artifacts (${shown}); ${TRAIN_HINT}`,
      );
    }
    const { runId, model } = picked.best;
    log.info(
      { runId, experiment: name, runs: runs.length },
      runId === options.preferRunId && runId !== runs[0]?.info.runId
        ? 'serving the run the other workers serve (a newer best run follows at the next reload)'
        : 'serving the best loadable run',
    );
    const snapshot = new RegistrySnapshot(store, runs.map(summarize), runId, model, options.modelCacheSize);
    const registry = new RunRegistry(store, name, snapshot, options, skips);
    registry.problemsNow = { store: null, heldBack: picked.held ?? [] };
    return registry;
  }

  /** Registry mode: serves what the model URI points at, with that run's experiment listed. */
  private static async loadTarget(
    store: TrackingStore,
    options: RunRegistryOptions,
    uri: ModelUri,
  ): Promise<RunRegistry> {
    const where = `--model-uri ${uri.uri} (${store.displayUri})`;
    const found = await findTarget(store, uri).catch((error: unknown) => {
      throw new StartupError(`${where}: ${(error as Error).message}`, { cause: error });
    });
    let model: ServedModel;
    try {
      model = await loadServedModel(readerFor(store, found.runId));
    } catch (error) {
      throw new StartupError(
        `${where} points at run ${found.runId}, which cannot be served: ${toRunLoadError(found.runId, error).reason}`,
        { cause: error },
      );
    }
    options.log.info(
      {
        runId: found.runId,
        modelUri: uri.uri,
        version: found.target.version?.version,
        runs: found.runs.length,
      },
      `serving ${found.target.version ? versionLabel(found.target.version) : 'the run'} that ${uri.uri} points at`,
    );
    const snapshot = new RegistrySnapshot(
      store,
      found.runs.map(summarize),
      found.runId,
      model,
      options.modelCacheSize,
      found.target,
    );
    return new RunRegistry(
      store,
      options.experiment,
      snapshot,
      options,
      new SkipLog(options.log, options.reportsSkips ?? true),
    );
  }

  /** What is wrong while serving goes on: an unreadable store, runs that outrank the served one. */
  get problems(): ServingProblems {
    return this.problemsNow;
  }

  /**
   * What serves now. Read it once per request and use only that snapshot: a reload replaces it as a
   * whole, never in parts.
   */
  get current(): RegistrySnapshot {
    return this.snapshot;
  }

  /**
   * Where MLflow's UI shows these runs, when the store is an MLflow tracking server (its UI is served at
   * the tracking URI, credentials removed); null for embedded stores, which have no UI of their own here.
   */
  get mlflowUiUrl(): string | null {
    const shown = this.store.displayUri;
    return /^https?:\/\//i.test(shown) ? shown.replace(/\/+$/, '') : null;
  }

  /** Runs of the current snapshot (shorthand for `current.runs`). */
  get runs(): readonly RunSummary[] {
    return this.snapshot.runs;
  }
  /** Best run of the current snapshot (shorthand; read `current` once when you also need `best`). */
  get bestRunId(): string {
    return this.snapshot.bestRunId;
  }
  get best(): ServedModel {
    return this.snapshot.best;
  }
  run(runId: string): RunSummary {
    return this.snapshot.run(runId);
  }
  model(runId: string): Promise<ServedModel> {
    return this.snapshot.model(runId);
  }
  performance(runId: string): Promise<ServedPerformance> {
    return this.snapshot.performance(runId);
  }
  cachedModelRunIds(): string[] {
    return this.snapshot.cachedModelRunIds();
  }

  /**
   * Re-reads the experiment and swaps in a new snapshot when something changed; never rejects. Reloads
   * never overlap: a call while one runs gets the single reload queued behind it (shared by every caller
   * meanwhile), so a SIGHUP during a poll still sees what was logged before the signal.
   * @example const { outcome } = await registry.reload(); // 'unchanged' | 'updated' | 'swapped' | 'failed'
   */
  reload(): Promise<ReloadResult> {
    if (this.queued) return this.queued;
    if (this.running) {
      const queued = this.running.then(() => {
        this.queued = undefined;
        return this.start();
      });
      this.queued = queued;
      return queued;
    }
    return this.start();
  }

  /** Resolves once no reload is running or queued (shutdown waits for it before closing the store). */
  async settled(): Promise<void> {
    while (this.running || this.queued) await (this.queued ?? this.running);
  }

  private start(): Promise<ReloadResult> {
    const running = this.reloadOnce()
      .catch((error: unknown) => this.failed(this.snapshot, [`unexpected error: ${String(error)}`]))
      .finally(() => {
        if (this.running === running) this.running = undefined;
      });
    this.running = running;
    return running;
  }

  private async reloadOnce(): Promise<ReloadResult> {
    const { log } = this.options;
    const before = this.snapshot;
    if (this.options.modelUri) return this.reloadTarget(before, this.options.modelUri);
    const read = await readRuns(this.store, this.experimentName);
    if (!read.ok) {
      this.problemsNow = {
        ...this.problemsNow,
        store: 'the last reload could not read the tracking store; the runs loaded before keep serving',
      };
      return this.failed(before, [read.reason]);
    }

    const picked = this.options.pinRunId
      ? // Pinned: the list is refreshed, the model never changes.
        { best: { runId: before.bestRunId, model: before.best }, failures: [] }
      : await pickBest(this.store, read.runs, this.skips, before, this.options.gates ?? DEFAULT_GATES);
    this.problemsNow = { store: null, heldBack: picked.held ?? [] };
    if (picked.best === undefined) {
      return this.failed(before, [
        `none of the ${read.runs.filter(isCandidate).length} finished runs of ${read.runs.length} has loadable artifacts`,
        ...picked.failures,
      ]);
    }
    const runs = read.runs.map(summarize);
    const { runId, model } = picked.best;
    const outcome: ReloadOutcome =
      runId !== before.bestRunId ? 'swapped' : sameRuns(before.runs, runs) ? 'unchanged' : 'updated';
    // The one write that publishes a reload: readers see the old snapshot or the new one, never a mix.
    if (outcome !== 'unchanged') this.snapshot = before.successor(runs, runId, model);
    const result: ReloadResult = {
      outcome,
      runId,
      previousRunId: before.bestRunId,
      problems: picked.failures,
    };
    const fields = { outcome, runId, previousRunId: before.bestRunId, runs: runs.length };
    if (outcome === 'swapped') log.info(fields, 'reload: serving a new best run');
    else if (outcome === 'updated') log.info(fields, 'reload: the runs changed, the best run stays');
    else log.debug?.(fields, 'reload: nothing changed');
    this.notify(result);
    return result;
  }

  /**
   * Registry mode: resolves the model URI again. Same run: the list (and the version, if the alias moved
   * to another version of the same run) is refreshed. Another run: its model is loaded and swapped in;
   * when it cannot be, the model loaded before keeps serving and readiness and metrics say why.
   */
  private async reloadTarget(before: RegistrySnapshot, uri: ModelUri): Promise<ReloadResult> {
    const { log } = this.options;
    let found: FoundTarget;
    try {
      found = await findTarget(this.store, uri);
    } catch (error) {
      this.problemsNow = {
        store: `${uri.uri} cannot be resolved now (${publicTrackingReason(error)}); the model loaded before keeps serving`,
        heldBack: [],
      };
      return this.failed(before, [`${uri.uri}: ${(error as Error).message}`]);
    }
    const runs = found.runs.map(summarize);
    let model = before.best;
    if (found.runId !== before.bestRunId) {
      try {
        model = await loadServedModel(readerFor(this.store, found.runId));
      } catch (error) {
        const loadError = toRunLoadError(found.runId, error);
        const label = found.target.version ? versionLabel(found.target.version) : uri.uri;
        this.skips.warn(
          found.runId,
          loadError.reason,
          `${uri.uri} now points at a run that cannot be loaded; still serving the model loaded before`,
        );
        this.problemsNow = {
          store: null,
          heldBack: [
            { runId: found.runId, kind: 'unloadable', reason: loadError.publicReason, target: label },
          ],
        };
        return this.failed(before, [`${found.runId} (${label}): ${loadError.reason}`]);
      }
    }
    this.problemsNow = { store: null, heldBack: [] };
    const sameVersion = before.target?.version?.version === found.target.version?.version;
    const outcome: ReloadOutcome =
      found.runId !== before.bestRunId
        ? 'swapped'
        : sameRuns(before.runs, runs) && sameVersion
          ? 'unchanged'
          : 'updated';
    if (outcome !== 'unchanged') this.snapshot = before.successor(runs, found.runId, model, found.target);
    const result: ReloadResult = {
      outcome,
      runId: found.runId,
      previousRunId: before.bestRunId,
      problems: [],
    };
    const fields = {
      outcome,
      runId: found.runId,
      previousRunId: before.bestRunId,
      modelUri: uri.uri,
      version: found.target.version?.version,
    };
    if (outcome === 'swapped') log.info(fields, `reload: ${uri.uri} moved; serving its new run`);
    else if (outcome === 'updated')
      log.info(fields, 'reload: the runs or the version changed, the run stays');
    else log.debug?.(fields, 'reload: nothing changed');
    this.notify(result);
    return result;
  }

  private failed(before: RegistrySnapshot, problems: string[]): ReloadResult {
    const result: ReloadResult = {
      outcome: 'failed',
      runId: before.bestRunId,
      previousRunId: before.bestRunId,
      problems,
    };
    this.options.log.warn(
      { outcome: 'failed', runId: before.bestRunId, reason: problems.join('; ') },
      'reload failed; still serving the runs and model loaded before',
    );
    this.notify(result);
    return result;
  }

  private notify(result: ReloadResult): void {
    try {
      this.options.onReload?.(result.outcome, result.runId);
    } catch {
      // A metrics listener must never break serving or the reload loop.
    }
  }
}

/** The pinned run's model, or a StartupError saying why it cannot be served. */
async function loadPinned(
  store: TrackingStore,
  runs: readonly Run[],
  runId: string,
  experiment: string,
): Promise<ServedModel> {
  const run = runs.find((candidate) => candidate.info.runId === runId);
  if (run === undefined) {
    throw new StartupError(
      `--run-id ${runId} is not a run of experiment "${experiment}" in ${store.displayUri} (it has ${runs.length} runs); pick one from GET /runs, or drop --run-id to serve the best run`,
    );
  }
  try {
    return await loadServedModel(readerFor(store, runId));
  } catch (error) {
    throw new StartupError(
      `--run-id ${runId} (status ${run.info.status}) cannot be served: ${toRunLoadError(runId, error).reason}`,
      { cause: error },
    );
  }
}

interface FoundTarget {
  runId: string;
  target: ServedTarget;
  /** The active runs of the target run's experiment, in f1 order. */
  runs: Run[];
}

/** Resolves a model URI to a run of an active experiment, with that experiment's runs. */
async function findTarget(store: TrackingStore, uri: ModelUri): Promise<FoundTarget> {
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
function publicTrackingReason(error: unknown): string {
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
function describeStatuses(runs: readonly Run[]): string {
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.info.status, (counts.get(run.info.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
}

interface Picked {
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
async function loadPreferred(
  store: TrackingStore,
  runs: readonly Run[],
  runId: string | undefined,
  log: ServiceLog,
): Promise<Picked | undefined> {
  if (runId === undefined || !runs.some((run) => run.info.runId === runId && isCandidate(run)))
    return undefined;
  try {
    return { best: { runId, model: await loadServedModel(readerFor(store, runId)) }, failures: [] };
  } catch (error) {
    log.warn(
      { runId, reason: toRunLoadError(runId, error).reason },
      'the run the other workers serve cannot be loaded here; serving the best loadable run',
    );
    return undefined;
  }
}

/**
 * Logs a skipped run once per (run, reason) for the life of the registry, not at every poll: a broken
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
const isCandidate = (run: Run): boolean => run.info.status === 'FINISHED';

async function pickBest(
  store: TrackingStore,
  runs: readonly Run[],
  skips: SkipLog,
  current: RegistrySnapshot | undefined,
  gates: PromotionGates,
): Promise<Picked> {
  const failures: string[] = [];
  const held: HeldRun[] = [];
  const served = current === undefined ? undefined : runs.find((run) => run.info.runId === current.bestRunId);
  for (const run of runs) {
    const runId = run.info.runId;
    if (runId === current?.bestRunId) {
      try {
        await loadServedModel(readerFor(store, runId));
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
    const gate = gateFailure(run, gates, served);
    if (gate !== null) {
      held.push({ runId, kind: 'gates', reason: gate });
      skips.warn(runId, gate, 'not serving a run that does not pass the promotion gates');
      continue;
    }
    try {
      return { best: { runId, model: await loadServedModel(readerFor(store, runId)) }, failures, held };
    } catch (error) {
      const loadError = toRunLoadError(runId, error);
      failures.push(`${runId}: ${loadError.reason}`);
      held.push({ runId, kind: 'unloadable', reason: loadError.publicReason });
      skips.warn(runId, loadError.reason, 'skipping a run whose artifacts cannot be loaded');
    }
  }
  return { failures, held };
}
