/**
 * The worker thread of `training-thread.ts`: trains once, posting each epoch's losses and then the
 * outcome, with the model as its saved files (copied: some may share a buffer, which cannot be
 * transferred twice; they are small beside the training).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { encodeModel } from '../model/index.js';
import { trainAndEvaluate } from '../train/pipeline.js';
import { type FromTrainingWorker, TRAINING_WORKER_MARK, type TrainingRequest } from './training-thread.js';

const data = workerData as { mark?: string; request: TrainingRequest } | null;
if (!isMainThread && parentPort && data?.mark === TRAINING_WORKER_MARK) {
  const port = parentPort;
  const post = (message: FromTrainingWorker): void => port.postMessage(message);
  try {
    const { model, ...outcome } = trainAndEvaluate({
      ...data.request,
      onEpoch: (report) => post({ kind: 'epoch', report }),
      onRefitEpoch: (report) => post({ kind: 'refit-epoch', report }),
    });
    post({ kind: 'done', outcome, model: encodeModel(model) });
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    post({ kind: 'error', name: e.name, message: e.message });
  }
}
