/**
 * `tagger serve --workers <n>`: serving on every core with Node's `cluster` module. The primary process
 * forks n workers that each run the normal serve path (`runServeCommand`) on the same port; the kernel
 * socket is shared by the primary, which hands connections to workers round-robin.
 *
 * The primary only supervises:
 * - a worker that dies is replaced, after a back-off that grows while replacements keep dying young, so
 *   a worker that crashes on every start cannot make the primary spin;
 * - at first start, a worker that fails before it ever listened counts as a startup failure: an expected
 *   one (a StartupError: bad configuration, missing experiment, store not reachable) is final at once,
 *   since starting again would fail the same way; after `maxStartupFailures` unexpected ones in a row
 *   the primary gives up. Either way it stops the other workers and exits non-zero with the message;
 * - once any worker has served, a replacement that cannot start (the store went down, say) is logged
 *   and retried with the growing back-off, never final: the healthy workers keep serving;
 * - a replacement starts with the run its siblings serve (they report it over IPC), so the workers do
 *   not answer from different runs until the next reload;
 * - SIGTERM/SIGINT/SIGHUP are forwarded to the workers (SIGHUP: each worker reloads its runs); after a
 *   stop signal the primary exits once every worker has, with status 0 only when all exited 0;
 * - during a shutdown, the workers close their listeners while still keeping connections alive, and
 *   only once every worker has closed its own — and so the primary its socket — does any of them tell
 *   clients to go (`Connection: close`): a client told so by one worker would reconnect through the
 *   primary, and a connection waiting in the primary's queue when its socket closes is reset
 *   (src/server/drain.ts).
 *
 * Every worker loads the same store on its own, so all serve the same best run; a reload (SIGHUP or the
 * poller) happens in each worker separately.
 */
import cluster, { type Worker } from 'node:cluster';
import { pino } from 'pino';
import { serveClusterMetrics } from './cluster-metrics.js';
import { resolveServeConfig, type ServeFlags, StartupError } from './config.js';
import { serveExecArgv } from './node-flags.js';
import { PARENT_FORWARDS_SIGNALS_ENV } from './parent-watch.js';
import { forceSecondSignal, STOP_SIGNALS, StopSignalClassifier } from './stop-signals.js';

export { MAX_WORKERS } from './config.js';

/** A failure of the cluster as a whole; a StartupError so the CLI prints its message without a stack. */
export class ClusterError extends StartupError {}

/**
 * `--workers`, else TAGGER_WORKERS, else the config file, else the number of cores this process may use
 * (the `workers` setting of src/server/settings.ts).
 * @example resolveWorkerCount('2', {}) // 2
 */
export function resolveWorkerCount(flag: string | number | undefined, env: NodeJS.ProcessEnv): number {
  return resolveServeConfig({ workers: flag }, env).workers;
}

/** Messages between primary and workers over the cluster's IPC channel. */
type ToPrimary = { tagger: 'startup-failed'; message: string; expected: boolean };
/** A worker has closed its listener during a shutdown (it keeps its connections until told). */
type ListenerClosed = { tagger: 'listener-closed' };
/** Every worker has closed its listener: the primary's socket is closed, connections may be ended. */
type ListenersClosed = { tagger: 'listeners-closed' };
/**
 * A round trip through the primary before a worker closes its listener: a connection the primary handed
 * to the worker before answering arrives before the answer (one IPC channel, in order), so a worker that
 * gets the answer with no connection before it has none waiting in the primary's queue.
 */
type Sync = { tagger: 'sync' };
type Synced = { tagger: 'synced' };
/** A worker serves this run now (sent after loading and after every reload that swapped). */
type ServingReport = { tagger: 'serving'; runId: string };
/**
 * A stop signal forwarded to a worker; `second`: the primary took it for a person's second signal (the
 * worker acts on it as such, whatever its own clock says about copies).
 */
type ToWorker = { tagger: 'signal'; signal: NodeJS.Signals; second?: boolean };

const isToPrimary = (value: unknown): value is ToPrimary =>
  typeof value === 'object' &&
  value !== null &&
  (value as { tagger?: unknown }).tagger === 'startup-failed' &&
  typeof (value as { message?: unknown }).message === 'string';

const isTagged = <T extends { tagger: string }>(value: unknown, tag: T['tagger']): value is T =>
  typeof value === 'object' && value !== null && (value as { tagger?: unknown }).tagger === tag;

const isServingReport = (value: unknown): value is ServingReport =>
  typeof value === 'object' &&
  value !== null &&
  (value as { tagger?: unknown }).tagger === 'serving' &&
  typeof (value as { runId?: unknown }).runId === 'string';

