/**
 * `tagger serve`: resolve the config, load what to serve (the port opens only after loading), listen,
 * and close gracefully on SIGTERM/SIGINT. Also runnable on its own: `node dist/server.js` (env only).
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createApp } from './app.js';
import { resolveServeConfig, type ServeConfig, type ServeFlags } from './config.js';
import type { TaggerApp } from './http/index.js';
import { loadModelDirectory, RunRegistry, type ServingState, StartupError } from './service/index.js';
import { openTrackingStore, type TrackingStore } from './tracking/index.js';

export { type ServeFlags, StartupError } from './config.js';

export interface RunningServer {
  readonly app: TaggerApp;
  /** Base URL the server listens on, e.g. `http://127.0.0.1:8000`. */
  readonly url: string;
  /** Stops accepting connections, finishes in-flight requests, closes the tracking store. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Opens the tracking store (tests pass instrumented stores). */
  openStore?: (uri: string) => Promise<TrackingStore>;
  logger?: pino.Logger;
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
): Promise<{ serving: ServingState; store?: TrackingStore }> {
  if (config.mode === 'model') {
    const source = resolve(config.modelDir);
    const model = await loadModelDirectory(source);
    logger.info({ model: source }, 'serving one saved model');
    return { serving: { mode: 'model', model, source } };
  }
  let store: TrackingStore;
  try {
    store = await (options.openStore ?? openTrackingStore)(config.trackingUri);
  } catch (error) {
    throw new StartupError(
      `serve: cannot open the tracking store ${config.trackingUri}: ${(error as Error).message}`,
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
    const registry = await RunRegistry.load(store, {
      experiment: config.experiment,
      modelCacheSize: config.modelCacheSize,
      log: logger,
    });
    return { serving: { mode: 'runs', registry }, store };
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
}

function listenError(error: unknown, config: ServeConfig): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const where = `${config.host}:${config.port}`;
  if (code === 'EADDRINUSE')
    return new StartupError(`serve: ${where} is already in use; pick another port with --port`);
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
  const { serving, store } = await loadServing(config, options, logger);
  const app = createApp({ serving, logger });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    await app.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
    throw listenError(error, config);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  let closing: Promise<void> | undefined;
  return {
    app,
    url: `http://${host}:${port}`,
    close: () => {
      closing ??= (async () => {
        try {
          await app.close();
        } finally {
          await store?.close();
        }
      })();
      return closing;
    },
  };
}

/** Resolves with the first SIGINT or SIGTERM. */
function firstSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolveSignal) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolveSignal(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

/** How long a graceful close may take before the process gives up on in-flight requests. */
const CLOSE_GRACE_MS = 10_000;

/**
 * The `tagger serve` command: resolves when the server has shut down after SIGTERM/SIGINT; rejects with
 * a StartupError (a message for a person) when the configuration or startup fails.
 * @example await runServeCommand({ port: '8080' }, process.env);
 */
export async function runServeCommand(flags: ServeFlags, env: NodeJS.ProcessEnv): Promise<void> {
  const config = resolveServeConfig(flags, env);
  const logger = pino({ level: config.logLevel });
  const server = await startServer(config, { logger });
  const signal = await firstSignal();
  logger.info({ signal }, 'shutting down: finishing in-flight requests');
  // A second signal, or a close that hangs, ends the process without waiting any longer.
  const force = (): never => process.exit(1);
  process.once('SIGINT', force);
  process.once('SIGTERM', force);
  const timer = setTimeout(() => {
    logger.error({ graceMs: CLOSE_GRACE_MS }, 'graceful shutdown timed out');
    force();
  }, CLOSE_GRACE_MS);
  timer.unref();
  try {
    await server.close();
    logger.info('stopped');
  } finally {
    clearTimeout(timer);
    process.off('SIGINT', force);
    process.off('SIGTERM', force);
  }
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
