/**
 * Noticing that the npm that started us is gone. npm (`npm start`, `npx tagger serve`) runs a script
 * through `sh -c`; a process manager or a container runtime stopping npm with SIGTERM ends npm and its
 * shell, but the signal never reaches the Node process below them, and a SIGKILL to npm (a supervisor
 * giving up, the OOM killer) ends npm alone: its shell lives on, so the Node process's own parent is
 * still there. Either way the server would be left orphaned and still serving. A process started by npm
 * therefore watches every process between itself and npm — its parent, the shell, npm — and treats the
 * disappearance of any of them like SIGTERM. Elsewhere it does not: a server started with `nohup … &`
 * from a shell that exits is meant to keep running.
 *
 * Which ancestors: npm gives the processes it starts `npm_lifecycle_event`, so walking up from the parent
 * (/proc/<pid>/stat), every process whose environment (/proc/<pid>/environ) has it was started by npm,
 * and the first one without it is npm itself; the walk stops there. A process whose parent is a Tagger
 * process that forwards signals and watches npm itself (`npm start`'s scripts/start.js, the `--workers`
 * primary) watches only that parent: it is told so by `TAGGER_PARENT_FORWARDS_SIGNALS=<parent pid>`, so
 * that npm's death does not reach it twice, directly and forwarded, a moment apart. Without /proc, only the
 * parent is watched.
 *
 * A stop already under way (a stop signal was received: src/server/stop-signals.ts) is not started again:
 * npm exiting after a process group's SIGTERM is the end of that stop, not a new one.
 *
 * Node has no parent-death signal (Linux's PR_SET_PDEATHSIG is not exposed), so this polls:
 * `process.ppid`, which Node reads from the OS on every access, and /proc/<pid>/stat of the others.
 */
import { readFileSync } from 'node:fs';
import { stopUnderWay } from './stop-signals.js';

/** Whether npm started this process (it sets npm_lifecycle_event for `npm start`, `npx`, `npm exec`). */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  return (env.npm_lifecycle_event ?? '') !== '';
}

/**
 * Set by a Tagger process for the processes it starts, to its own pid: "I forward your signals and watch
 * npm above me; watch only me".
 */
export const PARENT_FORWARDS_SIGNALS_ENV = 'TAGGER_PARENT_FORWARDS_SIGNALS';

/** How often the ancestors are checked: a stopped wrapper is noticed well within a shutdown delay. */
export const PARENT_POLL_MS = 250;

/** The most ancestors watched (nested npm scripts); more would be a walk gone wrong. */
const MAX_ANCESTORS = 8;

interface ProcStat {
  ppid: number;
  state: string;
  /** Start time since boot (clock ticks): with the pid, identifies the process (pids are reused). */
  startTime: string;
}

function procStat(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces or parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // The kernel writes 50 fields after the name; a shorter line is nothing this can read.
    if (fields.length < 20) return null;
    return { state: fields[0]!, ppid: Number(fields[1]), startTime: fields[19]! };
  } catch {
    return null;
  }
}

function startedByNpmProcess(pid: number): boolean | null {
  try {
    return readFileSync(`/proc/${pid}/environ`)
      .toString('latin1')
      .split('\0')
      .some((entry) => {
        return entry.startsWith('npm_lifecycle_event=') && entry.length > 'npm_lifecycle_event='.length;
      });
  } catch {
    return null;
  }
}

interface Watched {
  pid: number;
  /** Null without /proc: only `process.ppid` tells then. */
  startTime: string | null;
}

/**
 * The processes to watch, nearest first: the parent, and up to npm when npm started us (see above).
 * @example npmAncestors(process.env) // [<sh pid>, <npm pid>] under `npx tagger serve`
 */
export function npmAncestors(env: NodeJS.ProcessEnv): number[] {
  return ancestorsToWatch(env).map((watched) => watched.pid);
}

function ancestorsToWatch(env: NodeJS.ProcessEnv): Watched[] {
  const parent = process.ppid;
  const parentStat = procStat(parent);
  const watched: Watched[] = [{ pid: parent, startTime: parentStat?.startTime ?? null }];
  if (parentStat === null || env[PARENT_FORWARDS_SIGNALS_ENV] === String(parent)) return watched;
  let pid = parent;
  let stat: ProcStat | null = parentStat;
  // Up while the process was started by npm: its parent is npm, or another process npm started.
  while (stat !== null && watched.length < MAX_ANCESTORS && startedByNpmProcess(pid) === true) {
    pid = stat.ppid;
    if (pid <= 1) break;
    stat = procStat(pid);
    if (stat === null) break;
    watched.push({ pid, startTime: stat.startTime });
  }
  return watched;
}

/** Whether the process is gone: no such pid, a zombie, or another process under the reused pid. */
function gone(watched: Watched): boolean {
  if (watched.startTime === null) return false;
  const stat = procStat(watched.pid);
  return stat === null || stat.state === 'Z' || stat.state === 'X' || stat.startTime !== watched.startTime;
}

/**
 * Calls `onGone` once when this process's parent, or an ancestor up to the npm that started it, goes away
 * (unless a stop is already under way); returns a function that stops watching. The timer is unref'd: it
 * never keeps the process alive.
 * @example const stop = watchParent(() => process.kill(process.pid, 'SIGTERM'));
 */
export function watchParent(
  onGone: () => void,
  intervalMs = PARENT_POLL_MS,
  env: NodeJS.ProcessEnv = process.env,
): () => void {
  const parent = process.ppid;
  const watched = ancestorsToWatch(env);
  const timer = setInterval(() => {
    if (process.ppid === parent && !watched.some(gone)) return;
    clearInterval(timer);
    if (!stopUnderWay()) onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
