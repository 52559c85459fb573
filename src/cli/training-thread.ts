/**
 * `tagger train`'s training in a worker thread. Training is synchronous: on the main thread a signal
 * could not be handled until it ended, so Ctrl-C either killed the process on the spot, printing
 * nothing, or (with a handler) waited for the whole training. In a worker the main thread stays free:
 * on SIGINT/SIGTERM it terminates the worker at once and says what was (not) kept. The outcome comes
 * back with the model as its saved files (`encodeModel`), decoded here — what serving will load.
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
import type { TrainingLabelIssues } from '../train/label-issues.js';
import type { TrainingInput, TrainingOutcome } from '../train/pipeline.js';

/** A training, and (`labelIssues`) then the label issues of its data (trainingLabelIssues). */
export interface ThreadInput extends TrainingInput {
  /** Threads the training may use (the worker starts them: a ParallelRunner cannot be sent to it). */
  threads?: number;
  labelIssues?: boolean;
  onLabelIssuesFold?: (done: number, folds: number) => void;
}

/** The training's outcome, with the label issues when asked for. */
export type ThreadOutcome = TrainingOutcome & { labelIssues?: TrainingLabelIssues };

/** What the worker is given: the training input without its callbacks (they stay on this thread). */
export type TrainingRequest = Omit<
  ThreadInput,
  'onEpoch' | 'onRefitEpoch' | 'onMember' | 'onClasses' | 'onLabelIssuesFold' | 'onCascadeFold' | 'parallel'
>;

/** What the worker posts. */
export type FromTrainingWorker =
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

/** The errors whose message is the whole explanation, rebuilt as themselves on this side. */
const KNOWN_ERRORS: Record<string, new (message: string) => Error> = {
  DataError,
  ModelInputError,
  ModelFormatError,
  RangeError,
};

/**
 * Trains as `trainAndEvaluate(input)` would (then, with `labelIssues`, looks for label issues in its data),
 * in a worker thread. Rejects with `signal.reason` as soon as
 * `signal` aborts (the worker is terminated mid-epoch).
 */
export function trainInThread(input: ThreadInput, signal?: AbortSignal): Promise<ThreadOutcome> {
  const { onEpoch, onRefitEpoch, onMember, onClasses, onLabelIssuesFold, onCascadeFold, ...request } = input;
  signal?.throwIfAborted();
  // Started from the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
  const fromSource = import.meta.url.endsWith('.ts');
  const worker = new Worker(new URL(`./training-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
    workerData: { mark: TRAINING_WORKER_MARK, request: request satisfies TrainingRequest },
    ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
  });
  return new Promise<ThreadOutcome>((resolve, reject) => {
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
      if (message.kind === 'epoch') onEpoch?.(message.report);
      else if (message.kind === 'refit-epoch') onRefitEpoch?.(message.report);
      else if (message.kind === 'member') onMember?.(message.report);
      else if (message.kind === 'classes') onClasses?.(message.report);
      else if (message.kind === 'label-issues-fold') onLabelIssuesFold?.(message.done, message.folds);
      else if (message.kind === 'cascade-fold') onCascadeFold?.(message.done, message.folds);
      else if (message.kind === 'done') {
        let model: TagModel;
        try {
          // An encoder model is decoded for the embeddings the training computed (its encoder is loaded).
          model = decodeModel(message.model, { withEncoder: request.encoder !== undefined });
        } catch (error) {
          settle(() => reject(error));
          return;
        }
        settle(() => resolve({ ...message.outcome, model }));
      } else {
        const Known = KNOWN_ERRORS[message.name];
        const error = Known ? new Known(message.message) : new Error(message.message);
        if (!Known) error.name = message.name;
        settle(() => reject(error));
      }
    });
    worker.on('error', (error) => settle(() => reject(error)));
    worker.on('exit', (code) =>
      settle(() => reject(new Error(`the training thread ended (exit code ${code}) without a result`))),
    );
  });
}
