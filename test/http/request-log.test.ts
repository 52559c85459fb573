/**
 * The request log during a planned shutdown (issue 27, item 8): readiness answers 503 on purpose while
 * the server drains, so load balancers move away. Those answers were logged as errors ("request
 * completed with a server error") without the method or URL; they are now `info` lines that name them,
 * and a real server error still logs at `error` level with its method and URL.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createHttpMetrics } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { loadModelDirectory, ServingLifecycle } from '../../src/served-models/index.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
const lines: Record<string, unknown>[] = [];
const metrics = createHttpMetrics({ defaultMetrics: false });
const lifecycle = new ServingLifecycle();
let app: TaggerApp;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const model = await loadModelDirectory(fx.modelDir);
  app = createApp({
    serving: { mode: 'model', model, source: fx.modelDir, lifecycle },
    logger: pino({ level: 'info' }, sink),
    metrics,
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

const logged = (url: string) => lines.filter((line) => line.url === url);

describe('the request log', () => {
  it('logs a server error at error level with its method and URL', async () => {
    metrics.serveExpositionFrom(() => Promise.reject(new Error('the primary is gone')));
    expect((await app.inject({ url: '/metrics?x=1' })).statusCode).toBe(503);
    expect(logged('/metrics?x=1')).toEqual([
      expect.objectContaining({
        level: 50,
        method: 'GET',
        url: '/metrics?x=1',
        msg: 'request completed with a server error',
      }),
    ]);
  });

  it('logs readiness 503s of a planned shutdown at info level, with method and URL, and no error', async () => {
    expect((await app.inject({ url: '/health/ready' })).statusCode).toBe(200);
    lifecycle.beginDrain();
    const before = lines.length;
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/health/ready' })).statusCode).toBe(503);
    const during = lines.slice(before);
    expect(during.filter((line) => (line.level as number) >= 50)).toEqual([]);
    expect(during).toEqual(
      Array.from({ length: 3 }, () =>
        expect.objectContaining({
          level: 30,
          method: 'GET',
          url: '/health/ready',
          msg: 'answered 503 while shutting down, as planned',
        }),
      ),
    );
  });
});
