/**
 * The label issues of a training's data, looked for after its run is logged (so neither a failure nor a
 * stop during the search costs the model): by default confident learning on the validation rows the chosen
 * model never saw (src/train/label-issues.ts's heldOutLabelIssues: no training of its own); with
 * `--label-issues folds` the full search over every row through 5 out-of-fold models, in a worker thread
 * that SIGINT/SIGTERM stop at once, the run kept and its label issues marked skipped. Shared by `tagger
 * train` and `tagger retrain`.
 */
import type { TrainEncoder, TrainingArgs } from '../model/index.js';
import type { TrackingStore } from '../tracking/store.js';
import { DEFAULT_FOLDS } from '../train/cross-validate.js';
import {
  heldOutLabelIssues,
  type LabelIssueRow,
  TRAINING_LABEL_ISSUE_ROWS,
  type TrainingLabelIssues,
} from '../train/label-issues.js';
import { InterruptedError, LABEL_ISSUES_SKIPPED_TAG, logLabelIssues } from '../train/log-run.js';
import type { TrainingOutcome } from '../train/pipeline.js';
import { createProgress } from '../train/progress.js';
import type { CliIo } from './io.js';
import { labelIssuesInThread } from './training-thread.js';

/** Where `--label-issues` looks: the validation rows (default), every row through 5 folds, or nowhere. */
export const LABEL_ISSUE_MODES = ['validation', 'folds'] as const;
export type LabelIssueMode = (typeof LABEL_ISSUE_MODES)[number];

export interface LabelIssuesAfterRun {
  mode: LabelIssueMode | false;
  data: readonly LabelIssueRow[];
  outcome: Pick<TrainingOutcome, 'heldOut' | 'args'>;
  seed: number;
  encoder?: TrainEncoder;
  /** The data file, for the messages. */
  file: string;
  io: CliIo;
  quiet: boolean;
}

/**
 * Looks for the label issues of a logged run's data and logs them on the run; undefined with
 * `--no-label-issues`. A stop during the full search throws an InterruptedError saying the run is kept.
 */
export async function labelIssuesAfterRun(
  store: TrackingStore,
  runId: string,
  options: LabelIssuesAfterRun,
): Promise<TrainingLabelIssues | undefined> {
  if (options.mode === false) return undefined;
  const args: TrainingArgs = options.outcome.args;
  let found: TrainingLabelIssues;
  if (options.mode === 'validation') {
    found =
      options.outcome.heldOut === undefined
        ? {
            skipped: `a cascade trains its stages whole, so no model predicted held-out rows for the search; run tagger label-issues --data ${options.file}, or train with --label-issues folds`,
          }
        : heldOutLabelIssues(options.data, options.outcome.heldOut, args, options.seed);
  } else {
    found = await searchEveryRow(store, runId, options, args);
  }
  try {
    await logLabelIssues(store, runId, found);
  } catch (error) {
    options.io.stderr.write(
      `tagger: WARNING: run ${runId} was logged, but its label issues could not be: ${(error as Error).message}; list them with tagger label-issues --data ${options.file}\n`,
    );
  }
  return found;
}

/** The full search in its worker thread, with a line per fold; a signal stops it and keeps the run. */
async function searchEveryRow(
  store: TrackingStore,
  runId: string,
  options: LabelIssuesAfterRun,
  args: TrainingArgs,
): Promise<TrainingLabelIssues> {
  const rows = Math.min(options.data.length, TRAINING_LABEL_ISSUE_ROWS);
  const progress = createProgress({
    label: 'label issues',
    total: DEFAULT_FOLDS,
    eta: true,
    silent: options.quiet,
    stream: options.io.stderr,
  });
  let at = 0;
  const stop = new AbortController();
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void =>
    stop.abort(new InterruptedError(signal, 'the search for label issues was stopped'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Only once the signals are caught: a stop prompted by this line must find them caught (it did not,
  // now and then, on a busy machine: the process died of the signal with the run logged but unsaid).
  progress.update(0, `${rows.toLocaleString('en-US')} rows, ${DEFAULT_FOLDS} out-of-fold models`);
  try {
    return await labelIssuesInThread(
      {
        data: options.data,
        args,
        seed: options.seed,
        ...(options.encoder ? { encoder: options.encoder } : {}),
      },
      (done, folds) => {
        at = done;
        progress.update(done, `out-of-fold models trained (of ${folds})`);
      },
      stop.signal,
    );
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
    const skipped = `the search was stopped by ${error.signal} after ${at} of ${DEFAULT_FOLDS} out-of-fold models; run tagger label-issues --data ${options.file}`;
    await store.logBatch(runId, { tags: { [LABEL_ISSUES_SKIPPED_TAG]: skipped } }).catch(() => undefined);
    throw new InterruptedError(
      error.signal,
      `the search for label issues stopped after ${at} of ${DEFAULT_FOLDS} out-of-fold models; run ${runId} was logged and is kept (its label issues are marked skipped: tag ${LABEL_ISSUES_SKIPPED_TAG})`,
    );
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    progress.stop();
  }
}
