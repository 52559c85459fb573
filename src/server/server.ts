/**
 * `tagger serve`: resolve the config, load what to serve (the port opens only after loading), listen,
 * reload the experiment's runs on a timer and on SIGHUP, and shut down gracefully on SIGTERM/SIGINT.
 * Also runnable on its own: `node dist/server/server.js` (env only).
 *
 * The shutdown sequence, built for removal from behind a load balancer or a Kubernetes Service, and for
 * keep-alive clients that talk to this process directly (kube-proxy pins each client's connection to one
 * pod), so that no request sent on an accepted connection is ever reset:
 * 1. readiness (`/health/ready`) answers 503 at once and reloads stop;
 * 2. for `shutdownDelayMs` (TAGGER_SHUTDOWN_DELAY_MS) the server still accepts connections and answers
 *    every request, each response saying `Connection: close`, while the balancer's health checks (or
 *    the endpoint controller) take it out of rotation and kept-alive clients reconnect elsewhere;
 * 3. responses keep their connections open again until no new connection has arrived for
 *    SETTLE_QUIET_MS (at most SETTLE_MAX_MS): a client that still has only this process to talk to then
 *    stays on the connection it has instead of opening new ones, and the listener closes while nobody is
 *    connecting — a connection the kernel completed but the process had not accepted yet would be reset
 *    with the listener (31 of 32 client loops lost a request that way when it closed during step 2);
 *    quiet counts only while the process runs (a CPU-starved process has connections waiting unread), and
 *    a cluster worker also makes a round trip through the primary, whose queue of connections not yet
 *    handed out is reset when the last worker closes;
 * 4. the listener closes (new connections are refused, which a client can safely retry), every response
 *    says `Connection: close`, and a connection is closed by the server only after such a response or
 *    once it has been idle for IDLE_CLOSE_MS — never at the instant a client may be sending on it;
 *    in-flight requests finish within `shutdownGraceMs`, after which the rest are cut (exit status 1);
 * 5. the tracking store closes, which also aborts a reload still retrying an unreachable store, and the
 *    process exits 0.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createApp, createHttpMetrics } from '../app.js';
import type { TaggerApp } from '../http/index.js';
import { Monitoring } from '../monitoring/index.js';
import {
  EncoderPool,
  loadModelDirectory,
  pollReloads,
  type ReloadOutcome,
  type ReloadResult,
  ServedRuns,
  ServingLifecycle,
  type ServingState,
  StartupError,
  withStoreHint,
} from '../served-models/index.js';
import { openTrackingStore, redactUri, type TrackingStore } from '../tracking/index.js';
import { clusterWorkerHooks } from './cluster.js';
import { clusterMetricsSource } from './cluster-metrics.js';
import { resolveServeConfig, type ServeConfig, type ServeFlags } from './config.js';
import { ConnectionDrain, SETTLE_MAX_MS } from './drain.js';
import { listenForStopSignals, REPEAT_WINDOW_MS, type StopSignals } from './stop-signals.js';

export { type ServeFlags, StartupError } from './config.js';

export interface RunningServer {
  readonly app: TaggerApp;
  /** Base URL the server listens on, e.g. `http://127.0.0.1:8000`. */
  readonly url: string;
  /** What the app serves (the same object createApp got); `serving.lifecycle` says whether it drains. */
  readonly serving: ServingState;
  /** How long `close()` keeps answering (readiness 503) before it drains. */
  readonly shutdownDelayMs: number;
  /** How long `close()` lets in-flight requests finish. */
  readonly shutdownGraceMs: number;
  /** Reloads the experiment's runs now (coalesced with a poll under way); null in single-model mode. */
  reload(): Promise<ReloadResult | null>;
  /**
   * Graceful shutdown: marks the lifecycle draining (readiness 503), stops polling, keeps answering for
   * the shutdown delay (every response with `Connection: close`), waits until no client is connecting,
   * then stops accepting connections and ends each one after its next response (or once it has been
   * idle a second), waits up to the grace period for in-flight requests, then closes what is left and
   * the tracking store (aborting a reload under way).
   * `drained` is false when the grace period ran out and connections were cut. Idempotent.
   */
  close(): Promise<{ drained: boolean }>;
}

