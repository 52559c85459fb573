/**
 * The run registry: the runs of one experiment, ordered best first at startup, the best loadable run's
 * model held for the life of the process, and other runs' models loaded on demand into a bounded cache.
 * A run id from a request is looked up in the startup list (a Map) before anything is read for it.
 */
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
import { RunLoadError, StartupError, UnknownRunError } from './errors.js';

/** The subset of a pino logger the service layer writes to. */
export interface ServiceLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** One run as listed by GET /runs, captured at startup. */
export interface RunSummary {
  readonly runId: string;
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

export interface RunRegistryOptions {
  /** Experiment to serve, e.g. `best`. */
  experiment: string;
  /** How many non-best models to keep loaded (least recently used are dropped). */
  modelCacheSize: number;
  log: ServiceLog;
}

/** What to do when there is nothing to serve, appended to every startup failure about runs. */
const TRAIN_HINT = 'train one first, e.g. `tagger train --data samples/projects.csv`';

const summarize = (run: Run): RunSummary => ({
  runId: run.info.runId,
  runName: run.info.runName,
  status: run.info.status,
  startTime: run.info.startTime,
  endTime: run.info.endTime,
  metrics: Object.freeze(Object.fromEntries(Object.entries(run.metrics))),
  params: Object.freeze(Object.fromEntries(Object.entries(run.params))),
});

function toRunLoadError(runId: string, error: unknown): RunLoadError {
  if (error instanceof RunLoadError) return error;
  if (error instanceof ArtifactFormatError)
    return new RunLoadError(runId, error.message, false, { cause: error });
  if (error instanceof TrackingError) {
    return new RunLoadError(runId, error.message, error.code === 'UNAVAILABLE', { cause: error });
  }
  return new RunLoadError(runId, error instanceof Error ? error.message : String(error), false, {
    cause: error,
  });
}

export class RunRegistry {
  /** Runs in f1 order (MLflow's: real values descending, then NaN, then runs without f1). */
  readonly runs: readonly RunSummary[];
  private readonly byId: ReadonlyMap<string, RunSummary>;
  private readonly models: SingleFlightLru<ServedModel>;
  private readonly performances: SingleFlightLru<ServedPerformance>;

  private constructor(
    private readonly store: TrackingStore,
    readonly experimentName: string,
    runs: readonly RunSummary[],
    /** The best run with loadable artifacts; it serves /predict, /performance and /args. */
    readonly bestRunId: string,
    readonly best: ServedModel,
    modelCacheSize: number,
  ) {
    this.runs = Object.freeze([...runs]);
    this.byId = new Map(runs.map((run) => [run.runId, run]));
    this.models = new SingleFlightLru(modelCacheSize);
    // Bounded by the number of runs, which is fixed at startup; performance reports are small.
    this.performances = new SingleFlightLru(runs.length);
  }

  /**
   * Loads the experiment's runs and the best loadable run's artifacts. Runs whose artifacts are broken
   * are logged and skipped; throws StartupError when there is nothing to serve.
   * @example const registry = await RunRegistry.load(store, { experiment: 'best', modelCacheSize: 4, log });
   */
  static async load(store: TrackingStore, options: RunRegistryOptions): Promise<RunRegistry> {
    const { experiment: name, log } = options;
    const where = `experiment "${name}" in ${store.displayUri}`;
    let runs: Run[];
    try {
      const experiment = await store.getExperimentByName(name);
      if (experiment === null) {
        throw new StartupError(
          `${where} does not exist; ${TRAIN_HINT}, or pick another with --experiment / --tracking-uri`,
        );
      }
      if (experiment.lifecycleStage === 'deleted') {
        throw new StartupError(`${where} is deleted; restore it or pick another with --experiment`);
      }
      runs = await store.searchRuns(experiment.experimentId, {
        orderByMetric: { key: 'f1', descending: true },
      });
    } catch (error) {
      if (error instanceof StartupError) throw error;
      throw new StartupError(`cannot read ${where}: ${(error as Error).message}`, { cause: error });
    }
    if (runs.length === 0) throw new StartupError(`${where} has no runs; ${TRAIN_HINT}`);

    const failures: string[] = [];
    for (const run of runs) {
      const runId = run.info.runId;
      try {
        const best = await loadServedModel(readerFor(store, runId));
        log.info({ runId, experiment: name, runs: runs.length }, 'serving the best loadable run');
        return new RunRegistry(store, name, runs.map(summarize), runId, best, options.modelCacheSize);
      } catch (error) {
        const reason = toRunLoadError(runId, error).reason;
        failures.push(`${runId}: ${reason}`);
        log.warn({ runId, reason }, 'skipping a run whose artifacts cannot be loaded');
      }
    }
    const shown =
      failures.slice(0, 5).join('; ') + (failures.length > 5 ? `; … ${failures.length - 5} more` : '');
    throw new StartupError(
      `none of the ${runs.length} runs of ${where} has loadable artifacts (${shown}); ${TRAIN_HINT}`,
    );
  }

  /** The run with this id, or UnknownRunError. Only ids listed at startup ever reach the store. */
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

  /** Run ids whose models are cached now, least recently used first (for tests and diagnostics). */
  cachedModelRunIds(): string[] {
    return this.models.keys();
  }
}

const readerFor =
  (store: TrackingStore, runId: string): ArtifactReader =>
  (path) =>
    store.readArtifact(runId, path);
