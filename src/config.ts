/**
 * The serve configuration, 12-factor style: every setting of `tagger serve` is described once in
 * SERVE_SETTINGS (its flag, environment variable, config-file key, type, range, default, whether it is
 * a secret), and everything else is derived from that table — reading and validating (here), the flags
 * and `--help` (src/cli.ts), `--print-config`, and the table in docs/configuration.md
 * (scripts/config-table.ts; a test fails when it is stale).
 *
 * Precedence: a flag, else its environment variable (an empty one counts as unset), else the config
 * file (`--config <file>` / TAGGER_CONFIG; YAML or JSON, keys as in the table), else the default. A bad
 * value names the setting and where it came from (`TAGGER_PORT`, `--port` or `tagger.yaml: port`).
 * No side effects at import time.
 *
 * The host defaults to loopback because the API has no authentication by default; set `0.0.0.0` (e.g.
 * in a container) to accept connections from other machines.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parse as parseYaml } from 'yaml';
import { parseApiKeys } from './http/auth.js';
import { HTTP_DEFAULTS, type HttpOptionsInput } from './http/options.js';
import { redactRedisUrl } from './http/shared-rate-limit.js';
import { StartupError } from './service/index.js';
import { DEFAULT_TRACKING_URI, redactUri } from './tracking/index.js';

export { StartupError } from './service/index.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** The most workers `--workers` accepts: far above any core count, low enough to catch typos. */
export const MAX_WORKERS = 256;

