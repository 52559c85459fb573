/**
 * The serve configuration, 12-factor style: every setting of `tagger serve` is described once in
 * SETTINGS (its flag, environment variable, config-file key, TypeBox schema with range and default,
 * whether it is a secret, its help), and everything else is derived from that table: the one JSON
 * Schema that Ajv validates every value with (here), the flags and `--help` (src/cli.ts),
 * `--print-config`, and docs/configuration.md (scripts/config-table.ts; a test fails when it is stale).
 *
 * Precedence: a flag, else its environment variable, else the config file (`--config <file>` /
 * TAGGER_CONFIG; YAML or JSON, keys as in the table), else the default. An empty value counts as unset
 * wherever it comes from. A bad value names the setting and where it came from (`TAGGER_PORT`, `--port`
 * or `tagger.yaml: port`); every bad value is reported at once. No side effects at import time.
 *
 * Every source is read by the same text rules (variables and flags are text; a scalar in the file is
 * read as its text): a decimal integer for integer settings, true/false/yes/no/on/off/1/0 for booleans,
 * any case for choices. The schema then decides, so `1e3`, `0x10` or `80.5` is no port.
 *
 * The host defaults to loopback because the API has no authentication by default; set `0.0.0.0` (e.g.
 * in a container) to accept connections from other machines.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import Type, { type Static, type TSchema } from 'typebox';
import { parse as parseYaml } from 'yaml';
import { parseApiKeys } from './http/auth.js';
import { HTTP_DEFAULTS, type HttpOptionsInput } from './http/options.js';
import { redactRedisUrl } from './http/shared-rate-limit.js';
import { DEFAULT_GATES, type PromotionGates, StartupError } from './service/index.js';
import {
  DEFAULT_TRACKING_URI,
  defaultTrackingUri,
  type ModelUri,
  parseModelUri,
  redactUri,
} from './tracking/index.js';
import { defaultWorkers, describeWorkers } from './worker-count.js';

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
  gates: DEFAULT_GATES,
  storeWaitMs: 30_000,
  logLevel: 'info' as LogLevel,
  reloadIntervalMs: 60_000,
  shutdownDelayMs: 5_000,
  shutdownGraceMs: 10_000,
} as const;

/** Window of `rate_limit_max` when `rate_limit_window_ms` is not set. */
export const RATE_LIMIT_WINDOW_DEFAULT_MS = 60_000;

/** One row of the settings table. */
export interface Setting<S extends TSchema = TSchema> {
  /** Key in a config file and in `--print-config`. */
  key: string;
  flag: `--${string}`;
  /** What `--help` shows after the flag, e.g. `<ms>`. */
  arg: `<${string}>`;
  env: string;
  /** The value's type and range (Ajv validates it); its description is `help`. */
  schema: S;
  /** What the setting does: `--help`, the docs and the schema's description. */
  help: string;
  /** Used when no source gives the setting; null: unset. */
  default: Static<S> | null;
  /** How a bad value is described: "--port must be <what>, an integer from 0 to 65535". */
  what?: string;
  /** Masked by --print-config and never echoed in messages (whole value, or a URL's password). */
  secret?: 'value' | 'url-password';
  /** Part of the HTTP layer's options (HttpOptions): all at their defaults, the app uses its own. */
  http?: true;
  /** Meaningless in a config file (the file's own path). */
  notInFile?: true;
}

type Row<S extends TSchema, D> = Omit<Setting<S>, 'key' | 'schema' | 'default' | 'help'> & {
  schema: S;
  default: D;
};
/** Keeps each row's schema and default types, so the resolved values are typed by the table. */
const row = <S extends TSchema, D extends Static<S> | null>(spec: Row<S, D>): Row<S, D> => spec;

const integer = (minimum: number, maximum: number, help: string) =>
  Type.Integer({ minimum, maximum, description: help });
const fraction = (help: string) => Type.Number({ minimum: 0, maximum: 1, description: help });
const text = (help: string, pattern?: string) =>
  Type.String(pattern === undefined ? { minLength: 1, description: help } : { pattern, description: help });
const L = HTTP_DEFAULTS.limits;