export interface StartOptions {
  /** Opens the tracking store (tests pass instrumented stores). */
  openStore?: (uri: string) => Promise<TrackingStore>;
  logger?: pino.Logger;
  /** Told the outcome of every reload and the run serving afterwards (metrics: tagger_reloads_total). */
  onReload?: (outcome: ReloadOutcome, runId: string) => void;
  /** Serve this run at first instead of the best one, if it loads (a replacement cluster worker). */
  preferRunId?: string | undefined;
  /** Told the run that serves /predict after loading and after every reload. */
  onServing?: ((runId: string) => void) | undefined;
  /**
   * False in all cluster workers but one: skipped and held-back runs are then logged at debug level, so
   * the group logs each once (default true).
   */
  reportsSkips?: boolean | undefined;
  /**
   * A cluster worker's shutdown: told that this worker's listener is closed, resolves once every
   * worker's is (src/server/cluster.ts), before connections are ended.
   */
  listenerClosed?: (() => Promise<void>) | undefined;
  /** A cluster worker's round trip through the primary, before it closes its listener (drain.ts: settle). */
  primarySync?: (() => Promise<void>) | undefined;
}

/** A store that can wait for its server (the REST store); file stores are ready at once. */
interface WaitableStore extends TrackingStore {
  waitUntilReady(maxWaitMs: number): Promise<void>;
}
const isWaitable = (store: TrackingStore): store is WaitableStore =>
  typeof (store as Partial<WaitableStore>).waitUntilReady === 'function';

