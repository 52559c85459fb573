/**
 * The settings table of `tagger serve`, 12-factor style: every setting is described once in SETTINGS
 * (its flag, environment variable, config-file key, TypeBox schema with range and default, whether it
 * is a secret, its help), and everything else is derived from it: the one JSON Schema that Ajv validates
 * every value with (./config.ts), the flags and `--help` (src/cli/), `--print-config`, and
 * docs/configuration.md (scripts/config-table.ts; a test fails when it is stale).
 *
 * The host defaults to loopback because the API has no authentication by default; set `0.0.0.0` (e.g.
 * in a container) to accept connections from other machines.
 */
import Type, { type Static, type TSchema } from 'typebox';
import { CASCADE_OVERLOADS, type CascadeOverload, HTTP_DEFAULTS } from '../http/options.js';
import { MONITORING_DEFAULTS } from '../monitoring/defaults.js';
import { DEFAULT_ENCODER_SETTINGS, DEFAULT_GATES } from '../served-models/index.js';
import { DEFAULT_TRACKING_URI } from '../tracking/index.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

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
  /**
   * What `--help` shows after the flag, e.g. `<ms>`; `[bool]` for a switch, whose value may be left out
   * (`--allow-degraded` alone is `--allow-degraded true`).
   */
  arg: `<${string}>` | '[bool]';
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
  encoder_threads: row({
    flag: '--encoder-threads',
    arg: '<n>',
    env: 'TAGGER_ENCODER_THREADS',
    schema: integer(
      1,
      MAX_WORKERS,
      "encoder runs: ONNX Runtime threads of the sentence encoder in each serving process (default: the CPUs the container's quota allows, divided by the worker count, at least 1)",
    ),
    default: null,
    what: 'a number of threads',
  }),
  encoder_max_batch: row({
    flag: '--encoder-max-batch',
    arg: '<texts>',
    env: 'TAGGER_ENCODER_MAX_BATCH',
    schema: integer(
      1,
      4_096,
      "encoder runs: most texts the dynamic batcher sends to the encoder at once (concurrent requests' texts together, sorted by length inside)",
    ),
    default: DEFAULT_ENCODER_SETTINGS.maxBatch,
    what: 'a number of texts',
  }),
  encoder_max_wait_ms: row({
    flag: '--encoder-max-wait',
    arg: '<ms>',
    env: 'TAGGER_ENCODER_MAX_WAIT_MS',
    schema: integer(
      0,
      10_000,
      'encoder runs: how long a text reaching an idle encoder waits for others to batch with (0: none; texts that arrive while the encoder works always wait for it)',
    ),
    default: DEFAULT_ENCODER_SETTINGS.maxWaitMs,
    what: 'a delay in milliseconds',
  }),
  encoder_max_queue: row({
    flag: '--encoder-max-queue',
    arg: '<texts>',
    env: 'TAGGER_ENCODER_MAX_QUEUE',
    schema: integer(
      0,
      10_000_000,
      'encoder runs: most texts waiting for the encoder; a request that would exceed it is shed with 503 + Retry-After (a request larger than the bound is taken only when nothing waits, and then waits alone; 0: no bound)',
    ),
    default: DEFAULT_ENCODER_SETTINGS.maxQueue,
    what: 'a number of texts (0: no bound)',
  }),
  encoder_max_queue_tokens: row({
    flag: '--encoder-max-queue-tokens',
    arg: '<tokens>',
    env: 'TAGGER_ENCODER_MAX_QUEUE_TOKENS',
    schema: integer(
      0,
      100_000_000,
      "encoder runs: most work waiting for the encoder, in estimated tokens (a text costs its tokens, at most the encoder's 256); a request that would exceed it is shed with 503 + Retry-After (a request larger than the bound is taken only when nothing waits, and then waits alone; 0: no bound)",
    ),
    default: DEFAULT_ENCODER_SETTINGS.maxQueueTokens ?? 0,
    what: 'a number of tokens (0: no bound)',
  }),
  encoder_max_request_tokens: row({
    flag: '--encoder-max-request-tokens',
    arg: '<tokens>',
    env: 'TAGGER_ENCODER_MAX_REQUEST_TOKENS',
    schema: integer(
      0,
      100_000_000,
      'encoder runs: most work one request may ask of the encoder, in estimated tokens; a larger request is refused with 413 (0: no bound)',
    ),
    default: DEFAULT_ENCODER_SETTINGS.maxRequestTokens ?? 0,
    what: 'a number of tokens (0: no bound)',
  }),
  encoder_nice: row({
    flag: '--encoder-nice',
    arg: '<n>',
    env: 'TAGGER_ENCODER_NICE',
    schema: integer(
      0,
      19,
      'encoder runs: Linux nice value of the encoder threads (0: the event loop’s priority; higher: the event loop — probes, /metrics, TF-IDF requests — gets the CPU first while the encoder is saturated, at the cost of the encoder’s share when the host is shared)',
    ),
    default: DEFAULT_ENCODER_SETTINGS.nice,
    what: 'a nice value from 0 to 19',
  }),
  cascade_overload: row({
    flag: '--cascade-overload',
    arg: '<degrade|shed>',
    env: 'TAGGER_CASCADE_OVERLOAD',
    schema: Type.Enum(CASCADE_OVERLOADS, {
      description:
        "cascade runs: what a text the fast model is unsure of gets when the encoder cannot take it (its queue full, the request over TAGGER_ENCODER_MAX_REQUEST_TOKENS, its thread failed): degrade — the fast model's answer, marked `stage: fast_degraded`; shed — the request is refused as an encoder run's is (503 + Retry-After, or 413)",
    }),
    default: HTTP_DEFAULTS.cascadeOverload as CascadeOverload,
    http: true,
  }),
  allow_degraded: row({
    flag: '--allow-degraded',
    arg: '[bool]',
    env: 'TAGGER_ALLOW_DEGRADED',
    schema: Type.Boolean({
      description:
        'cascade runs whose sentence encoder cannot be used on this server (missing or different files) are served by their fast model alone — the texts it is unsure of answered `stage: fast_degraded`, a problem in /health/ready — instead of being held back',
    }),
    default: false,
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
    arg: '[bool]',
    env: 'TAGGER_ALLOW_INCOMPARABLE',
    schema: Type.Boolean({
      description:
        "promotion gate off: serve the best f1 even when it was measured on another test set than the experiment's first finished run (tagger predict and evaluate read it too)",
    }),
    default: SERVE_DEFAULTS.gates.allowIncomparable,
  }),
  allow_test_leak: row({
    flag: '--allow-test-leak',
    arg: '[bool]',
    env: 'TAGGER_ALLOW_TEST_LEAK',
    schema: Type.Boolean({
      description:
        'promotion gate off: serve runs whose test rows repeat training rows (data check test_leak), whose f1 overstates them (tagger predict and evaluate read it too)',
    }),
    default: SERVE_DEFAULTS.gates.allowTestLeak,
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
        'API keys, comma-separated (a list in the file), each `<key>` (every scope) or `<key>:<scope>[+<scope>…]` with scopes predict, feedback, review, read, metrics, admin (docs/api.md#api-keys); any key turns authentication on. A flag shows in `ps`: prefer the file or the variable',
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
    schema: text(
      'file with one API key per line, `<key>` or `<key>:<scope>[+<scope>…]` (# comments); a file without keys refuses to start',
    ),
    default: null,
    http: true,
  }),
  protect_docs: row({
    flag: '--protect-docs',
    arg: '[bool]',
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
  record_store: row({
    flag: '--record-store',
    arg: '<uri>',
    env: 'TAGGER_RECORD_STORE',
    schema: text(
      'where prediction records and feedback are kept, shared by every replica that reads it: sqlite:///file.db, postgresql://… or memory: (this process only); default: the tracking database when it is SQLite or PostgreSQL, else sqlite:///tagger-records.db in the working directory',
      '^\\S+$',
    ),
    default: null,
    what: 'sqlite:///path.db, postgresql://… or memory:',
    secret: 'url-password',
  }),
  record_sample_rate: row({
    flag: '--record-sample-rate',
    arg: '<rate>',
    env: 'TAGGER_RECORD_SAMPLE_RATE',
    schema: fraction('share of predictions recorded, 0 to 1 (0: none; feedback then finds nothing to label)'),
    default: MONITORING_DEFAULTS.sampleRate,
    what: 'a share of predictions',
  }),
  record_text: row({
    flag: '--record-text',
    arg: '<full|hash>',
    env: 'TAGGER_RECORD_TEXT',
    schema: Type.Enum(['full', 'hash'], {
      description:
        'full: records keep the text as sent (feedback export needs it); hash: only its SHA-256 and length',
    }),
    default: 'full' as 'full' | 'hash',
  }),
  record_retention_days: row({
    flag: '--record-retention',
    arg: '<days>',
    env: 'TAGGER_RECORD_RETENTION_DAYS',
    schema: integer(1, 36_500, 'prediction records (and their feedback) older than this are deleted'),
    default: MONITORING_DEFAULTS.retentionDays,
    what: 'a number of days',
  }),
  record_retention_rows: row({
    flag: '--record-retention-rows',
    arg: '<n>',
    env: 'TAGGER_RECORD_RETENTION_ROWS',
    schema: integer(
      0,
      1_000_000_000,
      'most prediction records kept in the store (all scopes), the oldest deleted first with their feedback, checked every 5 minutes; a record takes ~480 bytes on SQLite with texts of ~140 characters (docs/monitoring.md); 0: no bound but the age',
    ),
    default: MONITORING_DEFAULTS.retentionRows,
    what: 'a number of records',
  }),
  record_buffer: row({
    flag: '--record-buffer',
    arg: '<n>',
    env: 'TAGGER_RECORD_BUFFER',
    schema: integer(
      100,
      10_000_000,
      'most records waiting to be written, per sink; beyond it records are dropped and counted (tagger_prediction_records_dropped_total)',
    ),
    default: MONITORING_DEFAULTS.bufferSize,
    what: 'a number of records',
  }),
  record_flush_ms: row({
    flag: '--record-flush',
    arg: '<ms>',
    env: 'TAGGER_RECORD_FLUSH_MS',
    schema: integer(
      10,
      600_000,
      'records are written in batches at least this often (and whenever 128 wait)',
    ),
    default: MONITORING_DEFAULTS.flushMs,
    what: 'an interval in milliseconds',
  }),
  record_sink_url: row({
    flag: '--record-sink',
    arg: '<url>',
    env: 'TAGGER_RECORD_SINK_URL',
    schema: text(
      "also send every record as CloudEvents over HTTP in KServe's inference-logger format (request and response events) to this URL",
      '^https?://\\S+$',
    ),
    default: null,
    what: 'an http:// or https:// URL',
    secret: 'url-password',
  }),
  monitoring_window: row({
    flag: '--monitoring-window',
    arg: '<n>',
    env: 'TAGGER_MONITORING_WINDOW',
    schema: integer(1, 10_000_000, 'live figures count at most this many of the most recent predictions'),
    default: MONITORING_DEFAULTS.windowPredictions,
    what: 'a number of predictions',
  }),
  monitoring_window_s: row({
    flag: '--monitoring-window-seconds',
    arg: '<s>',
    env: 'TAGGER_MONITORING_WINDOW_S',
    schema: integer(1, 31_536_000, 'live figures count no prediction older than this'),
    default: MONITORING_DEFAULTS.windowSeconds,
    what: 'seconds',
  }),
  feedback_window_s: row({
    flag: '--feedback-window-seconds',
    arg: '<s>',
    env: 'TAGGER_FEEDBACK_WINDOW_S',
    schema: integer(
      1,
      31_536_000,
      'live precision, recall and f1 come from the feedback received within this',
    ),
    default: MONITORING_DEFAULTS.feedbackWindowSeconds,
    what: 'seconds',
  }),
  monitoring_min_predictions: row({
    flag: '--monitoring-min-predictions',
    arg: '<n>',
    env: 'TAGGER_MONITORING_MIN_PREDICTIONS',
    schema: integer(1, 10_000_000, 'drift is judged once the window holds this many predictions'),
    default: MONITORING_DEFAULTS.minPredictions,
    what: 'a number of predictions',
  }),
  drift_threshold: row({
    flag: '--drift-threshold',
    arg: '<psi>',
    env: 'TAGGER_DRIFT_THRESHOLD',
    schema: Type.Number({
      minimum: 0.001,
      maximum: 10,
      description:
        'population stability index at which a signal counts as drifted (when also significant at p < 0.01); 0.1: some shift, 0.25: a large one',
    }),
    default: MONITORING_DEFAULTS.driftThreshold,
    what: 'a PSI',
  }),
  monitoring_interval_ms: row({
    flag: '--monitoring-interval',
    arg: '<ms>',
    env: 'TAGGER_MONITORING_INTERVAL_MS',
    schema: integer(100, 3_600_000, 'live figures (GET /monitoring, the gauges) are recomputed this often'),
    default: MONITORING_DEFAULTS.intervalMs,
    what: 'an interval in milliseconds',
  }),
};

type Table = typeof SETTINGS;
export type SettingKey = keyof Table;
/** The effective value of every setting (null: unset). */
export type SettingValues = { [K in SettingKey]: Static<Table[K]['schema']> | Table[K]['default'] };

export const KEYS = Object.keys(SETTINGS) as SettingKey[];

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

export const byKey = (key: SettingKey): Setting => SERVE_SETTINGS[KEYS.indexOf(key)]!;

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
