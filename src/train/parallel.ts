/**
 * The threads a training is spread over (src/model/parallel.ts's `ParallelRunner`): `threads − 1` worker
 * threads (parallel-worker.ts) beside the calling thread, which works too. `run` hands every thread the job
 * and a small shared control block, the threads claim task indices from it with an atomic counter until none
 * are left, and the calling thread blocks (Atomics.wait) until every task is done — so a family's training
 * stays synchronous, and a task is done exactly once whichever thread is late. A worker posts each task's
 * result on a port of its own, which the calling thread reads synchronously (receiveMessageOnPort) once
 * the tasks are done. A job that throws fails the run with its message. Workers are unref'd (they never
 * keep the process alive) and `close` ends them.
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { PARALLEL_JOBS, type ParallelRunner } from '../model/index.js';
import { usableCpus } from '../platform/limits.js';

/** The control block's cells: the next task to claim, the tasks done, whether one failed, the tasks workers did. */
const NEXT = 0;
const DONE = 1;
const FAILED = 2;
const ON_WORKERS = 3;
/** How long a run waits for the workers to have started (their modules loaded) before it goes on without them. */
const START_WAIT_MS = 30_000;
/** Bytes kept of a failed task's message. */
const MESSAGE_BYTES = 2048;

export interface RunMessage {
  job: string;
  shared: object;
  count: number;
  control: Int32Array;
  message: Uint8Array;
}

/** A task's result as a worker posts it. */
export interface TaskResult {
  task: number;
  result: unknown;
}

/**
 * Claims and runs tasks of one run until none are left (the calling thread and every worker run this),
 * handing each result to `keep`; a task that throws marks the run failed with its message, and still
 * counts as done.
 */
export function work(
  { job, shared, count, control, message }: RunMessage,
  keep: (result: TaskResult) => void,
  onWorker = false,
): void {
  const run = PARALLEL_JOBS[job];
  for (let task = Atomics.add(control, NEXT, 1); task < count; task = Atomics.add(control, NEXT, 1)) {
    if (onWorker) Atomics.add(control, ON_WORKERS, 1);
    try {
      if (run === undefined) throw new Error(`unknown parallel job ${JSON.stringify(job)}`);
      keep({ task, result: run(shared as never, task) });
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

/** The number of threads a training uses by default: the CPUs this process may keep busy. */
export const defaultTrainingThreads = (): number => usableCpus();

export interface ClosableRunner extends ParallelRunner {
  /** How many tasks of the last run the worker threads did (the rest: the calling thread). */
  readonly lastRunOnWorkers: number;
  close(): Promise<void>;
}

export function createParallelRunner(threads: number): ClosableRunner {
  const count = Math.max(1, Math.floor(threads));
  // Started from the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
  const fromSource = import.meta.url.endsWith('.ts');
  // Each worker counts itself in `started` once it can take tasks, and posts results on a port of its own.
  const started = new Int32Array(new SharedArrayBuffer(4));
  let onWorkers = 0;
  const workers = Array.from({ length: count - 1 }, () => {
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(new URL(`./parallel-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
      ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
      workerData: { results: port2, started },
      transferList: [port2],
    });
    worker.unref();
    port1.unref();
    return { worker, results: port1 as MessagePort };
  });
  // The first run waits (a while) for the workers to be up, so it is spread too.
  const waitForStart = (): void => {
    const deadline = performance.now() + START_WAIT_MS;
    for (
      let up = Atomics.load(started, 0);
      up < workers.length && performance.now() < deadline;
      up = Atomics.load(started, 0)
    ) {
      Atomics.wait(started, 0, up, 100);
    }
  };
  return {
    threads: count,
    get lastRunOnWorkers() {
      return onWorkers;
    },
    run(job, shared, tasks, onProgress) {
      waitForStart();
      const control = new Int32Array(new SharedArrayBuffer(4 * 4));
      const message = new Uint8Array(new SharedArrayBuffer(MESSAGE_BYTES));
      const run: RunMessage = { job, shared, count: tasks, control, message };
      for (const { worker } of workers) worker.postMessage(run);
      const results: unknown[] = new Array(tasks);
      work(run, ({ task, result }) => {
        results[task] = result;
        onProgress?.(Atomics.load(control, DONE) + 1);
      });
      for (let done = Atomics.load(control, DONE); done < tasks; done = Atomics.load(control, DONE)) {
        onProgress?.(done);
        Atomics.wait(control, DONE, done, 1000);
      }
      onProgress?.(tasks);
      // Every result was posted before its task counted as done, so it is on its port now.
      for (const { results: port } of workers) {
        for (
          let received = receiveMessageOnPort(port);
          received !== undefined;
          received = receiveMessageOnPort(port)
        ) {
          const { task, result } = received.message as TaskResult;
          results[task] = result;
        }
      }
      onWorkers = Atomics.load(control, ON_WORKERS);
      if (Atomics.load(control, FAILED) === 1) {
        const text = new TextDecoder().decode(message).replace(/\0+$/, '');
        throw new Error(`a training thread failed: ${text}`);
      }
      return results;
    },
    async close() {
      await Promise.all(workers.map(({ worker }) => worker.terminate()));
    },
  };
}
