/**
 * What one version of the served experiment is: its runs in f1 order, the run that serves /predict with
 * its loaded model, and other runs' models, reports and test errors loaded on demand into bounded caches.
 * Immutable apart from those caches. `ServedRuns` (./served-runs.ts) builds one at startup and a
 * successor at each reload. A run id from a request is looked up in the snapshot's run list (a Map)
 * before anything is read.
 */
import { EVALUATION_TAGS } from '../model/index.js';
import type { ModelVersion } from '../tracking/model-registry.js';
import { type Run, type RunStatus, TrackingError, type TrackingStore } from '../tracking/store.js';
import {
  ArtifactFormatError,
  type ArtifactReader,
  loadServedModel,
  type ModelLoading,
  readPerformance,
  type ServedModel,
  type ServedPerformance,
} from './artifacts.js';
import { SingleFlightLru } from './cache.js';
import { readCascadeCurve, type ServedCascadeCurve } from './cascade-curve.js';
import { EncoderLoadError } from './encoders.js';
import { NotLoggedError, RunLoadError, UnknownRunError } from './errors.js';
import { dataWarnings } from './gates.js';
import {
  readHistory,
  readLabelIssues,
  readMistakes,
  type ServedHistory,
  type ServedLabelIssues,
  type ServedMistakes,
} from './inspection.js';
import { readModelChoice, type ServedModelChoice } from './model-choice.js';

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
  /** The data warnings of its training (tag `tagger.warnings`), one per item. */
  readonly warnings: readonly string[];
  /** A retrained run's promotion (`candidate`, `promoted`, `rejected`); null for other runs. */
  readonly promotion: string | null;
}

/** What a model URI resolved to when the snapshot was made (registry mode). */
export interface ServedTarget {
  /** The URI as configured, e.g. `models:/tagger@champion`. */
  readonly uri: string;
  /** The registered version behind it; null for `runs:/` URIs. */
  readonly version: ModelVersion | null;
}