async function loadServing(
  config: ServeConfig,
  options: StartOptions,
  logger: pino.Logger,
  encoders: EncoderPool,
): Promise<{ serving: ServingState; servedRuns?: ServedRuns; store?: TrackingStore }> {
  const lifecycle = new ServingLifecycle();
  if (config.mode === 'model') {
    const source = resolve(config.modelDir);
    const model = await loadModelDirectory(source, encoders, { allowDegraded: config.allowDegraded });
    logger.info({ model: source }, 'serving one saved model');
    return { serving: { mode: 'model', model, source, lifecycle } };
  }
  let store: TrackingStore;
  try {
    // Serving only reads: a store on a read-only volume serves, and a wrong URI creates nothing.
    store = await (options.openStore ?? ((uri: string) => openTrackingStore(uri, { readOnly: true })))(
      config.trackingUri,
    );
  } catch (error) {
    throw new StartupError(
      `serve: cannot open the tracking store ${redactUri(config.trackingUri)}: ${(withStoreHint(error) as Error).message}`,
      {
        cause: error,
      },
    );
  }
  try {
    if (isWaitable(store) && config.storeWaitMs > 0) {
      logger.info(
        { store: store.displayUri, maxWaitMs: config.storeWaitMs },
        'waiting for the tracking server',
      );
      await store.waitUntilReady(config.storeWaitMs).catch((error: unknown) => {
        throw new StartupError(
          `serve: ${(error as Error).message}; start the tracking server or raise TAGGER_STORE_WAIT_MS`,
          { cause: error },
        );
      });
    }
    const servedRuns = await ServedRuns.load(store, {
      experiment: config.experiment,
      modelCacheSize: config.modelCacheSize,
      gates: config.gates,
      pinRunId: config.pinRunId,
      modelUri: config.modelUri,
      log: logger,
      preferRunId: options.preferRunId,
      reportsSkips: options.reportsSkips ?? true,
      ...(options.onReload ? { onReload: options.onReload } : {}),
      encoders,
      allowDegraded: config.allowDegraded,
      reloadIntervalMs: config.reloadIntervalMs,
    });
    return { serving: { mode: 'runs', servedRuns, lifecycle }, servedRuns, store };
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
}

function listenError(error: unknown, config: ServeConfig): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const where = `${config.host}:${config.port}`;
  if (code === 'EADDRINUSE') {
    // Both ways of starting a server, since the user may have typed either.
    const other = config.port > 0 && config.port < 65535 ? config.port + 1 : 8001;
    return new StartupError(
      `serve: ${where} is already in use; pick another port with --port (tagger serve --port ${other}, npm start -- --port ${other}, or TAGGER_PORT=${other} for either)`,
    );
  }
  if (code === 'EACCES')
    return new StartupError(`serve: no permission to listen on ${where}; use a port above 1023`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
    return new StartupError(
      `serve: ${config.host} is not an address of this machine; use --host 127.0.0.1 or 0.0.0.0`,
    );
  }
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Loads what to serve, then listens. Rejects (with a StartupError for every expected failure) without
 * ever having opened the port when loading fails.
 * @example const server = await startServer(resolveServeConfig({ port: 0 }, process.env));
 */
export async function startServer(config: ServeConfig, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  // Created before loading so that every reload, from the first one on, is counted.
  const metrics = createHttpMetrics();
  // A --workers worker serves the whole process group's metrics (src/server/cluster-metrics.ts).
  const clusterMetrics = clusterMetricsSource(metrics.registry);
  if (clusterMetrics) metrics.serveExpositionFrom(clusterMetrics);
  const onReload = (outcome: ReloadOutcome, runId: string): void => {
    metrics.recordReload(outcome);
    options.onReload?.(outcome, runId);
    options.onServing?.(runId);
  };
  // Encoder runs' encoders, each in its own thread behind a dynamic batcher; opened only by encoder runs.
  const encoders = new EncoderPool(config.encoders, {
    ...metrics.encoderObserver(),
    opened: (spec, seconds) =>
      logger.info({ encoder: spec.name, seconds: Number(seconds.toFixed(2)) }, 'sentence encoder loaded'),
    closed: (spec) =>
      logger.info({ encoder: spec.name }, 'sentence encoder closed (no served model uses it)'),
  });
  metrics.trackEncoders(() => ({ queued: encoders.queued, open: encoders.size }));
  const { serving, servedRuns, store } = await loadServing(
    config,
    { ...options, onReload },
    logger,
    encoders,
  ).catch(async (error: unknown) => {
    await encoders.close();
    throw error;
  });
  if (servedRuns) options.onServing?.(servedRuns.bestRunId);
  const lifecycle = serving.lifecycle ?? new ServingLifecycle();
  // Records, feedback and live figures; the record store opens on first use, so a store that is down
  // never keeps the server from starting.
  const monitoring = new Monitoring(config.monitoring, { log: logger, registry: metrics.registry });
  const app = createApp({ serving, logger, http: config.http, metrics, monitoring });
  const connections = new ConnectionDrain(app.server);
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    await app.close().catch(() => undefined);
    await monitoring.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
    await encoders.close();
    throw listenError(error, config);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const poller =
    servedRuns && config.mode === 'runs' && config.reloadIntervalMs > 0
      ? pollReloads(() => servedRuns.reload(), config.reloadIntervalMs)
      : undefined;
  let closing: Promise<{ drained: boolean }> | undefined;
  return {
    app,
    url: `http://${host}:${port}`,
    serving,
    shutdownDelayMs: config.shutdownDelayMs,
    shutdownGraceMs: config.shutdownGraceMs,
    reload: async () => (servedRuns ? servedRuns.reload() : null),
    close: () => {
      closing ??= (async () => {
        lifecycle.beginDrain();
        poller?.stop();
        try {
          if (config.shutdownDelayMs > 0) {
            // Every response closes its connection: kept-alive clients reconnect, elsewhere.
            connections.closeAfterResponse = true;
            logger.info(
              { delayMs: config.shutdownDelayMs },
              'shutdown: not ready; still answering while the load balancer moves traffic away',
            );
            await sleep(config.shutdownDelayMs);
          }
          // Clients still sending here keep the connection they have, so nobody is connecting when the
          // listener closes (a connection not yet accepted would be reset with it).
          connections.closeAfterResponse = false;
          await connections.settle(undefined, undefined, options.primarySync);
          const drained = await connections.drain(config.shutdownGraceMs, logger, options.listenerClosed);
          await app.close();
          return { drained };
        } finally {
          // The records still waiting are written (for at most 2 s, well within the shutdown backstop)
          // once requests have drained.
          await monitoring.close(2_000).catch(() => undefined);
          // Closing the store first aborts a reload that is waiting on an unreachable store (its
          // retries and back-off sleeps), so shutdown never waits for the store to come back.
          await store?.close();
          await servedRuns?.settled();
          await encoders.close();
        }
      })();
      return closing;
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** How long closing may take after the grace period (closing the app and the store) before giving up. */
const CLOSE_BACKSTOP_MS = 5_000;

export interface SignalHandling {
  logger: pino.Logger;
  /** Ends the process (tests pass a recorder); default process.exit. */
  exit?: (code: number) => void;
  /** How long the same stop signal again counts as a copy of the first (default REPEAT_WINDOW_MS). */
  repeatWindowMs?: number;
}

/**
 * Listens for SIGTERM/SIGINT (src/server/stop-signals.ts): copies of the first signal within the window,
 * which a process group gets from npm or `npm start` forwarding it, are logged and ignored; a second
 * signal exits at once with 1.
 */
export function listenForStop(handling: SignalHandling): StopSignals {
  const { logger } = handling;
  const exit = handling.exit ?? ((code: number) => process.exit(code));
  const windowMs = handling.repeatWindowMs ?? REPEAT_WINDOW_MS;
  return listenForStopSignals(
    {
      onRepeat: (signal) =>
        logger.info(
          { signal, windowMs },
          'the same stop signal again within the window: taken as a copy of the first (a process group gets it directly and forwarded); still shutting down, send it again to exit at once',
        ),
      onSecond: (signal) => {
        logger.error({ signal }, 'second signal: exiting without waiting for requests');
        exit(1);
      },
    },
    windowMs,
  );
}

/**
 * Runs a started server until SIGTERM/SIGINT: SIGHUP reloads the runs meanwhile; the first stop signal
 * drains (see RunningServer.close), a second one exits at once with 1, as does a drain whose grace period
 * ran out (requests were cut) or a close that hangs. The same signal again within a second of the first is
 * the process group's copy of it, not a second signal. Resolves after a clean drain.
 */
export async function serveUntilSignalled(
  server: RunningServer,
  handling: SignalHandling,
  /**
   * The stop-signal listener; pass one installed before startup (`listenForStop`) so no signal falls
   * into a gap. It stays installed after a clean drain, so a late copy cannot kill the exiting process.
   */
  stopSignals?: StopSignals,
): Promise<void> {
  const { logger } = handling;
  const own = stopSignals === undefined ? listenForStop(handling) : undefined;
  const signals = stopSignals ?? own!;
  const exit = handling.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  // Installed for the whole life of the server: SIGHUP's default action would kill the process.
  const onHangup = (): void => {
    if (stopping) {
      logger.info('SIGHUP ignored: shutting down');
      return;
    }
    logger.info('SIGHUP: reloading the runs');
    void server.reload().then((result) => {
      if (result === null) logger.info('SIGHUP: single-model mode has nothing to reload');
      else logger.info({ outcome: result.outcome, runId: result.runId }, 'SIGHUP reload finished');
    });
  };
  process.on('SIGHUP', onHangup);
  try {
    const signal = await signals.first;
    stopping = true;
    logger.info(
      { signal, delayMs: server.shutdownDelayMs, graceMs: server.shutdownGraceMs },
      'shutting down: not ready, then finishing in-flight requests',
    );
    const backstop = setTimeout(
      () => {
        logger.error({ graceMs: server.shutdownGraceMs }, 'graceful shutdown hangs; exiting');
        exit(1);
      },
      server.shutdownDelayMs + SETTLE_MAX_MS + server.shutdownGraceMs + CLOSE_BACKSTOP_MS,
    );
    backstop.unref();
    try {
      const { drained } = await server.close();
      if (!drained) {
        exit(1);
        return;
      }
      logger.info('stopped');
    } finally {
      clearTimeout(backstop);
    }
  } finally {
    process.off('SIGHUP', onHangup);
    own?.close();
  }
}

/**
 * The `tagger serve` command: resolves when the server has shut down after SIGTERM/SIGINT; rejects with
 * a StartupError (a message for a person) when the configuration or startup fails.
 * @example await runServeCommand({ port: '8080' }, process.env);
 */
export async function runServeCommand(flags: ServeFlags, env: NodeJS.ProcessEnv): Promise<void> {
  const config = resolveServeConfig(flags, env);
  // Asynchronous writes keep logging off the request path (a synchronous write per log line cost
  // ~40% of single-text /predict throughput); buffered lines are flushed before any forced exit.
  const destination = pino.destination({ dest: 1, sync: false });
  const logger = pino({ level: config.logLevel }, destination);
  const exit = (code: number): void => {
    try {
      destination.flushSync();
    } catch {
      // Nothing more can be done for the log on the way out.
    }
    process.exit(code);
  };
  // SIGHUP's default action ends the process; during startup the runs are being read anyway.
  const duringStartup = (): void => logger.info('SIGHUP ignored: the runs are being loaded');
  process.on('SIGHUP', duringStartup);
  // Listening for SIGTERM/SIGINT from the start: the port opens inside startServer, and a stop signal
  // arriving before serveUntilSignalled took over (or its copy from npm) must still mean a graceful
  // shutdown, not sudden death.
  const stopSignals = listenForStop({ logger, exit });
  let server: RunningServer;
  try {
    server = await startServer(config, { logger, ...clusterWorkerHooks() });
  } catch (error) {
    stopSignals.close();
    throw error;
  } finally {
    process.off('SIGHUP', duringStartup);
  }
  // The listener stays after the drain: the process is about to exit, and a late copy of the signal
  // must not end it by Node's default action (status 143 instead of 0).
  await serveUntilSignalled(server, { logger, exit }, stopSignals);
}

function isMainModule(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMainModule()) {
  runServeCommand({}, process.env).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
