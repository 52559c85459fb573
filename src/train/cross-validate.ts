/**
 * Stratified k-fold cross-validation of training arguments: what `tagger optimize` ranks trials by and the
 * evidence behind the defaults (bench/model.ts --cv, src/model/README.md).
 *
 * Folds: `stratifiedSplit(data, tag, [1/k × k], seed)`. Fold i's model is trained by `trainTagger` on a
 * stratified 85/15 train/validation split (seed `seed`) of the other folds (in fold order), with each
 * training seed, and scored by weighted f1 on fold i; a fold's score is the mean over the training seeds.
 * Every (fold, training seed) score is a pure function of its inputs, so running the tasks in worker threads
 * gives the same numbers as running them one after another: only the order they finish in differs, and the
 * scores are collected by position.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import {
  bindEmbeddings,
  encoderStageArgs,
  evaluate,
  type LabelledText,
  stratifiedSplit,
  type TrainEncoder,
  type TrainingArgs,
  trainTagger,
} from '../model/index.js';
import { DataError } from './data.js';
import { MIN_SPLIT_ROWS, SPLIT_WITH_TEST, splitStratum } from './splits.js';

export const DEFAULT_FOLDS = 5;

export interface CrossValidationOptions {
  /** Number of folds k (≥ 2). */
  folds: number;
  /** Seeds the fold assignment and each fold's train/validation split. */
  seed: number;
  /** Training seeds per fold (their f1s are averaged); default `[seed]`. */
  trainingSeeds?: readonly number[];
  /**
   * The embeddings of every row (computed once, see embeddings.ts), for args that name an encoder; every
   * fold, seed and trial reuses them (a worker thread receives them once, with the data).
   */
  encoder?: TrainEncoder;
}

export interface CrossValidation {
  /** Weighted f1 per fold (mean over the training seeds), in fold order. */
  folds: number[];
  mean: number;
  /** Sample standard deviation over the folds (n − 1); 0 for one fold. */
  std: number;
  /** Time spent training and scoring, summed over the tasks (seconds; above the wall time when threads share the work). */
  trainingSeconds: number;
}

/** One unit of work: train on every fold but `fold` with `trainingSeed`, score on `fold`. */
export interface FoldTask {
  fold: number;
  trainingSeed: number;
}

export interface FoldScore extends FoldTask {
  f1: number;
  seconds: number;
}

/** Mean and sample standard deviation. */
export function meanStd(values: readonly number[]): { mean: number; std: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const std =
    values.length < 2 ? 0 : Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1));
  return { mean, std };
}

export interface Fold {
  train: LabelledText[];
  validation: LabelledText[];
  test: LabelledText[];
}

/**
 * The k folds of `data` with each fold's training and validation rows; throws DataError when too small.
 * `validated: false` (label issues, whose fold models fit on all the other folds' rows) needs no validation
 * rows, only at least MIN_SPLIT_ROWS test rows per fold.
 */
export function crossValidationFolds(
  data: readonly LabelledText[],
  k: number,
  seed: number,
  { validated = true }: { validated?: boolean } = {},
): Fold[] {
  if (!Number.isInteger(k) || k < 2) {
    throw new RangeError(`cross-validation: --folds must be a whole number ≥ 2, got ${k}`);
  }
  const parts = stratifiedSplit(
    data,
    splitStratum(data),
    Array.from({ length: k }, () => 1 / k),
    seed,
  );
  return parts.map((test, i) => {
    const rest = parts.filter((_, j) => j !== i).flat();
    const [train = [], validation = []] = stratifiedSplit(rest, splitStratum(rest), SPLIT_WITH_TEST, seed);
    if (test.length < MIN_SPLIT_ROWS || (validated && validation.length < MIN_SPLIT_ROWS)) {
      const what = validated
        ? `test ${test.length} and validate on ${validation.length} rows`
        : `test ${test.length} row${test.length === 1 ? '' : 's'}`;
      throw new DataError(
        `data: ${data.length} rows are too few for ${k}-fold cross-validation (fold ${i + 1} would ${what}); use fewer folds or more data`,
      );
    }
    return { train, validation, test };
  });
}

/** Trains and scores one task of a fold (the same in a worker thread and in the serial path). */
export function scoreFold(
  folds: readonly Fold[],
  args: TrainingArgs,
  task: FoldTask,
  encoder?: TrainEncoder,
): FoldScore {
  const fold = folds[task.fold];
  if (fold === undefined) throw new RangeError(`cross-validation: no fold ${task.fold}`);
  const started = performance.now();
  const embeddings = args.encoder === null ? undefined : encoder;
  // A cascade is scored by its encoder stage: its τ is chosen to stay within a tolerance of that model.
  const { model } = trainTagger(fold.train, fold.validation, args.cascade ? encoderStageArgs(args) : args, {
    seed: task.trainingSeed,
    ...(embeddings ? { encoder: embeddings } : {}),
  });
  const scored = embeddings ? bindEmbeddings(model, embeddings.embeddings) : model;
  const f1 = evaluate(scored, fold.test).overall.f1;
  return { ...task, f1, seconds: (performance.now() - started) / 1000 };
}

function tasksOf(k: number, trainingSeeds: readonly number[]): FoldTask[] {
  return Array.from({ length: k }, (_, fold) =>
    trainingSeeds.map((trainingSeed) => ({ fold, trainingSeed })),
  ).flat();
}

