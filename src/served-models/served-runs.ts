/**
 * The served runs: the runs of one experiment, ordered best first, and the best loadable run's model
 * (or a pinned run, or what a model URI points at), all in one immutable `ServedSnapshot`. `reload()`
 * re-reads the experiment, loads a new best run in the background and replaces the snapshot with one
 * reference swap, so a request that started on the old snapshot finishes on it. How the run is chosen
 * lives in ./candidates.ts; what a snapshot holds in ./served-snapshot.ts.
 */
import type { ModelUri } from '../tracking/model-uri.js';
import { versionLabel } from '../tracking/model-uri.js';
import type { TrackingStore } from '../tracking/store.js';
import {
  loadServedModel,
  type ModelLoading,
  readPerformance,
  type ServedModel,
  type ServedPerformance,
} from './artifacts.js';
import {
  describeStatuses,
  type FoundTarget,
  findTarget,
  isCandidate,
  loadPinned,
  loadPreferred,
  pickBest,
  publicTrackingReason,
  readRuns,
  type ServingProblems,
  SkipLog,
  trainHint,
  withEncoderRestored,
} from './candidates.js';
import type { EncoderProvider } from './encoders.js';
import { StartupError } from './errors.js';
import { DEFAULT_GATES, type PromotionGates } from './gates.js';
import type { ServiceLog } from './log.js';
import {
  type RunSummary,
  readerFor,
  ServedSnapshot,
  sameRuns,
  summarize,
  toRunLoadError,
} from './served-snapshot.js';

/**
 * What a reload did:
 * - `unchanged`: same runs, same best run; the snapshot is kept as is.
 * - `updated`: the run list changed (new, removed or changed runs) but the same run stays best; a new
 *   snapshot holds the new list and the same loaded model.
 * - `swapped`: another run is now the best loadable one; its model was loaded and now serves /predict. Also
 *   the served run itself when it is a cascade served without its encoder (`allowDegraded`) whose encoder
 *   opens now: its model, loaded again with the encoder, replaces the one without.
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

export interface ServedRunsOptions {
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
  /**
   * Opens the encoders of encoder runs (src/served-models/encoders.ts). Without it encoder runs are not
   * loadable (held back with the reason) and the other runs serve.
   */
  encoders?: EncoderProvider | undefined;
  /**
   * A cascade run whose encoder cannot be opened here is served by its fast model alone (the served
   * model's `degraded` says why, /health/ready reports it) instead of being held back (`--allow-degraded`).
   */
  allowDegraded?: boolean | undefined;
  /**
   * How often the server re-reads the experiment (`pollReloads`, from the end of one reload to the next);
   * 0 or unset: never. Only for saying when a run logged since the last reload will be loaded.
   */
  reloadIntervalMs?: number | undefined;
}

/**
 * A run of the served experiment that the tracking store holds but the loaded snapshot does not: logged
 * since the last reload. Its performance as the store has it (null when that cannot be read yet).
 */
export interface LoggedRun {
  summary: RunSummary;
  performance: ServedPerformance | null;
  /** Seconds until the next reload is due; null when this server does not poll. */
  nextPollInS: number | null;
}

/** How ServedRuns loads models: its encoders, and whether a cascade may serve without its own. */
const loadingOf = (options: ServedRunsOptions): ModelLoading => ({
  encoders: options.encoders,
  allowDegraded: options.allowDegraded,
});

export class ServedRuns {
  private snapshot: ServedSnapshot;
  private problemsNow: ServingProblems = { store: null, heldBack: [] };
  /** The reload under way, and at most one queued behind it (every caller meanwhile shares that one). */
  private running: Promise<ReloadResult> | undefined;
  /** When the last reload settled (at first: when the runs were loaded), epoch ms. */
  private reloadedMs = Date.now();
  private queued: Promise<ReloadResult> | undefined;

  private constructor(
    private readonly store: TrackingStore,
    readonly experimentName: string,
    first: ServedSnapshot,
    private readonly options: ServedRunsOptions,
    private readonly skips: SkipLog,
  ) {
    this.snapshot = first;
  }

