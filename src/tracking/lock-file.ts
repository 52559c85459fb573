/**
 * A lock file for short critical sections among processes sharing a folder (several `tagger train`
 * creating experiment `best` in a new file store at once created duplicates before). Written by hand:
 * the npm lock-file packages either poll with sleeps of seconds or need a native add-on, and this needs
 * only `open(…, 'wx')`, which is atomic on local file systems and NFSv3+.
 *
 * The file holds the holder's pid, host, start time and a random token. A lock whose holder is a dead
 * process on this host, or older than `staleMs` (a holder on another host, or a frozen one), is taken
 * over, so a crash never blocks the store for good. Holders keep it for milliseconds; waiters retry
 * every 5–25 ms.
 *
 * Taking over an abandoned lock is itself serialised by a second lock file (`<path>.break`): without it,
 * two waiters could both see the abandoned lock, the first remove it and take the lock anew, and the
 * second then remove that live lock (8 waiters on an abandoned lock broke mutual exclusion in 49 of
 * 200 rounds, `test/tracking/lock-file.test.ts`).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { open, readFile, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { errno, fsError } from './local-artifacts.js';
import { TrackingError } from './store.js';

export interface LockOptions {
  /** Give up (UNAVAILABLE) after waiting this long. */
  waitMs?: number;
  /** A lock older than this counts as abandoned whoever holds it. */
  staleMs?: number;
}

/**
 * A breaker is held for one read and one remove; one this old was left by a waiter that died while
 * taking over, and is removed so the abandoned lock can still be taken over.
 */
const BREAKER_STALE_MS = 5_000;
/** A lock file still empty after this long was left by a holder that died between open and write. */
const EMPTY_STALE_MS = 1_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errno(error) === 'EPERM';
  }
}

/** Milliseconds since `path` was last modified; null when it does not exist. */
async function ageOf(path: string): Promise<number | null> {
  try {
    return Date.now() - (await stat(path)).mtimeMs;
  } catch (error) {
    if (errno(error) === 'ENOENT') return null;
    throw error;
  }
}

/** The lock's content when it is abandoned (so a taker can check it did not change), else null. */
async function abandoned(path: string, staleMs: number): Promise<string | null> {
  let content: string;
  try {
    content = await readFile(path, 'utf8');
  } catch (error) {
    if (errno(error) === 'ENOENT') return null; // released meanwhile: just retry
    throw error;
  }
  const ageMs = await ageOf(path);
  if (ageMs === null) return null;
  if (ageMs > staleMs) return content;
  let holder: { pid?: unknown; host?: unknown } = {};
  try {
    holder = JSON.parse(content) as typeof holder;
  } catch {
    // Half-written by a holder that died between open and write (or is writing right now).
    return ageMs > EMPTY_STALE_MS ? content : null;
  }
  const sameHost = holder.host === hostname();
  return sameHost && typeof holder.pid === 'number' && !alive(holder.pid) ? content : null;
}

/**
 * Removes the lock file `path` if it still holds the abandoned content `stale`, as the only process
 * doing so: under the breaker nobody else removes the lock, and its holder is dead, so content that is
 * still `stale` after the check is still the abandoned lock when it is removed.
 */
async function takeOver(path: string, stale: string): Promise<void> {
  const breaker = `${path}.break`;
  try {
    await (await open(breaker, 'wx')).close();
  } catch (error) {
    if (errno(error) !== 'EEXIST') throw error;
    // Someone else is taking it over; retry after them. A breaker left by a dead waiter is removed
    // once old (the one unguarded step, and it needs a crash within the breaker's millisecond).
    if (((await ageOf(breaker)) ?? 0) > BREAKER_STALE_MS) await rm(breaker, { force: true });
    return;
  }
  try {
    if ((await readFile(path, 'utf8').catch(() => null)) === stale) await rm(path, { force: true });
  } finally {
    await rm(breaker, { force: true });
  }
}

/** Runs `fn` while holding the lock file `path`; always releases it. */
export async function withLockFile<T>(
  path: string,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  const waitMs = options.waitMs ?? 15_000;
  const staleMs = options.staleMs ?? 60_000;
  const deadline = Date.now() + waitMs;
  // Unique per acquisition, so a taker never mistakes a new lock for the abandoned one it saw.
  const token = randomBytes(8).toString('hex');
  let content = '';
  for (;;) {
    content = JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now(), token });
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(content);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if (errno(error) !== 'EEXIST') throw fsError(error, 'create the lock file', path);
    }
    try {
      const stale = await abandoned(path, staleMs);
      if (stale !== null) {
        await takeOver(path, stale);
        continue;
      }
    } catch (error) {
      throw fsError(error, 'take over the abandoned lock file', path);
    }
    if (Date.now() > deadline) {
      throw new TrackingError(
        'UNAVAILABLE',
        `tracking: ${path} has been held by another process for more than ${waitMs} ms; if no Tagger process is writing to this store, remove that file`,
      );
    }
    await new Promise((done) => setTimeout(done, 5 + randomInt(20)));
  }
  try {
    return await fn();
  } finally {
    // Only our own lock: one held longer than `staleMs` may have been taken over by now.
    const now = await readFile(path, 'utf8').catch(() => null);
    if (now === content) await rm(path, { force: true }).catch(() => undefined);
  }
}
