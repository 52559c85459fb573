/** A training thread of `createParallelRunner` (parallel.ts): runs the tasks of every run it is sent. */
import { parentPort } from 'node:worker_threads';
import { type RunMessage, work } from './parallel.js';

parentPort?.on('message', (run: RunMessage) => work(run));
