/**
 * `createApp(deps)`: the Fastify application with every route, built from its collaborators and never
 * listening (src/server/server.ts listens; tests use `app.inject`).
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyServerOptions, LogController } from 'fastify';
import {
  clientErrorHandler,
  createHttpMetrics,
  frameworkErrors,
  type HttpMetrics,
  type HttpOptions,
  type HttpOptionsInput,
  installApi,
  REDACTED_LOG_PATHS,
  requestIdFor,
  resolveHttpOptions,
  type TaggerApp,
} from './http/index.js';
import type { Monitoring } from './monitoring/index.js';
import type { ServingState } from './served-models/index.js';

export { createHttpMetrics, type HttpMetrics } from './http/index.js';

export interface AppDeps {
  /** What to serve: the served runs (run-based mode) or one loaded model (single-model mode). */
  serving: ServingState;
  /** A pino logger to write to; without one the app does not log (tests). */
  logger?: FastifyBaseLogger;
  /** Limits, API keys, rate limiting and load shedding (defaults: src/http/options.ts). */
  http?: HttpOptionsInput | undefined;
  /**
   * The app's Prometheus metrics; pass one (from `createHttpMetrics()`) to record reloads with
   * `metrics.recordReload(outcome)`. Without one the app makes its own.
   */
  metrics?: HttpMetrics | undefined;
  /** Extra readiness condition for /health/ready, e.g. false while the server drains before shutdown. */
  ready?: (() => boolean) | undefined;
  /** The built inspection page (/ui/); default: this package's dist/ui (`npm run build`). */
  uiDir?: string | undefined;
  /**
   * Prediction records, feedback and live figures (src/monitoring; create it with the registry of
   * `metrics` so its gauges are in /metrics). Without it predictions still carry a `prediction_id`, and
   * /feedback and /monitoring answer 404.
   */
  monitoring?: Monitoring | undefined;
}

function serverOptions(http: HttpOptions): FastifyServerOptions {
  return {
    bodyLimit: http.limits.bodyBytes,
    // Node answers a request that does not arrive in time with 408 (clientErrorHandler's envelope).
    requestTimeout: http.limits.requestTimeoutMs,
    keepAliveTimeout: 5_000,
    // One completion line per request is logged by observability.ts instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // The id comes from genReqId alone, which validates the client's X-Request-Id.
    requestIdHeader: false,
    genReqId: requestIdFor,
    clientErrorHandler,
    frameworkErrors,
  };
}

function baseApp(logger: FastifyBaseLogger | undefined, http: HttpOptions): TaggerApp {
  const options = serverOptions(http);
  if (logger) {
    // API keys never reach the log, whichever code logs a request's headers.
    options.loggerInstance = logger.child(
      {},
      { redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } },
    ) as FastifyBaseLogger;
  }
  return Fastify(options).withTypeProvider<TypeBoxTypeProvider>() as unknown as TaggerApp;
}

/**
 * Builds the app; call `await app.ready()` (or `listen`) before use.
 * @example const app = createApp({ serving: { mode: 'runs', servedRuns } }); await app.inject({ url: '/' });
 */
export function createApp(deps: AppDeps): TaggerApp {
  const http = resolveHttpOptions(deps.http);
  const app = baseApp(deps.logger, http);
  const { serving } = deps;
  installApi(app, serving.mode, () => serving, {
    options: http,
    metrics: deps.metrics ?? createHttpMetrics(),
    documentAuth: http.apiKeys.length > 0,
    ready: deps.ready,
    uiDir: deps.uiDir,
    monitoring: deps.monitoring,
  });
  return app;
}

/**
 * The OpenAPI document of the full contract (run-based mode, every endpoint of both variants, the
 * optional API-key scheme, default limits), from an app that serves nothing: it is built only to read
 * the generated document.
 */
export async function generateOpenApiDocument(): Promise<Record<string, unknown>> {
  const http = resolveHttpOptions();
  const app = baseApp(undefined, http);
  installApi(
    app,
    'runs',
    () => {
      throw new Error('app: the documentation-only app serves no requests');
    },
    { options: http, metrics: createHttpMetrics({ defaultMetrics: false }), documentAuth: true },
  );
  await app.ready();
  try {
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
  }
}
