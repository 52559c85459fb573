/**
 * The lock file around experiment creation (`src/tracking/lock-file.ts`): mutual exclusion, and every
 * kind of abandoned lock taken over (dead holder, too old, half-written) without ever taking a live one.
 * Waiters here share one process; across processes (`file/file-store-concurrency.test.ts`) the file
 * system sees the same calls.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withLockFile } from '../../src/tracking/lock-file.js';
import { TrackingError } from '../../src/tracking/store.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-lock-file-');
let round = 0;
/** A fresh lock path per test, in a folder of its own (so leftovers are visible). */
async function lockPath(): Promise<string> {
  const folder = join(scratch.path, `case-${round++}`);
  await mkdir(folder);
  return join(folder, '.lock');
}

/** The pid of a process that existed and has exited: a holder that crashed. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  expect(child.status).toBe(0);
  return child.pid;
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Runs `waiters` critical sections on one lock at once; returns the most that were ever inside together. */
async function maxInside(path: string, waiters: number): Promise<number> {
  let inside = 0;
  let max = 0;
  await Promise.all(
    Array.from({ length: waiters }, () =>
      withLockFile(path, async () => {
        inside += 1;
        max = Math.max(max, inside);
        await sleep(2);
        inside -= 1;
      }),
    ),
  );
  return max;
}

describe('withLockFile', () => {
  it('lets one holder in at a time and removes the lock afterwards', async () => {
    const path = await lockPath();
    expect(await maxInside(path, 8)).toBe(1);
    expect(await readdir(join(path, '..'))).toEqual([]);
  });

  it('releases the lock when the critical section throws', async () => {
    const path = await lockPath();
    const failure = new Error('inside');
    await expect(withLockFile(path, () => Promise.reject(failure))).rejects.toBe(failure);
    expect(await readdir(join(path, '..'))).toEqual([]);
  });

  it('takes over a lock whose holder on this host is dead', async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: deadPid(), host: hostname(), since: Date.now() }));
    // A short wait: waiting for a dead holder would end in UNAVAILABLE, not in the section.
    expect(await withLockFile(path, async () => 'in', { waitMs: 2_000 })).toBe('in');
    expect(await readdir(join(path, '..'))).toEqual([]);
  });

  it('keeps mutual exclusion while several waiters take over one abandoned lock (30 rounds)', async () => {
    // Before the breaker, a taker could remove the live lock another taker had just made: 8 waiters
    // on an abandoned lock let two holders in at once in about one round of four.
    const pid = deadPid();
    for (let attempt = 0; attempt < 30; attempt += 1) {
      const path = await lockPath();
      await writeFile(path, JSON.stringify({ pid, host: hostname(), since: 0 }));
      expect(await maxInside(path, 8), `round ${attempt}`).toBe(1);
      expect(await readdir(join(path, '..'))).toEqual([]);
    }
  }, 20_000);

  it('waits for a live holder and gives up after waitMs with UNAVAILABLE naming the file', async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now() }));
    const error = await withLockFile(path, async () => 'in', { waitMs: 150 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(TrackingError);
    expect((error as TrackingError).code).toBe('UNAVAILABLE');
    expect((error as TrackingError).message).toContain(path);
    // The live holder's lock is left alone.
    expect(JSON.parse(await readFile(path, 'utf8')).pid).toBe(process.pid);
  });

  it('takes over a lock older than staleMs even when its holder may be alive (another host)', async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: process.pid, host: 'another-host', since: 0 }));
    const old = new Date(Date.now() - 120_000);
    await utimes(path, old, old);
    expect(await withLockFile(path, async () => 'in', { waitMs: 2_000, staleMs: 60_000 })).toBe('in');
    // A fresh lock of another host is respected: its pid means nothing here.
    await writeFile(path, JSON.stringify({ pid: 2 ** 30, host: 'another-host', since: Date.now() }));
    await expect(withLockFile(path, async () => 'in', { waitMs: 100 })).rejects.toThrow(/held by another/);
  });

  it('takes over a half-written lock once it is a second old, not before', async () => {
    const path = await lockPath();
    await writeFile(path, '');
    // Fresh: its holder may be writing it right now.
    await expect(withLockFile(path, async () => 'in', { waitMs: 100 })).rejects.toThrow(/held by another/);
    const old = new Date(Date.now() - 5_000);
    await utimes(path, old, old);
    expect(await withLockFile(path, async () => 'in', { waitMs: 2_000 })).toBe('in');
  });

  it('is not blocked for good by a breaker left by a waiter that died taking over', async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: deadPid(), host: hostname(), since: 0 }));
    await writeFile(`${path}.break`, '');
    const old = new Date(Date.now() - 60_000);
    await utimes(`${path}.break`, old, old);
    expect(await withLockFile(path, async () => 'in', { waitMs: 2_000 })).toBe('in');
    expect(await readdir(join(path, '..'))).toEqual([]);
  });

  it('does not remove a lock that another process took over while it was held too long', async () => {
    const path = await lockPath();
    const successor = JSON.stringify({
      pid: process.pid,
      host: hostname(),
      since: Date.now(),
      token: 'next',
    });
    await withLockFile(path, async () => {
      // As if this holder froze past staleMs and another process took the lock over meanwhile.
      await writeFile(path, successor);
    });
    expect(await readFile(path, 'utf8')).toBe(successor);
  });
});
