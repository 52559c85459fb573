/**
 * Access control and overload protection, as onRequest hooks that run in this order (cheapest refusal
 * first, before any body is read):
 *   1. load shedding: too many requests in flight, or the event loop lagging → 503 + Retry-After;
 *   2. rate limiting per client (the API key when a valid one is sent, else the address) → 429 + Retry-After,
 *      counted per process or, with a Redis URL, across every worker and replica (fail open when Redis fails);
 *   3. API-key check → 401 (no key, with WWW-Authenticate) or 403 (wrong key, or a key without the scope
 *      the route needs: `requiredScope`).
 * Rate limiting runs before the key check and buckets invalid keys by address, so guessing keys is rate
 * limited too. Health checks are exempt from all three (an orchestrator must always reach them);
 * /metrics needs the key but is never shed or rate limited (scrapes are few and must not disappear
 * exactly when the server is busy). Every refusal is an envelope, through the error handler.
 */
import fastifyRateLimit from '@fastify/rate-limit';
import fastifyUnderPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiKeys, allows, type Credential, type Scope } from './auth.js';
import { HttpError } from './http-error.js';
import type { HttpMetrics } from './observability.js';
import type { HttpOptions } from './options.js';
import { sharedRateLimit } from './shared-rate-limit.js';

/** Probes for orchestrators and the spec's health check: never authenticated, limited or shed. */
export const HEALTH_ROUTES: ReadonlySet<string> = new Set([
  '/',
  '/health/live',
  '/health/ready',
  // The Open Inference Protocol's server probes (its model probes need a key: they can load a run).
  '/v2/health/live',
  '/v2/health/ready',
]);

/** The routes that answer texts with predictions, by every protocol: they need the `predict` scope. */
const PREDICT_ROUTES: ReadonlySet<string> = new Set([
  '/predict',
  '/runs/:run_id/predict',
  '/v2/models/:name/infer',
  '/v2/models/:name/versions/:version/infer',
  '/hf/text-classification',
]);
export const METRICS_ROUTE = '/metrics';

type RouteClass = 'health' | 'metrics' | 'docs' | 'api';

/** Classifies by the matched route pattern (undefined for unmatched URLs, which count as API calls). */
export function routeClass(url: string | undefined): RouteClass {
  if (url === undefined) return 'api';
  if (HEALTH_ROUTES.has(url)) return 'health';
  if (url === METRICS_ROUTE) return 'metrics';
  if (
    url === '/openapi.json' ||
    url === '/docs' ||
    url.startsWith('/docs/') ||
    url.startsWith('/redoc') ||
    url === '/ui' ||
    url.startsWith('/ui/')
  )
    return 'docs';
  return 'api';
}

/**
 * The scope a route needs (by method and matched route pattern): the one table of who may do what.
 * Null: any valid key (docs when protected, unmatched URLs, which answer 404 to any key holder).
 */
export function requiredScope(method: string, url: string | undefined): Scope | null {
  if (url === undefined) return null;
  const kind = routeClass(url);
  if (kind === 'metrics') return 'metrics';
  if (kind !== 'api') return null;
  if (method === 'POST' && PREDICT_ROUTES.has(url)) return 'predict';
  // Labels for predictions, and the review queue that asks people for them (issue 32).
  if (url === '/feedback' || url === '/review' || url.startsWith('/review/')) return 'feedback';
  if (method === 'GET' || method === 'HEAD') return 'read';
  return null;
}

/** What each scope lets a key do, for the 403's message. */
const SCOPE_WORK: Record<Scope, string> = {
  predict: 'ask for predictions',
  feedback: 'label predictions',
  read: 'read runs and monitoring',
  metrics: 'read the metrics',
  admin: 'do everything',
};

const credentials = new WeakMap<FastifyRequest, Credential>();

/**
 * Whether the request may see what `scope` covers: always without API keys, else with a valid key that
 * has it (the readiness probe shows its details to such callers only).
 */
export function requestAllows(request: FastifyRequest, scope: Scope): boolean {
  const credential = credentials.get(request);
  if (credential === undefined || unprotected.has(request)) return true;
  return credential.kind === 'valid' && allows(credential.scopes, scope);
}

/** Requests to an app without API keys: every caller may see everything. */
const unprotected = new WeakSet<FastifyRequest>();

const BEARER_CHALLENGE = 'Bearer realm="tagger"';

/**
 * Installs the protection hooks. Registered as a non-encapsulated plugin (skip-override) so the hooks
 * apply to every route, including the 404/405 handler; must be registered before the routes.
 */