/** The environment variable through which the primary tells a replacement worker what to serve. */
const PREFER_RUN_ENV = 'TAGGER_WORKER_PREFER_RUN_ID';
/**
 * Set for exactly one worker at a time: the one that logs runs held back or skipped at warn level. Every
 * worker reloads and decides on its own, so without it each of n workers logged each skipped run once.
 */
const REPORTS_SKIPS_ENV = 'TAGGER_WORKER_REPORTS_SKIPS';

/**
 * What the serve path of a cluster worker does beyond a single process: start with the run its
 * siblings serve (set by the primary for a replacement) and report every run it serves. Empty outside
 * a cluster worker.
 */
export function clusterWorkerHooks(): {
  preferRunId?: string;
  onServing?: (runId: string) => void;
  reportsSkips?: boolean;
  listenerClosed?: () => Promise<void>;
  primarySync?: () => Promise<void>;
} {
  if (!cluster.isWorker || process.send === undefined) return {};
  /** Sends `message` to the primary; resolves at its answer tagged `answer` (at once when it is gone). */
  const askPrimary =
    <Q extends { tagger: string }, A extends { tagger: string }>(message: Q, answer: A['tagger']) =>
    (): Promise<void> =>
      new Promise<void>((done) => {
        if (!process.connected) {
          done();
          return;
        }
        const onMessage = (received: unknown): void => {
          if (!isTagged<A>(received, answer)) return;
          process.off('message', onMessage);
          done();
        };
        process.on('message', onMessage);
        process.send?.(message);
      });
  const primarySync = askPrimary<Sync, Synced>({ tagger: 'sync' }, 'synced');
  const listenerClosed = askPrimary<ListenerClosed, ListenersClosed>(
    { tagger: 'listener-closed' },
    'listeners-closed',
  );
  const reportsSkips = process.env[REPORTS_SKIPS_ENV] === '1';
  const preferRunId = process.env[PREFER_RUN_ENV];
  let reported: string | undefined;
  const onServing = (runId: string): void => {
    if (runId === reported || !process.connected) return;
    reported = runId;
    process.send?.({ tagger: 'serving', runId } satisfies ServingReport);
  };
  return preferRunId
    ? { preferRunId, onServing, reportsSkips, listenerClosed, primarySync }
    : { onServing, reportsSkips, listenerClosed, primarySync };
}

const isToWorker = (value: unknown): value is ToWorker =>
  typeof value === 'object' &&
  value !== null &&
  (value as { tagger?: unknown }).tagger === 'signal' &&
  typeof (value as { signal?: unknown }).signal === 'string';

/**
 * The worker side: runs the serve path. A failure goes to the primary, which prints a startup failure
 * once for all workers (instead of every worker printing it) and logs any other one.
 *
 * Stop signals reach a worker two ways: from the primary (forwarded over IPC) and, for Ctrl+C in a
 * terminal or a signal to the process group, straight from the sender, since workers share the primary's
 * process group. A second stop signal makes the serve path give up on in-flight requests, so the worker
 * raises a forwarded signal on itself only when it has not already received that kind of signal directly
 * (and the serve path takes a copy arriving within a second for what it is, src/server/stop-signals.ts); a
 * signal the primary took for a person's second one is acted on as such.
 */
