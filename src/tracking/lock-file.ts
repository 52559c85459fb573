/**
 * A lock file for short critical sections among processes sharing a folder (several `tagger train`
 * creating experiment `best` in a new file store at once created duplicates before). Written by hand:
 * the npm lock-file packages either poll with sleeps of seconds or need a native add-on, and this needs
 * only `open(…, 'wx')`, which is atomic on local file systems and NFSv3+.
 *
 * The file holds the holder's pid, host and start time. A lock whose holder is a dead process on this
 * host, or older than `staleMs` (a holder on another host, or a frozen one), is taken over, so a crash
 * never blocks the store for good. Holders keep it for milliseconds; waiters retry every 5–25 ms.
 */
import { randomInt } from 'node:crypto';
import { open, readFile, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { errno, fsError } from './local-artifacts.js';
import { TrackingError } from './store.js';

export interface LockOptions {
  /** Give up (UNAVAILABLE) after waiting this long. */
  waitMs?: number;
  /** A lock older than this counts as abandoned whoever holds it. */
  staleMs?: number;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errno(error) === 'EPERM';
  }
}

/** The lock's content when it is abandoned (so a taker can check it did not change), else null. */
async function abandoned(path: string, staleMs: number): Promise<string | null> {
  let content: string;
  let ageMs: number;
  try {
    content = await readFile(path, 'utf8');
    ageMs = Date.now() - (await stat(path)).mtimeMs;
  } catch (error) {
    if (errno(error) === 'ENOENT') return null; // released meanwhile: just retry
    throw error;
  }
  if (ageMs > staleMs) return content;
  let holder: { pid?: unknown; host?: unknown } = {};
  try {
    holder = JSON.parse(content) as typeof holder;
  } catch {
    // Half-written by a holder that died between open and write: stale once it is a second old.
    return ageMs > 1_000 ? content : null;
  }
  const sameHost = holder.host === hostname();
  return sameHost && typeof holder.pid === 'number' && !alive(holder.pid) ? content : null;
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
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now() }));
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if (errno(error) !== 'EEXIST') throw fsError(error, 'create the lock file', path);
    }
    const stale = await abandoned(path, staleMs).catch((error: unknown) => {
      throw fsError(error, 'read the lock file', path);
    });
    if (stale !== null) {
      // Take it over only if it is still the abandoned one (another waiter may have taken it already).
      const now = await readFile(path, 'utf8').catch(() => null);
      if (now === stale) {
        // A rename moves it out of the way atomically; only one taker's rename can succeed.
        const aside = `${path}.abandoned-${process.pid}-${randomInt(1e9)}`;
        await rename(path, aside).then(
          () => rm(aside, { force: true }),
          () => undefined,
        );
      }
      continue;
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
    await rm(path, { force: true }).catch(() => undefined);
  }
}