export const SERVE_DEFAULTS = {
  trackingUri: DEFAULT_TRACKING_URI,
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

/** Window of `rate_limit_max` when `rate_limit_window_ms` is not set. */
export const RATE_LIMIT_WINDOW_DEFAULT_MS = 60_000;

type Kind =
  | { type: 'integer'; min: number; max: number; what: string }
  | { type: 'string' }
  | { type: 'boolean' }
  | { type: 'choice'; values: readonly string[] }
  | { type: 'redis-url' };

export interface Setting {
  /** Key in a config file and in `--print-config`. */
  key: string;
  flag: `--${string}`;
  env: string;
  kind: Kind;
  /** Shown in --help and the docs; null: unset unless given. */
  default: string | number | boolean | null;
  /** Masked by --print-config (whole value, or the password of a URL). */
  secret?: 'value' | 'url-password';
  help: string;
}

const integer = (min: number, max: number, what: string): Kind => ({ type: 'integer', min, max, what });
const STRING: Kind = { type: 'string' };
const L = HTTP_DEFAULTS.limits;

export const SERVE_SETTINGS: readonly Setting[] = Object.freeze([
  {
    key: 'config',
    flag: '--config',
    env: 'TAGGER_CONFIG',
    kind: STRING,
    default: null,
    help: 'a YAML or JSON file with settings (keys as in this table); flags and variables win over it',
  },
  {
    key: 'tracking_uri',
    flag: '--tracking-uri',
    env: 'MLFLOW_TRACKING_URI',
    kind: STRING,
    default: SERVE_DEFAULTS.trackingUri,
    secret: 'url-password',
    help: 'MLflow tracking store: a folder (mlruns layout) or http(s)://server',
  },
  {
    key: 'experiment',
    flag: '--experiment',
    env: 'TAGGER_EXPERIMENT',
    kind: STRING,
    default: SERVE_DEFAULTS.experiment,
    help: 'experiment whose best run is served',
  },
  {
    key: 'model',
    flag: '--model',
    env: 'TAGGER_MODEL',
    kind: STRING,
    default: null,
    help: 'single-model mode: serve this saved model directory instead of runs',
  },
  {
    key: 'host',
    flag: '--host',
    env: 'TAGGER_HOST',
    kind: STRING,
    default: SERVE_DEFAULTS.host,
    help: 'interface to listen on (0.0.0.0: every interface, e.g. in a container)',
  },
  {
    key: 'port',
    flag: '--port',
    env: 'TAGGER_PORT',
    kind: integer(0, 65_535, 'a TCP port (0 picks a free one)'),
    default: SERVE_DEFAULTS.port,
    help: 'port to listen on',
  },
  {
    key: 'workers',
    flag: '--workers',
    env: 'TAGGER_WORKERS',
    kind: integer(1, MAX_WORKERS, 'the number of worker processes'),
    default: null,
    help: 'worker processes serving the same port (default: the cores available; 1: a single process)',
  },
  {
    key: 'log_level',
    flag: '--log-level',
    env: 'TAGGER_LOG_LEVEL',
    kind: { type: 'choice', values: LOG_LEVELS },
    default: SERVE_DEFAULTS.logLevel,
    help: `log level: ${LOG_LEVELS.join(', ')}`,
  },
  {
    key: 'reload_interval_ms',
    flag: '--reload-interval',
    env: 'TAGGER_RELOAD_INTERVAL_MS',
    kind: integer(0, 86_400_000, 'an interval in milliseconds (0 turns polling off)'),
    default: SERVE_DEFAULTS.reloadIntervalMs,
    help: 'poll the tracking store for a new best run every <ms> (0: only on SIGHUP)',
  },
  {
    key: 'model_cache_size',
    flag: '--model-cache-size',
    env: 'TAGGER_MODEL_CACHE_SIZE',
    kind: integer(0, 1_000, 'the number of run models to keep loaded'),
    default: SERVE_DEFAULTS.modelCacheSize,
    help: 'models of other runs kept loaded for /runs/{id}/predict (least recently used dropped)',
  },
  {
    key: 'store_wait_ms',
    flag: '--store-wait',
    env: 'TAGGER_STORE_WAIT_MS',
    kind: integer(0, 3_600_000, 'a wait in milliseconds'),
    default: SERVE_DEFAULTS.storeWaitMs,
    help: 'how long startup waits for a tracking server to answer',
  },
  {
    key: 'shutdown_delay_ms',
    flag: '--shutdown-delay',
    env: 'TAGGER_SHUTDOWN_DELAY_MS',
    kind: integer(0, 3_600_000, 'a delay in milliseconds (0: drain at once)'),
    default: SERVE_DEFAULTS.shutdownDelayMs,
    help: 'after SIGTERM, keep answering (readiness 503) this long before draining, so a load balancer moves away',
  },
  {
    key: 'shutdown_grace_ms',
    flag: '--shutdown-grace',
    env: 'TAGGER_SHUTDOWN_GRACE_MS',
    kind: integer(0, 3_600_000, 'a grace period in milliseconds'),
    default: SERVE_DEFAULTS.shutdownGraceMs,
    help: 'how long in-flight requests may take to finish when shutting down',
  },
  {
    key: 'max_body_bytes',
    flag: '--max-body-bytes',
    env: 'TAGGER_MAX_BODY_BYTES',
    kind: integer(1024, 1024 ** 3, 'a size in bytes'),
    default: L.bodyBytes,
    help: 'largest request body; larger is a 413',
  },
  {
    key: 'max_texts',
    flag: '--max-texts',
    env: 'TAGGER_MAX_TEXTS',
    kind: integer(1, 1_000_000, 'the most texts per request'),
    default: L.texts,
    help: 'most entries in `texts` of one request; more is a 413',
  },
  {
    key: 'max_text_length',
    flag: '--max-text-length',
    env: 'TAGGER_MAX_TEXT_LENGTH',
    kind: integer(1, 100_000_000, 'the most characters per text'),
    default: L.textLength,
    help: 'most characters in one text; longer is a 422',
  },
  {
    key: 'max_json_depth',
    flag: '--max-json-depth',
    env: 'TAGGER_MAX_JSON_DEPTH',
    kind: integer(3, 10_000, 'the deepest JSON nesting'),
    default: L.jsonDepth,
    help: 'deepest array/object nesting of a body; deeper is a 413',
  },
  {
    key: 'request_timeout_ms',
    flag: '--request-timeout',
    env: 'TAGGER_REQUEST_TIMEOUT_MS',
    kind: integer(0, 3_600_000, 'a timeout in milliseconds (0: none)'),
    default: L.requestTimeoutMs,
    help: 'time to receive a request (408) and, separately, to answer it (504); 0: none',
  },
  {
    key: 'api_keys',
    flag: '--api-keys',
    env: 'TAGGER_API_KEYS',
    kind: STRING,
    default: null,
    secret: 'value',
    help: 'comma-separated API keys; any key turns authentication on (a flag shows in `ps`: prefer the file)',
  },
  {
    key: 'api_keys_file',
    flag: '--api-keys-file',
    env: 'TAGGER_API_KEYS_FILE',
    kind: STRING,
    default: null,
    help: 'file with one API key per line (# comments); a file without keys refuses to start',
  },
  {
    key: 'protect_docs',
    flag: '--protect-docs',
    env: 'TAGGER_PROTECT_DOCS',
    kind: { type: 'boolean' },
    default: HTTP_DEFAULTS.protectDocs,
    help: 'also require the API key for /docs, /redoc and /openapi.json',
  },
  {
    key: 'rate_limit_max',
    flag: '--rate-limit-max',
    env: 'TAGGER_RATE_LIMIT_MAX',
    kind: integer(0, 1_000_000_000, 'requests per window (0: off)'),
    default: 0,
    help: 'requests per client (API key, else address) per window; over it a 429 (0: off)',
  },
  {
    key: 'rate_limit_window_ms',
    flag: '--rate-limit-window',
    env: 'TAGGER_RATE_LIMIT_WINDOW_MS',
    kind: integer(1, 86_400_000, 'a window in milliseconds'),
    default: RATE_LIMIT_WINDOW_DEFAULT_MS,
    help: 'the rate-limit window',
  },
  {
    key: 'redis_url',
    flag: '--redis-url',
    env: 'TAGGER_REDIS_URL',
    kind: { type: 'redis-url' },
    default: null,
    secret: 'url-password',
    help: 'Redis shared by all workers and replicas: rate limits are counted there (fail open when it is down)',
  },
  {
    key: 'max_in_flight',
    flag: '--max-in-flight',
    env: 'TAGGER_MAX_IN_FLIGHT',
    kind: integer(0, 1_000_000, 'the most concurrent requests (0: no cap)'),
    default: HTTP_DEFAULTS.maxInFlight,
    help: 'requests handled at once; more are shed with 503 + Retry-After (0: no cap)',
  },
  {
    key: 'max_event_loop_delay_ms',
    flag: '--max-event-loop-delay',
    env: 'TAGGER_MAX_EVENT_LOOP_DELAY_MS',
    kind: integer(0, 600_000, 'a delay in milliseconds (0: off)'),
    default: HTTP_DEFAULTS.maxEventLoopDelayMs,
    help: 'shed with 503 while the event-loop delay is above it (0: off)',
  },
  {
    key: 'retry_after_s',
    flag: '--retry-after',
    env: 'TAGGER_RETRY_AFTER_S',
    kind: integer(1, 3600, 'seconds'),
    default: HTTP_DEFAULTS.retryAfterSeconds,
    help: 'Retry-After of load-shedding 503s and 504s',
  },
] satisfies Setting[]);

/** Settings of the HTTP layer: when none is given from any source, the app uses its defaults. */
const HTTP_KEYS = new Set(
  SERVE_SETTINGS.slice(SERVE_SETTINGS.findIndex((s) => s.key === 'max_body_bytes')).map((s) => s.key),
);

/** The commander attribute of a flag: `--tracking-uri` → `trackingUri`. */
export const flagAttribute = (flag: string): string =>
  flag.replace(/^--/, '').replace(/-([a-z])/g, (_m, letter: string) => letter.toUpperCase());

/** What `tagger serve` passes through from its flags (strings as typed by the user), by attribute. */
export type ServeFlags = {
  trackingUri?: string | undefined;
  experiment?: string | undefined;
  host?: string | undefined;
  port?: string | number | undefined;
  model?: string | undefined;
  reloadInterval?: string | number | undefined;
  workers?: string | number | undefined;
} & Record<string, string | number | boolean | undefined>;

/** One setting's effective value and where it came from (`--port`, `TAGGER_PORT`, `f.yaml: port`, `default`). */
export interface Resolved {
  setting: Setting;
  value: string | number | boolean | null;
  source: string;
}

interface Common {
  host: string;
  port: number;
  workers: number;
  logLevel: LogLevel;
  /**
   * After a stop signal, how long the server keeps accepting and answering (readiness already 503) before
   * it drains: the time a load balancer or Kubernetes needs to stop sending it new connections. 0: drain at once.
   */
  shutdownDelayMs: number;
  /** How long a graceful shutdown waits for in-flight requests before closing their connections. */
  shutdownGraceMs: number;
  /** Limits, API keys, rate limiting and load shedding of the HTTP layer; undefined: all defaults. */
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

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

/** Parses one raw value by its kind; throws StartupError naming the setting's source. */
function parseValue(setting: Setting, raw: string, source: string): string | number | boolean {
  const kind = setting.kind;
  const bad = (what: string): never => {
    const shown = setting.secret === 'value' ? '(hidden)' : JSON.stringify(raw);
    throw new StartupError(`serve: ${source} must be ${what}; got ${shown}`);
  };
  switch (kind.type) {
    case 'integer':
      if (!/^\d+$/.test(raw) || Number(raw) < kind.min || Number(raw) > kind.max) {
        return bad(`${kind.what}, an integer from ${kind.min} to ${kind.max}`);
      }
      return Number(raw);
    case 'boolean':
      if (TRUE.includes(raw.toLowerCase())) return true;
      if (FALSE.includes(raw.toLowerCase())) return false;
      return bad('true or false');
    case 'choice':
      if (!kind.values.includes(raw.toLowerCase())) return bad(`one of ${kind.values.join(', ')}`);
      return raw.toLowerCase();
    case 'redis-url':
      // Not echoed: the URL may hold a password.
      if (!/^rediss?:\/\/\S+$/.test(raw))
        throw new StartupError(`serve: ${source} must be a redis:// or rediss:// URL`);
      return raw;
    case 'string':
      return raw;
  }
}

/** A config file's settings: a mapping of known keys to scalars (or, for api_keys, a list). */
function readConfigFile(path: string, readFile: (path: string) => string): Map<string, string> {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    throw new StartupError(
      `serve: cannot read the config file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new StartupError(
      `serve: the config file ${path} is not valid YAML or JSON: ${(error as Error).message}`,
    );
  }
  if (parsed === null || parsed === undefined) return new Map();
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new StartupError(`serve: the config file ${path} must hold a mapping of settings (key: value)`);
  }
  const known = new Map(SERVE_SETTINGS.filter((s) => s.key !== 'config').map((s) => [s.key, s]));
  const values = new Map<string, string>();
  for (const [key, value] of Object.entries(parsed)) {
    const setting = known.get(key);
    if (setting === undefined) {
      throw new StartupError(
        `serve: ${path}: unknown setting "${key}"; the settings are ${[...known.keys()].join(', ')}`,
      );
    }
    if (key === 'api_keys' && Array.isArray(value) && value.every((k) => typeof k === 'string')) {
      values.set(key, value.join(','));
    } else if (value === null) {
    } else if (['string', 'number', 'boolean'].includes(typeof value)) {
      values.set(key, String(value));
    } else {
      throw new StartupError(`serve: ${path}: ${key} must be a single value, not ${JSON.stringify(value)}`);
    }
  }
  return values;
}

export interface ResolveOptions {
  /** Reads the config file and the API-key file (tests pass a fake); default readFileSync utf8. */
  readFile?: (path: string) => string;
}

/**
 * Every setting's effective value and source, validated.
 * @example resolveSettings({ port: '8080' }, {}).get('port')?.source // '--port'
 */
export function resolveSettings(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  options: ResolveOptions = {},
): Map<string, Resolved> {
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const fromFlag = (setting: Setting): string | undefined => {
    const value = flags[flagAttribute(setting.flag)];
    return value === undefined || String(value) === '' ? undefined : String(value);
  };
  const fromEnv = (setting: Setting): string | undefined => {
    const value = env[setting.env];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const configSetting = SERVE_SETTINGS.find((s) => s.key === 'config')!;
  const configFlag = fromFlag(configSetting);
  const configPath = configFlag ?? fromEnv(configSetting);
  const file = configPath === undefined ? new Map<string, string>() : readConfigFile(configPath, readFile);

  const resolved = new Map<string, Resolved>();
  for (const setting of SERVE_SETTINGS) {
    const given: [string, string] | undefined =
      (fromFlag(setting) !== undefined && [fromFlag(setting)!, setting.flag]) ||
      (fromEnv(setting) !== undefined && [fromEnv(setting)!, setting.env]) ||
      (file.has(setting.key) && [file.get(setting.key)!, `${configPath}: ${setting.key}`]) ||
      undefined;
    resolved.set(
      setting.key,
      given === undefined
        ? { setting, value: setting.default, source: 'default' }
        : { setting, value: parseValue(setting, given[0], given[1]), source: given[1] },
    );
  }
  return resolved;
}

/** Keys from api_keys (comma-separated) and api_keys_file (one per line), deduplicated. */
function apiKeys(settings: Map<string, Resolved>, readFile: (path: string) => string): string[] {
  const keys = parseApiKeys(String(settings.get('api_keys')!.value ?? ''));
  const file = settings.get('api_keys_file')!;
  if (file.value !== null) {
    const path = String(file.value);
    let text: string;
    try {
      text = readFile(path);
    } catch (error) {
      throw new StartupError(
        `serve: ${file.source}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
    const fromFile = parseApiKeys(text);
    if (fromFile.length === 0) {
      // An empty key file would silently turn authentication off: refuse to start instead.
      throw new StartupError(`serve: ${file.source}: ${path} holds no keys (one per line, # for comments)`);
    }
    keys.push(...fromFile);
  }
  return [...new Set(keys)];
}

function httpOptions(
  settings: Map<string, Resolved>,
  readFile: (path: string) => string,
): HttpOptionsInput | undefined {
  if ([...HTTP_KEYS].every((key) => settings.get(key)!.source === 'default')) return undefined;
  const n = (key: string) => settings.get(key)!.value as number;
  const rateMax = n('rate_limit_max');
  const redisUrl = settings.get('redis_url')!.value;
  return {
    limits: {
      bodyBytes: n('max_body_bytes'),
      texts: n('max_texts'),
      textLength: n('max_text_length'),
      jsonDepth: n('max_json_depth'),
      requestTimeoutMs: n('request_timeout_ms'),
    },
    apiKeys: apiKeys(settings, readFile),
    protectDocs: settings.get('protect_docs')!.value as boolean,
    rateLimit: rateMax > 0 ? { max: rateMax, windowMs: n('rate_limit_window_ms') } : null,
    maxInFlight: n('max_in_flight'),
    maxEventLoopDelayMs: n('max_event_loop_delay_ms'),
    retryAfterSeconds: n('retry_after_s'),
    redisUrl: redisUrl === null ? null : String(redisUrl),
  };
}

/**
 * Resolves and validates the serve configuration; throws StartupError with a message for a person.
 * @example resolveServeConfig({ port: '8080' }, process.env).port // 8080
 */
export function resolveServeConfig(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  options: ResolveOptions = {},
): ServeConfig {
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const settings = resolveSettings(flags, env, { readFile });
  const value = (key: string) => settings.get(key)!.value;
  const host = String(value('host'));
  if (/\s/.test(host)) {
    throw new StartupError(
      `serve: ${settings.get('host')!.source} must not contain spaces; got ${JSON.stringify(host)}`,
    );
  }
  const common: Common = {
    host,
    port: value('port') as number,
    workers: (value('workers') as number | null) ?? availableParallelism(),
    logLevel: value('log_level') as LogLevel,
    shutdownDelayMs: value('shutdown_delay_ms') as number,
    shutdownGraceMs: value('shutdown_grace_ms') as number,
    http: httpOptions(settings, readFile),
  };

  const model = settings.get('model')!;
  if (model.value !== null) {
    // Run-based settings given on purpose (a flag or the file) contradict --model; variables are ignored.
    const conflicting = ['tracking_uri', 'experiment']
      .map((key) => settings.get(key)!)
      .filter((r) => r.source === r.setting.flag || r.source.endsWith(`: ${r.setting.key}`))
      .map((r) => r.source);
    if (conflicting.length > 0) {
      throw new StartupError(
        `serve: ${model.source} serves one saved model without a tracking store, so ${conflicting.join(' and ')} cannot be used with it; drop one of them`,
      );
    }
    return { ...common, mode: 'model', modelDir: String(model.value) };
  }
  return {
    ...common,
    mode: 'runs',
    trackingUri: String(value('tracking_uri')),
    experiment: String(value('experiment')),
    modelCacheSize: value('model_cache_size') as number,
    storeWaitMs: value('store_wait_ms') as number,
    reloadIntervalMs: value('reload_interval_ms') as number,
  };
}

/** A value as `--print-config` shows it: secrets masked. */
function shown(resolved: Resolved): string {
  const { setting, value } = resolved;
  if (value === null)
    return setting.key === 'workers' ? `(the cores available: ${availableParallelism()})` : '(unset)';
  if (setting.secret === 'value') {
    const count = parseApiKeys(String(value)).length;
    return `*** (${count} key${count === 1 ? '' : 's'})`;
  }
  if (setting.secret === 'url-password') {
    return setting.kind.type === 'redis-url' ? redactRedisUrl(String(value)) : redactUri(String(value));
  }
  return String(value);
}

/**
 * The effective configuration, one line per setting with its source, secrets masked (`--print-config`).
 * @example printableConfig({}, {}) // "config = (unset)  # default\n…"
 */
export function printableConfig(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  options: ResolveOptions = {},
): string {
  // Resolving the whole config first reports a bad value the same way `serve` would.
  resolveServeConfig(flags, env, options);
  const settings = resolveSettings(flags, env, options);
  const width = Math.max(...SERVE_SETTINGS.map((s) => s.key.length));
  return `${[...settings.values()]
    .map((r) => `${r.setting.key.padEnd(width)} = ${shown(r)}  # ${r.source}`)
    .join('\n')}\n`;
}