export async function runClusterWorker(
  serve: () => Promise<void>,
  describe: (error: unknown) => string,
): Promise<void> {
  const seen = new Set<string>();
  const remember = (signal: NodeJS.Signals): void => {
    seen.add(signal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, remember);
  process.on('message', (message: unknown) => {
    if (!isToWorker(message)) return;
    if (message.second) forceSecondSignal(message.signal);
    else if (!seen.has(message.signal)) process.kill(process.pid, message.signal);
  });
  try {
    await serve();
    // The IPC channel to the primary would keep this process alive after the server has closed.
    process.disconnect?.();
  } catch (error) {
    if (process.send === undefined) throw error;
    // The primary knows whether this worker had listened: it reports a startup failure, or a crash.
    const message: ToPrimary = {
      tagger: 'startup-failed',
      message: describe(error),
      expected: error instanceof StartupError,
    };
    // Exit only once the message is delivered; the primary prints it.
    await new Promise<void>((done) => process.send!(message, undefined, {}, () => done()));
    process.exit(1);
  }
}

export interface ClusterOptions {
  workers: number;
  /** Unexpected startup failures in a row after which the primary gives up (default 3). */
  maxStartupFailures?: number;
  /** First restart delay; doubles for each young death in a row (default 100 ms). */
  restartDelayMs?: number;
  /** Longest restart delay (default 5 s). */
  maxRestartDelayMs?: number;
  /** A worker that lived shorter than this died young (default 10 s). */
  youngMs?: number;
  /** After a stop signal, workers still alive this much later are killed (default 20 s). */
  shutdownTimeoutMs?: number;
  logger?: pino.Logger;
}

interface Slot {
  worker: Worker;
  startedAt: number;
  listened: boolean;
  failure?: ToPrimary;
  /** The run this worker last reported serving. */
  servingRunId?: string;
  /** This worker logs skipped runs for all (REPORTS_SKIPS_ENV). */
  reportsSkips: boolean;
  /** It has closed its listener during the shutdown; and has been told that every worker has. */
  listenerClosed: boolean;
  released: boolean;
}

/**
 * The primary: forks the workers and supervises them until they have all exited after a stop signal.
 * Resolves when every worker exited 0; rejects with a ClusterError otherwise, or when workers keep
 * failing to start.
 */
export function runClusterPrimary(options: ClusterOptions): Promise<void> {
  const logger = options.logger ?? pino();
  const maxStartupFailures = options.maxStartupFailures ?? 3;
  const baseDelay = options.restartDelayMs ?? 100;
  const maxDelay = options.maxRestartDelayMs ?? 5_000;
  const youngMs = options.youngMs ?? 10_000;
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 20_000;

  const slots = new Map<number, Slot>();
  const pendingRestarts = new Set<NodeJS.Timeout>();
  let startupFailures = 0;
  /** Some worker has listened: from then on the service is up and a failing replacement is retried. */
  let served = false;
  let youngDeaths = 0;
  let stopping: { reason: 'signal' | 'failure'; error?: ClusterError } | undefined;
  let unclean = 0;

  // Workers are the serving processes: they start with the serve flags (a smaller young generation).
  cluster.setupPrimary({ execArgv: serveExecArgv(process.execArgv) });
  serveClusterMetrics();
  return new Promise<void>((resolveRun, rejectRun) => {
    /** The run most of the serving workers serve: what a replacement should serve too. */
    const siblingsRun = (): string | undefined => {
      const counts = new Map<string, number>();
      for (const { servingRunId, listened } of slots.values()) {
        if (listened && servingRunId) counts.set(servingRunId, (counts.get(servingRunId) ?? 0) + 1);
      }
      return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
    };

    const fork = (): void => {
      const prefer = siblingsRun();
      // The first worker reports skips; when it exits, its replacement (or the next fork) takes over.
      const reportsSkips = ![...slots.values()].some((slot) => slot.reportsSkips);
      const worker = cluster.fork({
        // The worker watches only us: we forward every signal and watch npm above us (parent-watch.ts).
        [PARENT_FORWARDS_SIGNALS_ENV]: String(process.pid),
        ...(prefer ? { [PREFER_RUN_ENV]: prefer } : {}),
        ...(reportsSkips ? { [REPORTS_SKIPS_ENV]: '1' } : {}),
      });
      const slot: Slot = {
        worker,
        startedAt: Date.now(),
        listened: false,
        reportsSkips,
        listenerClosed: false,
        released: false,
      };
      slots.set(worker.id, slot);
      worker.on('listening', () => {
        slot.listened = true;
        served = true;
        startupFailures = 0;
      });
      worker.on('message', (message: unknown) => {
        if (isToPrimary(message)) slot.failure = message;
        else if (isServingReport(message)) slot.servingRunId = message.runId;
        else if (isTagged<Sync>(message, 'sync')) {
          if (worker.isConnected()) worker.send({ tagger: 'synced' } satisfies Synced);
        } else if (isTagged<ListenerClosed>(message, 'listener-closed')) {
          slot.listenerClosed = true;
          releaseConnections();
        }
      });
      worker.once('exit', (code, signal) => onExit(slot, code, signal));
    };

    /** Once every worker still running has closed its listener, they may end their connections. */
    const releaseConnections = (): void => {
      const running = [...slots.values()].filter((slot) => slot.worker.isConnected());
      if (!running.every((slot) => slot.listenerClosed || !slot.listened)) return;
      for (const slot of running) {
        if (slot.listenerClosed && !slot.released) {
          slot.released = true;
          slot.worker.send({ tagger: 'listeners-closed' } satisfies ListenersClosed);
        }
      }
    };

    const finish = (): void => {
      for (const signal of [...STOP_SIGNALS, 'SIGHUP'] as const) process.off(signal, handlers[signal]);
      clearTimeout(killTimer);
      if (stopping?.error) rejectRun(stopping.error);
      else if (unclean > 0) {
        rejectRun(new ClusterError(`serve: ${unclean} worker(s) did not shut down cleanly`));
      } else resolveRun();
    };

    let killTimer: NodeJS.Timeout | undefined;
    const stopAll = (signal: NodeJS.Signals, reason: 'signal' | 'failure', error?: ClusterError): void => {
      const again = stopping !== undefined;
      if (!again) stopping = error ? { reason, error } : { reason };
      for (const timer of pendingRestarts) clearTimeout(timer);
      pendingRestarts.clear();
      for (const { worker } of slots.values()) {
        if (worker.isConnected()) {
          // A second signal: the workers' own second-signal handling ends them without waiting.
          worker.send({ tagger: 'signal', signal, ...(again ? { second: true } : {}) } satisfies ToWorker);
        } else if (again) {
          if (worker.process.pid !== undefined) process.kill(worker.process.pid, signal);
        } else {
          worker.process.kill(signal);
        }
      }
      if (!again) {
        killTimer = setTimeout(() => {
          for (const { worker } of slots.values()) worker.process.kill('SIGKILL');
        }, shutdownTimeoutMs);
        killTimer.unref();
      }
      if (slots.size === 0) finish();
    };

    const onExit = (slot: Slot, code: number | null, signal: string | null): void => {
      slots.delete(slot.worker.id);
      releaseConnections();
      const pid = slot.worker.process.pid;
      if (stopping) {
        if (stopping.reason === 'signal' && code !== 0) {
          unclean += 1;
          logger.warn({ pid, code, signal }, 'worker did not shut down cleanly');
        }
        if (slots.size === 0) finish();
        return;
      }
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      if (slot.listened && slot.failure) logger.error({ pid }, slot.failure.message);
      if (!slot.listened) {
        startupFailures += 1;
        const reason = slot.failure?.message ?? `worker ${pid} ended with ${how} before listening`;
        if (served) {
          // A replacement that cannot start (e.g. the tracking store is down) must not take the healthy
          // workers down with it: they keep serving while it is retried with a growing back-off.
          logger.error({ pid, failures: startupFailures }, `a replacement worker could not start: ${reason}`);
        } else if (slot.failure?.expected || startupFailures >= maxStartupFailures) {
          const prefix = slot.failure?.expected
            ? ''
            : `worker failed to start ${startupFailures} times in a row; last: `;
          // The message already names the command ("serve: ..."), so it is passed on as it is.
          stopAll('SIGTERM', 'failure', new ClusterError(`${prefix}${reason}`));
          return;
        }
      }
      const young = Date.now() - slot.startedAt < youngMs;
      youngDeaths = young ? youngDeaths + 1 : 0;
      const delay = young ? Math.min(maxDelay, baseDelay * 2 ** (youngDeaths - 1)) : 0;
      logger.warn({ pid, code, signal, restartInMs: delay }, `worker ended (${how}); starting a replacement`);
      const timer = setTimeout(() => {
        pendingRestarts.delete(timer);
        if (!stopping) fork();
      }, delay);
      pendingRestarts.add(timer);
    };

    // A copy of the first stop signal (the process group's, forwarded by npm or `npm start`) is not a
    // second one: passing it on as such would cut every worker's drain (src/server/stop-signals.ts).
    const stops = new StopSignalClassifier();
    const onStop = (signal: NodeJS.Signals): void => {
      if (stops.classify(signal) === 'repeat') {
        logger.info({ signal }, 'the same stop signal again within the window: taken as a copy of the first');
        return;
      }
      stopAll(signal, 'signal');
    };
    const handlers = {
      SIGTERM: () => onStop('SIGTERM'),
      SIGINT: () => onStop('SIGINT'),
      SIGHUP: () => {
        // Reload is per worker; a worker still starting loads the current runs anyway.
        for (const { worker } of slots.values()) {
          if (worker.process.pid !== undefined) process.kill(worker.process.pid, 'SIGHUP');
        }
      },
    } satisfies Record<NodeJS.Signals & ('SIGTERM' | 'SIGINT' | 'SIGHUP'), () => void>;
    for (const signal of [...STOP_SIGNALS, 'SIGHUP'] as const) process.on(signal, handlers[signal]);

    logger.info({ workers: options.workers }, 'starting worker processes');
    for (let i = 0; i < options.workers; i += 1) fork();
  });
}

/**
 * `tagger serve` with the worker count resolved: one process (the plain serve path) for 1 worker,
 * else the primary here and `serve` in every worker. The configuration is checked in the primary first,
 * so a bad flag fails once, before anything is forked.
 */
export async function runServe(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  serve: () => Promise<void>,
  describe: (error: unknown) => string,
): Promise<void> {
  if (cluster.isWorker) return runClusterWorker(serve, describe);
  const config = resolveServeConfig(flags, env);
  if (config.workers === 1) return serve();
  return runClusterPrimary({ workers: config.workers, logger: pino({ level: config.logLevel }) });
}
