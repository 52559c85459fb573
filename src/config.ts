/**
 * The serve configuration: one typed, validated object built from CLI flags and environment variables
 * (a flag wins over its variable, an empty variable counts as unset). No side effects at import time.
 *
 * | setting         | flag             | environment variable      | default       |
 * |-----------------|------------------|---------------------------|---------------|
 * | tracking URI    | --tracking-uri   | MLFLOW_TRACKING_URI       | ./mlruns      |
 * | experiment      | --experiment     | TAGGER_EXPERIMENT         | best          |
 * | host            | --host           | TAGGER_HOST               | 127.0.0.1     |
 * | port            | --port           | TAGGER_PORT               | 8000          |
 * | model directory | --model          | TAGGER_MODEL              | (run-based)   |
 * | model cache     |                  | TAGGER_MODEL_CACHE_SIZE   | 4             |
 * | store wait (ms) |                  | TAGGER_STORE_WAIT_MS      | 30000         |
 * | reload (ms)     | --reload-interval| TAGGER_RELOAD_INTERVAL_MS | 60000 (0 off) |
 * | shutdown delay  |                  | TAGGER_SHUTDOWN_DELAY_MS  | 5000          |
 * | shutdown grace  |                  | TAGGER_SHUTDOWN_GRACE_MS  | 10000         |
 * | log level       |                  | TAGGER_LOG_LEVEL          | info          |
 * | HTTP limits, API keys, rate limit, load shedding: TAGGER_MAX_*, TAGGER_API_KEYS(_FILE), ... (src/http/README.md) |
 *
 * The host defaults to loopback because the API has no authentication; set `0.0.0.0` (e.g. in a
 * container) to accept connections from other machines.
 */

import { HttpConfigError, type HttpOptionsInput, httpOptionsFromEnv } from './http/env.js';
import { StartupError } from './service/index.js';
import { resolveTrackingUri } from './tracking/index.js';

export { StartupError } from './service/index.js';

/** What `tagger serve` passes through from its flags (all optional; strings as typed by the user). */
export interface ServeFlags {
  trackingUri?: string | undefined;
  experiment?: string | undefined;
  host?: string | undefined;
  port?: string | number | undefined;
  model?: string | undefined;
  /** Milliseconds between polls of the tracking store for a new best run; 0 turns polling off. */
  reloadInterval?: string | number | undefined;
}

interface Common {
  host: string;
  port: number;
  logLevel: LogLevel;
  /**
   * After a stop signal, how long the server keeps accepting and answering (readiness already 503) before
   * it drains: the time a load balancer or Kubernetes needs to stop sending it new connections. 0: drain at once.
   */
  shutdownDelayMs: number;
  /** How long a graceful shutdown waits for in-flight requests before closing their connections. */
  shutdownGraceMs: number;
  /** Limits, API keys, rate limiting and load shedding of the HTTP layer (TAGGER_MAX_*, see src/http/README.md). */
  http: HttpOptionsInput | undefined;
}

export type ServeConfig =
  | (Common & {
      mode: 'runs';
      trackingUri: string;
      experiment: string;
      /** How many non-best run models stay loaded (LRU). */
      modelCacheSize: number;
      /** How long to wait for a REST tracking server to answer at startup. */
      storeWaitMs: number;
      /** Milliseconds between reloads of the experiment's runs (also on SIGHUP); 0: only on SIGHUP. */
      reloadIntervalMs: number;
    })
  | (Common & { mode: 'model'; modelDir: string });

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

export const SERVE_DEFAULTS = {
  experiment: 'best',
  host: '127.0.0.1',
  port: 8000,
  modelCacheSize: 4,
  storeWaitMs: 30_000,
  logLevel: 'info' as LogLevel,
  reloadIntervalMs: 60_000,
  shutdownDelayMs: 5_000,
  shutdownGraceMs: 10_000,
} as const;

/** The flag if given, else the environment variable if non-empty, else undefined; `source` says which. */
function pick(
  flag: string | number | undefined,
  flagName: string,
  env: NodeJS.ProcessEnv,
  envName: string,
): { value: string; source: string } | undefined {
  if (flag !== undefined && String(flag) !== '') return { value: String(flag), source: flagName };
  const fromEnv = env[envName];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return { value: fromEnv.trim(), source: envName };
  return undefined;
}

