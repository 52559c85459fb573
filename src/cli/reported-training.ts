/**
 * A training as `tagger train` and `tagger retrain` run it: in its worker thread (training-thread.ts),
 * its steps shown on stderr (a model choice's candidates, or one model's epochs or members, then the
 * phases after the training), and SIGINT/SIGTERM stopping it at once with a line saying where it stopped
 * and what was (not) kept. A training estimated not to fit in the memory this process may use is refused
 * before it starts (train/memory-check.ts; a model choice leaves such candidates out instead).
 */

import type { ClassesReport, EpochReport, MemberReport } from '../model/index.js';
import { DEFAULT_FOLDS } from '../train/cross-validate.js';
import { InterruptedError } from '../train/log-run.js';
import { checkTrainingMemory } from '../train/memory-check.js';
import { defaultTrainingThreads } from '../train/parallel.js';
import type { TrainingPhase } from '../train/pipeline.js';
import { createProgress } from '../train/progress.js';
import { type TrainingProgress, trainingProgress } from '../train/train-progress.js';
import { choiceProgress } from './choice-progress.js';
import type { CliIo } from './io.js';
import { type ThreadInput, type ThreadOutcome, trainInThread } from './training-thread.js';

type Reported = 'onEpoch' | 'onRefitEpoch' | 'onMember' | 'onClasses' | 'onCascadeFold' | 'onPhase';

/** The steps of one model's training (its family's plan), then the phases after it. */
function modelProgress(input: Omit<ThreadInput, Reported>, io: CliIo, quiet: boolean) {
  // A cascade first trains its out-of-fold models (their own bar); the training's bar, whose ETA counts from
  // its start, begins with the stages themselves.
  const cascadeFolds = input.args.cascade
    ? createProgress({ label: 'cascade', total: DEFAULT_FOLDS, silent: quiet, stream: io.stderr })
    : undefined;
  let cascadeAt = 0;
  let training: TrainingProgress | undefined;
  let phase: TrainingPhase | null = null;
  const progressOf = (): TrainingProgress => {
    if (training === undefined) {
      cascadeFolds?.stop();
      training = trainingProgress(input.args, { silent: quiet, stream: io.stderr });
    }
    return training;
  };
  if (cascadeFolds === undefined) progressOf();
  return {
    onEpoch: (report: EpochReport) => progressOf().onEpoch(report),
    onRefitEpoch: (report: EpochReport) => progressOf().onRefitEpoch(report),
    onMember: (report: MemberReport) => progressOf().onMember(report),
    onClasses: (report: ClassesReport) => progressOf().onClasses(report),
    onCascadeFold: (done: number) => {
      cascadeAt = done;
      cascadeFolds?.update(done, 'folds: both stages trained out of fold, for the threshold');
    },
    onPhase: (next: TrainingPhase) => {
      phase = next;
      progressOf().log(`training: trained; ${next}\n`);
    },
    where: (): string =>
      phase !== null
        ? `the training, while ${phase}`
        : (training?.where() ??
          `${cascadeAt} of ${DEFAULT_FOLDS} folds of the cascade's out-of-fold models (before the stages themselves)`),
    stop: (): void => {
      cascadeFolds?.stop();
      training?.stop();
    },
  };
}

export async function trainReporting(
  input: Omit<ThreadInput, Reported>,
  options: {
    io: CliIo;
    /** No progress lines. */
    quiet: boolean;
    /** What an interruption kept, after where the training stopped (`…; nothing was logged`). */
    kept: string;
    /** Refuse, before it starts, a training estimated to need more memory than the process may use (default true). */
    memoryCheck?: boolean;
  },
): Promise<ThreadOutcome> {
  if (options.memoryCheck !== false && input.choice === undefined) {
    checkTrainingMemory(input.data, input.args, input.threads ?? defaultTrainingThreads());
  }
  const progress =
    input.choice === undefined
      ? modelProgress(input, options.io, options.quiet)
      : choiceProgress(input.choice.plan, { stream: options.io.stderr, silent: options.quiet });
  const stop = new AbortController();
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void =>
    stop.abort(
      new InterruptedError(signal, `the training stopped after ${progress.where()}; ${options.kept}`),
    );
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await trainInThread(
      {
        ...input,
        ...(input.choice === undefined
          ? {}
          : {
              choice: {
                ...input.choice,
                onChoice: (event) => {
                  (progress as ReturnType<typeof choiceProgress>).onChoice(event);
                  input.choice?.onChoice?.(event);
                },
              },
            }),
        onEpoch: progress.onEpoch,
        onRefitEpoch: progress.onRefitEpoch,
        onMember: progress.onMember,
        onClasses: progress.onClasses,
        ...('onCascadeFold' in progress ? { onCascadeFold: progress.onCascadeFold } : {}),
        onPhase: progress.onPhase,
      },
      stop.signal,
    );
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    progress.stop();
  }
}
