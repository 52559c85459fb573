/**
 * What this machine (or container) lets a process use: the cores, the CPU quota and the memory limit of its
 * cgroup (v2 `cpu.max` / `memory.max`, v1 `cpu.cfs_quota_us` / `memory.limit_in_bytes`), and the memory
 * there is. Node's `availableParallelism()` and `totalmem()` see the host: in a container limited to 1 CPU
 * and 2 GB on a 16-core, 64 GB node they would say 16 and 64. Read by the serving process (how many
 * workers) and by training (how many threads, and whether a training fits in memory). Written by hand
 * because the npm packages for this read only one cgroup version or only the CPU.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';

export type ReadText = (path: string) => string | null;

export const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/** CPUs allowed by the quota: v2 `cpu.max` ("<quota> <period>" or "max <period>"), else v1. */
export function cpuQuota(read: ReadText): number | null {
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
export function memoryLimit(read: ReadText): number | null {
  const v2 = read('/sys/fs/cgroup/memory.max')?.trim();
  if (v2 !== undefined) return v2 === 'max' || !/^\d+$/.test(v2) ? null : Number(v2);
  const v1 = Number(read('/sys/fs/cgroup/memory/memory.limit_in_bytes')?.trim());
  // v1 reports "no limit" as a page-rounded 2^63-ish value.
  return Number.isFinite(v1) && v1 > 0 && v1 < 2 ** 60 ? v1 : null;
}

/** The CPUs a process may keep busy: the cores, or fewer under a CPU quota (whole ones, at least one). */
export function usableCpus(read: ReadText = readText, cores: number = availableParallelism()): number {
  const quota = cpuQuota(read);
  return quota === null ? cores : Math.max(1, Math.min(cores, Math.floor(quota)));
}

/** The memory a process may use: the cgroup's limit, or the machine's memory when there is none. */
export function usableMemory(read: ReadText = readText, machine: number = totalmem()): number {
  const limit = memoryLimit(read);
  return limit === null ? machine : Math.min(limit, machine);
}
