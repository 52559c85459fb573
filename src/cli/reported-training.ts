/**
 * A training as `tagger train` and `tagger retrain` run it: in its worker thread (training-thread.ts),
 * its epochs or members and then its label-issue folds shown on stderr, and SIGINT/SIGTERM stopping it at
 * once with a line saying where it stopped and what was (not) kept. A training estimated not to fit in the
 * memory this process may use is refused before it starts (train/memory-check.ts).
 */
import { InterruptedError } from '../train/log-run.js';
import { checkTrainingMemory } from '../train/memory-check.js';
import { defaultTrainingThreads } from '../train/parallel.js';
import { trainingProgress } from '../train/train-progress.js';
import type { CliIo } from './io.js';
import { labelIssuesProgress } from './label-issues.js';
import { type ThreadInput, type ThreadOutcome, trainInThread } from './training-thread.js';

type Reported = 'onEpoch' | 'onRefitEpoch' | 'onMember' | 'onClasses' | 'onLabelIssuesFold';

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
  const progress = trainingProgress(input.args, { silent: options.quiet, stream: options.io.stderr });
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
