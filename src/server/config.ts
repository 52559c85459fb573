/**
 * How `tagger serve` resolves its settings (the table is in ./settings.ts): a flag, else its environment
 * variable, else the config file (`--config <file>` / TAGGER_CONFIG; YAML or JSON, keys as in the table),
 * else the default. An empty value counts as unset wherever it comes from. A bad value names the setting
 * and where it came from (`TAGGER_PORT`, `--port` or `tagger.yaml: port`); every bad value is reported at
 * once. No side effects at import time.
 *
 * Every source is read by the same text rules (variables and flags are text; a scalar in the file is
 * read as its text): a decimal integer for integer settings, true/false/yes/no/on/off/1/0 for booleans,
 * any case for choices. The schema then decides, so `1e3`, `0x10` or `80.5` is no port. Also derived
 * here: `--print-config` (secrets masked) and the typed `ServeConfig` the server starts from.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { parseApiKeys, parseScopedKey } from '../http/auth.js';
import type { HttpOptionsInput } from '../http/options.js';
import { redactRedisUrl } from '../http/shared-rate-limit.js';
// Not the layer's index: every command loads this module, and the index loads prom-client and more.
import type { MonitoringConfig } from '../monitoring/monitoring.js';
import { checkRecordStoreUri, defaultRecordStoreUri } from '../monitoring/open.js';
import { type EncoderSettings, type PromotionGates, StartupError } from '../served-models/index.js';
import { defaultTrackingUri, type ModelUri, parseModelUri, redactUri } from '../tracking/index.js';
import {
  byKey,
  CONFIG_FILE_SCHEMA,
  flagAttribute,
  KEYS,
  type LogLevel,
  SERVE_SETTINGS,
  type ServeFlags,
  type Setting,
  type SettingKey,
  type SettingValues,
} from './settings.js';
import { defaultEncoderThreads, defaultWorkers, describeWorkers } from './worker-count.js';

export { StartupError } from '../served-models/index.js';
export * from './settings.js';

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
  /** How encoder runs' sentence encoders run: threads per process, the dynamic batcher, its queue. */
  encoders: EncoderSettings;
  /**
   * A cascade run whose encoder cannot be used here is served by its fast model alone (a readiness
   * problem says so) instead of being held back (`--allow-degraded`).
   */
  allowDegraded: boolean;
  /** Prediction records, feedback and live figures (src/monitoring). */
  monitoring: MonitoringConfig;
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

/**
 * Checks the scopes of the keys from one source (`<key>:<scope>+…`; a key alone has every scope), so a
 * typo fails the start instead of widening or narrowing what a key may do.
 */
function checkScopes(entries: readonly string[], source: string): void {
  for (const entry of entries) {
    try {
      parseScopedKey(entry);
    } catch (error) {
      throw new StartupError(`serve: ${source}: ${(error as Error).message}`);
    }
  }
}

/** Keys from api_keys and api_keys_file (one per line), deduplicated; the same key twice with other scopes is refused. */
function apiKeys(settings: Map<SettingKey, Resolved>, readFile: (path: string) => string): string[] {
  const keys = keyList(settings.get('api_keys')!.value);
  checkScopes(keys, settings.get('api_keys')!.source);
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
    checkScopes(fromFile, file.source);
    keys.push(...fromFile);
  }
  const unique = [...new Set(keys)];
  const seen = new Set<string>();
  for (const entry of unique) {
    const { key } = parseScopedKey(entry);
    if (seen.has(key)) {
      throw new StartupError(
        `serve: API key ${key.slice(0, 2)}… is listed twice with different scopes; list it once, with every scope it needs (<key>:<scope>+<scope>)`,
      );
    }
    seen.add(key);
  }
  return unique;
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
    cascadeOverload: values.cascade_overload,
  };
}

/** The monitoring settings; the record store defaults to the tracking database (see open.ts). */
function monitoringConfig(
  settings: Map<SettingKey, Resolved>,
  values: SettingValues,
  trackingUri: string | null,
): MonitoringConfig {
  const storeUri = values.record_store ?? defaultRecordStoreUri(trackingUri);
  if (values.record_store !== null) {
    try {
      checkRecordStoreUri(storeUri);
    } catch (error) {
      const setting = settings.get('record_store')!;
      throw new StartupError(`serve: ${setting.source}: ${(error as Error).message}`);
    }
  }
  return {
    storeUri,
    storeDisplayUri: redactUri(storeUri),
    sampleRate: values.record_sample_rate,
    keepText: values.record_text === 'full',
    bufferSize: values.record_buffer,
    flushMs: values.record_flush_ms,
    retentionDays: values.record_retention_days,
    retentionRows: values.record_retention_rows,
    sinkUrl: values.record_sink_url,
    windowSeconds: values.monitoring_window_s,
    windowPredictions: values.monitoring_window,
    feedbackWindowSeconds: values.feedback_window_s,
    minPredictions: values.monitoring_min_predictions,
    driftThreshold: values.drift_threshold,
    intervalMs: values.monitoring_interval_ms,
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
  const workers = values.workers ?? defaultWorkers().workers;
  const common: Common = {
    host: values.host,
    port: values.port,
    workers,
    logLevel: values.log_level,
    shutdownDelayMs: values.shutdown_delay_ms,
    shutdownGraceMs: values.shutdown_grace_ms,
    http: httpOptions(settings, values, readFile),
    encoders: {
      threads: values.encoder_threads ?? defaultEncoderThreads(workers),
      maxBatch: values.encoder_max_batch,
      maxWaitMs: values.encoder_max_wait_ms,
      maxQueue: values.encoder_max_queue,
      maxQueueTokens: values.encoder_max_queue_tokens,
      maxRequestTokens: values.encoder_max_request_tokens,
      nice: values.encoder_nice,
    },
    allowDegraded: values.allow_degraded,
    monitoring: monitoringConfig(settings, values, values.model === null ? values.tracking_uri : null),
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
      allowTestLeak: values.allow_test_leak,
    },
    storeWaitMs: values.store_wait_ms,
    reloadIntervalMs: values.reload_interval_ms,
  };
}

/** A value as `--print-config` shows it: secrets masked. */
function shown({ setting, value }: Resolved, config: ServeConfig): string {
  if (value === null) {
    if (setting.key === 'workers') return `(unset: ${describeWorkers(defaultWorkers())})`;
    if (setting.key === 'encoder_threads') {
      return `(unset: ${config.encoders.threads}, the CPUs allowed shared by ${config.workers} worker${config.workers === 1 ? '' : 's'})`;
    }
    return '(unset)';
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
  const config = resolveServeConfig(flags, env, options);
  const settings = resolveSettings(flags, env, options);
  const width = Math.max(...SERVE_SETTINGS.map((s) => s.key.length));
  return `${[...settings.values()].map((r) => `${r.setting.key.padEnd(width)} = ${shown(r, config)}  # ${r.source}`).join('\n')}\n`;
}
