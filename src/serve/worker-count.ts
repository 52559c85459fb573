/**
 * The default number of worker processes for `tagger serve`: one per core this process may use, but no
 * more than the container's CPU quota and memory limit allow. Node's `availableParallelism()` counts
 * the cores the process may be scheduled on, which in a container with a CPU quota (Kubernetes
 * `limits.cpu`, `podman --cpus`) is every core of the host: on a 16-core node a pod limited to 1 CPU and
 * 256 MB would start 16 workers of ~120 MB each and be killed. The limits come from the cgroup files
 * (v2 `cpu.max` / `memory.max`, v1 `cpu.cfs_quota_us` / `memory.limit_in_bytes`); written by hand
 * because the npm packages for this read only one cgroup version or only the CPU.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

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

type ReadText = (path: string) => string | null;

const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/** CPUs allowed by the quota: v2 `cpu.max` ("<quota> <period>" or "max <period>"), else v1. */
function cpuQuota(read: ReadText): number | null {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 && v2.length === 2) {
    const [quota, period] = v2.map(Number);
    return v2[0] === 'max' || !quota || !period ? null : quota / period;
  }
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim());
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
  return quota > 0 && period > 0 ? quota / period : null;
}

/** The memory limit: v2 `memory.max` ("max" or bytes), else v1 (a huge number when unlimited). */
function memoryLimit(read: ReadText): number | null {
  const v2 = read('/sys/fs/cgroup/memory.max')?.trim();
  if (v2 !== undefined) return v2 === 'max' || !/^\d+$/.test(v2) ? null : Number(v2);
  const v1 = Number(read('/sys/fs/cgroup/memory/memory.limit_in_bytes')?.trim());
  // v1 reports "no limit" as a page-rounded 2^63-ish value.
  return Number.isFinite(v1) && v1 > 0 && v1 < 2 ** 60 ? v1 : null;
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
