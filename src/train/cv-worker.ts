/**
 * A cross-validation worker thread (see `CrossValidator`): builds the folds of its data once, then
 * trains and scores one (fold, training seed) task per message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import {
  crossValidationFolds,
  type FromWorker,
  scoreFold,
  type ToWorker,
  type WorkerSetup,
} from './cross-validate.js';

const setup = workerData as WorkerSetup;
const folds = crossValidationFolds(setup.data, setup.folds, setup.seed);

parentPort?.on('message', (message: ToWorker) => {
  let answer: FromWorker;
  try {
    answer = {
      kind: 'score',
      id: message.id,
      score: scoreFold(folds, message.args, message.task, setup.encoder),
    };
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    answer = { kind: 'error', id: message.id, message: e.message, name: e.name };
  }
  parentPort?.postMessage(answer);
});
