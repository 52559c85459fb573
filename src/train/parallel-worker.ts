/**
 * A training thread of `createParallelRunner` (parallel.ts): says it is up, then runs the tasks of every run
 * it is sent and posts their results on the port it was given, which the calling thread reads when the run
 * is done.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { type RunMessage, work } from './parallel.js';

const { results, started } = workerData as { results: MessagePort; started: Int32Array };
parentPort?.on('message', (run: RunMessage) => work(run, (result) => results.postMessage(result), true));
Atomics.add(started, 0, 1);
Atomics.notify(started, 0);
