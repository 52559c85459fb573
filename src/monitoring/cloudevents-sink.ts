/**
 * An optional sink for pipelines that already consume KServe's inference logger: every recorded
 * prediction is sent as KServe sends an inference, two CloudEvents 1.0 in HTTP binary content mode
 * (attributes as `ce-*` headers, the JSON payload as the body) sharing one `ce-id` — here the
 * `prediction_id`:
 * - `org.kubeflow.serving.inference.request`: `{"texts": [{"text": …}]}` (the request Tagger answered,
 *   one text; `{"text_sha256": …}` instead when only hashes are kept);
 * - `org.kubeflow.serving.inference.response`: `{"run_id", "predictions": [{prediction_id, predicted_tag,
 *   predicted_tags, predicted_probabilities}]}`,
 * with KServe's extensions `inferenceservicename`, `endpoint` (the run id), `component: predictor` and,
 * in Kubernetes, `namespace`. Delivery is at least once (a batch that failed part-way is sent again), so a
 * consumer keys on (`ce-id`, `ce-type`). Sending is bounded (a few requests at a time, each with a
 * timeout) and lives on the sink's own queue, so a slow sink never slows the store or a prediction.
 */
import { hostname } from 'node:os';
import { completeBatch } from './batch.js';
import type { CapturedBatch, PredictionRecord } from './record-store.js';
import type { RecordSink } from './sink-queue.js';

export const REQUEST_EVENT = 'org.kubeflow.serving.inference.request';
export const RESPONSE_EVENT = 'org.kubeflow.serving.inference.response';

export interface CloudEventsSinkOptions {
  /** `inferenceservicename`: what the service is called (default `tagger`). */
  serviceName?: string;
  /** The events' `source` (default `urn:tagger:<host name>`). */
  source?: string;
  /** Kubernetes namespace (`namespace` extension), from POD_NAMESPACE when set. */
  namespace?: string | undefined;
  timeoutMs?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  fetch?: typeof fetch;
}

/** A URL as logs may show it: no user info, no query (where tokens tend to be). */
export const displayUrl = (url: string): string => {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
};

export class CloudEventsSink implements RecordSink {
  readonly name = 'cloudevents';
  readonly target: string;
  private readonly fetch: typeof fetch;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly lanes: number;

  constructor(
    private readonly url: string,
    options: CloudEventsSinkOptions = {},
  ) {
    this.target = displayUrl(url);
    this.fetch = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.lanes = options.concurrency ?? 8;
    this.headers = {
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-source': options.source ?? `urn:tagger:${hostname()}`,
      'ce-inferenceservicename': options.serviceName ?? 'tagger',
      'ce-component': 'predictor',
      ...(options.namespace ? { 'ce-namespace': options.namespace } : {}),
    };
  }

  /** The two events of one record, as (headers, body). */
  events(record: PredictionRecord): { headers: Record<string, string>; body: string }[] {
    const common = {
      ...this.headers,
      'ce-id': record.predictionId,
      'ce-time': new Date(record.createdMs).toISOString(),
      'ce-endpoint': record.runId,
    };
    const text = record.text === null ? { text_sha256: record.textSha256 } : { text: record.text };
    return [
      { headers: { ...common, 'ce-type': REQUEST_EVENT }, body: JSON.stringify({ texts: [text] }) },
      {
        headers: { ...common, 'ce-type': RESPONSE_EVENT },
        body: JSON.stringify({
          ...(record.runId === '' ? {} : { run_id: record.runId }),
          ...(record.protocol == null ? {} : { protocol: record.protocol }),
          predictions: [
            {
              prediction_id: record.predictionId,
              predicted_tag: record.predictedTag,
              predicted_tags: record.predictedTags,
              predicted_probabilities: record.probabilities,
            },
          ],
        }),
      },
    ];
  }

  private async post(event: { headers: Record<string, string>; body: string }): Promise<void> {
    const response = await this.fetch(this.url, {
      method: 'POST',
      headers: event.headers,
      body: event.body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    // The body is not needed; reading it frees the connection for the next event.
    await response.arrayBuffer().catch(() => undefined);
    if (!response.ok) throw new Error(`the CloudEvents sink ${this.target} answered ${response.status}`);
  }

  /** Sends every event of the batch, `concurrency` at a time; rejects when any could not be delivered. */
  async write(batch: CapturedBatch): Promise<void> {
    return this.send(completeBatch(batch, batch.vocabularies));
  }

  /** Sends the events of completed records (write's second half). */
  async send(records: readonly PredictionRecord[]): Promise<void> {
    const events = records.flatMap((record) => this.events(record));
    let next = 0;
    let failure: unknown;
    const lane = async (): Promise<void> => {
      while (next < events.length && failure === undefined) {
        const event = events[next++]!;
        try {
          await this.post(event);
        } catch (error) {
          failure ??= error;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.lanes, events.length) }, lane));
    if (failure !== undefined) {
      const reason = failure instanceof Error ? failure.message : String(failure);
      throw new Error(`CloudEvents to ${this.target}: ${reason}`);
    }
  }
}
