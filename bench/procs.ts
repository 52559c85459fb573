/**
 * Child processes of the HTTP benchmark: start, wait for the port, read RSS, stop. Every process started
 * here is stopped by `stopAll()` (called on success, on error and on SIGINT/SIGTERM of the benchmark), by
 * its process group, so servers that fork (MLflow's uvicorn, Tagger's cluster workers) leave nothing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** High-resolution time (ns) just before spawn. */
  readonly spawnedAt: bigint;
  readonly logFile: string;
  exited(): boolean;
  stop(): Promise<number | null>;
}

const live = new Set<Proc>();

export { freePort } from '../test/support/free-port.js';

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is gone already.
  }
}

/** Spawns `command` in its own process group, output appended to `logFile`. */
export function start(
  name: string,
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; logFile: string; graceMs?: number },
): Proc {
  // The log file itself is the child's stdout/stderr: a pipe read by this (busy) process would fill up
  // and block the server's synchronous log writes, measuring the benchmark instead of the server.
  const fd = openSync(options.logFile, 'a');
  const spawnedAt = process.hrtime.bigint();
  const child = spawn(command, args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`bench: cannot start ${name} (${command})`);
  const exit = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  let stopping: Promise<number | null> | undefined;
  const proc: Proc = {
    name,
    child,
    pid: child.pid,
    spawnedAt,
    logFile: options.logFile,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: () => {
      stopping ??= (async () => {
        if (!proc.exited()) killGroup(child, 'SIGTERM');
        const timer = setTimeout(() => killGroup(child, 'SIGKILL'), options.graceMs ?? 10_000);
        const code = proc.exited() ? child.exitCode : await exit;
        clearTimeout(timer);
        // Children of the group (uvicorn, cluster workers) may outlive the leader briefly.
        killGroup(child, 'SIGKILL');
        live.delete(proc);
        return code;
      })();
      return stopping;
    },
  };
  live.add(proc);
  return proc;
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((proc) => proc.stop()));
}

let hooked = false;
/** Stops every started process when the benchmark is interrupted or exits. */
export function installCleanup(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const proc of live) killGroup(proc.child, 'SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void stopAll().finally(() => process.exit(130));
    });
  }
}

function tryConnect(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => {
      socket.destroy();
      done(false);
    });
  });
}

/**
 * Polls until `port` accepts a connection; returns the seconds since the process was spawned.
 * Rejects when the process exits first or after `maxMs`, with the end of its log.
 */
export async function waitForPort(proc: Proc, port: number, maxMs: number): Promise<number> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    if (await tryConnect(port)) return Number(process.hrtime.bigint() - proc.spawnedAt) / 1e9;
    if (proc.exited()) throw new Error(`bench: ${proc.name} exited before listening:\n${tail(proc.logFile)}`);
    if (Date.now() > deadline) {
      throw new Error(`bench: ${proc.name} not listening after ${maxMs} ms:\n${tail(proc.logFile)}`);
    }
    await new Promise((done) => setTimeout(done, 5));
  }
}

export function tail(file: string, chars = 3000): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return '(no log)';
  }
}

/** A memory figure of /proc/<pid>/status in MB, or null when unavailable. */
function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    );
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Resident memory of a process in MB (VmRSS), or null when unavailable. */
export const rssMb = (pid: number): number | null => statusMb(pid, 'VmRSS');
/** Peak resident memory of a process in MB (the kernel's high-water mark, VmHWM), or null. */
export const peakRssMb = (pid: number): number | null => statusMb(pid, 'VmHWM');

/** Direct children of a process (Linux /proc), e.g. cluster workers of a primary. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** Samples the peak RSS (MB) of `pid` every `everyMs` until `stop()` is called. */
export function sampleRss(pid: number, everyMs = 200): { stop(): number | null } {
  let peak: number | null = rssMb(pid);
  const timer = setInterval(() => {
    const now = rssMb(pid);
    if (now !== null && (peak === null || now > peak)) peak = now;
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return peak;
    },
  };
}
