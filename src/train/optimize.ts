/**
 * Hyper-parameter search: seeded random search over the features, the classifier and its hyper-parameters
 * (search-space.ts). Every trial is
 * scored by stratified k-fold cross-validation on the training data (never the test data; see
 * `cross-validate.ts`), then trained, evaluated and logged as a run, nested under one parent run of the
 * search (MLflow's `mlflow.parentRunId`, so MLflow's UI groups them); the trial with the best CV mean f1 wins.
 */
import { createRng, type LabelledText, type TrainingArgs } from '../model/index.js';
import { type DatasetInput, getOrCreateExperiment, type TrackingStore } from '../tracking/store.js';
import { type CrossValidation, CrossValidator, DEFAULT_FOLDS } from './cross-validate.js';
import { InterruptedError, type LoggedRun, logTrainingRun } from './log-run.js';
import { splitData, type TrainingInput, trainAndEvaluate } from './pipeline.js';
import { LOGGING_PROCESS_TAG, loggingTags, markEnded } from './run-ends.js';
import { sampleArgs } from './search-space.js';

export { SEARCH_SPACE, sampleArgs } from './search-space.js';

export interface Trial {
  trial: number;
  args: TrainingArgs;
  runId: string;
  /** The cross-validated weighted f1 the trials are ranked by. */
  cv: CrossValidation;
  validationF1: number;
  testF1: number;
}

export interface OptimizeInput extends Omit<TrainingInput, 'onEpoch'> {
  trials: number;
  /** Folds of the cross-validation (default 5). */
  folds?: number;
  /** Threads the folds are trained in (default: the machine's cores; 1: in this thread). Same scores either way. */
  cvWorkers?: number;
  experiment: string;
  runNamePrefix: string;
  onTrial?: (trial: Trial) => void;
  /**
   * SIGINT/SIGTERM stop the search cleanly (the CLI sets it): while a trial is logged it is marked
   * KILLED; while one is cross-validated or trains, the search stops when that step ends (training is
   * synchronous, so nothing can run before; the cross-validation's threads finish their tasks), and the
   * parent run is marked KILLED either way.
   */
  catchSignals?: boolean;
  /** Told when a signal arrived during a cross-validation or training, so the CLI can say the search stops after it. */
  onStopRequested?: (signal: 'SIGINT' | 'SIGTERM') => void;
  /** The data files, logged as every trial's dataset inputs. */
  datasets?: DatasetInput[];
}

/**
 * The search was stopped by SIGINT/SIGTERM (`catchSignals`): its parent run is KILLED, and `trials` are
 * the trials logged before the signal (each a FINISHED run), for the caller to report and keep.
 */
export class SearchInterruptedError extends InterruptedError {
  constructor(
    signal: 'SIGINT' | 'SIGTERM',
    what: string,
    readonly trials: readonly Trial[],
    readonly parentRunId: string,
  ) {
    super(signal, what);
  }
}

/** The trial with the best CV mean f1; ties keep the earlier trial (the base arguments first). */
export const bestTrial = (trials: readonly Trial[]): Trial =>
  trials.reduce((a, b) => (b.cv.mean > a.cv.mean ? b : a));

export interface OptimizeResult {
  best: Trial;
  trials: Trial[];
  /** The run that groups the trials (MLflow's parent run). */
  parentRunId: string;
}

/** MLflow's tag that nests a run under its parent in the UI. */
export const PARENT_RUN_TAG = 'mlflow.parentRunId';

/**
 * The rows cross-validation may see: the training file's rows (subset applied) when a test file is given,
 * else the train + validation rows of training's own split (the test split stays unseen, as in training).
 */
export function crossValidationRows(
  input: Pick<TrainingInput, 'data' | 'testData' | 'args' | 'seed'>,
): LabelledText[] {
  const data = input.args.subset === null ? input.data : input.data.slice(0, input.args.subset);
  if (input.testData !== undefined) return [...data];
  const split = splitData(data, false, input.seed);
  return [...split.train, ...split.validation];
}

