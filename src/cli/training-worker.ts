/**
 * The worker thread of `training-thread.ts`: trains once, posting each epoch's losses (or each member
 * trained), then looks for label issues when asked, posting each fold, and posts the outcome, with the model as its saved files (copied: some may share a buffer, which cannot be
 * transferred twice; they are small beside the training).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { encodeModel } from '../model/index.js';
import { trainingLabelIssues } from '../train/label-issues.js';
import { createParallelRunner } from '../train/parallel.js';
import { trainAndEvaluate } from '../train/pipeline.js';
import { type FromTrainingWorker, TRAINING_WORKER_MARK, type TrainingRequest } from './training-thread.js';

const data = workerData as { mark?: string; request: TrainingRequest } | null;
if (!isMainThread && parentPort && data?.mark === TRAINING_WORKER_MARK) {
  const port = parentPort;
  const post = (message: FromTrainingWorker): void => port.postMessage(message);
  // The training's threads beside this one (ended with the process: they never keep it alive).
  const parallel = createParallelRunner(data.request.threads ?? 1);
  try {
    const { labelIssues, threads: _threads, ...request } = data.request;
    const { model, ...outcome } = trainAndEvaluate({
      ...request,
      parallel,
      onEpoch: (report) => post({ kind: 'epoch', report }),
      onRefitEpoch: (report) => post({ kind: 'refit-epoch', report }),
      onMember: (report) => post({ kind: 'member', report }),
      onClasses: (report) => post({ kind: 'classes', report }),
      onCascadeFold: (done, folds) => post({ kind: 'cascade-fold', done, folds }),
    });
    const issues = labelIssues
      ? trainingLabelIssues(
          request.data,
          request.args,
          request.seed,
          (done, folds) => post({ kind: 'label-issues-fold', done, folds }),
          request.encoder,
        )
      : undefined;
    post({
      kind: 'done',
      outcome: { ...outcome, ...(issues ? { labelIssues: issues } : {}) },
      model: encodeModel(model),
    });
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    post({ kind: 'error', name: e.name, message: e.message });
  } finally {
    void parallel.close();
  }
}