/** Per-fold means over the training seeds, in fold order, whatever order the scores came in. */
function summarise(
  k: number,
  trainingSeeds: readonly number[],
  scores: readonly FoldScore[],
): CrossValidation {
  const folds = Array.from({ length: k }, (_, fold) => {
    const ofFold = trainingSeeds.map((seed) => {
      const score = scores.find((s) => s.fold === fold && s.trainingSeed === seed);
      if (score === undefined) throw new Error(`cross-validation: fold ${fold} seed ${seed} has no score`);
      return score.f1;
    });
    return meanStd(ofFold).mean;
  });
  return {
    folds,
    ...meanStd(folds),
    trainingSeconds: scores.reduce((a, s) => a + s.seconds, 0),
  };
}

/** Cross-validation in this thread, one task after another (the serial path; synchronous). */
export function crossValidateSerial(
  data: readonly LabelledText[],
  args: TrainingArgs,
  options: CrossValidationOptions,
): CrossValidation {
  const folds = crossValidationFolds(data, options.folds, options.seed);
  const seeds = options.trainingSeeds ?? [options.seed];
  const scores = tasksOf(options.folds, seeds).map((task) => scoreFold(folds, args, task, options.encoder));
  return summarise(options.folds, seeds, scores);
}

/** What the main thread sends a worker, and what it answers. */
export type ToWorker = { kind: 'task'; id: number; args: TrainingArgs; task: FoldTask };
export type FromWorker =
  | { kind: 'score'; id: number; score: FoldScore }
  | { kind: 'error'; id: number; message: string; name: string };
export interface WorkerSetup {
  data: readonly LabelledText[];
  folds: number;
  seed: number;
  encoder?: TrainEncoder;
}

interface Pending {
  resolve: (score: FoldScore) => void;
  reject: (error: Error) => void;
}

/**
 * Cross-validates many argument sets on the same data with a pool of worker threads (each holds the data
 * and its folds, built once), so a search pays the threads' start-up once. With `workers` ≤ 1 it runs in
 * this thread. `close()` ends the threads.
 */
export class CrossValidator {
  readonly workers: number;
  private readonly folds: Fold[];
  private readonly pool: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly waiting: (() => void)[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: Error | undefined;

  constructor(
    private readonly data: readonly LabelledText[],
    private readonly options: CrossValidationOptions & { workers?: number },
  ) {
    // Checked here, in this thread, so bad data fails before any thread starts.
    this.folds = crossValidationFolds(data, options.folds, options.seed);
    const tasks = options.folds * (options.trainingSeeds ?? [options.seed]).length;
    this.workers = Math.max(1, Math.min(options.workers ?? availableParallelism(), tasks));
  }

  /** Scores `args` on every fold. */
  async run(args: TrainingArgs): Promise<CrossValidation> {
    const seeds = this.options.trainingSeeds ?? [this.options.seed];
    const tasks = tasksOf(this.options.folds, seeds);
    if (this.workers <= 1) {
      return summarise(
        this.options.folds,
        seeds,
        tasks.map((task) => scoreFold(this.folds, args, task, this.options.encoder)),
      );
    }
    this.start();
    const scores = await Promise.all(tasks.map((task) => this.submit(args, task)));
    return summarise(this.options.folds, seeds, scores);
  }

  async close(): Promise<void> {
    const pool = this.pool.splice(0);
    this.idle.length = 0;
    await Promise.all(pool.map((worker) => worker.terminate()));
  }

  private start(): void {
    if (this.pool.length > 0) return;
    // Started from the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
    const fromSource = import.meta.url.endsWith('.ts');
    const setup: WorkerSetup = {
      data: this.data,
      folds: this.options.folds,
      seed: this.options.seed,
      ...(this.options.encoder ? { encoder: this.options.encoder } : {}),
    };
    for (let i = 0; i < this.workers; i++) {
      const worker = new Worker(new URL(`./cv-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
        workerData: setup,
        ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
      });
      worker.on('message', (message: FromWorker) => {
        // Only a worker with a task keeps the process alive: a forgotten idle pool must not hang it.
        worker.unref();
        const pending = this.pending.get(message.id);
        this.pending.delete(message.id);
        this.release(worker);
        if (message.kind === 'score') pending?.resolve(message.score);
        else {
          const error = new Error(message.message);
          error.name = message.name;
          pending?.reject(error);
        }
      });
      worker.on('error', (error) => this.fail(error));
      worker.on('exit', (code) => {
        if (this.pool.includes(worker))
          this.fail(new Error(`cross-validation worker exited with code ${code}`));
      });
      worker.unref();
      this.pool.push(worker);
      this.idle.push(worker);
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    for (const wake of this.waiting.splice(0)) wake();
  }

  private release(worker: Worker): void {
    this.idle.push(worker);
    this.waiting.shift()?.();
  }

  private async submit(args: TrainingArgs, task: FoldTask): Promise<FoldScore> {
    for (;;) {
      if (this.failure) throw this.failure;
      const worker = this.idle.shift();
      if (worker !== undefined) {
        const id = this.nextId++;
        const message: ToWorker = { kind: 'task', id, args, task };
        return new Promise<FoldScore>((resolve, reject) => {
          this.pending.set(id, { resolve, reject });
          worker.ref();
          worker.postMessage(message);
        });
      }
      await new Promise<void>((wake) => this.waiting.push(wake));
    }
  }
}

/** One-off cross-validation; runs its tasks over `workers` threads (default: the machine's cores). */
export async function crossValidate(
  data: readonly LabelledText[],
  args: TrainingArgs,
  options: CrossValidationOptions & { workers?: number },
): Promise<CrossValidation> {
  const validator = new CrossValidator(data, options);
  try {
    return await validator.run(args);
  } finally {
    await validator.close();
  }
}
