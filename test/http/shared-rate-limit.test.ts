/**
 * Rate limits shared through a real Redis server: two apps (as two workers or replicas) together allow
 * exactly the configured budget; with Redis gone every request is still served (fail open), counted in
 * /metrics and logged once, not once per request; when Redis is back the shared budget holds again.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpMetrics } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { redactRedisUrl } from '../../src/http/shared-rate-limit.js';
import { redisServerPath } from '../support/components.js';
import { runsApp } from '../support/http.js';
import { type RedisServer, redisServer } from '../support/redis-server.js';
import { useServingFixture } from '../support/serving-fixture.js';

const binary = redisServerPath();
const fx = useServingFixture({ enabled: binary !== null });
let redis: RedisServer;
const apps: TaggerApp[] = [];

beforeAll(async () => {
  if (binary === null) return;
  redis = await redisServer(binary);
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await redis?.stop();
});

/** A pino logger writing its JSON lines into `lines`. */
function memoryLogger(lines: string[]) {
  return pino(
    { level: 'info' },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
}

async function sharedApp(max: number, logs: string[] = []) {
  const metrics = createHttpMetrics({ defaultMetrics: false });
  const { app } = await runsApp(fx.store, {
    deps: {
      metrics,
      logger: memoryLogger(logs),
      http: { rateLimit: { max, windowMs: 60_000 }, apiKeys: [], redisUrl: redis.url },
    },
  });
  apps.push(app);
  return app;
}

const get = (app: TaggerApp, client: string) =>
  app.inject({ url: '/runs', remoteAddress: client }).then((r) => r.statusCode);

const storeErrors = async (app: TaggerApp): Promise<number> => {
  const text = (await app.inject({ url: '/metrics' })).body;
  return Number(/^tagger_rate_limit_store_errors_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
};

/** Until the app's Redis client has connected, checks fail open: wait for a counted request. */
async function untilCounted(app: TaggerApp, client: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  const before = await storeErrors(app);
  for (;;) {
    const errors = await storeErrors(app);
    await get(app, client);
    if ((await storeErrors(app)) === errors) return;
    if (Date.now() > deadline) throw new Error(`Redis never counted a request (errors before: ${before})`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

describe.skipIf(binary === null)('rate limits shared through Redis', () => {
  it('lets two apps together allow exactly the configured budget per client', async () => {
    const [a, b] = [await sharedApp(10), await sharedApp(10)];
    await untilCounted(a, '10.0.0.250');
    await untilCounted(b, '10.0.0.251');
    const client = '10.0.0.1';
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push(await get(i % 2 === 0 ? a : b, client));
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual([429, 429, 429, 429, 429]);
    // Another client has its own budget.
    expect(await get(b, '10.0.0.2')).toBe(200);
  });

  it('fails open when Redis goes away (served, counted, logged once), and limits again when it is back', async () => {
    const logs: string[] = [];
    const app = await sharedApp(3, logs);
    await untilCounted(app, '10.0.1.250');
    await redis.stop();
    const client = '10.0.1.1';
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push(await get(app, client));
    expect(statuses).toEqual(Array(20).fill(200));
    expect(await storeErrors(app)).toBeGreaterThanOrEqual(20);
    const warnings = logs.filter((line) => line.includes('fail open'));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(2); // the connection error and the first failed check
    expect(logs.filter((line) => line.includes('"level":50'))).toEqual([]); // warnings, not errors

    await redis.start();
    await untilCounted(app, '10.0.1.251');
    const again: number[] = [];
    for (let i = 0; i < 5; i++) again.push(await get(app, '10.0.1.2'));
    expect(again).toEqual([200, 200, 200, 429, 429]);
  }, 60_000);

  it('never shows the Redis password', () => {
    expect(redactRedisUrl('redis://user:s3cret@cache:6379/0')).toBe('redis://user:***@cache:6379/0');
    expect(redactRedisUrl('not a url')).not.toContain('not a url');
  });
});
