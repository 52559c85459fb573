/**
 * Endpoints for orchestrators and monitoring: `GET /health/live` (the process answers), `GET
 * /health/ready` (a model is loaded and the server is not draining) and `GET /metrics` (Prometheus text
 * format, the one response outside the envelope besides 422).
 */
import { maskPaths, type ServingState } from '../../served-models/index.js';
import { envelope } from '../envelope.js';
import { HttpError } from '../http-error.js';
import { type HttpMetrics, METRICS_CONTENT_TYPE } from '../observability.js';
import { requestAllows } from '../protection.js';
import { errorResponses } from '../responses.js';
import { Envelope, LiveData, ReadyData } from '../schemas.js';
import { servedNow, servingProblems, takesTraffic } from '../served.js';
import type { TaggerApp } from '../types.js';

export interface Readiness {
  /** Extra readiness condition from the server (false while it drains before shutdown). */
  ready?: (() => boolean) | undefined;
  /** True once the app has started closing. */
  closing: () => boolean;
}

/**
 * Why the server does not take traffic now (shutting down, draining, starting, no model loaded), or null
 * when it does: what every readiness probe answers (GET /health/ready, the Open Inference Protocol's).
 */
export function notReadyReason(current: () => ServingState, readiness: Readiness): string | null {
  if (readiness.closing()) return 'the server is shutting down';
  if (readiness.ready !== undefined && !readiness.ready()) return 'the server is draining or starting';
  try {
    const state = current();
    if (!takesTraffic(state)) return 'the server is draining for shutdown';
    servedNow(state);
  } catch {
    return 'no model is loaded';
  }
  return null;
}

export function operationsRoutes(
  app: TaggerApp,
  current: () => ServingState,
  metrics: HttpMetrics,
  readiness: Readiness,
): void {
  app.get(
    '/health/live',
    {
      schema: {
        tags: ['Operations'],
        summary: 'Liveness probe',
        description:
          'Answers 200 while the process runs and its event loop turns; never authenticated, rate limited or shed.',
        response: { 200: Envelope(LiveData, 'LiveResponse'), ...errorResponses(500) },
      },
    },
    async (request) => envelope(request, 200, { status: 'live' as const }),
  );

  app.get(
    '/health/ready',
    {
      schema: {
        tags: ['Operations'],
        summary: 'Readiness probe',
        description:
          'Answers 200 when a model is loaded and the server takes traffic; 503 (with `Retry-After`) before loading and while draining for shutdown. Never authenticated, rate limited or shed. With API keys configured, the served run and the problems are shown only to a caller sending a key with the `read` scope; others get the status alone.',
        response: { 200: Envelope(ReadyData, 'ReadyResponse'), ...errorResponses(500, 503) },
      },
    },
    async (request) => {
      const why = notReadyReason(current, readiness);
      if (why !== null) throw new HttpError(503, `not ready: ${why}`, { 'retry-after': '1' });
      const { runId } = servedNow(current());
      // What serves, and what keeps records from being kept (a record store down, locked or full).
      // The details (which run, what is held back and why) are for callers whose key may read runs;
      // an orchestrator's probe, which sends no key, learns only that the replica is ready.
      if (!requestAllows(request, 'read')) return envelope(request, 200, { status: 'ready' as const });
      const problems = [
        ...servingProblems(current()),
        ...(request.server.taggerMonitoring?.problems() ?? []),
      ].map(maskPaths);
      return envelope(request, 200, {
        status: 'ready' as const,
        ...(runId === null ? {} : { run_id: runId }),
        ...(problems.length > 0 ? { problems } : {}),
      });
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['Operations'],
        summary: 'Prometheus metrics',
        description:
          'Prometheus text exposition format 0.0.4 (not the envelope): request counts and latency by route pattern and status, texts predicted, predictions by tag, the served run (`tagger_served_run_info{run_id}`) and its f1, reloads by outcome, and process metrics. Needs the API key when keys are configured; never rate limited or shed.',
        response: {
          200: {
            description: 'Metrics in the Prometheus text format (`text/plain; version=0.0.4`)',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...errorResponses(500, 503),
        },
      },
    },
    async (_request, reply) => {
      let text: string;
      try {
        text = await metrics.exposition();
      } catch (error) {
        // In --workers mode the aggregate comes from the primary; a scrape without it fails visibly
        // instead of passing one worker's share off as the service's numbers.
        throw new HttpError(503, `metrics are unavailable: ${(error as Error).message}`, {
          'retry-after': '1',
        });
      }
      return reply.type(METRICS_CONTENT_TYPE).send(text);
    },
  );
}