export async function optimize(store: TrackingStore, input: OptimizeInput): Promise<OptimizeResult> {
  if (!Number.isInteger(input.trials) || input.trials < 1) {
    throw new RangeError(`optimize: --trials must be a whole number ≥ 1, got ${input.trials}`);
  }
  const random = createRng(input.seed);
  const folds = input.folds ?? DEFAULT_FOLDS;
  // Built before the parent run, so data too small for the folds fails without leaving a run behind.
  const validator = new CrossValidator(crossValidationRows(input), {
    folds,
    seed: input.seed,
    ...(input.encoder ? { encoder: input.encoder } : {}),
    ...(input.cvWorkers === undefined ? {} : { workers: input.cvWorkers }),
  });
  const experimentId = await getOrCreateExperiment(store, input.experiment);
  const parent = await store.createRun(experimentId, {
    runName: input.runNamePrefix,
    tags: {
      'mlflow.source.name': 'tagger optimize',
      'mlflow.source.type': 'LOCAL',
      // The process only, not when it started: a search may rightly run for hours (run-ends.ts).
      [LOGGING_PROCESS_TAG]: loggingTags()[LOGGING_PROCESS_TAG]!,
    },
  });
  const parentRunId = parent.info.runId;
  let stopRequested: 'SIGINT' | 'SIGTERM' | undefined;
  const trials: Trial[] = [];
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
    if (stopRequested === undefined) input.onStopRequested?.(signal);
    stopRequested ??= signal;
  };
  /** Stops the search if a signal came; `unlogged` says what became of the trial under way. */
  const stopIfRequested = (unlogged: string): void => {
    if (stopRequested !== undefined) {
      throw new InterruptedError(stopRequested, `trial ${trials.length + 1} ${unlogged}`);
    }
  };
  if (input.catchSignals) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  try {
    await store.logBatch(parentRunId, {
      params: { trials: String(input.trials), seed: String(input.seed), folds: String(folds) },
    });
    for (let index = 0; index < input.trials; index++) {
      // The first trial is the base arguments themselves, so the search never does worse than them.
      const args = index === 0 ? input.args : sampleArgs(input.args, random);
      stopIfRequested('was not started');
      const cv = await validator.run(args);
      stopIfRequested('was cross-validated but not trained or logged');
      const outcome = trainAndEvaluate({ ...input, args });
      // A signal sent during the (synchronous) training is delivered now: no trial run was created yet.
      await new Promise<void>((resolve) => setImmediate(resolve));
      stopIfRequested('was trained but not logged');
      const logged: LoggedRun = await logTrainingRun(store, {
        experiment: input.experiment,
        runName: `${input.runNamePrefix}-${index + 1}`,
        args,
        seed: input.seed,
        outcome,
        source: 'tagger optimize',
        extraParams: { trial: String(index + 1) },
        extraMetrics: { val_f1: outcome.validationF1, cv_f1_mean: cv.mean, cv_f1_std: cv.std },
        extraMetricHistory: { cv_f1_fold: cv.folds },
        extraTags: { [PARENT_RUN_TAG]: parentRunId },
        ...(input.datasets ? { datasets: input.datasets } : {}),
        ...(input.catchSignals ? { catchSignals: true } : {}),
      });
      const trial: Trial = {
        trial: index + 1,
        args,
        runId: logged.runId,
        cv,
        validationF1: outcome.validationF1,
        testF1: outcome.performance.overall.f1,
      };
      trials.push(trial);
      input.onTrial?.(trial);
    }
    const best = bestTrial(trials);
    const now = Date.now();
    await store.logBatch(parentRunId, {
      metrics: [
        { key: 'best_cv_f1_mean', value: best.cv.mean, timestamp: now, step: 0 },
        { key: 'best_cv_f1_std', value: best.cv.std, timestamp: now, step: 0 },
        { key: 'best_val_f1', value: best.validationF1, timestamp: now, step: 0 },
        { key: 'best_trial', value: best.trial, timestamp: now, step: 0 },
      ],
      tags: { 'tagger.best_run_id': best.runId },
    });
    await store.updateRun(parentRunId, { status: 'FINISHED' });
    return { best, trials, parentRunId };
  } catch (error) {
    const status = error instanceof InterruptedError ? 'KILLED' : 'FAILED';
    await markEnded(store, parentRunId, status, error instanceof InterruptedError ? { waitMs: 0 } : {});
    if (error instanceof InterruptedError) {
      // What was kept: the trials logged so far; what was not: the trial under way (logged ones say so).
      const underWay = error.what.startsWith('the run being logged')
        ? `trial ${trials.length + 1} ${error.what.replace(/^the run being logged/, 'was being logged and')}`
        : error.what;
      throw new SearchInterruptedError(
        error.signal,
        `the search stopped after ${trials.length} of ${input.trials} trials; ${underWay}; the parent run ${parentRunId} was marked KILLED`,
        [...trials],
        parentRunId,
      );
    }
    throw error;
  } finally {
    await validator.close();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
