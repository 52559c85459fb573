/**
 * Observability of the HTTP layer: request ids, Prometheus metrics (one Registry per app, so several
 * apps in one process, as in tests, never share or clash), and the Server-Timing header of predict
 * responses (every protocol's): `parse`, `queue` and `encoder` (an encoder run's wait for its embeddings,
 * in the encoder's queue and at the encoder), `model`, `record` (handing the predictions to the
 * recorder) and `total`, in milliseconds.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Prediction } from '../model/index.js';
import type { EncoderObserver, PredictionObserver } from '../served-models/index.js';
import { CascadeMetrics } from './cascade-metrics.js';
import type { ServedNow } from './served.js';
import type { TaggerApp } from './types.js';

// ---- request ids -----------------------------------------------------------------------------------

/** Visible ASCII and spaces, 1–128 characters: safe to echo in a header and to write to a log. */
const CLIENT_REQUEST_ID = /^[\x20-\x7e]{1,128}$/;

/**
 * Fastify's `genReqId`: the client's `X-Request-Id` when it is printable ASCII of at most 128
 * characters (so ids propagate across services), else a fresh UUID.
 */
export function requestIdFor(raw: IncomingMessage): string {
  const given = raw.headers['x-request-id'];
  if (typeof given === 'string') {
    const trimmed = given.trim();
    if (CLIENT_REQUEST_ID.test(trimmed)) return trimmed;
  }
  return randomUUID();
}

// ---- metrics ---------------------------------------------------------------------------------------

/** Route label of requests that matched no route: one value, so scanners cannot grow the label set. */
const UNMATCHED_ROUTE = '(unmatched)';
/**
 * Route label of the inspection page's files. Each built file is a route of its own (@fastify/static,
 * hashed names that change with every build); one label keeps the series few and stable across builds.
 */
export const UI_ROUTE = '/ui/*';

/** The route label of a route pattern: the pattern itself, but one label for all of the page's files. */
export const routeLabel = (pattern: string | undefined): string =>
  pattern === undefined
    ? UNMATCHED_ROUTE
    : pattern === '/ui' || pattern.startsWith('/ui/')
      ? UI_ROUTE
      : pattern;
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * The app's Prometheus metrics. `recordReload` is how the reload code (src/served-models, wired in
 * src/server/server.ts) reports each reload attempt; create the object with `createHttpMetrics()`, pass it to
 * `createApp({ metrics })` and hand `(outcome) => metrics.recordReload(outcome)` to the reloader.
 */
