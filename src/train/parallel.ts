/**
 * The threads a training is spread over (src/model/parallel.ts's `ParallelRunner`): `threads − 1` worker
 * threads (parallel-worker.ts) beside the calling thread, which works too. `run` hands every thread the job
 * and a small shared control block, the threads claim task indices from it with an atomic counter until none
 * are left, and the calling thread blocks (Atomics.wait) until every task is done — so a family's training
 * stays synchronous, and a task is done exactly once whichever thread is late. A job that throws fails the
 * run with its message. Workers are unref'd (they never keep the process alive) and `close` ends them.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { PARALLEL_JOBS, type ParallelRunner } from '../model/index.js';

/** The control block's cells: the next task to claim, the tasks done, whether one failed. */
const NEXT = 0;
const DONE = 1;
const FAILED = 2;
/** Bytes kept of a failed task's message. */
const MESSAGE_BYTES = 2048;

export interface RunMessage {
  job: string;
  shared: object;
  count: number;
  control: Int32Array;
  message: Uint8Array;
}

/**
 * Claims and runs tasks of one run until none are left (the calling thread and every worker run this);
 * a task that throws marks the run failed with its message, and still counts as done.
 */
export function work({ job, shared, count, control, message }: RunMessage): void {
  const run = PARALLEL_JOBS[job];
  for (let task = Atomics.add(control, NEXT, 1); task < count; task = Atomics.add(control, NEXT, 1)) {
    try {
      if (run === undefined) throw new Error(`unknown parallel job ${JSON.stringify(job)}`);
      run(shared as never, task);
    } catch (error) {
      if (Atomics.compareExchange(control, FAILED, 0, 1) === 0) {
        const text = new TextEncoder().encode(
          error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        );
        message.set(text.subarray(0, MESSAGE_BYTES));
      }
    }
    if (Atomics.add(control, DONE, 1) + 1 === count) Atomics.notify(control, DONE);
  }
}

/** The number of threads a training uses by default: the cores this process may use. */
export const defaultTrainingThreads = (): number => availableParallelism();

export interface ClosableRunner extends ParallelRunner {
  close(): Promise<void>;
}

export function createParallelRunner(threads: number): ClosableRunner {
  const count = Math.max(1, Math.floor(threads));
  // Started from the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
  const fromSource = import.meta.url.endsWith('.ts');
  const workers = Array.from({ length: count - 1 }, () => {
    const worker = new Worker(new URL(`./parallel-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
      ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
    });
    worker.unref();
    return worker;
  });
  return {
    threads: count,
    run(job, shared, tasks) {
      const control = new Int32Array(new SharedArrayBuffer(4 * 3));
      const message = new Uint8Array(new SharedArrayBuffer(MESSAGE_BYTES));
      const run: RunMessage = { job, shared, count: tasks, control, message };
      for (const worker of workers) worker.postMessage(run);
      work(run);
      for (let done = Atomics.load(control, DONE); done < tasks; done = Atomics.load(control, DONE)) {
        Atomics.wait(control, DONE, done, 1000);
      }
      if (Atomics.load(control, FAILED) === 1) {
        const text = new TextDecoder().decode(message).replace(/\0+$/, '');
        throw new Error(`a training thread failed: ${text}`);
      }
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}