/** The table. Order is the order of `--help`, `--print-config` and the docs. */
const SETTINGS = {
  config: row({
    flag: '--config',
    arg: '<file>',
    env: 'TAGGER_CONFIG',
    schema: text(
      'a YAML or JSON file of settings (keys: docs/configuration.md); flags and variables win over it',
    ),
    default: null,
    notInFile: true,
  }),
  tracking_uri: row({
    flag: '--tracking-uri',
    arg: '<uri>',
    env: 'MLFLOW_TRACKING_URI',
    schema: text(
      "MLflow tracking store: sqlite:///file.db, postgresql://…, http(s)://server or a folder (mlruns layout); by default ./mlruns when it already holds experiments (MLflow's rule)",
    ),
    default: SERVE_DEFAULTS.trackingUri,
    secret: 'url-password',
  }),
  experiment: row({
    flag: '--experiment',
    arg: '<name>',
    env: 'TAGGER_EXPERIMENT',
    schema: text('experiment whose best run is served'),
    default: SERVE_DEFAULTS.experiment,
  }),
  run_id: row({
    flag: '--run-id',
    arg: '<id>',
    env: 'TAGGER_RUN_ID',
    schema: text(
      'pin: serve this run of the experiment and never swap to another (reloads still refresh /runs)',
    ),
    default: null,
  }),
  model_uri: row({
    flag: '--model-uri',
    arg: '<uri>',
    env: 'TAGGER_MODEL_URI',
    schema: text(
      'registry mode: serve what an MLflow model URI points at and follow it (models:/<name>@<alias> swaps when the alias moves; models:/<name>/<version>; runs:/<run_id>/model)',
    ),
    default: null,
  }),
  model: row({
    flag: '--model',
    arg: '<dir>',
    env: 'TAGGER_MODEL',
    schema: text('single-model mode: serve this saved model directory instead of runs'),
    default: null,
  }),
  host: row({
    flag: '--host',
    arg: '<host>',
    env: 'TAGGER_HOST',
    schema: text('interface to listen on (0.0.0.0: every interface, e.g. in a container)', '^\\S+$'),
    default: SERVE_DEFAULTS.host,
    what: 'a host name or IP address (no spaces)',
  }),
  port: row({
    flag: '--port',
    arg: '<port>',
    env: 'TAGGER_PORT',
    schema: integer(0, 65_535, 'port to listen on (0: a free one)'),
    default: SERVE_DEFAULTS.port,
    what: 'a TCP port (0 picks a free one)',
  }),
  workers: row({
    flag: '--workers',
    arg: '<n>',
    env: 'TAGGER_WORKERS',
    schema: integer(
      1,
      MAX_WORKERS,
      "worker processes serving the same port (default: the cores available, within the container's CPU quota and memory limit at 192 MiB per worker; 1: a single process)",
    ),
    default: null,
    what: 'the number of worker processes',
  }),
  log_level: row({
    flag: '--log-level',
    arg: '<level>',
    env: 'TAGGER_LOG_LEVEL',
    schema: Type.Enum(LOG_LEVELS, { description: `log level: ${LOG_LEVELS.join(', ')}` }),
    default: SERVE_DEFAULTS.logLevel,
  }),
  reload_interval_ms: row({
    flag: '--reload-interval',
    arg: '<ms>',
    env: 'TAGGER_RELOAD_INTERVAL_MS',
    schema: integer(
      0,
      86_400_000,
      'poll the tracking store for a new best run every <ms> (0: only on SIGHUP)',
    ),
    default: SERVE_DEFAULTS.reloadIntervalMs,
    what: 'an interval in milliseconds (0 turns polling off)',
  }),
  model_cache_size: row({
    flag: '--model-cache-size',
    arg: '<n>',
    env: 'TAGGER_MODEL_CACHE_SIZE',
    schema: integer(
      0,
      1_000,
      'models of other runs kept loaded for /runs/{id}/predict (least recently used dropped)',
    ),
    default: SERVE_DEFAULTS.modelCacheSize,
    what: 'the number of run models to keep loaded',
  }),
  min_test_size: row({
    flag: '--min-test-size',
    arg: '<rows>',
    env: 'TAGGER_MIN_TEST_SIZE',
    schema: integer(
      0,
      1_000_000_000,
      'promotion gate: a run whose test split has fewer rows is never served (0: no minimum)',
    ),
    default: SERVE_DEFAULTS.gates.minTestSize,
    what: 'a number of rows',
  }),
  min_tags: row({
    flag: '--min-tags',
    arg: '<n>',
    env: 'TAGGER_MIN_TAGS',
    schema: integer(
      0,
      1_000_000,
      'promotion gate: a run whose model learnt fewer distinct tags is never served',
    ),
    default: SERVE_DEFAULTS.gates.minTags,
    what: 'a number of tags',
  }),
  allow_incomparable: row({
    flag: '--allow-incomparable',
    arg: '<bool>',
    env: 'TAGGER_ALLOW_INCOMPARABLE',
    schema: Type.Boolean({
      description:
        'promotion gate off: a reload may swap to a run whose f1 was measured on another test set than the served run',
    }),
    default: SERVE_DEFAULTS.gates.allowIncomparable,
  }),
  min_behavioural_pass_rate: row({
    flag: '--min-behavioural-pass-rate',
    arg: '<rate>',
    env: 'TAGGER_MIN_BEHAVIOURAL_PASS_RATE',
    schema: fraction(
      'promotion gate: a run whose model passed a smaller share of its behavioural tests (metric behavioural_pass_rate) is never served; runs without the metric pass (0: off)',
    ),
    default: SERVE_DEFAULTS.gates.minBehaviouralPassRate,
    what: 'a share of the behavioural tests',
  }),
  store_wait_ms: row({
    flag: '--store-wait',
    arg: '<ms>',
    env: 'TAGGER_STORE_WAIT_MS',
    schema: integer(0, 3_600_000, 'how long startup waits for a tracking server to answer'),
    default: SERVE_DEFAULTS.storeWaitMs,
    what: 'a wait in milliseconds',
  }),
  shutdown_delay_ms: row({
    flag: '--shutdown-delay',
    arg: '<ms>',
    env: 'TAGGER_SHUTDOWN_DELAY_MS',
    schema: integer(
      0,
      3_600_000,
      'after SIGTERM, keep answering (readiness 503) this long before draining, so a load balancer moves away',
    ),
    default: SERVE_DEFAULTS.shutdownDelayMs,
    what: 'a delay in milliseconds (0: drain at once)',
  }),
  shutdown_grace_ms: row({
    flag: '--shutdown-grace',
    arg: '<ms>',
    env: 'TAGGER_SHUTDOWN_GRACE_MS',
    schema: integer(0, 3_600_000, 'how long in-flight requests may take to finish when shutting down'),
    default: SERVE_DEFAULTS.shutdownGraceMs,
    what: 'a grace period in milliseconds',
  }),
  max_body_bytes: row({
    flag: '--max-body-bytes',
    arg: '<bytes>',
    env: 'TAGGER_MAX_BODY_BYTES',
    schema: integer(1024, 1024 ** 3, 'largest request body; larger is a 413'),
    default: L.bodyBytes,
    what: 'a size in bytes',
    http: true,
  }),
  max_texts: row({
    flag: '--max-texts',
    arg: '<n>',
    env: 'TAGGER_MAX_TEXTS',
    schema: integer(1, 1_000_000, 'most entries in `texts` of one request; more is a 413'),
    default: L.texts,
    what: 'the most texts per request',
    http: true,
  }),
  max_text_length: row({
    flag: '--max-text-length',
    arg: '<chars>',
    env: 'TAGGER_MAX_TEXT_LENGTH',
    schema: integer(1, 100_000_000, 'most characters in one text; longer is a 422'),
    default: L.textLength,
    what: 'the most characters per text',
    http: true,
  }),
  max_json_depth: row({
    flag: '--max-json-depth',
    arg: '<n>',
    env: 'TAGGER_MAX_JSON_DEPTH',
    schema: integer(3, 10_000, 'deepest array/object nesting of a body; deeper is a 413'),
    default: L.jsonDepth,
    what: 'the deepest JSON nesting',
    http: true,
  }),
  request_timeout_ms: row({
    flag: '--request-timeout',
    arg: '<ms>',
    env: 'TAGGER_REQUEST_TIMEOUT_MS',
    schema: integer(
      0,
      3_600_000,
      'time to receive a request (408) and, separately, to answer it (504); 0: none',
    ),
    default: L.requestTimeoutMs,
    what: 'a timeout in milliseconds (0: none)',
    http: true,
  }),
  api_keys: row({
    flag: '--api-keys',
    arg: '<keys>',
    env: 'TAGGER_API_KEYS',
    schema: Type.Union([Type.String(), Type.Array(Type.String())], {
      description:
        'API keys, comma-separated (a list in the file); any key turns authentication on. A flag shows in `ps`: prefer the file or the variable',
    }),
    default: null,
    what: 'API keys, comma-separated (or a list of strings in the file)',
    secret: 'value',
    http: true,
  }),
  api_keys_file: row({
    flag: '--api-keys-file',
    arg: '<file>',
    env: 'TAGGER_API_KEYS_FILE',
    schema: text('file with one API key per line (# comments); a file without keys refuses to start'),
    default: null,
    http: true,
  }),
  protect_docs: row({
    flag: '--protect-docs',
    arg: '<bool>',
    env: 'TAGGER_PROTECT_DOCS',
    schema: Type.Boolean({ description: 'also require the API key for /docs, /redoc and /openapi.json' }),
    default: HTTP_DEFAULTS.protectDocs,
    http: true,
  }),
  rate_limit_max: row({
    flag: '--rate-limit-max',
    arg: '<n>',
    env: 'TAGGER_RATE_LIMIT_MAX',
    schema: integer(
      0,
      1_000_000_000,
      'requests per client (API key, else address) per window; over it a 429 (0: off)',
    ),
    default: 0,
    what: 'requests per window (0: off)',
    http: true,
  }),
  rate_limit_window_ms: row({
    flag: '--rate-limit-window',
    arg: '<ms>',
    env: 'TAGGER_RATE_LIMIT_WINDOW_MS',
    schema: integer(1, 86_400_000, 'the rate-limit window'),
    default: RATE_LIMIT_WINDOW_DEFAULT_MS,
    what: 'a window in milliseconds',
    http: true,
  }),
  redis_url: row({
    flag: '--redis-url',
    arg: '<url>',
    env: 'TAGGER_REDIS_URL',
    schema: text(
      'Redis shared by all workers and replicas: rate limits are counted there (fail open when it is down)',
      '^rediss?://\\S+$',
    ),
    default: null,
    what: 'a redis:// or rediss:// URL',
    secret: 'url-password',
    http: true,
  }),
  max_in_flight: row({
    flag: '--max-in-flight',
    arg: '<n>',
    env: 'TAGGER_MAX_IN_FLIGHT',
    schema: integer(
      0,
      1_000_000,
      'requests handled at once; more are shed with 503 + Retry-After (0: no cap)',
    ),
    default: HTTP_DEFAULTS.maxInFlight,
    what: 'the most concurrent requests (0: no cap)',
    http: true,
  }),
  max_event_loop_delay_ms: row({
    flag: '--max-event-loop-delay',
    arg: '<ms>',
    env: 'TAGGER_MAX_EVENT_LOOP_DELAY_MS',
    schema: integer(0, 600_000, 'shed with 503 while the event-loop delay is above it (0: off)'),
    default: HTTP_DEFAULTS.maxEventLoopDelayMs,
    what: 'a delay in milliseconds (0: off)',
    http: true,
  }),
  retry_after_s: row({
    flag: '--retry-after',
    arg: '<s>',
    env: 'TAGGER_RETRY_AFTER_S',
    schema: integer(1, 3600, 'Retry-After of load-shedding 503s and 504s'),
    default: HTTP_DEFAULTS.retryAfterSeconds,
    what: 'seconds',
    http: true,
  }),
};

