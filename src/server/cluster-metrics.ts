/**
 * `/metrics` for the whole process group in `--workers` mode. A scrape reaches one worker (the primary
 * hands connections round-robin), so each worker alone would report its own share of every counter. The
 * worker that gets the scrape asks the primary over the cluster IPC channel; the primary collects every
 * worker's metrics with prom-client's AggregatorRegistry (counters and histograms summed, gauges as
 * each metric's `aggregator` says) and sends the text back.
 *
 * When the primary does not answer within AGGREGATE_TIMEOUT_MS the scrape fails (the /metrics route
 * answers 503) rather than returning one worker's numbers as if they were the service's.
 */
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** Within Prometheus' default scrape timeout (10 s), and longer than prom-client's per-worker wait. */
const AGGREGATE_TIMEOUT_MS = 8_000;

type MetricsRequest = { tagger: 'metrics-request'; id: number };
type MetricsResponse = { tagger: 'metrics-response'; id: number; text?: string; error?: string };

const isMessage = <T extends { tagger: string }>(value: unknown, kind: T['tagger']): value is T =>
  typeof value === 'object' && value !== null && (value as { tagger?: unknown }).tagger === kind;

/** The primary side: answers workers' requests for the aggregated metrics. Call once in the primary. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage<MetricsRequest>(message, 'metrics-request')) return;
    const reply = (answer: Omit<MetricsResponse, 'tagger' | 'id'>): void => {
      if (worker.isConnected()) worker.send({ tagger: 'metrics-response', id: message.id, ...answer });
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (error: Error) => reply({ error: error.message }),
    );
  });
}

export class ClusterMetricsError extends Error {
  override readonly name = 'ClusterMetricsError';
}

/**
 * The worker side: makes `registry` what this worker contributes to the aggregate, and returns the
 * function that fetches the aggregate from the primary. Undefined outside a cluster worker.
 */
export function clusterMetricsSource(registry: Registry): (() => Promise<string>) | undefined {
  if (!cluster.isWorker || process.send === undefined) return undefined;
  AggregatorRegistry.setRegistries([registry]);
  // prom-client installs a worker's answering listener when an AggregatorRegistry is constructed.
  new AggregatorRegistry();
  let nextId = 0;
  const pending = new Map<number, (answer: MetricsResponse) => void>();
  process.on('message', (message: unknown) => {
    if (!isMessage<MetricsResponse>(message, 'metrics-response')) return;
    pending.get(message.id)?.(message);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = ++nextId;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(
          new ClusterMetricsError(
            `the primary did not aggregate the metrics within ${AGGREGATE_TIMEOUT_MS} ms`,
          ),
        );
      }, AGGREGATE_TIMEOUT_MS);
      pending.set(id, (answer) => {
        clearTimeout(timer);
        pending.delete(id);
        if (answer.text !== undefined) resolve(answer.text);
        else reject(new ClusterMetricsError(`aggregating the workers' metrics failed: ${answer.error}`));
      });
      if (!process.connected) {
        clearTimeout(timer);
        pending.delete(id);
        reject(new ClusterMetricsError('the primary process is gone'));
        return;
      }
      process.send!({ tagger: 'metrics-request', id } satisfies MetricsRequest);
    });
}
