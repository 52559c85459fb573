/**
 * Under load with a real load generator (autocannon, loopback, fixed connections, a few seconds each):
 * sensible limits give no refusals under moderate load; a forced-low in-flight cap sheds with 503 +
 * Retry-After and nothing else, and the server recovers.
 */
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { type AppDeps, createApp } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { ServedRuns } from '../../src/served-models/index.js';
import { instrumentStore } from '../support/fixtures.js';
import { captureLog, runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';

interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  onResponse?: (status: number, body: string, context: unknown, headers: Record<string, string>) => void;
}
interface LoadResult {
  requests: { total: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  requests: LoadRequest[];
}) => Promise<LoadResult>;

// autocannon ships no types; this is the part of its API the tests use.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const fx = useServingFixture();
const apps: TaggerApp[] = [];

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
});

async function listening(deps: Omit<AppDeps, 'serving'>): Promise<{ app: TaggerApp; base: string }> {
  const { app } = await runsApp(fx.store, { deps });
  apps.push(app);
  return { app, base: await app.listen({ host: '127.0.0.1', port: 0 }) };
}

const PREDICT_BODY = JSON.stringify({
  texts: [
    { text: 'Fine-tuning BERT for sentiment analysis of product reviews' },
    { text: 'Object detection with YOLO on drone images' },
    { text: 'Deploying models with Docker, Kubernetes and CI/CD pipelines' },
  ],
});
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

describe('under load', () => {
  it('moderate load with default limits and no rate limiting: only 2xx', { timeout: 30_000 }, async () => {
    const { base } = await listening({});
    const result = await autocannon({
      url: base,
      connections: 8,
      duration: 3,
      requests: [
        { method: 'POST', path: '/predict', headers: JSON_HEADERS, body: PREDICT_BODY },
        { method: 'GET', path: '/runs?top=2' },
        { method: 'POST', path: `/runs/${fx.runs.beta}/predict`, headers: JSON_HEADERS, body: PREDICT_BODY },
        { method: 'GET', path: '/' },
      ],
    });
    process.stdout.write(
      `moderate load: ${result.requests.total} requests, ${JSON.stringify(result.statusCodeStats)}\n`,
    );
    expect(result.requests.total).toBeGreaterThan(100);
    expect(result.errors).toBe(0);
    expect(result.timeouts).toBe(0);
    expect(result.non2xx).toBe(0);
  });

  it('forced-low in-flight cap: 503 with Retry-After and no other failure; then it recovers', {
    timeout: 30_000,
  }, async () => {
    // A tracking store that takes a moment per read, and no model cache: each request to a non-best
    // run waits on the store, so concurrent requests really are in flight together (a CPU-only request
    // finishes within one event-loop turn and would rarely overlap another).
    const slow = instrumentStore(fx.store, {
      beforeRead: () => new Promise<void>((resolve) => setTimeout(resolve, 20)),
    });
    const servedRuns = await ServedRuns.load(slow, {
      experiment: 'best',
      modelCacheSize: 0,
      log: captureLog(),
    });
    const app = createApp({
      serving: { mode: 'runs', servedRuns },
      http: { maxInFlight: 2, retryAfterSeconds: 2 },
    });
    apps.push(app);
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const retryAfter = new Set<string | undefined>();
    const result = await autocannon({
      url: base,
      connections: 16,
      duration: 2,
      requests: [
        {
          method: 'POST',
          path: `/runs/${fx.runs.beta}/predict`,
          headers: JSON_HEADERS,
          body: PREDICT_BODY,
          onResponse: (status, _body, _context, headers) => {
            if (status === 503) retryAfter.add(headers['retry-after'] ?? headers['Retry-After']);
          },
        },
      ],
    });
    process.stdout.write(
      `saturated: ${result.requests.total} requests, ${JSON.stringify(result.statusCodeStats)}\n`,
    );
    expect(result.errors).toBe(0);
    expect(Object.keys(result.statusCodeStats).sort()).toEqual(['200', '503']);
    expect(result.statusCodeStats['503']!.count).toBeGreaterThan(0);
    expect([...retryAfter]).toEqual(['2']);

    // Recovery: requests autocannon left behind finish (or are aborted) and give their slots back ...
    const inFlight = async () =>
      /^tagger_http_requests_in_flight (\d+)$/m.exec((await app.inject({ url: '/metrics' })).body)?.[1];
    await expect.poll(inFlight, { timeout: 10_000 }).toBe('0');
    // ... and requests are served again.
    const response = await fetch(`${base}/runs/${fx.runs.beta}/predict`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: PREDICT_BODY,
      signal: AbortSignal.timeout(10_000),
    });
    expect(response.status).toBe(200);
    const metrics = await app.inject({ url: '/metrics' });
    expect(metrics.body).toMatch(/^tagger_http_requests_in_flight 0$/m);
    expect(metrics.body).toMatch(/route="\/runs\/:run_id\/predict",status_code="503"\} [1-9]/);
  });
});