type Table = typeof SETTINGS;
export type SettingKey = keyof Table;
/** The effective value of every setting (null: unset). */
export type SettingValues = { [K in SettingKey]: Static<Table[K]['schema']> | Table[K]['default'] };

const KEYS = Object.keys(SETTINGS) as SettingKey[];

/** Every setting, in table order, with its key. */
export const SERVE_SETTINGS: readonly Setting[] = Object.freeze(
  KEYS.map((key) => {
    const spec = SETTINGS[key];
    return Object.freeze({
      key,
      ...spec,
      help: String((spec.schema as { description?: string }).description),
    }) as Setting;
  }),
);

const byKey = (key: SettingKey): Setting => SERVE_SETTINGS[KEYS.indexOf(key)]!;

/**
 * The JSON Schema of a config file: every setting but `config`, no other key. The same schema checks
 * values from flags and variables (after the text rules), so all sources agree on what is valid.
 */
export const CONFIG_FILE_SCHEMA = Type.Object(
  Object.fromEntries(
    SERVE_SETTINGS.filter((s) => !s.notInFile).map((s) => [
      s.key,
      Type.Optional(s.default === null ? s.schema : { ...s.schema, default: s.default }),
    ]),
  ),
  { additionalProperties: false, description: 'Settings of `tagger serve` (docs/configuration.md)' },
);

