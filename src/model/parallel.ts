/**
 * Training spread over threads, as the model code sees it: a `ParallelRunner` runs a named job
 * (classifiers/parallel-jobs.ts) for task indices 0 … count − 1 over its threads and returns when every task
 * is done, so a family's training stays synchronous. The threads themselves are src/train's
 * (`createParallelRunner`: worker threads): src/model starts none and imports no thread API. Jobs share
 * memory through SharedArrayBuffers (`sharedFloat32` and friends); everything else they are given is copied.
 * Without a runner (or with one thread) a family trains in the calling thread.
 */

/** Runs jobs over threads; see the module comment. */
export interface ParallelRunner {
  /** The threads it runs tasks on, the calling one included (≥ 1). */
  readonly threads: number;
  /**
   * Runs `PARALLEL_JOBS[job](shared, task)` for every task in [0, count), blocking until all are done;
   * returns each task's result in task order (copied to this thread). `onProgress` hears how many tasks
   * are done, on the calling thread, as its own tasks end and at least every second while it waits.
   */
  run(job: string, shared: object, count: number, onProgress?: (done: number) => void): unknown[];
}

/** A job: one task of `shared`'s work; its result is copied back (or it writes into shared memory). */
export type ParallelJob = (shared: never, task: number) => unknown;

/** Whether work should be spread: a runner with more than one thread. */
export const spreads = (runner: ParallelRunner | undefined): runner is ParallelRunner =>
  runner !== undefined && runner.threads > 1;

/** Typed arrays in shared memory when `shared` (other threads see every write), else in ordinary memory. */
export const float32Array = (n: number, shared: boolean): Float32Array =>
  new Float32Array(shared ? new SharedArrayBuffer(4 * n) : new ArrayBuffer(4 * n));
export const float64Array = (n: number, shared: boolean): Float64Array =>
  new Float64Array(shared ? new SharedArrayBuffer(8 * n) : new ArrayBuffer(8 * n));
export const int32Array = (n: number, shared: boolean): Int32Array =>
  new Int32Array(shared ? new SharedArrayBuffer(4 * n) : new ArrayBuffer(4 * n));

/** A copy of `array` in shared memory (or `array` itself when not `shared`). */
export function sharedCopy<T extends Float32Array | Float64Array | Int32Array | Uint8Array>(
  array: T,
  shared: boolean,
): T {
  if (!shared || array.buffer instanceof SharedArrayBuffer) return array;
  const Kind = array.constructor as new (buffer: SharedArrayBuffer) => T;
  const copy = new Kind(new SharedArrayBuffer(array.byteLength));
  copy.set(array as never);
  return copy;
}