  /**
   * Loads the experiment's runs and the best loadable run's artifacts. Runs whose artifacts are broken
   * are logged and skipped; throws StartupError when there is nothing to serve.
   * @example const servedRuns = await ServedRuns.load(store, { experiment: 'best', modelCacheSize: 4, log });
   */
  static async load(store: TrackingStore, options: ServedRunsOptions): Promise<ServedRuns> {
    const { experiment: name, log } = options;
    if (options.modelUri) return ServedRuns.loadTarget(store, options, options.modelUri);
    const read = await readRuns(store, name);
    if (!read.ok) {
      const message = read.hint === undefined ? read.reason : `${read.reason}; ${read.hint}`;
      throw new StartupError(message, { cause: read.cause });
    }
    const { runs } = read;
    const skips = new SkipLog(log, options.reportsSkips ?? true);
    if (options.pinRunId) {
      const model = await loadPinned(store, runs, options.pinRunId, name, loadingOf(options));
      log.info(
        { runId: options.pinRunId, experiment: name, runs: runs.length },
        'serving the pinned run (--run-id)',
      );
      const snapshot = new ServedSnapshot(
        store,
        runs.map(summarize),
        options.pinRunId,
        model,
        options.modelCacheSize,
        null,
        loadingOf(options),
      );
      return new ServedRuns(store, name, snapshot, options, skips);
    }
    const picked =
      (await loadPreferred(store, runs, options.preferRunId, log, loadingOf(options))) ??
      (await pickBest(store, runs, skips, undefined, options.gates ?? DEFAULT_GATES, loadingOf(options)));
    if (picked.best === undefined) {
      const finished = runs.filter(isCandidate).length;
      if (finished === 0) {
        throw new StartupError(
          `none of the ${runs.length} runs of experiment "${name}" in ${store.displayUri} is FINISHED (${describeStatuses(runs)}); only finished runs are served — a RUNNING run is still logging or its training was killed; ${trainHint(name, store.displayUri)}`,
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
        `none of the ${runs.length} runs of experiment "${name}" in ${store.displayUri} has loadable artifacts (${shown}); ${trainHint(name, store.displayUri)}`,
      );
    }
    const { runId, model } = picked.best;
    log.info(
      { runId, experiment: name, runs: runs.length },
      runId === options.preferRunId && runId !== runs[0]?.info.runId
        ? 'serving the run the other workers serve (a newer best run follows at the next reload)'
        : 'serving the best loadable run',
    );
    const snapshot = new ServedSnapshot(
      store,
      runs.map(summarize),
      runId,
      model,
      options.modelCacheSize,
      null,
      loadingOf(options),
    );
    const servedRuns = new ServedRuns(store, name, snapshot, options, skips);
    servedRuns.problemsNow = { store: null, heldBack: picked.held ?? [] };
    return servedRuns;
  }

  /** Registry mode: serves what the model URI points at, with that run's experiment listed. */
  private static async loadTarget(
    store: TrackingStore,
    options: ServedRunsOptions,
    uri: ModelUri,
  ): Promise<ServedRuns> {
    const where = `--model-uri ${uri.uri} (${store.displayUri})`;
    const found = await findTarget(store, uri).catch((error: unknown) => {
      throw new StartupError(`${where}: ${(error as Error).message}`, { cause: error });
    });
    let model: ServedModel;
    try {
      model = await loadServedModel(readerFor(store, found.runId), loadingOf(options));
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
    const snapshot = new ServedSnapshot(
      store,
      found.runs.map(summarize),
      found.runId,
      model,
      options.modelCacheSize,
      found.target,
      loadingOf(options),
    );
    return new ServedRuns(
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
  get current(): ServedSnapshot {
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
   * @example const { outcome } = await servedRuns.reload(); // 'unchanged' | 'updated' | 'swapped' | 'failed'
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

  /**
   * A run the tracking store has in the served experiment but this snapshot does not (see LoggedRun), or
   * null: no such run there, or the store cannot say. Unlike the snapshot's lookups this reaches the
   * store for an id it does not know — only GET /runs/{run_id} asks, to tell "not loaded yet" from "none".
   */
  async loggedSince(runId: string): Promise<LoggedRun | null> {
    const experimentId = this.snapshot.runs[0]?.experimentId;
    if (experimentId === undefined) return null;
    let run: Awaited<ReturnType<TrackingStore['getRun']>>;
    try {
      run = await this.store.getRun(runId);
    } catch {
      return null;
    }
    if (run === null || run.info.experimentId !== experimentId) return null;
    const performance = await readPerformance(readerFor(this.store, runId)).catch(() => null);
    const interval = this.options.reloadIntervalMs ?? 0;
    return {
      summary: summarize(run),
      performance,
      nextPollInS:
        interval > 0 ? Math.max(0, Math.ceil((this.reloadedMs + interval - Date.now()) / 1000)) : null,
    };
  }

  /** Resolves once no reload is running or queued (shutdown waits for it before closing the store). */
  async settled(): Promise<void> {
    while (this.running || this.queued) await (this.queued ?? this.running);
  }

  private start(): Promise<ReloadResult> {
    const running = this.reloadOnce()
      .catch((error: unknown) => this.failed(this.snapshot, [`unexpected error: ${String(error)}`]))
      .finally(() => {
        this.reloadedMs = Date.now();
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
      // Why, in words fit for clients (no paths or URIs: a vanished database file is "cannot be reached").
      const why = read.cause === undefined ? '' : ` (${publicTrackingReason(read.cause)})`;
      this.problemsNow = {
        ...this.problemsNow,
        store: `the last reload could not read the tracking store${why}; the runs loaded before keep serving`,
      };
      return this.failed(before, [read.reason]);
    }

    const picked = this.options.pinRunId
      ? // Pinned: the list is refreshed, the model never changes (but a degraded cascade's encoder returns).
        {
          best: {
            runId: before.bestRunId,
            model: await withEncoderRestored(
              this.store,
              before.bestRunId,
              before.best,
              loadingOf(this.options),
            ),
          },
          failures: [],
        }
      : await pickBest(
          this.store,
          read.runs,
          this.skips,
          before,
          this.options.gates ?? DEFAULT_GATES,
          loadingOf(this.options),
        );
    this.problemsNow = { store: null, heldBack: picked.held ?? [] };
    if (picked.best === undefined) {
      return this.failed(before, [
        `none of the ${read.runs.filter(isCandidate).length} finished runs of ${read.runs.length} has loadable artifacts`,
        ...picked.failures,
      ]);
    }
    const runs = read.runs.map(summarize);
    const { runId, model } = picked.best;
    // Another model of the same run: a cascade served without its encoder, whose encoder opens now.
    const outcome: ReloadOutcome =
      runId !== before.bestRunId || model !== before.best
        ? 'swapped'
        : sameRuns(before.runs, runs)
          ? 'unchanged'
          : 'updated';
    // The one write that publishes a reload: readers see the old snapshot or the new one, never a mix.
    if (outcome !== 'unchanged') this.snapshot = before.successor(runs, runId, model);
    const result: ReloadResult = {
      outcome,
      runId,
      previousRunId: before.bestRunId,
      problems: picked.failures,
    };
    const fields = { outcome, runId, previousRunId: before.bestRunId, runs: runs.length };
    if (outcome === 'swapped' && runId === before.bestRunId) {
      log.info(fields, "reload: the served cascade's encoder opens now; its encoder model answers again");
    } else if (outcome === 'swapped') log.info(fields, 'reload: serving a new best run');
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
  private async reloadTarget(before: ServedSnapshot, uri: ModelUri): Promise<ReloadResult> {
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
    let model =
      found.runId === before.bestRunId
        ? await withEncoderRestored(this.store, found.runId, before.best, loadingOf(this.options))
        : before.best;
    if (found.runId !== before.bestRunId) {
      try {
        model = await loadServedModel(readerFor(this.store, found.runId), loadingOf(this.options));
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
      found.runId !== before.bestRunId || model !== before.best
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

  private failed(before: ServedSnapshot, problems: string[]): ReloadResult {
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