/** Compiled on first use: `tagger train` and `predict` import this module too. */
let validators: { document: ValidateFunction; configPath: ValidateFunction } | undefined;
const compiled = () => {
  if (validators === undefined) {
    const ajv = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: false, strict: true });
    validators = {
      document: ajv.compile(CONFIG_FILE_SCHEMA),
      configPath: ajv.compile(byKey('config').schema),
    };
  }
  return validators;
};

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

/** One setting's effective value and where it came from. */
export interface Resolved {
  setting: Setting;
  value: unknown;
  origin: 'flag' | 'env' | 'file' | 'default';
  /** How a message names the origin: `--port`, `TAGGER_PORT`, `tagger.yaml: port` or `default`. */
  source: string;
}

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

/**
 * A text value as the setting's schema expects it (see the module comment); anything that does not
 * fit stays text, for the schema to refuse. Empty text is unset.
 */
function fromText(setting: Setting, raw: string): unknown {
  const value = raw.trim();
  if (value === '') return undefined;
  const type = (setting.schema as { type?: unknown }).type;
  if (type === 'integer') return /^\d+$/.test(value) ? Number(value) : value;
  if (type === 'number') return /^\d+(\.\d+)?$|^\.\d+$/.test(value) ? Number(value) : value;
  if (type === 'boolean') {
    if (TRUE.includes(value.toLowerCase())) return true;
    if (FALSE.includes(value.toLowerCase())) return false;
    return value;
  }
  if ('enum' in setting.schema) return value.toLowerCase();
  return value;
}

