/** Public surface of src/http: installs the whole API (validation, errors, protection, routes, docs). */
import type { RouteOptions } from 'fastify';
import type { Monitoring } from '../monitoring/index.js';
import type { ServingState } from '../served-models/index.js';
import { registerDocsRoutes, registerOpenApi } from './docs.js';
import { installErrorHandling } from './errors.js';
import { HttpError } from './http-error.js';
import { installJsonBodyParser } from './json-body.js';
import { monitoredRun } from './monitored.js';
import { type HttpMetrics, installObservability } from './observability.js';
import type { HttpOptions } from './options.js';
import { protectionPlugin, routeClass } from './protection.js';
import { isProtocolPath, protocolErrorResponses } from './protocol-errors.js';
import { errorResponses } from './responses.js';
import { generalRoutes } from './routes/general.js';
import { huggingFaceRoutes } from './routes/hugging-face.js';
import { inspectionRoutes } from './routes/inspection.js';
import { modelRoutes } from './routes/model.js';
import { monitoringRoutes } from './routes/monitoring.js';
import { openInferenceRoutes } from './routes/open-inference.js';
import { operationsRoutes } from './routes/operations.js';
import { reviewRoutes } from './routes/review.js';
import { runRoutes } from './routes/runs.js';
import { servedNow, takesTraffic } from './served.js';
import type { TaggerApp } from './types.js';
import { registerUiRoutes } from './ui.js';
import { validatorCompiler } from './validation.js';

export { parseApiKeys } from './auth.js';
export { API_TITLE, API_VERSION } from './docs.js';
export { clientErrorHandler, frameworkErrors, HttpError } from './errors.js';
export { createHttpMetrics, HttpMetrics, requestIdFor } from './observability.js';
export {
  CASCADE_OVERLOADS,
  type CascadeOverload,
  HTTP_DEFAULTS,
  type HttpLimits,
  type HttpOptions,
  type HttpOptionsInput,
  type RateLimitOptions,
  resolveHttpOptions,
} from './options.js';
export { REDACTED_LOG_PATHS } from './protection.js';
export type { TaggerApp } from './types.js';
export { DEFAULT_UI_DIR } from './ui.js';

export interface ApiSetup {
  options: HttpOptions;
  metrics: HttpMetrics;
  /** Document the API-key security scheme (true when keys are configured, and in the committed doc). */
  documentAuth: boolean;
  /** Extra readiness condition for /health/ready (false while the server drains). */
  ready?: (() => boolean) | undefined;
  /** Where the built inspection page is (default: this package's dist/ui). */
  uiDir?: string | undefined;
  /** Prediction records, feedback and live figures (src/monitoring); without it /feedback and /monitoring answer 404. */
  monitoring?: Monitoring | null | undefined;
}

/**
 * Routes whose handlers may wait on the tracking store (a non-best run's model or performance report
 * is loaded on first use). Only they get the handler deadline: every other handler computes from memory
 * synchronously, where a timer could not interrupt it anyway, and racing each request against a timer
 * cost ~2% of single-text /predict.
 */
const STORE_ROUTES = new Set([
  '/feedback',
  '/monitoring',
  '/review',
  '/review/label-issues',
  '/runs/:run_id',
  '/runs/:run_id/predict',
  '/runs/:run_id/history',
  '/runs/:run_id/errors',
  // A run id names that run's model in the Open Inference Protocol (loaded on first use).
  '/v2/models/:name',
  '/v2/models/:name/ready',
  '/v2/models/:name/infer',
  '/v2/models/:name/versions/:version',
  '/v2/models/:name/versions/:version/ready',
  '/v2/models/:name/versions/:version/infer',
]);

/** Security requirement of protected operations: either header works. */
const SECURITY = [{ bearerAuth: [] }, { apiKeyHeader: [] }];

/**
 * Completes each API route from its class (see protection.ts): the refusals the protection hooks and the
 * deadline can answer are documented on every route they apply to, with the security requirement, so
 * the OpenAPI document lists every status a route can return. API handlers also get the deadline.
 */
