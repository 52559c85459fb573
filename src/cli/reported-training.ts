/**
 * A training as `tagger train` and `tagger retrain` run it: in its worker thread (training-thread.ts),
 * its epochs or members and then its label-issue folds shown on stderr, and SIGINT/SIGTERM stopping it at
 * once with a line saying where it stopped and what was (not) kept. A training estimated not to fit in the
 * memory this process may use is refused before it starts (train/memory-check.ts).
 */

import type { ClassesReport, EpochReport, MemberReport } from '../model/index.js';
import { DEFAULT_FOLDS } from '../train/cross-validate.js';
import { InterruptedError } from '../train/log-run.js';
import { checkTrainingMemory } from '../train/memory-check.js';
import { defaultTrainingThreads } from '../train/parallel.js';
import { createProgress } from '../train/progress.js';
import { type TrainingProgress, trainingProgress } from '../train/train-progress.js';
import type { CliIo } from './io.js';
import { labelIssuesProgress } from './label-issues.js';
import { type ThreadInput, type ThreadOutcome, trainInThread } from './training-thread.js';

type Reported = 'onEpoch' | 'onRefitEpoch' | 'onMember' | 'onClasses' | 'onLabelIssuesFold' | 'onCascadeFold';

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
  if (options.memoryCheck !== false) {
    checkTrainingMemory(input.data, input.args, input.threads ?? defaultTrainingThreads());
  }
  // A cascade first trains its out-of-fold models (their own bar); the training's bar, whose ETA counts from
  // its start, begins with the stages themselves.
  const cascadeFolds = input.args.cascade
    ? createProgress({
        label: 'cascade',
        total: DEFAULT_FOLDS,
        silent: options.quiet,
        stream: options.io.stderr,
      })
    : undefined;
  let cascadeAt = 0;
  let training: TrainingProgress | undefined;
  const progressOf = (): TrainingProgress => {
    if (training === undefined) {
      cascadeFolds?.stop();
      training = trainingProgress(input.args, { silent: options.quiet, stream: options.io.stderr });
    }
    return training;
  };
  if (cascadeFolds === undefined) progressOf();
  const progress = {
    onEpoch: (report: EpochReport) => progressOf().onEpoch(report),
    onRefitEpoch: (report: EpochReport) => progressOf().onRefitEpoch(report),
    onMember: (report: MemberReport) => progressOf().onMember(report),
    onClasses: (report: ClassesReport) => progressOf().onClasses(report),
    where: (): string =>
      training?.where() ??
      `${cascadeAt} of ${DEFAULT_FOLDS} folds of the cascade's out-of-fold models (before the stages themselves)`,
    stop: (): void => {
      cascadeFolds?.stop();
      training?.stop();
    },
  };
  const folds = labelIssuesProgress(options.io, options.quiet);
  const stop = new AbortController();
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void =>
    stop.abort(
      new InterruptedError(
        signal,
        `${folds.started() ? folds.where() : `the training stopped after ${progress.where()}`}; ${options.kept}`,
      ),
    );
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await trainInThread(
      {
        ...input,
        onEpoch: progress.onEpoch,
        onRefitEpoch: progress.onRefitEpoch,
        onMember: progress.onMember,
        onClasses: progress.onClasses,
        onCascadeFold: (done) => {
          cascadeAt = done;
          cascadeFolds?.update(done, 'folds: both stages trained out of fold, for the threshold');
        },
        onLabelIssuesFold: (done, total) => {
          if (!folds.started()) progress.stop();
          folds.update(done, total);
        },
      },
      stop.signal,
    );
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    progress.stop();
    folds.stop();
  }
}
