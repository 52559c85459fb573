/**
 * `tagger train`'s training, and its full label-issue search (`--label-issues folds`, after the run is
 * logged), in a worker thread. Both are synchronous: on the main thread a signal could not be handled until
 * they ended, so Ctrl-C either killed the process on the spot, printing nothing, or (with a handler) waited
 * for the whole work. In a worker the main thread stays free: on SIGINT/SIGTERM it terminates the worker at
 * once and says what was (not) kept. The outcome comes back with the model as its saved files
 * (`encodeModel`), decoded here — what serving will load.
 */
import { Worker } from 'node:worker_threads';
import {
  type ClassesReport,
  decodeModel,
  type EpochReport,
  type MemberReport,
  ModelFormatError,
  ModelInputError,
  type TagModel,
} from '../model/index.js';
import { DataError } from '../train/data.js';
import type { LabelIssueRow, TrainingLabelIssues } from '../train/label-issues.js';
import type { ChoiceEvent } from '../train/model-choice/choose.js';
import type { TrainingInput, TrainingOutcome, TrainingPhase } from '../train/pipeline.js';

/** A training, in the worker. */
export interface ThreadInput extends TrainingInput {
  /** Threads the training may use (the worker starts them: a ParallelRunner cannot be sent to it). */
  threads?: number;
}

/** The training's outcome. */
export type ThreadOutcome = TrainingOutcome;

/** What the worker is given: the training input without its callbacks (they stay on this thread). */
export type TrainingRequest = Omit<
  ThreadInput,
  'onEpoch' | 'onRefitEpoch' | 'onMember' | 'onClasses' | 'onCascadeFold' | 'onPhase' | 'parallel' | 'choice'
> & { choice?: Omit<NonNullable<TrainingInput['choice']>, 'onChoice'> };

/** The full label-issue search of a training's data (trainingLabelIssues), in the worker. */
export interface LabelIssuesRequest {
  data: readonly LabelIssueRow[];
  args: TrainingInput['args'];
  seed: number;
  encoder?: TrainingInput['encoder'];
}

/** What the worker posts. */
export type FromTrainingWorker =
  | { kind: 'choice'; event: ChoiceEvent }
  | { kind: 'phase'; phase: TrainingPhase }
  | { kind: 'label-issues-done'; found: TrainingLabelIssues }
  | { kind: 'epoch'; report: EpochReport }
  | { kind: 'refit-epoch'; report: EpochReport }
  | { kind: 'member'; report: MemberReport }
  | { kind: 'classes'; report: ClassesReport }
  | { kind: 'label-issues-fold'; done: number; folds: number }
  | { kind: 'cascade-fold'; done: number; folds: number }
  | { kind: 'done'; outcome: Omit<ThreadOutcome, 'model'>; model: Record<string, Uint8Array> }
  | { kind: 'error'; name: string; message: string };

/** Marks the worker's data, so the worker module only trains when started as this worker. */
export const TRAINING_WORKER_MARK = 'tagger-training';

/** What the worker is started with: a training, or a label-issue search. */
export type WorkerJob =
  | { job: 'train'; request: TrainingRequest }
  | { job: 'label-issues'; request: LabelIssuesRequest };

/** The errors whose message is the whole explanation, rebuilt as themselves on this side. */
const KNOWN_ERRORS: Record<string, new (message: string) => Error> = {
  DataError,
  ModelInputError,
  ModelFormatError,
  RangeError,
};

/** Starts the worker on `job`, relaying its messages to `onMessage`, until it settles the promise. */
function runWorker<T>(
  job: WorkerJob,
  signal: AbortSignal | undefined,
  onMessage: (
    message: FromTrainingWorker,
    settle: (done: () => void) => void,
    resolve: (value: T) => void,
    reject: (error: unknown) => void,
  ) => void,
): Promise<T> {
  signal?.throwIfAborted();
  // Started from the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
  const fromSource = import.meta.url.endsWith('.ts');
  const worker = new Worker(new URL(`./training-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
    workerData: { mark: TRAINING_WORKER_MARK, ...job },
    ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
  });
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const settle = (done: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      done();
    };
    const onAbort = (): void => {
      settle(() => reject(signal?.reason));
      void worker.terminate();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (message: FromTrainingWorker) => {
      if (message.kind === 'error') {
        const Known = KNOWN_ERRORS[message.name];
        const error = Known ? new Known(message.message) : new Error(message.message);
        if (!Known) error.name = message.name;
        settle(() => reject(error));
        return;
      }
      onMessage(
        message,
        settle,
        (value) => settle(() => resolve(value)),
        (error) => settle(() => reject(error)),
      );
    });
    worker.on('error', (error) => settle(() => reject(error)));
    worker.on('exit', (code) =>
      settle(() => reject(new Error(`the training thread ended (exit code ${code}) without a result`))),
    );
  });
}

/**
 * Trains as `trainAndEvaluate(input)` would, in a worker thread. Rejects with `signal.reason` as soon as
 * `signal` aborts (the worker is terminated mid-epoch).
 */
export function trainInThread(input: ThreadInput, signal?: AbortSignal): Promise<ThreadOutcome> {
  const { onEpoch, onRefitEpoch, onMember, onClasses, onCascadeFold, onPhase, choice, ...request } = input;
  const onChoice = choice?.onChoice;
  const plain = choice === undefined ? undefined : (({ onChoice: _o, ...rest }) => rest)(choice);
  const sent: TrainingRequest = { ...request, ...(plain === undefined ? {} : { choice: plain }) };
  return runWorker<ThreadOutcome>(
    { job: 'train', request: sent },
    signal,
    (message, _settle, resolve, reject) => {
      if (message.kind === 'epoch') onEpoch?.(message.report);
      else if (message.kind === 'refit-epoch') onRefitEpoch?.(message.report);
      else if (message.kind === 'member') onMember?.(message.report);
      else if (message.kind === 'classes') onClasses?.(message.report);
      else if (message.kind === 'cascade-fold') onCascadeFold?.(message.done, message.folds);
      else if (message.kind === 'phase') onPhase?.(message.phase);
      else if (message.kind === 'choice') onChoice?.(message.event);
      else if (message.kind === 'done') {
        let model: TagModel;
        try {
          // An encoder model is decoded for the embeddings the training computed (its encoder is loaded).
          model = decodeModel(message.model, { withEncoder: request.encoder !== undefined });
        } catch (error) {
          reject(error);
          return;
        }
        resolve({ ...message.outcome, model });
      }
    },
  );
}

/**
 * The full label-issue search (trainingLabelIssues: 5 out-of-fold models over every row) in a worker
 * thread, each fold told to `onFold`; rejects with `signal.reason` as soon as `signal` aborts.
 */
export function labelIssuesInThread(
  request: LabelIssuesRequest,
  onFold: (done: number, folds: number) => void,
  signal?: AbortSignal,
): Promise<TrainingLabelIssues> {
  return runWorker<TrainingLabelIssues>(
    { job: 'label-issues', request },
    signal,
    (message, _settle, resolve) => {
      if (message.kind === 'label-issues-fold') onFold(message.done, message.folds);
      else if (message.kind === 'label-issues-done') resolve(message.found);
    },
  );
}