/** A value from the config file: scalars by the text rules, lists and mappings for the schema. */
function fromFile(setting: Setting, value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') {
    return fromText(setting, String(value));
  }
  return value;
}

/** How a bad value is described, from its schema. */
function requirement(setting: Setting): string {
  const schema = setting.schema as { type?: string; minimum?: number; maximum?: number; enum?: unknown[] };
  if (schema.type === 'integer') {
    return `${setting.what ?? 'a whole number'}, an integer from ${schema.minimum} to ${schema.maximum}`;
  }
  if (schema.type === 'number') {
    return `${setting.what ?? 'a number'}, a number from ${schema.minimum} to ${schema.maximum}`;
  }
  if (schema.type === 'boolean') return 'true or false';
  if (schema.enum) return `one of ${schema.enum.join(', ')}`;
  return setting.what ?? 'a non-empty text';
}

/** The value as an error message may show it: never a secret. */
function quoted(setting: Setting, value: unknown): string {
  if (setting.secret === 'value') return '(hidden)';
  if (setting.secret === 'url-password' && typeof value === 'string') {
    return JSON.stringify(setting.key === 'redis_url' ? redactRedisUrl(value) : redactUri(value));
  }
  return JSON.stringify(value);
}

/** Messages for the settings of `document` that the schema refuses, each blamed on `sourceOf(key)`. */
function schemaProblems(document: Record<string, unknown>, sourceOf: (key: string) => string): string[] {
  const validateDocument = compiled().document;
  if (validateDocument(document)) return [];
  const problems: string[] = [];
  const reported = new Set<string>();
  const unknown: string[] = [];
  for (const error of validateDocument.errors ?? []) {
    if (error.keyword === 'additionalProperties') {
      unknown.push(String(error.params.additionalProperty));
      continue;
    }
    // One message per setting, however many schema keywords it failed.
    const key = error.instancePath.split('/')[1] ?? '';
    if (reported.has(key)) continue;
    reported.add(key);
    const setting = byKey(key as SettingKey);
    problems.push(`${sourceOf(key)} must be ${requirement(setting)}; got ${quoted(setting, document[key])}`);
  }
  if (unknown.length > 0) {
    const known = SERVE_SETTINGS.filter((s) => !s.notInFile).map((s) => s.key);
    problems.unshift(
      `${sourceOf('')}unknown setting${unknown.length === 1 ? '' : 's'} ${unknown.map((k) => JSON.stringify(k)).join(', ')}; the settings are ${known.join(', ')}`,
    );
  }
  return problems;
}

