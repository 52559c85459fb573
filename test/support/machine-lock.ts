/**
 * A lock every process on this machine sees (a directory in the temp folder), for work that must not run
 * twice at once: building the Tagger image (several worktrees and test runs share one podman store).
 *
 * The lock is released however its work ends: when the work settles; when it runs past its time limit
 * (the work is told to stop through its AbortSignal, and the lock is released without waiting for it);
 * when the holding process exits; and when the holder was killed without a chance to clean up (a test
 * worker vitest tore down after a hook timed out, SIGKILL, a crash): the holder's pid and start time are
 * written in the lock, and a lock whose holder is gone is taken over at once instead of after the
 * staleness limit. A lock held past `staleMs` by a live holder is taken over too (a hung holder).
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Holder {
  pid: number;
  /** /proc start time of the holder (clock ticks since boot): a reused pid is another process. */
  startTime: string | null;
  since: string;
}

export interface MachineLockOptions {
  /** The work's time limit: past it, the work is aborted and the lock released (default 15 min). */
  timeoutMs?: number;
  /** A lock held longer than this by a live holder is taken over (default: timeoutMs + 1 min). */
  staleMs?: number;
  /** Told once when the lock is held by another process, and when it is taken over. */
  onWait?: (message: string) => void;
  /** Folder of the lock directories (default: the system temp folder). */
  dir?: string;
  /** Gives up (waiting, or the work: aborted and the lock released) when this aborts. */
  signal?: AbortSignal;
}

export class LockTimeoutError extends Error {}

function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

/** Whether the holder written in the lock still runs (the same process, not a reuse of its pid). */
function holderAlive(holder: Holder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (holder.startTime === null) return true;
  return startTime(holder.pid) === holder.startTime;
}

function readHolder(lock: string): Holder | null {
  try {
    return JSON.parse(readFileSync(join(lock, 'holder.json'), 'utf8')) as Holder;
  } catch {
    return null;
  }
}

/** Locks this process holds, released on exit if their work has not settled by then. */
const held = new Set<string>();
process.once('exit', () => {
  for (const lock of held) rmSync(lock, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/**
 * Runs `work` holding the machine-wide lock `name`; resolves with its result. Rejects with a
 * LockTimeoutError when the work ran past its time limit (the lock is released at that moment).
 * @example await withMachineLock('tagger-image-build', (signal) => build(signal), { timeoutMs: 900_000 });
 */
export async function withMachineLock<T>(
  name: string,
  work: (signal: AbortSignal) => Promise<T>,
  options: MachineLockOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 15 * 60_000;
  const staleMs = options.staleMs ?? timeoutMs + 60_000;
  const lock = join(options.dir ?? tmpdir(), `${name}.lock`);
  let told = false;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = readHolder(lock);
    let age = 0;
    try {
      age = Date.now() - statSync(lock).mtimeMs;
    } catch {
      continue; // released meanwhile
    }
    // A lock without its holder file is being created (a few milliseconds), or was left by a crash then.
    const gone = holder === null ? age > 5_000 : !holderAlive(holder);
    if (gone || age > staleMs) {
      const who = holder ? `pid ${holder.pid}, since ${holder.since}` : 'no holder recorded';
      options.onWait?.(
        `taking over the lock ${lock} (${gone ? 'its holder is gone' : 'held too long'}: ${who})`,
      );
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (!told && holder) {
      told = true;
      options.onWait?.(`waiting for the lock ${lock}, held by pid ${holder.pid} since ${holder.since}`);
    }
    await sleep(500);
  }
  const holder: Holder = {
    pid: process.pid,
    startTime: startTime(process.pid),
    since: new Date().toISOString(),
  };
  writeFileSync(join(lock, 'holder.json'), JSON.stringify(holder));
  held.add(lock);
  const release = (): void => {
    if (!held.delete(lock)) return;
    // Only our own lock: after a takeover the directory may be someone else's.
    if (readHolder(lock)?.pid === process.pid) rmSync(lock, { recursive: true, force: true });
  };
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const ended = new Promise<never>((_done, fail) => {
    const stop = (error: Error): void => {
      controller.abort(error);
      release();
      fail(error);
    };
    const limit = `${name}: not done within ${Math.round(timeoutMs / 1000)} s; stopped, lock released`;
    timer = setTimeout(() => stop(new LockTimeoutError(limit)), timeoutMs);
    onAbort = () => stop(new Error(`${name}: stopped (${String(options.signal?.reason)}), lock released`));
    options.signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work(controller.signal), ended]);
  } finally {
    clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    release();
  }
}