function integerSetting(
  given: { value: string; source: string } | undefined,
  fallback: number,
  min: number,
  max: number,
  what: string,
): number {
  if (given === undefined) return fallback;
  const { value, source } = given;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new StartupError(
      `serve: ${source} must be ${what}, an integer from ${min} to ${max}; got ${JSON.stringify(value)}`,
    );
  }
  return Number(value);
}

/**
 * Resolves and validates the serve configuration; throws StartupError with a message for a person.
 * @example resolveServeConfig({ port: '8080' }, process.env).port // 8080
 */
export function resolveServeConfig(flags: ServeFlags, env: NodeJS.ProcessEnv): ServeConfig {
  const host = pick(flags.host, '--host', env, 'TAGGER_HOST')?.value ?? SERVE_DEFAULTS.host;
  if (/\s/.test(host))
    throw new StartupError(`serve: the host must not contain spaces; got ${JSON.stringify(host)}`);
  const port = integerSetting(
    pick(flags.port, '--port', env, 'TAGGER_PORT'),
    SERVE_DEFAULTS.port,
    0,
    65_535,
    'a TCP port (0 picks a free one)',
  );
  const level = pick(undefined, '', env, 'TAGGER_LOG_LEVEL');
  const logLevel = (level?.value.toLowerCase() ?? SERVE_DEFAULTS.logLevel) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new StartupError(
      `serve: TAGGER_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got ${JSON.stringify(level?.value)}`,
    );
  }
  const shutdownGraceMs = integerSetting(
    pick(undefined, '', env, 'TAGGER_SHUTDOWN_GRACE_MS'),
    SERVE_DEFAULTS.shutdownGraceMs,
    0,
    3_600_000,
    'a grace period in milliseconds',
  );
  const shutdownDelayMs = integerSetting(
    pick(undefined, '', env, 'TAGGER_SHUTDOWN_DELAY_MS'),
    SERVE_DEFAULTS.shutdownDelayMs,
    0,
    3_600_000,
    'a delay in milliseconds (0: drain at once)',
  );
  let http: HttpOptionsInput | undefined;
  try {
    http = httpOptionsFromEnv(env);
  } catch (error) {
    if (error instanceof HttpConfigError) throw new StartupError(`serve: ${error.message}`);
    throw error;
  }
  const common = { host, port, logLevel, shutdownDelayMs, shutdownGraceMs, http };

  const model = pick(flags.model, '--model', env, 'TAGGER_MODEL');
  if (model !== undefined) {
    // Flags that only make sense for run-based mode contradict --model; their variables are ignored.
    const conflicting = [
      flags.trackingUri ? '--tracking-uri' : undefined,
      flags.experiment ? '--experiment' : undefined,
    ].filter((name) => name !== undefined);
    if (conflicting.length > 0) {
      throw new StartupError(
        `serve: ${model.source} serves one saved model without a tracking store, so ${conflicting.join(' and ')} cannot be used with it; drop one of them`,
      );
    }
    return { ...common, mode: 'model', modelDir: model.value };
  }

  const experiment =
    pick(flags.experiment, '--experiment', env, 'TAGGER_EXPERIMENT')?.value ?? SERVE_DEFAULTS.experiment;
  return {
    ...common,
    mode: 'runs',
    trackingUri: resolveTrackingUri(flags.trackingUri, env),
    experiment,
    modelCacheSize: integerSetting(
      pick(undefined, '', env, 'TAGGER_MODEL_CACHE_SIZE'),
      SERVE_DEFAULTS.modelCacheSize,
      0,
      1_000,
      'the number of run models to keep loaded',
    ),
    storeWaitMs: integerSetting(
      pick(undefined, '', env, 'TAGGER_STORE_WAIT_MS'),
      SERVE_DEFAULTS.storeWaitMs,
      0,
      3_600_000,
      'a wait in milliseconds',
    ),
    reloadIntervalMs: integerSetting(
      pick(flags.reloadInterval, '--reload-interval', env, 'TAGGER_RELOAD_INTERVAL_MS'),
      SERVE_DEFAULTS.reloadIntervalMs,
      0,
      86_400_000,
      'an interval in milliseconds (0 turns polling off)',
    ),
  };
}
