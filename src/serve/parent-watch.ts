/**
 * Noticing that the process that started us is gone. npm (`npm start`, `npx tagger serve`) runs a
 * script through `sh -c`; a process manager or a container runtime stopping npm with SIGTERM ends npm
 * and its shell, but the signal never reaches the Node process below them, which would be left
 * orphaned and still serving. A process started by npm therefore watches its parent and treats the
 * parent's disappearance (the process is re-parented) like SIGTERM. Elsewhere it does not: a server
 * started with `nohup … &` from a shell that exits is meant to keep running.
 *
 * Node has no parent-death signal (Linux's PR_SET_PDEATHSIG is not exposed), so this polls
 * `process.ppid`, which Node reads from the OS on every access.
 */

/** Whether npm started this process (it sets npm_lifecycle_event for `npm start`, `npx`, `npm exec`). */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  return (env.npm_lifecycle_event ?? '') !== '';
}

/** How often the parent is checked: a stopped wrapper is noticed well within a shutdown delay. */
export const PARENT_POLL_MS = 250;

/**
 * Calls `onGone` once when this process's parent changes (it died and we were re-parented); returns a
 * function that stops watching. The timer is unref'd: it never keeps the process alive.
 * @example const stop = watchParent(() => process.kill(process.pid, 'SIGTERM'));
 */
export function watchParent(onGone: () => void, intervalMs = PARENT_POLL_MS): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
