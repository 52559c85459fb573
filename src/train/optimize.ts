/**
 * Hyper-parameter search: seeded random search over the analyzer, n-gram range, learning rate,
 * power_t and alpha. Every trial is trained, evaluated and logged as a run, nested under one parent run
 * of the search (MLflow's `mlflow.parentRunId`, so MLflow's UI groups them); trials are compared on the
 * validation split's weighted f1 (never on the test data), and the best arguments are returned.
 */
import { createRng, type TrainingArgs } from '../model/index.js';
import { type DatasetInput, getOrCreateExperiment, type TrackingStore } from '../tracking/store.js';
import { InterruptedError, type LoggedRun, logTrainingRun } from './log-run.js';
import { type TrainingInput, trainAndEvaluate } from './pipeline.js';

/** The search space; bounds chosen around what works for short technical texts. */
export const SEARCH_SPACE = {
  analyzer: ['word', 'char', 'char_wb'] as const,
  /** Inclusive n-gram maximum per analyzer (word n-grams beyond 3 are too sparse to help). */
  ngramMax: { word: [2, 3], char: [3, 8], char_wb: [3, 8] } as const,
  learningRate: [1e-3, 1] as const,
  powerT: [0.05, 0.5] as const,
  alpha: [1e-6, 1e-3] as const,
};

export interface Trial {
  trial: number;
  args: TrainingArgs;
  runId: string;
  validationF1: number;
  testF1: number;
}

export interface OptimizeInput extends Omit<TrainingInput, 'onEpoch'> {
  trials: number;
  experiment: string;
  runNamePrefix: string;
  onTrial?: (trial: Trial) => void;
  /**
   * SIGINT/SIGTERM stop the search cleanly (the CLI sets it): while a trial is logged it is marked
   * KILLED; while one trains, the search stops when that training ends (training is synchronous, so
   * nothing can run before), and the parent run is marked KILLED either way.
   */
  catchSignals?: boolean;
  /** Told when a signal arrived during a training, so the CLI can say the search stops after it. */
  onStopRequested?: (signal: 'SIGINT' | 'SIGTERM') => void;
  /** The data files, logged as every trial's dataset inputs. */
  datasets?: DatasetInput[];
}

export interface OptimizeResult {
  best: Trial;
  trials: Trial[];
  /** The run that groups the trials (MLflow's parent run). */
  parentRunId: string;
}

/** MLflow's tag that nests a run under its parent in the UI. */
export const PARENT_RUN_TAG = 'mlflow.parentRunId';

const logUniform = (random: () => number, [low, high]: readonly [number, number]): number =>
  Math.exp(Math.log(low) + random() * (Math.log(high) - Math.log(low)));

/** Rounds to 4 significant digits so logged params stay readable. */
const round = (value: number): number => Number(value.toPrecision(4));

/** Draws the arguments of one trial from the space, on top of `base` (which fixes everything else). */
export function sampleArgs(base: TrainingArgs, random: () => number): TrainingArgs {
  const analyzer =
    SEARCH_SPACE.analyzer[Math.floor(random() * SEARCH_SPACE.analyzer.length)] ?? base.analyzer;
  const [low, high] = SEARCH_SPACE.ngramMax[analyzer];
  return {
    ...base,
    analyzer,
    ngram_max_range: low + Math.floor(random() * (high - low + 1)),
    learning_rate: round(logUniform(random, SEARCH_SPACE.learningRate)),
    power_t: round(SEARCH_SPACE.powerT[0] + random() * (SEARCH_SPACE.powerT[1] - SEARCH_SPACE.powerT[0])),
    alpha: round(logUniform(random, SEARCH_SPACE.alpha)),
  };
}

export async function optimize(store: TrackingStore, input: OptimizeInput): Promise<OptimizeResult> {
  if (!Number.isInteger(input.trials) || input.trials < 1) {
    throw new RangeError(`optimize: --trials must be a whole number ≥ 1, got ${input.trials}`);
  }
  const random = createRng(input.seed);
  const experimentId = await getOrCreateExperiment(store, input.experiment);
  const parent = await store.createRun(experimentId, {
    runName: input.runNamePrefix,
    tags: { 'mlflow.source.name': 'tagger optimize', 'mlflow.source.type': 'LOCAL' },
  });
  const parentRunId = parent.info.runId;
  let stopRequested: 'SIGINT' | 'SIGTERM' | undefined;
  let trialsDone = 0;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
    if (stopRequested === undefined) input.onStopRequested?.(signal);
    stopRequested ??= signal;
  };
  const stopIfRequested = (): void => {
    if (stopRequested !== undefined) {
      throw new InterruptedError(
        stopRequested,
        `the search stopped after ${trialsDone} trial(s); its parent run ${parentRunId} was marked KILLED`,
      );
    }
  };
  if (input.catchSignals) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  try {
    await store.logBatch(parentRunId, {
      params: { trials: String(input.trials), seed: String(input.seed) },
    });
    const trials: Trial[] = [];
    for (let index = 0; index < input.trials; index++) {
      // The first trial is the base arguments themselves, so the search never does worse than them.
      const args = index === 0 ? input.args : sampleArgs(input.args, random);
      stopIfRequested();
      const outcome = trainAndEvaluate({ ...input, args });
      // A signal sent during the (synchronous) training is delivered now: no trial run was created yet.
      await new Promise<void>((resolve) => setImmediate(resolve));
      stopIfRequested();
      const logged: LoggedRun = await logTrainingRun(store, {
        experiment: input.experiment,
        runName: `${input.runNamePrefix}-${index + 1}`,
        args,
        seed: input.seed,
        outcome,
        source: 'tagger optimize',
        extraParams: { trial: String(index + 1) },
        extraMetrics: { val_f1: outcome.validationF1 },
        extraTags: { [PARENT_RUN_TAG]: parentRunId },
        ...(input.datasets ? { datasets: input.datasets } : {}),
        ...(input.catchSignals ? { catchSignals: true } : {}),
      });
      const trial: Trial = {
        trial: index + 1,
        args,
        runId: logged.runId,
        validationF1: outcome.validationF1,
        testF1: outcome.performance.overall.f1,
      };
      trials.push(trial);
      trialsDone = trials.length;
      input.onTrial?.(trial);
    }
    const best = trials.reduce((a, b) => (b.validationF1 > a.validationF1 ? b : a));
    const now = Date.now();
    await store.logBatch(parentRunId, {
      metrics: [
        { key: 'best_val_f1', value: best.validationF1, timestamp: now, step: 0 },
        { key: 'best_trial', value: best.trial, timestamp: now, step: 0 },
      ],
      tags: { 'tagger.best_run_id': best.runId },
    });
    await store.updateRun(parentRunId, { status: 'FINISHED' });
    return { best, trials, parentRunId };
  } catch (error) {
    const status = error instanceof InterruptedError ? 'KILLED' : 'FAILED';
    await store.updateRun(parentRunId, { status, endTime: Date.now() }).catch(() => undefined);
    throw error;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