export function protectionPlugin(options: HttpOptions, metrics: HttpMetrics) {
  const keys = new ApiKeys(options.apiKeys);
  const retryAfter = String(options.retryAfterSeconds);

  const plugin = async (app: FastifyInstance): Promise<void> => {
    // 1. Load shedding.
    if (options.maxInFlight > 0) {
      let inFlight = 0;
      const counted = new WeakSet<FastifyRequest>();
      const release = async function releaseInFlight(request: FastifyRequest): Promise<void> {
        if (!counted.delete(request)) return;
        inFlight--;
        metrics.inFlight.set(inFlight);
      };
      app.addHook('onRequest', async function limitInFlight(request, reply) {
        const kind = routeClass(request.routeOptions.url);
        if (kind === 'health' || kind === 'metrics') return;
        if (inFlight >= options.maxInFlight) {
          throw new HttpError(
            503,
            `the server is at capacity (${options.maxInFlight} requests in flight); retry after ${retryAfter} s`,
            { 'retry-after': retryAfter },
          );
        }
        inFlight++;
        counted.add(request);
        metrics.inFlight.set(inFlight);
        // A client that hangs up mid-request gets neither onResponse nor (always) onRequestAbort, and
        // its slot would leak until the server sheds everything; the response's 'close' always comes.
        reply.raw.once('close', () => void release(request));
      });
      app.addHook('onResponse', release);
      app.addHook('onRequestAbort', release);
    }
    if (options.maxEventLoopDelayMs > 0) {
      await app.register(fastifyUnderPressure, {
        maxEventLoopDelay: options.maxEventLoopDelayMs,
        retryAfter: options.retryAfterSeconds,
        pressureHandler: async (request, _reply, type, value) => {
          const kind = routeClass(request.routeOptions.url);
          if (kind === 'health' || kind === 'metrics') return;
          const measured = typeof value === 'number' ? ` (${Math.round(value)} ms)` : '';
          throw new HttpError(
            503,
            `the server is overloaded: ${type}${measured} is above its limit; retry after ${retryAfter} s`,
            { 'retry-after': retryAfter },
          );
        },
      });
    }

    if (keys.enabled) {
      if (keys.unscoped > 0) {
        app.log.warn(
          { unscoped: keys.unscoped },
          'API keys written without scopes have every scope (admin); give each client only what it needs, as <key>:predict, <key>:predict+feedback, <key>:read or <key>:metrics (docs/api.md#api-keys)',
        );
      }
    }

    app.addHook('onRequest', async function identifyCredentials(request) {
      credentials.set(request, keys.enabled ? keys.identify(request) : { kind: 'missing' });
      if (!keys.enabled) unprotected.add(request);
    });

    // 2. Rate limiting: per process, or across the deployment when Redis is configured.
    if (options.rateLimit !== null) {
      const shared = options.redisUrl ? await sharedRateLimit(options.redisUrl, metrics, app.log) : undefined;
      if (shared) {
        app.addHook('onClose', shared.close);
        await shared.connected;
      }
      await app.register(fastifyRateLimit, {
        ...(shared ? { store: shared.Store, skipOnError: true } : {}),
        global: false,
        max: options.rateLimit.max,
        timeWindow: options.rateLimit.windowMs,
        keyGenerator: (request) => {
          const credential = credentials.get(request);
          return credential?.kind === 'valid' ? `key:${credential.keyId}` : `ip:${request.ip}`;
        },
        allowList: (request) => {
          const kind = routeClass(request.routeOptions.url);
          return kind === 'health' || kind === 'metrics';
        },
        errorResponseBuilder: (_request, context) =>
          new HttpError(
            429,
            `rate limit exceeded: at most ${context.max} requests per ${options.rateLimit!.windowMs} ms per client; retry in ${context.after}`,
          ),
      });
      app.addHook('onRequest', app.rateLimit());
    }

    // 3. API keys.
    if (keys.enabled) {
      app.addHook('onRequest', async function requireApiKey(request) {
        const kind = routeClass(request.routeOptions.url);
        if (kind === 'health' || (kind === 'docs' && !options.protectDocs)) return;
        const credential = credentials.get(request) ?? { kind: 'missing' };
        if (credential.kind === 'valid') {
          const scope = requiredScope(request.method, request.routeOptions.url);
          if (scope === null || allows(credential.scopes, scope)) return;
          request.log.warn(
            { keyId: credential.keyId, scope, url: request.routeOptions.url },
            'request with an API key that lacks the scope',
          );
          throw new HttpError(
            403,
            `this API key may not ${SCOPE_WORK[scope]}: it needs the '${scope}' scope (it has ${[...credential.scopes].join(', ')})`,
          );
        }
        if (credential.kind === 'invalid') {
          // Headers help trace who sends a wrong key; the key itself is redacted by the logger.
          request.log.warn({ headers: request.headers }, 'request with an invalid API key');
          throw new HttpError(403, 'the API key is not valid for this server');
        }
        const detail =
          credential.kind === 'malformed'
            ? `${credential.reason}; send \`Authorization: Bearer <key>\` or \`X-API-Key: <key>\``
            : 'this endpoint needs an API key: send `Authorization: Bearer <key>` or `X-API-Key: <key>`';
        throw new HttpError(401, detail, {
          'www-authenticate':
            credential.kind === 'malformed'
              ? `${BEARER_CHALLENGE}, error="invalid_request"`
              : BEARER_CHALLENGE,
        });
      });
    }
  };
  // Fastify's documented way (what fastify-plugin sets) to keep a plugin's hooks in the parent context.
  (plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
  return plugin;
}

/** Paths the logger must never write: the API key headers, wherever a request's headers are logged. */
export const REDACTED_LOG_PATHS = [
  'headers.authorization',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'request.headers.authorization',
  'request.headers["x-api-key"]',
];
