/**
 * The default number of worker processes for `tagger serve`: one per core this process may use, but no
 * more than the container's CPU quota and memory limit allow. Node's `availableParallelism()` counts
 * the cores the process may be scheduled on, which in a container with a CPU quota (Kubernetes
 * `limits.cpu`, `podman --cpus`) is every core of the host: on a 16-core node a pod limited to 1 CPU and
 * 256 MB would start 16 workers of ~120 MB each and be killed. The limits come from the cgroup files
 * (src/platform/limits.ts).
 */
import { availableParallelism } from 'node:os';
import { cpuQuota, memoryLimit, type ReadText, readText } from '../platform/limits.js';

/** Memory one worker needs under load (the Helm chart's request; RSS peaks measured 120–245 MB). */
export const WORKER_MEMORY_BYTES = 192 * 1024 * 1024;

export interface WorkerBudget {
  workers: number;
  cores: number;
  /** CPUs the quota allows (fractional), or null when unlimited. */
  cpuQuota: number | null;
  /** The memory limit in bytes, or null when unlimited. */
  memoryLimit: number | null;
}

/**
 * The default worker count and what decided it.
 * @example defaultWorkers().workers // 1 in a 1-CPU, 256 MB container on a 16-core host
 */
export function defaultWorkers(
  read: ReadText = readText,
  cores: number = availableParallelism(),
): WorkerBudget {
  const quota = cpuQuota(read);
  const memory = memoryLimit(read);
  const byCpu = quota === null ? cores : Math.max(1, Math.floor(quota));
  const byMemory = memory === null ? cores : Math.max(1, Math.floor(memory / WORKER_MEMORY_BYTES));
  return {
    workers: Math.max(1, Math.min(cores, byCpu, byMemory)),
    cores,
    cpuQuota: quota,
    memoryLimit: memory,
  };
}

/**
 * The default ONNX Runtime threads of an encoder run's encoder in each of `workers` serving processes:
 * the CPUs the quota allows (whole ones, at most the cores) shared out between the processes, at least
 * one each, so n workers never run more encoder threads than the container has CPUs.
 * @example defaultEncoderThreads(2, { cores: 16, cpuQuota: 4, … }) // 2
 */
export function defaultEncoderThreads(workers: number, budget: WorkerBudget = defaultWorkers()): number {
  const cpus =
    budget.cpuQuota === null
      ? budget.cores
      : Math.max(1, Math.min(budget.cores, Math.floor(budget.cpuQuota)));
  return Math.max(1, Math.floor(cpus / Math.max(1, workers)));
}

/** How --print-config explains the default: `2 (cores 16, CPU quota 2, memory limit 512 MiB)`. */
export function describeWorkers(budget: WorkerBudget): string {
  const parts = [`cores ${budget.cores}`];
  if (budget.cpuQuota !== null) parts.push(`CPU quota ${Number(budget.cpuQuota.toFixed(2))}`);
  if (budget.memoryLimit !== null) parts.push(`memory limit ${Math.round(budget.memoryLimit / 2 ** 20)} MiB`);
  return `${budget.workers} (${parts.join(', ')})`;
}