export class HttpMetrics {
  readonly registry = new Registry();
  private servedSource: (() => ServedNow | null) | undefined;
  private readonly requests: Counter<'method' | 'route' | 'status_code'>;
  private readonly duration: Histogram<'method' | 'route' | 'status_code'>;
  readonly inFlight: Gauge;
  private readonly texts: Counter<'protocol'>;
  private readonly predictions: Counter<'tag'>;
  private readonly reloads: Counter<'outcome'>;
  /** Rate-limit checks that could not reach the shared store (Redis) and let the request through. */
  readonly rateLimitStoreErrors: Counter;
  private encoderSource: (() => { queued: number; open: number }) | undefined;
  private readonly encoderBatchTexts: Histogram;
  private readonly encoderBatchSeconds: Histogram;
  private readonly encoderShed: Counter;
  /** Cascade runs' texts by stage, degraded requests, stage times (./cascade-metrics.ts). */
  readonly cascade = new CascadeMetrics(this.registry, () => {
    const now = this.servedSource?.();
    return now ? now.served.degraded !== undefined : null;
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'tagger_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status_code'],
      registers,
    });
    this.duration = new Histogram({
      name: 'tagger_http_request_duration_seconds',
      help: 'Time from receiving a request to finishing its response, by method, route pattern and status',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.inFlight = new Gauge({
      name: 'tagger_http_requests_in_flight',
      help: 'Requests being handled now (health checks and /metrics not counted)',
      registers,
    });
    this.texts = new Counter({
      name: 'tagger_texts_predicted_total',
      help: 'Texts tagged, by the protocol they came in by: tagger (POST /predict, /runs/{run_id}/predict), oip (the Open Inference Protocol, /v2/models/{name}/infer), hf (the Hugging Face shape, /hf/text-classification)',
      labelNames: ['protocol'],
      registers,
    });
    // Every protocol's series from the start, so a rate over one is defined before its first request.
    for (const protocol of ['tagger', 'oip', 'hf']) this.texts.inc({ protocol }, 0);
    this.predictions = new Counter({
      name: 'tagger_predictions_total',
      help: 'Predictions by predicted tag (tags come from the served models, a bounded set)',
      labelNames: ['tag'],
      registers,
    });
    const served = () => this.servedSource?.() ?? null;
    new Gauge({
      name: 'tagger_served_run_info',
      help: 'The run that answers /predict now (value 1; absent in single-model mode)',
      labelNames: ['run_id'],
      registers,
      // Across workers: 1 for every run some worker serves, not the number of workers serving it.
      aggregator: 'max',
      collect() {
        // Read at scrape time, so a reloaded run replaces the old series instead of adding one.
        this.reset();
        const now = served();
        if (now?.runId) this.set({ run_id: now.runId }, 1);
      },
    });
    new Gauge({
      name: 'tagger_runs_held_back',
      help: 'Runs ranked above the served run that are not served, by why: the promotion gates, or artifacts that cannot be loaded (at the last load or reload)',
      labelNames: ['kind'],
      registers,
      aggregator: 'max',
      collect() {
        this.reset();
        const problems = served()?.problems;
        if (!problems) return;
        this.set({ kind: 'gates' }, problems.heldBack.filter((held) => held.kind === 'gates').length);
        this.set(
          { kind: 'unloadable' },
          problems.heldBack.filter((held) => held.kind === 'unloadable').length,
        );
      },
    });
    new Gauge({
      name: 'tagger_tracking_store_readable',
      help: 'Whether the last load or reload could read the tracking store (1) or not (0; the runs loaded before keep serving); absent in single-model mode',
      registers,
      // Across workers: 0 when any worker could not read it.
      aggregator: 'min',
      collect() {
        this.reset();
        const problems = served()?.problems;
        if (problems) this.set(problems.store === null ? 1 : 0);
      },
    });
    new Gauge({
      name: 'tagger_served_run_f1',
      help: "The served run's f1 (the served model's overall test f1 in single-model mode)",
      registers,
      aggregator: 'max',
      collect() {
        this.reset();
        const f1 = served()?.f1;
        if (typeof f1 === 'number') this.set(f1);
      },
    });
    this.reloads = new Counter({
      name: 'tagger_reloads_total',
      help: "Reloads of the experiment's runs, by outcome (unchanged, updated, swapped, failed)",
      labelNames: ['outcome'],
      registers,
    });
    this.rateLimitStoreErrors = new Counter({
      name: 'tagger_rate_limit_store_errors_total',
      help: 'Requests let through without a rate-limit check because the shared store (Redis) failed (fail open)',
      registers,
    });
    const encoders = () => this.encoderSource?.() ?? null;
    new Gauge({
      name: 'tagger_encoder_queue_texts',
      help: 'Texts waiting for a sentence encoder (encoder runs; their requests are shed with 503 beyond TAGGER_ENCODER_MAX_QUEUE)',
      registers,
      aggregator: 'sum',
      collect() {
        this.reset();
        const now = encoders();
        if (now) this.set(now.queued);
      },
    });
    new Gauge({
      name: 'tagger_encoders_open',
      help: 'Sentence encoders loaded (one thread each; models that name the same encoder share it)',
      registers,
      aggregator: 'sum',
      collect() {
        this.reset();
        const now = encoders();
        if (now) this.set(now.open);
      },
    });
    this.encoderBatchTexts = new Histogram({
      name: 'tagger_encoder_batch_texts',
      help: 'Texts per batch sent to a sentence encoder (the dynamic batcher joins concurrent requests)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registers,
    });
    this.encoderBatchSeconds = new Histogram({
      name: 'tagger_encoder_batch_seconds',
      help: 'Time a sentence encoder took for one batch (tokenizing, the forward passes, pooling)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.encoderShed = new Counter({
      name: 'tagger_encoder_shed_requests_total',
      help: 'Requests whose texts a sentence encoder refused (its queue full: 503; the request over its work limit: 413); a cascade run answers them with its fast model (tagger_cascade_degraded_requests_total) unless TAGGER_CASCADE_OVERLOAD=shed',
      registers,
    });
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Where the encoder gauges read from (src/server wires the served runs' encoder pool). */
  trackEncoders(source: () => { queued: number; open: number }): void {
    this.encoderSource = source;
  }

  /** What the encoder pool reports to, for the encoder metrics. */
  encoderObserver(): EncoderObserver {
    return {
      batch: (texts, seconds) => {
        this.encoderBatchTexts.observe(texts);
        this.encoderBatchSeconds.observe(seconds);
      },
      shed: () => this.encoderShed.inc(),
    };
  }

  private expositionSource: (() => Promise<string>) | undefined;

  /**
   * Replaces what /metrics serves: in `--workers` mode the whole process group's metrics, aggregated
   * by the primary (src/server/cluster-metrics.ts), instead of this process's own.
   */
  serveExpositionFrom(source: () => Promise<string>): void {
    this.expositionSource = source;
  }

  /** The Prometheus text /metrics answers with. */
  exposition(): Promise<string> {
    return this.expositionSource?.() ?? this.registry.metrics();
  }

  /** Where the served-run gauges read from (installed by installApi). */
  trackServed(source: () => ServedNow | null): void {
    this.servedSource = source;
  }

  /**
   * Counts one reload attempt by its outcome: the service layer's `ReloadOutcome` (`unchanged`,
   * `updated`, `swapped`, `failed`), a fixed vocabulary, so the label set stays bounded.
   */
  recordReload(outcome: string): void {
    this.reloads.inc({ outcome });
  }

  recordPredictions(predictions: readonly Pick<Prediction, 'predicted_tag'>[], protocol: string): void {
    this.texts.inc({ protocol }, predictions.length);
    const counts = new Map<string, number>();
    for (const { predicted_tag: tag } of predictions) counts.set(tag, (counts.get(tag) ?? 0) + 1);
    for (const [tag, count] of counts) this.predictions.inc({ tag }, count);
  }

  observeResponse(request: FastifyRequest, reply: FastifyReply): void {
    const labels = {
      method: KNOWN_METHODS.has(request.method) ? request.method : 'OTHER',
      // The route pattern (`/runs/:run_id`), never the raw URL: ids in URLs would make one series each.
      route: routeLabel(request.routeOptions.url),
      status_code: String(reply.statusCode),
    };
    this.requests.inc(labels);
    this.duration.observe(labels, reply.elapsedTime / 1000);
  }
}

export const createHttpMetrics = (options?: { defaultMetrics?: boolean }): HttpMetrics =>
  new HttpMetrics(options);

// ---- per-request trace (Server-Timing, prediction counts) -------------------------------------------

interface RequestTrace {
  metrics: HttpMetrics;
  parseStart?: bigint;
  parseEnd?: bigint;
  /** The model's own work (the Predictor's observer). */
  modelNs: bigint;
  predicted: boolean;
  /** An encoder run's wait for its embeddings, in the encoder's queue and at the encoder, when there was one. */
  queueNs?: bigint;
  encoderNs?: bigint;
  /** Handing the predictions to the recorder, when the app records. */
  recordNs?: bigint;
}

const traces = new WeakMap<FastifyRequest, RequestTrace>();

const ms = (ns: bigint): string => (Number(ns) / 1e6).toFixed(3);

/**
 * What the Predictor tells of a request's call (src/served-models/predictor.ts), gathered for its
 * Server-Timing and the app's cascade metrics; an encoder that failed under a cascade is logged.
 */
export function observerFor(request: FastifyRequest): PredictionObserver {
  const trace = traces.get(request);
  const cascade = trace?.metrics.cascade;
  return {
    model: (ns) => {
      if (trace) trace.modelNs += ns;
    },
    embeddings: (queueNs, encoderNs) => {
      if (!trace) return;
      trace.queueNs = (trace.queueNs ?? 0n) + queueNs;
      trace.encoderNs = (trace.encoderNs ?? 0n) + encoderNs;
    },
    cascadeStage: (stage, seconds) => cascade?.observeStage(stage, seconds),
    cascadeTexts: (fast, encoder, degraded) => cascade?.recordTexts(fast, encoder, degraded),
    cascadeDegraded: (why, error) => {
      cascade?.recordDegraded(why);
      if (why === 'encoder_failed') {
        request.log.warn({ err: error }, "encoder failed; a cascade's unsure texts get its fast answers");
      }
    },
  };
}

/** Runs `record` (handing predictions to the recorder), timed as Server-Timing's `record`. */
export function timeRecord(request: FastifyRequest, record: () => void): void {
  const trace = traces.get(request);
  const start = process.hrtime.bigint();
  record();
  if (trace) trace.recordNs = (trace.recordNs ?? 0n) + (process.hrtime.bigint() - start);
}

/**
 * Counts a request's predictions in the app's metrics, by the protocol it came in by, and marks the
 * request as predicted (its Server-Timing then lists the model's time). Requests the hooks did not see
 * (none in practice) are not counted.
 */
export function countPredictions(
  request: FastifyRequest,
  predictions: readonly Pick<Prediction, 'predicted_tag'>[],
  protocol: string,
): void {
  const trace = traces.get(request);
  if (!trace) return;
  trace.predicted = true;
  trace.metrics.recordPredictions(predictions, protocol);
}

/** Routes whose responses carry Server-Timing: every way of asking for predictions. */
const TIMED_ROUTES = new Set([
  '/predict',
  '/runs/:run_id/predict',
  '/v2/models/:name/infer',
  '/v2/models/:name/versions/:version/infer',
  '/hf/text-classification',
]);

/**
 * Request ids on every response, metrics and the request log (RequestLogSummary), Server-Timing on
 * predict responses. The hooks are named so a CPU profile attributes them (bench/profile.ts).
 * Callback-style hooks: on the hot path they save a promise per hook per request over async
 * ones (measured: the hooks of this file were ~5% of a single-text /predict).
 */
export function installObservability(
  app: TaggerApp,
  metrics: HttpMetrics,
  /** True while a planned shutdown is under way (the server drains or closes). */
  shuttingDown: () => boolean = () => false,
): void {
  app.addHook('onRequest', function startTrace(request, _reply, done) {
    traces.set(request, { metrics, modelNs: 0n, predicted: false });
    // Fastify's own request logging is off (two lines per request cost ~40% of /predict throughput);
    // this line is kept for debugging, the completion line below is the per-request record.
    request.log.debug({ req: request }, 'incoming request');
    done();
  });
  app.addHook('preParsing', function timeParseStart(request, _reply, payload, done) {
    const trace = traces.get(request);
    if (trace) trace.parseStart = process.hrtime.bigint();
    done(null, payload);
  });
  app.addHook('preValidation', function timeParseEnd(request, _reply, done) {
    const trace = traces.get(request);
    if (trace?.parseStart !== undefined) trace.parseEnd = process.hrtime.bigint();
    done();
  });
  app.addHook('onSend', function responseHeaders(request, reply, payload, done) {
    reply.header('x-request-id', request.id);
    const trace = traces.get(request);
    if (trace && TIMED_ROUTES.has(request.routeOptions.url ?? '')) {
      const parts: string[] = [];
      if (trace.parseStart !== undefined && trace.parseEnd !== undefined)
        parts.push(`parse;dur=${ms(trace.parseEnd - trace.parseStart)}`);
      if (trace.queueNs !== undefined) parts.push(`queue;dur=${ms(trace.queueNs)}`);
      if (trace.encoderNs !== undefined) parts.push(`encoder;dur=${ms(trace.encoderNs)}`);
      if (trace.predicted) parts.push(`model;dur=${ms(trace.modelNs)}`);
      if (trace.recordNs !== undefined) parts.push(`record;dur=${ms(trace.recordNs)}`);
      parts.push(`total;dur=${reply.elapsedTime.toFixed(3)}`);
      reply.header('server-timing', parts.join(', '));
    }
    done(null, payload);
  });
  const summary = new RequestLogSummary(app.log, shuttingDown);
  app.addHook('onClose', (_app, done) => {
    summary.close();
    done();
  });
  app.addHook('onResponse', function recordResponse(request, reply, done) {
    metrics.observeResponse(request, reply);
    summary.completed(request, reply);
    done();
  });
}

// ---- request log -----------------------------------------------------------------------------------

/** A response slower than this is always logged on its own line. */
export const SLOW_REQUEST_MS = 1_000;
/** How often the summary of the requests not logged one by one is written. */
export const REQUEST_SUMMARY_EVERY_MS = 10_000;

/**
 * The request log at a volume that survives load. At `debug` and below every response gets its line
 * (`request completed`). At `info` and above — the default — a line per request wrote hundreds of MB per
 * minute under load (a 5-minute soak at 12k req/s produced 703 MB), so only server errors (5xx, level
 * error) and slow responses (≥ SLOW_REQUEST_MS, level warn) get their own line with the request id,
 * method and URL; the rest are counted by status and written as one `requests completed` line per
 * REQUEST_SUMMARY_EVERY_MS (nothing when there were none), with the slowest time of the window. A 503
 * during a planned shutdown (readiness saying "not ready" so load balancers move away, or a request
 * arriving as the server closes) is what the shutdown is meant to do: it gets an `info` line, not an
 * error.
 */
class RequestLogSummary {
  private readonly everyRequest: boolean;
  private readonly byStatus = new Map<number, number>();
  private count = 0;
  private slowestMs = 0;
  private windowStart = Date.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly log: TaggerApp['log'],
    private readonly shuttingDown: () => boolean,
  ) {
    this.everyRequest = log.level === 'debug' || log.level === 'trace';
    this.timer = setInterval(() => this.flush(), REQUEST_SUMMARY_EVERY_MS);
    this.timer.unref();
  }

  completed(request: FastifyRequest, reply: FastifyReply): void {
    const ms = reply.elapsedTime;
    const status = reply.statusCode;
    if (this.everyRequest) {
      request.log.info({ res: reply, responseTime: ms }, 'request completed');
      return;
    }
    if (status >= 500) {
      const fields = { method: request.method, url: request.url, res: reply, responseTime: ms };
      if (status === 503 && this.shuttingDown()) {
        request.log.info(fields, 'answered 503 while shutting down, as planned');
        return;
      }
      request.log.error(fields, 'request completed with a server error');
      return;
    }
    if (ms >= SLOW_REQUEST_MS) {
      request.log.warn(
        { method: request.method, url: request.url, res: reply, responseTime: ms },
        'slow request completed',
      );
      return;
    }
    this.count++;
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    if (ms > this.slowestMs) this.slowestMs = ms;
  }

  flush(): void {
    const now = Date.now();
    if (this.count > 0) {
      this.log.info(
        {
          requests: this.count,
          byStatus: Object.fromEntries(this.byStatus),
          slowestMs: Number(this.slowestMs.toFixed(3)),
          windowMs: now - this.windowStart,
        },
        'requests completed',
      );
    }
    this.count = 0;
    this.slowestMs = 0;
    this.byStatus.clear();
    this.windowStart = now;
  }

  close(): void {
    clearInterval(this.timer);
    this.flush();
  }
}
