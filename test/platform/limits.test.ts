/** What a process may use: CPUs under a cgroup quota and memory under a cgroup limit (v2 and v1). */
import { describe, expect, it } from 'vitest';
import { cpuQuota, memoryLimit, usableCpus, usableMemory } from '../../src/platform/limits.js';

const files =
  (contents: Record<string, string>) =>
  (path: string): string | null =>
    contents[path] ?? null;

const GiB = 2 ** 30;

describe('usableCpus', () => {
  it('is every core without a quota', () => {
    expect(usableCpus(files({}), 8)).toBe(8);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }), 8)).toBe(8);
  });

  it('is the whole CPUs of a v2 or v1 quota, at least one and at most the cores', () => {
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '250000 100000\n' }), 16)).toBe(2);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }), 16)).toBe(1);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '800000 100000\n' }), 4)).toBe(4);
    const v1 = files({
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '300000\n',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
    });
    expect(cpuQuota(v1)).toBe(3);
    expect(usableCpus(v1, 16)).toBe(3);
    expect(cpuQuota(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n' }))).toBeNull();
  });
});

describe('usableMemory', () => {
  it('is the machine without a limit', () => {
    expect(usableMemory(files({}), 64 * GiB)).toBe(64 * GiB);
    expect(usableMemory(files({ '/sys/fs/cgroup/memory.max': 'max\n' }), 64 * GiB)).toBe(64 * GiB);
  });

  it('is the smaller of the cgroup limit and the machine', () => {
    expect(usableMemory(files({ '/sys/fs/cgroup/memory.max': `${2 * GiB}\n` }), 64 * GiB)).toBe(2 * GiB);
    expect(usableMemory(files({ '/sys/fs/cgroup/memory.max': `${128 * GiB}\n` }), 64 * GiB)).toBe(64 * GiB);
  });

  it('reads v1 limits and takes its "unlimited" page-rounded maximum as none', () => {
    const path = '/sys/fs/cgroup/memory/memory.limit_in_bytes';
    expect(memoryLimit(files({ [path]: `${GiB}\n` }))).toBe(GiB);
    expect(memoryLimit(files({ [path]: '9223372036854771712\n' }))).toBeNull();
    expect(memoryLimit(files({ '/sys/fs/cgroup/memory.max': 'garbage' }))).toBeNull();
  });
});