function completeRoute(route: RouteOptions, setup: ApiSetup): void {
  const kind = routeClass(route.url);
  const schema = route.schema as { response?: Record<string, unknown>; security?: unknown } | undefined;
  if (schema !== undefined) {
    if (kind === 'health') {
      if (setup.documentAuth) schema.security = [];
    } else {
      const auth = setup.documentAuth ? ([401, 403] as const) : ([] as const);
      // The router answers a path parameter over maxParamLength (100) with 414 and a malformed
      // percent-encoding with 400, before any hook (frameworkErrors in errors.ts).
      const long = route.url.includes(':') ? ([400, 414] as const) : ([] as const);
      const extra = kind === 'api' ? [...auth, ...long, 429, 503, 504] : [...auth];
      // The protocols beside the contract's API answer errors in their own shape (protocol-errors.ts).
      const errors = isProtocolPath(route.url) ? protocolErrorResponses(...extra) : errorResponses(...extra);
      schema.response = { ...errors, ...schema.response };
      if (setup.documentAuth) schema.security = SECURITY;
    }
  }
  const timeoutMs = setup.options.limits.requestTimeoutMs;
  if (STORE_ROUTES.has(route.url) && timeoutMs > 0) {
    const handler = route.handler;
    route.handler = async function withDeadline(request, reply) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new HttpError(
                504,
                `the request did not finish within ${timeoutMs} ms (TAGGER_REQUEST_TIMEOUT_MS); retry later`,
                { 'retry-after': String(setup.options.retryAfterSeconds) },
              ),
            ),
          timeoutMs,
        );
      });
      const work = Promise.resolve(handler.call(this, request, reply));
      // After the deadline answered, a late failure has no one to go to (it is already logged by then
      // if unexpected); swallow it so it is not an unhandled rejection.
      work.catch(() => undefined);
      try {
        return await Promise.race([work, deadline]);
      } finally {
        clearTimeout(timer);
      }
    };
  }
}

/**
 * Installs the API on a fresh app. `mode` decides which routes exist (single-model mode has no /runs);
 * `current` is asked for the serving state on every request, so an app can also be built just to
 * generate the OpenAPI document (scripts/openapi.ts), where nothing is served.
 * @example installApi(app, 'runs', () => serving, { options: resolveHttpOptions(), metrics, documentAuth: false })
 */
export function installApi(
  app: TaggerApp,
  mode: ServingState['mode'],
  current: () => ServingState,
  setup: ApiSetup,
): void {
  const { options, metrics } = setup;
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.setValidatorCompiler(validatorCompiler);
  installJsonBodyParser(app, options.limits);
  installErrorHandling(app, options.limits, options.retryAfterSeconds);
  installObservability(app, metrics, () => {
    if (closing || setup.ready?.() === false) return true;
    try {
      return !takesTraffic(current());
    } catch {
      return false;
    }
  });
  metrics.trackServed(() => {
    try {
      return servedNow(current());
    } catch {
      return null;
    }
  });
  // Decorated on the root, so every route's instance (and predict()) reaches it as request.server.
  app.decorate('taggerMonitoring', setup.monitoring ?? null);
  setup.monitoring?.watch(() => {
    try {
      return monitoredRun(current());
    } catch {
      return null;
    }
  });
  registerOpenApi(app, setup.documentAuth);
  app.register(protectionPlugin(options, metrics));
  app.register(async (api: TaggerApp) => {
    api.addHook('onRoute', (route) => completeRoute(route, setup));
    generalRoutes(api, current, options);
    if (mode === 'runs') {
      const servedRuns = () => {
        const state = current();
        if (state.mode !== 'runs')
          throw new Error('http: run routes installed but the app serves a single model');
        return state.servedRuns;
      };
      runRoutes(api, servedRuns, options);
      inspectionRoutes(api, servedRuns);
    }
    modelRoutes(api, () => servedNow(current()).served);
    const readiness = { ready: setup.ready, closing: () => closing };
    operationsRoutes(api, current, metrics, readiness);
    // The protocols clients already speak, beside the contract's (issue 41): docs/calling.md.
    openInferenceRoutes(api, current, options, readiness);
    huggingFaceRoutes(api, current, options);
    monitoringRoutes(api, current, options.limits, options.retryAfterSeconds);
    reviewRoutes(api, current, options.limits, options.retryAfterSeconds, mode);
  });
  registerDocsRoutes(app);
  registerUiRoutes(app, setup.uiDir);
}
