/**
 * The worker thread of `training-thread.ts`: either trains once (posting each epoch's losses or member
 * trained, the model choice's events and the phases after the training) and posts the outcome, with the
 * model as its saved files (copied: some may share a buffer, which cannot be transferred twice; they are
 * small beside the training); or runs the full label-issue search of a logged run's data, posting each fold.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { encodeModel } from '../model/index.js';
import { trainingLabelIssues } from '../train/label-issues.js';
import { createParallelRunner } from '../train/parallel.js';
import { trainAndEvaluate } from '../train/pipeline.js';
import { type FromTrainingWorker, TRAINING_WORKER_MARK, type WorkerJob } from './training-thread.js';

const data = workerData as ({ mark?: string } & WorkerJob) | null;
if (!isMainThread && parentPort && data?.mark === TRAINING_WORKER_MARK) {
  const port = parentPort;
  const post = (message: FromTrainingWorker): void => port.postMessage(message);
  if (data.job === 'label-issues') {
    try {
      const { request } = data;
      const found = trainingLabelIssues(
        request.data,
        request.args,
        request.seed,
        (done, folds) => post({ kind: 'label-issues-fold', done, folds }),
        request.encoder,
      );
      post({ kind: 'label-issues-done', found });
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      post({ kind: 'error', name: e.name, message: e.message });
    }
  } else {
    // The training's threads beside this one (ended with the process: they never keep it alive).
    const parallel = createParallelRunner(data.request.threads ?? 1);
    try {
      const { threads: _threads, choice, ...request } = data.request;
      const { model, ...outcome } = trainAndEvaluate({
        ...request,
        ...(choice === undefined
          ? {}
          : { choice: { ...choice, onChoice: (event) => post({ kind: 'choice', event }) } }),
        parallel,
        onEpoch: (report) => post({ kind: 'epoch', report }),
        onRefitEpoch: (report) => post({ kind: 'refit-epoch', report }),
        onMember: (report) => post({ kind: 'member', report }),
        onClasses: (report) => post({ kind: 'classes', report }),
        onCascadeFold: (done, folds) => post({ kind: 'cascade-fold', done, folds }),
        onPhase: (phase) => post({ kind: 'phase', phase }),
      });
      post({ kind: 'done', outcome, model: encodeModel(model) });
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      post({ kind: 'error', name: e.name, message: e.message });
    } finally {
      void parallel.close();
    }
  }
}
