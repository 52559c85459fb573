/** The default worker count inside containers: cores, CPU quota and memory limit (cgroup v2 and v1). */
import { describe, expect, it } from 'vitest';
import { defaultEncoderThreads, defaultWorkers, describeWorkers } from '../../src/server/worker-count.js';

const files =
  (contents: Record<string, string>) =>
  (path: string): string | null =>
    contents[path] ?? null;

describe('defaultWorkers', () => {
  it('is the number of cores without cgroup limits', () => {
    expect(defaultWorkers(files({}), 8).workers).toBe(8);
    expect(
      defaultWorkers(
        files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n', '/sys/fs/cgroup/memory.max': 'max\n' }),
        8,
      ),
    ).toEqual({ workers: 8, cores: 8, cpuQuota: null, memoryLimit: null });
  });

  it('a 1-CPU, 256 MB container on a 16-core host gets one worker (cgroup v2)', () => {
    const budget = defaultWorkers(
      files({
        '/sys/fs/cgroup/cpu.max': '100000 100000\n',
        '/sys/fs/cgroup/memory.max': `${256 * 2 ** 20}\n`,
      }),
      16,
    );
    expect(budget.workers).toBe(1);
    expect(describeWorkers(budget)).toBe('1 (cores 16, CPU quota 1, memory limit 256 MiB)');
  });

  it('the tighter of CPU quota and memory decides; fractions round down, never below 1', () => {
    const read = (cpu: string, memoryMiB: number) =>
      files({ '/sys/fs/cgroup/cpu.max': cpu, '/sys/fs/cgroup/memory.max': String(memoryMiB * 2 ** 20) });
    expect(defaultWorkers(read('400000 100000', 4096), 16).workers).toBe(4);
    expect(defaultWorkers(read('400000 100000', 512), 16).workers).toBe(2);
    expect(defaultWorkers(read('150000 100000', 4096), 16).workers).toBe(1);
    expect(defaultWorkers(read('50000 100000', 64), 16).workers).toBe(1);
  });

  it('reads cgroup v1 quota and limit, treating v1 "no limit" as none', () => {
    const v1 = files({
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '200000',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712',
    });
    expect(defaultWorkers(v1, 8)).toEqual({ workers: 2, cores: 8, cpuQuota: 2, memoryLimit: null });
    const unlimited = files({
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
    });
    expect(defaultWorkers(unlimited, 8).workers).toBe(8);
  });
});

describe('defaultEncoderThreads', () => {
  const budget = (cores: number, cpuQuota: number | null) => ({
    workers: 1,
    cores,
    cpuQuota,
    memoryLimit: null,
  });

  it('shares the CPUs the quota allows between the workers, at least one thread each', () => {
    expect(defaultEncoderThreads(1, budget(2, null))).toBe(2);
    expect(defaultEncoderThreads(2, budget(2, null))).toBe(1);
    expect(defaultEncoderThreads(2, budget(16, 4))).toBe(2);
    expect(defaultEncoderThreads(1, budget(16, 1.5))).toBe(1);
    expect(defaultEncoderThreads(3, budget(16, 2))).toBe(1);
    expect(defaultEncoderThreads(1, budget(4, 8))).toBe(4);
  });

  it('never exceeds the CPUs the container has, whatever the worker count', () => {
    for (const workers of [1, 2, 3, 4, 8]) {
      expect(defaultEncoderThreads(workers, budget(16, 4)) * Math.min(workers, 4)).toBeLessThanOrEqual(4);
    }
  });
});
