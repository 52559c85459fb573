/**
 * `POST /feedback` (labels for recorded predictions, answered item by item) and `GET /monitoring` (the
 * served run's live figures: predictions and feedback in the window, the predicted-tag distribution
 * beside the test split's, live precision / recall / f1, drift per signal, and their recent history).
 * Both read and write the shared record store through src/monitoring, so any replica answers for
 * predictions any replica recorded.
 */
import { DRIFT_SIGNALS, type DriftResult, type DriftSignal } from '../../model/index.js';
import type { FeedbackOutcome, Monitoring, MonitoringSnapshot } from '../../monitoring/index.js';
import { DRIFT_SIGNIFICANCE, RecordStoreError } from '../../monitoring/index.js';
import { maskPaths, type ServingState } from '../../served-models/index.js';
import { envelope } from '../envelope.js';
import { HttpError } from '../http-error.js';
import { scopeOf } from '../monitored.js';
import { FeedbackData, feedbackPayload, MonitoringData } from '../monitoring-schemas.js';
import type { HttpLimits } from '../options.js';
import { errorResponses } from '../responses.js';
import { Envelope } from '../schemas.js';
import type { TaggerApp } from '../types.js';

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Why a signal is not drift although its PSI reaches the threshold: the shift is not significant with
 * so few predictions (src/model/drift.ts judges both). Without it, a reader saw "drifted: no" under a
 * PSI above the threshold and nothing more.
 */
function notDriftedReason(result: MonitoringSnapshot['drift'][DriftSignal]): string | undefined {
  if (result.reason !== undefined) return result.reason;
  if (result.drifted || result.value === null || result.value < result.threshold || result.pValue === null)
    return undefined;
  return `PSI ${result.value.toFixed(3)} reaches the threshold ${result.threshold}, but the shift is not significant: p = ${result.pValue.toPrecision(2)}, and drift needs p < ${DRIFT_SIGNIFICANCE}; ${result.live} predictions against ${result.reference} test rows are too few to tell it from chance`;
}

/** The app has no monitoring (an app built without it, e.g. by a test): say so instead of failing. */
function need(monitoring: Monitoring | null): Monitoring {
  if (monitoring === null)
    throw new HttpError(404, 'this server keeps no prediction records (no monitoring set up)');
  return monitoring;
}

/** A store that cannot be reached is a 503 with Retry-After, as for the tracking store. */
function unavailable(error: unknown, retryAfterSeconds: number): never {
  if (error instanceof RecordStoreError && error.code !== 'INVALID_ARGUMENT') {
    throw new HttpError(503, `${error.message}; retry later`, { 'retry-after': String(retryAfterSeconds) });
  }
  throw error;
}

/** One drift result as the API states it. */
function driftOf(result: DriftResult) {
  const reason = notDriftedReason(result);
  return {
    value: result.value,
    p_value: result.pValue,
    threshold: result.threshold,
    drifted: result.drifted,
    live: result.live,
    reference: result.reference,
    ...(reason === undefined ? {} : { reason }),
  };
}

export function report(snapshot: MonitoringSnapshot, monitoring: Monitoring) {
  const { config } = monitoring;
  const runId = snapshot.runId === '' ? null : snapshot.runId;
  return {
    run_id: runId,
    computed_at: iso(snapshot.computedMs),
    window: {
      since: iso(snapshot.sinceMs),
      seconds: config.windowSeconds,
      max_predictions: config.windowPredictions,
      feedback_seconds: config.feedbackWindowSeconds,
    },
    predictions: snapshot.predictions,
    tags: snapshot.tags,
    feedback: snapshot.feedback,
    last_feedback_at: snapshot.lastFeedbackMs === null ? null : iso(snapshot.lastFeedbackMs),
    live: snapshot.live,
    live_basis: {
      sample: snapshot.liveBasis.sample,
      num_samples: snapshot.liveBasis.numSamples,
      other_labels: snapshot.liveBasis.otherLabels,
      ...(snapshot.liveBasis.reason === null ? {} : { reason: snapshot.liveBasis.reason }),
    },
    live_all: snapshot.liveAll,
    live_class: snapshot.liveByTag,
    ...(snapshot.routing === null
      ? {}
      : {
          live_by_stage: snapshot.liveByStage,
          routing: {
            routed: snapshot.routing.routed,
            expected: snapshot.routing.expected,
            stages: snapshot.routing.stages,
            drift: driftOf(snapshot.routing.drift),
          },
        }),
    test: snapshot.test,
    drift: Object.fromEntries(DRIFT_SIGNALS.map((signal) => [signal, driftOf(snapshot.drift[signal])])),
    history: monitoring.monitor.history.map((point) => ({
      time: iso(point.time),
      predictions: point.predictions,
      feedback: point.feedback,
      f1: point.f1,
      drift: point.drift,
    })),
    recording: {
      store: maskPaths(config.storeDisplayUri),
      sample_rate: config.sampleRate,
      text: config.keepText ? ('full' as const) : ('hash' as const),
      retention_days: config.retentionDays,
    },
    problems: [...snapshot.problems, ...monitoring.problems()].map(maskPaths),
  };
}