/** A run as the snapshot lists it (frozen: reloads compare them, requests read them). */
export const summarize = (run: Run): RunSummary =>
  Object.freeze({
    runId: run.info.runId,
    experimentId: run.info.experimentId,
    runName: run.info.runName,
    status: run.info.status,
    startTime: run.info.startTime,
    endTime: run.info.endTime,
    metrics: Object.freeze(Object.fromEntries(Object.entries(run.metrics))),
    params: Object.freeze(Object.fromEntries(Object.entries(run.params))),
    warnings: Object.freeze(dataWarnings(run)),
    promotion: run.tags[EVALUATION_TAGS.promotion] ?? null,
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
export function toRunLoadError(runId: string, error: unknown, path?: string): RunLoadError {
  if (error instanceof RunLoadError) return error;
  if (error instanceof ArtifactFormatError)
    return new RunLoadError(runId, error.message, false, { cause: error });
  if (error instanceof EncoderLoadError) {
    return new RunLoadError(runId, `its sentence encoder cannot be used here: ${error.message}`, false, {
      cause: error,
      publicReason: error.publicReason,
    });
  }
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

export const readerFor = (store: TrackingStore, runId: string): ArtifactReader =>
  Object.assign(
    (path: string) =>
      store.readArtifact(runId, path).catch((error: unknown) => {
        throw toRunLoadError(runId, error, path);
      }),
    { size: (path: string) => artifactSize(store, runId, path) },
  );

/**
 * An artifact file's size from its folder's listing (every store lists sizes: file and SQL stores stat
 * the file, MLflow's server says `file_size`); null when the listing does not have it. A failed listing
 * is left to the read that follows to report.
 */
export async function artifactSize(
  store: TrackingStore,
  runId: string,
  path: string,
): Promise<number | null> {
  const folder = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
  const entries = await store.listArtifacts(runId, folder).catch(() => []);
  return entries.find((entry) => entry.path === path && !entry.isDir)?.size ?? null;
}

/**
 * Everything one version of the experiment serves. Immutable apart from its caches, which only ever
 * hold what the store returns for the runs of this snapshot.
 */
export class ServedSnapshot {
  /** Runs in f1 order (MLflow's: real values descending, then NaN, then runs without f1). */
  readonly runs: readonly RunSummary[];
  private readonly byId: ReadonlyMap<string, RunSummary>;
  /** Other runs' models; each one dropped releases its encoder (an encoder run's). */
  private readonly models: SingleFlightLru<ServedModel>;
  /** Replaced by a successor, which holds (or released) this snapshot's models and their encoders. */
  private retired = false;
  private readonly performances: SingleFlightLru<ServedPerformance>;
  /** A few runs' test errors: the page asks for one or two runs at a time, and they can be ~1 MB. */
  private readonly errors = new SingleFlightLru<ServedMistakes>(4);
  /** A few runs' label issues (at most 1,000 issues each, like the mistakes). */
  private readonly labelIssueReports = new SingleFlightLru<ServedLabelIssues>(4);
  private readonly cascadeCurves = new SingleFlightLru<ServedCascadeCurve>(4);
  /** A few runs' model choices (null: a run trained with explicit args, or before the choice, has none). */
  private readonly modelChoices = new SingleFlightLru<ServedModelChoice | null>(8);

  /** @internal built by ServedRuns only */
  constructor(
    private readonly store: TrackingStore,
    runs: readonly RunSummary[],
    /** The best run with loadable artifacts; it serves /predict, /performance and /args. */
    readonly bestRunId: string,
    readonly best: ServedModel,
    private readonly modelCacheSize: number,
    /** Registry mode: the model URI and the version serving; null otherwise. */
    readonly target: ServedTarget | null = null,
    /**
     * Opens the encoders of encoder runs' models (no encoders: such runs cannot be loaded), and says
     * whether a cascade whose encoder cannot be opened serves by its fast model alone.
     */
    private readonly loading: ModelLoading = {},
  ) {
    this.runs = Object.freeze([...runs]);
    this.byId = new Map(runs.map((run) => [run.runId, run]));
    this.models = new SingleFlightLru<ServedModel>(modelCacheSize, (model) => {
      if (!this.retired) model.predictor.release();
    });
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
      return await this.models.get(run.runId, async () => {
        const loaded = await loadServedModel(readerFor(this.store, run.runId), this.loading);
        // A request still on a replaced snapshot: its answer borrows the encoder; nothing here holds it.
        if (this.retired) loaded.predictor.release();
        return loaded;
      });
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
  async confusionAndMistakes(runId: string): Promise<ServedMistakes> {
    const run = this.run(runId);
    try {
      return await this.errors.get(run.runId, () =>
        readMistakes((path) => this.store.readArtifact(run.runId, path)),
      );
    } catch (error) {
      if (error instanceof TrackingError && error.code === 'NOT_FOUND') {
        throw new NotLoggedError(run.runId, 'test-set errors (confusion_matrix.json, test_mistakes.json)');
      }
      throw toRunLoadError(run.runId, error);
    }
  }

  /**
   * A run's label issues: the rows of its training data whose tag is probably wrong (cached).
   * NotLoggedError when the run has none: runs logged before training looked for them, or trained with
   * --no-label-issues, on data too small to cross-validate, or by another tool.
   */
  async labelIssues(runId: string): Promise<ServedLabelIssues> {
    const run = this.run(runId);
    try {
      return await this.labelIssueReports.get(run.runId, () =>
        readLabelIssues((path) => this.store.readArtifact(run.runId, path)),
      );
    } catch (error) {
      if (error instanceof TrackingError && error.code === 'NOT_FOUND') {
        throw new NotLoggedError(
          run.runId,
          'label issues (label_issues.json)',
          'tagger train logs them unless given --no-label-issues or data too small to cross-validate (the run tag tagger.label_issues.skipped then says why); runs trained before tagger looked for them have none',
        );
      }
      throw toRunLoadError(run.runId, error);
    }
  }

  /**
   * How `tagger train` chose a run's model (model_choice.json; cached); null for a run that logged none
   * (trained with arguments that name the model, or before the model choice existed).
   */
  async modelChoice(runId: string): Promise<ServedModelChoice | null> {
    const run = this.run(runId);
    try {
      return await this.modelChoices.get(run.runId, async () => {
        try {
          return await readModelChoice((path) => this.store.readArtifact(run.runId, path));
        } catch (error) {
          if (error instanceof TrackingError && error.code === 'NOT_FOUND') return null;
          throw error;
        }
      });
    } catch (error) {
      throw toRunLoadError(run.runId, error);
    }
  }

  /**
   * A cascade run's threshold curve (cascade_curve.json; cached). NotLoggedError for any other run.
   */
  async cascadeCurve(runId: string): Promise<ServedCascadeCurve> {
    const run = this.run(runId);
    try {
      return await this.cascadeCurves.get(run.runId, () =>
        readCascadeCurve((path) => this.store.readArtifact(run.runId, path)),
      );
    } catch (error) {
      if (error instanceof TrackingError && error.code === 'NOT_FOUND') {
        throw new NotLoggedError(
          run.runId,
          'cascade threshold curve (cascade_curve.json)',
          'only cascade runs (tagger train --encoder … --cascade) log one',
        );
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

  /**
   * This snapshot has a successor, which holds (or released) its models: its cache no longer releases
   * what it drops, and a request still on it that loads another run's model lets that model's encoder
   * go at once (the request still gets its answer, borrowing the encoder).
   */
  private retire(): void {
    this.retired = true;
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
  ): ServedSnapshot {
    const next = new ServedSnapshot(
      this.store,
      runs,
      bestRunId,
      best,
      this.modelCacheSize,
      target,
      this.loading,
    );
    const keep = (runId: string) => next.byId.has(runId) && runId !== bestRunId;
    const handed = new Set<ServedModel>([best]);
    for (const [runId, model] of this.models.entries()) {
      if (!keep(runId)) continue;
      next.models.set(runId, model);
      handed.add(model);
    }
    // A swapped-out encoder run is not kept loaded: its encoder closes unless the new best shares it.
    if (keep(this.bestRunId) && !this.best.predictor.holdsEncoder) {
      next.models.set(this.bestRunId, this.best);
      handed.add(this.best);
    }
    // What the next snapshot does not hold lets its encoder go (requests under way still finish on it).
    for (const [, model] of this.models.entries()) if (!handed.has(model)) model.predictor.release();
    if (!handed.has(this.best)) this.best.predictor.release();
    this.retire();
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
export function sameRuns(a: readonly RunSummary[], b: readonly RunSummary[]): boolean {
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
        sameParams(x.params, y.params) &&
        x.promotion === y.promotion &&
        x.warnings.length === y.warnings.length &&
        x.warnings.every((warning, k) => warning === y.warnings[k])
      );
    })
  );
}