const fail = (problems: string[]): never => {
  throw new StartupError(
    problems.length === 1
      ? `serve: ${problems[0]}`
      : `serve: ${problems.length} settings are invalid:\n  ${problems.join('\n  ')}`,
  );
};

/** The config file's settings (validated by the schema, errors blamed on `path: key`). */
function readConfigFile(path: string, readFile: (path: string) => string): Map<string, unknown> {
  let content: string;
  try {
    content = readFile(path);
  } catch (error) {
    throw new StartupError(
      `serve: cannot read the config file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  let parsed: unknown;
  try {
    // YAML 1.2 is a superset of JSON, so one parser reads both.
    parsed = parseYaml(content);
  } catch (error) {
    throw new StartupError(
      `serve: the config file ${path} is not valid YAML or JSON: ${(error as Error).message}`,
    );
  }
  if (parsed === null || parsed === undefined) return new Map();
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new StartupError(`serve: the config file ${path} must hold a mapping of settings (key: value)`);
  }
  const document: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(parsed)) {
    const setting = KEYS.includes(key as SettingKey) ? byKey(key as SettingKey) : undefined;
    const value = setting === undefined || setting.notInFile ? raw : fromFile(setting, raw);
    if (value !== undefined) document[key] = value;
  }
  const problems = schemaProblems(document, (key) => (key === '' ? `${path}: ` : `${path}: ${key}`));
  if (problems.length > 0) fail(problems);
  return new Map(Object.entries(document));
}

export interface ResolveOptions {
  /** Reads the config file and the API-key file (tests pass a fake); default readFileSync utf8. */
  readFile?: (path: string) => string;
}

const readUtf8 = (path: string): string => readFileSync(path, 'utf8');

/**
 * Every setting's effective value and source, validated (every problem reported at once).
 * @example resolveSettings({ port: '8080' }, {}).get('port')?.source // '--port'
 */
export function resolveSettings(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  options: ResolveOptions = {},
): Map<SettingKey, Resolved> {
  const readFile = options.readFile ?? readUtf8;
  const given = (setting: Setting): Omit<Resolved, 'setting'> | undefined => {
    const flag = flags[flagAttribute(setting.flag)];
    const fromFlag = flag === undefined ? undefined : fromText(setting, String(flag));
    if (fromFlag !== undefined) return { value: fromFlag, origin: 'flag', source: setting.flag };
    const variable = env[setting.env];
    const fromEnv = variable === undefined ? undefined : fromText(setting, variable);
    if (fromEnv !== undefined) return { value: fromEnv, origin: 'env', source: setting.env };
    return undefined;
  };

  const configSetting = byKey('config');
  const config = given(configSetting);
  if (config !== undefined && !compiled().configPath(config.value)) {
    fail([
      `${config.source} must be ${requirement(configSetting)}; got ${quoted(configSetting, config.value)}`,
    ]);
  }
  const configPath = config?.value as string | undefined;
  const file = configPath === undefined ? new Map<string, unknown>() : readConfigFile(configPath, readFile);

  const resolved = new Map<SettingKey, Resolved>();
  for (const setting of SERVE_SETTINGS) {
    const key = setting.key as SettingKey;
    const value = given(setting);
    if (value !== undefined) resolved.set(key, { setting, ...value });
    else if (file.has(key)) {
      resolved.set(key, { setting, value: file.get(key), origin: 'file', source: `${configPath}: ${key}` });
    } else {
      // MLflow's default store depends on what is on disk (an existing ./mlruns keeps being used).
      const value = key === 'tracking_uri' ? defaultTrackingUri() : setting.default;
      resolved.set(key, { setting, value, origin: 'default', source: 'default' });
    }
  }

  // Flags and variables are checked by the same schema as the file (which was checked whole above).
  const fromFlagsAndEnv = Object.fromEntries(
    [...resolved]
      .filter(([key, r]) => (r.origin === 'flag' || r.origin === 'env') && !byKey(key).notInFile)
      .map(([key, r]) => [key, r.value]),
  );
  const problems = schemaProblems(fromFlagsAndEnv, (key) => resolved.get(key as SettingKey)!.source);
  if (problems.length > 0) fail(problems);
  return resolved;
}

interface Common {
  host: string;
  port: number;
  /** Processes serving the port (`--workers`); 1: the plain single-process server. */
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
      /** Serve this run and never swap (null: the best run). */
      pinRunId: string | null;
      /** Registry mode: serve what this model URI points at and follow it (null: the best run). */
      modelUri: ModelUri | null;
      /** Which runs may go live. */
      gates: PromotionGates;
      /** How long to wait for a REST tracking server to answer at startup. */
      storeWaitMs: number;
      /** Milliseconds between reloads of the experiment's runs (also on SIGHUP); 0: only on SIGHUP. */
      reloadIntervalMs: number;
    })
  | (Common & { mode: 'model'; modelDir: string });

const keyList = (value: unknown): string[] =>
  value === null ? [] : parseApiKeys(Array.isArray(value) ? value.join(',') : String(value));

/** Keys from api_keys and api_keys_file (one per line), deduplicated. */
function apiKeys(settings: Map<SettingKey, Resolved>, readFile: (path: string) => string): string[] {
  const keys = keyList(settings.get('api_keys')!.value);
  const file = settings.get('api_keys_file')!;
  if (file.value !== null) {
    const path = String(file.value);
    let content: string;
    try {
      content = readFile(path);
    } catch (error) {
      throw new StartupError(
        `serve: ${file.source}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
    const fromFile = parseApiKeys(content);
    if (fromFile.length === 0) {
      // An empty key file would silently turn authentication off: refuse to start instead.
      throw new StartupError(`serve: ${file.source}: ${path} holds no keys (one per line, # for comments)`);
    }
    keys.push(...fromFile);
  }
  return [...new Set(keys)];
}

/**
 * The parsed `model_uri`, or null. It chooses the run itself, so a pinned run or an experiment given on
 * purpose (flag or file) contradicts it; the listed runs are those of the served run's experiment.
 */
function modelUriSetting(settings: Map<SettingKey, Resolved>, values: SettingValues): ModelUri | null {
  if (values.model_uri === null) return null;
  const setting = settings.get('model_uri')!;
  const pinned = settings.get('run_id')!;
  const experiment = settings.get('experiment')!;
  const contradicting = [
    ...(pinned.value !== null ? [pinned.source] : []),
    ...(experiment.origin === 'flag' || experiment.origin === 'file' ? [experiment.source] : []),
  ];
  if (contradicting.length > 0) {
    throw new StartupError(
      `serve: ${setting.source} chooses the served run through the Model Registry, so ${contradicting.join(' and ')} cannot be used with it; drop one of them`,
    );
  }
  try {
    return parseModelUri(values.model_uri);
  } catch (error) {
    throw new StartupError(`serve: ${setting.source}: ${(error as Error).message}`);
  }
}

function httpOptions(
  settings: Map<SettingKey, Resolved>,
  values: SettingValues,
  readFile: (path: string) => string,
): HttpOptionsInput | undefined {
  if (SERVE_SETTINGS.every((s) => !s.http || settings.get(s.key as SettingKey)!.origin === 'default')) {
    return undefined;
  }
  return {
    limits: {
      bodyBytes: values.max_body_bytes,
      texts: values.max_texts,
      textLength: values.max_text_length,
      jsonDepth: values.max_json_depth,
      requestTimeoutMs: values.request_timeout_ms,
    },
    apiKeys: apiKeys(settings, readFile),
    protectDocs: values.protect_docs,
    rateLimit:
      values.rate_limit_max > 0
        ? { max: values.rate_limit_max, windowMs: values.rate_limit_window_ms }
        : null,
    maxInFlight: values.max_in_flight,
    maxEventLoopDelayMs: values.max_event_loop_delay_ms,
    retryAfterSeconds: values.retry_after_s,
    redisUrl: values.redis_url,
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
  const readFile = options.readFile ?? readUtf8;
  const settings = resolveSettings(flags, env, { readFile });
  // Validated against each setting's schema above, so the values have the table's types.
  const values = Object.fromEntries([...settings].map(([key, r]) => [key, r.value])) as SettingValues;
  const common: Common = {
    host: values.host,
    port: values.port,
    workers: values.workers ?? defaultWorkers().workers,
    logLevel: values.log_level,
    shutdownDelayMs: values.shutdown_delay_ms,
    shutdownGraceMs: values.shutdown_grace_ms,
    http: httpOptions(settings, values, readFile),
  };

  const model = settings.get('model')!;
  if (values.model !== null) {
    // Run-based settings given on purpose (a flag or the file) contradict --model; variables are ignored.
    const conflicting = (['tracking_uri', 'experiment', 'run_id', 'model_uri'] as const)
      .map((key) => settings.get(key)!)
      .filter((r) => r.origin === 'flag' || r.origin === 'file')
      .map((r) => r.source);
    if (conflicting.length > 0) {
      throw new StartupError(
        `serve: ${model.source} serves one saved model without a tracking store, so ${conflicting.join(' and ')} cannot be used with it; drop one of them`,
      );
    }
    return { ...common, mode: 'model', modelDir: values.model };
  }
  return {
    ...common,
    mode: 'runs',
    trackingUri: values.tracking_uri,
    experiment: values.experiment,
    modelCacheSize: values.model_cache_size,
    pinRunId: values.run_id,
    modelUri: modelUriSetting(settings, values),
    gates: {
      minTestSize: values.min_test_size,
      minTags: values.min_tags,
      allowIncomparable: values.allow_incomparable,
      minBehaviouralPassRate: values.min_behavioural_pass_rate,
    },
    storeWaitMs: values.store_wait_ms,
    reloadIntervalMs: values.reload_interval_ms,
  };
}

/** A value as `--print-config` shows it: secrets masked. */
function shown({ setting, value }: Resolved): string {
  if (value === null) {
    return setting.key === 'workers' ? `(unset: ${describeWorkers(defaultWorkers())})` : '(unset)';
  }
  if (setting.secret === 'value') {
    const count = keyList(value).length;
    return `*** (${count} key${count === 1 ? '' : 's'})`;
  }
  if (setting.secret === 'url-password') {
    return setting.key === 'redis_url' ? redactRedisUrl(String(value)) : redactUri(String(value));
  }
  return String(value);
}

/**
 * The effective configuration, one line per setting with its source, secrets masked (`--print-config`).
 * Fails like `serve` on a bad value, having resolved the whole configuration (and read the key file).
 * @example printableConfig({}, {}) // "config                  = (unset)  # default\n…"
 */
export function printableConfig(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  options: ResolveOptions = {},
): string {
  resolveServeConfig(flags, env, options);
  const settings = resolveSettings(flags, env, options);
  const width = Math.max(...SERVE_SETTINGS.map((s) => s.key.length));
  return `${[...settings.values()].map((r) => `${r.setting.key.padEnd(width)} = ${shown(r)}  # ${r.source}`).join('\n')}\n`;
}
