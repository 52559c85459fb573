/** createApp: wiring, unexpected-error masking and logging, and the documentation-only app. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp, generateOpenApiDocument } from '../src/app.js';
import { loadModelDirectory, type ServedModel } from '../src/service/index.js';
import { useServingFixture } from './support/serving-fixture.js';

const fx = useServingFixture();
let served: ServedModel;

beforeAll(async () => {
  served = await loadModelDirectory(fx.modelDir);
});

function memoryLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('createApp', () => {
  it('masks an unexpected failure as a generic 500 envelope and logs the real error', async () => {
    const { logger, lines } = memoryLogger();
    // Fault injection: the real loaded model, with predict failing the way a bug would.
    const failing: ServedModel = {
      ...served,
      model: {
        tags: served.model.tags,
        args: served.model.args,
        tagThresholds: null,
        threshold: served.model.threshold,
        predict: () => {
          throw new TypeError('secret internal detail');
        },
        explain: () => {
          throw new TypeError('secret internal detail');
        },
      },
    };
    const app = createApp({ serving: { mode: 'model', model: failing, source: 'x' }, logger });
    const response = await app.inject({
      method: 'POST',
      url: '/predict',
      payload: { texts: [{ text: 'a' }] },
    });
    expect(response.statusCode).toBe(500);
    const body = JSON.parse(response.body);
    expect(body).toMatchObject({ 'status-code': 500, message: 'Internal Server Error', method: 'POST' });
    expect(body.detail).toBe('internal error; the server log has the details');
    expect(response.body).not.toContain('secret');
    const logged = lines.find((line) => line.msg === 'unexpected error while handling a request');
    expect(logged).toBeDefined();
    expect((logged!.err as { message: string }).message).toBe('secret internal detail');
    await app.close();
  });

  it('answers an oversized body with a 413 envelope', async () => {
    const app = createApp({ serving: { mode: 'model', model: served, source: 'x' } });
    const payload = JSON.stringify({ texts: [{ text: 'a'.repeat(1024 * 1024 + 10) }] });
    const response = await app.inject({
      method: 'POST',
      url: '/predict',
      headers: { 'content-type': 'application/json' },
      payload,
    });
    expect(response.statusCode).toBe(413);
    expect(JSON.parse(response.body)).toMatchObject({ 'status-code': 413, message: 'Payload Too Large' });
    await app.close();
  });

  it('builds a documentation-only app whose document covers both variants', async () => {
    const document = await generateOpenApiDocument();
    expect(Object.keys(document.paths as object)).toHaveLength(18);
  });
});