export function monitoringRoutes(
  app: TaggerApp,
  current: () => ServingState,
  limits: HttpLimits,
  retryAfterSeconds: number,
): void {
  app.post(
    '/feedback',
    {
      schema: {
        tags: ['Monitoring'],
        summary: 'Label recorded predictions',
        description:
          'Gives the right tag (`tag`) or tags (`tags`, multi-label runs) of predictions by their `prediction_id`, whichever replica or worker answered them and however soon after the answer (a record still on its way is waited for), with how each was chosen for labelling (`selection`). Each item is answered on its own in `data.feedback`, with its own status: 200 stored (`accepted`, or `replaced` when it replaces an earlier label: the later one wins, counted once; a tag the run does not know is stored too, for retraining, and said in `detail`), 404 not recorded for what this server serves (unknown, not sampled, past retention, another experiment’s), 409 a later item of the request labels the same prediction, 422 a label that is not one (several tags for a single-label run, none), 503 `pending`: its record may still arrive from the server that answered it (a slow or failing record store) — send the item again after `Retry-After`. A well-formed request is answered 200 whatever its items’ fate (`accepted` and `rejected` count them); a body that is not this shape is the usual 422, more items than the limit a 413, the record store unreachable a 503. A prediction record itself never changes.',
        body: feedbackPayload(limits),
        response: {
          200: Envelope(FeedbackData, 'FeedbackResponse'),
          ...errorResponses(400, 404, 413, 415, 422, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const monitoring = need(request.server.taggerMonitoring);
      const scope = scopeOf(current());
      let outcomes: FeedbackOutcome[];
      try {
        outcomes = await monitoring.feedback(scope, request.body.feedback);
      } catch (error) {
        return unavailable(error, retryAfterSeconds);
      }
      // The request is answered as a whole (it was well-formed and each item was judged); each item's
      // own status says what became of it, as bulk APIs do.
      const accepted = outcomes.filter((o) => o.status === 200).length;
      // Items whose records may still arrive are answered 503 each; the header says when to send them again.
      if (outcomes.some((o) => o.status === 503)) reply.header('retry-after', String(retryAfterSeconds));
      return envelope(request, 200, { accepted, rejected: outcomes.length - accepted, feedback: outcomes });
    },
  );

  app.get(
    '/monitoring',
    {
      schema: {
        tags: ['Monitoring'],
        summary: 'Live quality and drift of the served run',
        description:
          "The served run over the monitoring window (its most recent predictions, every replica's): how many, the predicted-tag distribution beside the test split's, feedback received, live precision / recall / f1 from it (computed as training computes the test metrics), and a drift statistic per signal with its threshold and whether it drifted; with the figures' recent history. The same figures are Prometheus gauges in /metrics.",
        response: { 200: Envelope(MonitoringData, 'MonitoringResponse'), ...errorResponses(404, 500, 503) },
      },
    },
    async (request) => {
      const monitoring = need(request.server.taggerMonitoring);
      const snapshot = await monitoring.figures();
      if (snapshot === null) throw new HttpError(503, 'no model is served yet', { 'retry-after': '1' });
      return envelope(request, 200, { monitoring: report(snapshot, monitoring) });
    },
  );
}
