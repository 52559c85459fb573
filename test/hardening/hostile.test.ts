/**
 * Hostile input against a real listening server (raw sockets for the byte-level cases): every case is
 * a clear 4xx in the envelope (or the 422 body), and afterwards the server still answers `/` and
 * `/predict` correctly.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
let app: TaggerApp;
let base: string;
let port: number;

beforeAll(async () => {
  ({ app } = await runsApp(fx.store, {
    deps: { http: { limits: { bodyBytes: 64 * 1024, jsonDepth: 16 } } },
  }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
  port = Number(new URL(base).port);
});

afterAll(async () => {
  await app?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function send(path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) };
}

const postRaw = (path: string, body: string | Uint8Array, contentType = 'application/json') =>
  send(path, { method: 'POST', headers: { 'content-type': contentType }, body });

/** A raw HTTP/1.1 exchange (for bytes fetch would refuse to send); the connection closes after it. */
function raw(request: Buffer | string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('raw request timed out')));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      const chunked = /transfer-encoding: chunked/i.test(head);
      let body = rest.join('\r\n\r\n');
      if (chunked) body = body.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n$/, '');
      try {
        resolve({ status, body: JSON.parse(body) });
      } catch (error) {
        reject(new Error(`unparsable response ${JSON.stringify(text.slice(0, 300))}: ${error}`));
      }
    });
    socket.end(request);
  });
}

/** An error envelope: the spec's fields with the HTTP status, plus a detail. */
function expectErrorEnvelope(
  answer: { status: number; body: Record<string, unknown> },
  status: number,
): string {
  expect(answer.status).toBe(status);
  expect(answer.body['status-code']).toBe(status);
  expect(typeof answer.body.message).toBe('string');
  expect(typeof answer.body.timestamp).toBe('string');
  expect(typeof answer.body.detail).toBe('string');
  return answer.body.detail as string;
}

async function expectStillServing(): Promise<void> {
  const health = await send('/');
  expect(health.status).toBe(200);
  expect(health.body.data).toEqual({});
  const predicted = await postRaw(
    '/predict',
    JSON.stringify({ texts: [{ text: 'Object detection with YOLO' }] }),
  );
  expect(predicted.status).toBe(200);
  expect((predicted.body.data as { run_id: string }).run_id).toBe(fx.runs.alpha);
}

describe('hostile parameters and paths', () => {
  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'])(
    'prototype name %s is an unknown run and an unknown argument (404), never an object property',
    async (name) => {
      expect(expectErrorEnvelope(await send(`/runs/${name}`), 404)).toContain(name);
      expect(
        expectErrorEnvelope(await postRaw(`/runs/${name}/predict`, '{"texts":[{"text":"x"}]}'), 404),
      ).toContain(name);
      expect(expectErrorEnvelope(await send(`/args/${name}`), 404)).toContain('not a training argument');
    },
  );

  // Sent raw: fetch (WHATWG URL) would itself resolve `%2e%2e` segments before sending.
  it.each(['..%2F..%2Fetc%2Fpasswd', '%2e%2e', '%2e%2e%2f%2e%2e%2fmeta.yaml', '..%5C..%5Cwindows', '%00'])(
    'encoded traversal %s as a run id is a 404',
    async (id) => {
      const answer = await raw(`GET /runs/${id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expectErrorEnvelope(answer, 404);
      const predict = await raw(
        `POST /runs/${id}/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 24\r\nConnection: close\r\n\r\n{"texts":[{"text":"a"}]}`,
      );
      expectErrorEnvelope(predict, 404);
    },
  );

  it('raw dot segments in the path are a 404 envelope, not a file', async () => {
    const answer = await raw('GET /runs/../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expectErrorEnvelope(answer, 404);
  });

  it.each(['1e309', '99999999999999999999', '1.0', '0x10', 'Infinity', 'NaN', ' 1'])(
    'top=%s is a 422 at ["query","top"]',
    async (top) => {
      const answer = await send(`/runs?top=${encodeURIComponent(top)}`);
      expect(answer.status).toBe(422);
      expect((answer.body.detail as { loc: unknown[] }[])[0]!.loc).toEqual(['query', 'top']);
    },
  );

  it('a repeated query parameter is a 422, not a silent pick', async () => {
    const top = await send('/runs?top=1&top=2');
    expect(top.status).toBe(422);
    expect((top.body.detail as { loc: unknown[] }[])[0]!.loc).toEqual(['query', 'top']);
    const filter = await send('/performance?filter=overall&filter=class');
    expect(filter.status).toBe(422);
  });

  it('a very long URL is answered: 414 for an over-long id, 404 for a long path, 431 beyond the header limit', async () => {
    expectErrorEnvelope(await send(`/runs/${'a'.repeat(8000)}`), 414);
    expectErrorEnvelope(await send(`/${'a/'.repeat(4000)}`), 404);
    expect(expectErrorEnvelope(await send('/runs/%zz'), 400)).toContain('not valid');
    const tooLong = await raw(`GET /${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(expectErrorEnvelope(tooLong, 431)).toContain('16 KiB');
  });

  it('a very long header is a 431 envelope', async () => {
    const answer = await raw(
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'c'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    );
    expectErrorEnvelope(answer, 431);
  });

  it('garbage instead of HTTP is a 400 envelope', async () => {
    expectErrorEnvelope(await raw('HELLO THERE\r\n\r\n'), 400);
  });
});

describe('hostile bodies', () => {
  it.each([
    ['a JSON string', '"texts"'],
    ['a JSON array', '[{"text": "a"}]'],
    ['a JSON number', '42'],
    ['JSON true', 'true'],
  ])('a body that is %s is a 422 at ["body"]', async (_, body) => {
    const answer = await postRaw('/predict', body);
    expect(answer.status).toBe(422);
    expect(answer.body.detail).toEqual([
      { loc: ['body'], msg: 'value is not a valid dict', type: 'type_error.dict' },
    ]);
  });

  it('a body that is JSON null is a 422 "field required"', async () => {
    const answer = await postRaw('/predict', 'null');
    expect(answer.status).toBe(422);
    expect((answer.body.detail as { type: string }[])[0]!.type).toBe('value_error.missing');
  });

  it('a __proto__ key in the body changes nothing: it is an ignored extra field', async () => {
    const answer = await postRaw('/predict', '{"__proto__": {"texts": [{"text": "x"}]}, "constructor": 1}');
    expect(answer.status).toBe(422);
    expect((answer.body.detail as { loc: unknown[] }[])[0]!.loc).toEqual(['body', 'texts']);
    expect(({} as Record<string, unknown>).texts).toBeUndefined();
  });

  it('invalid UTF-8 bytes are a 400 envelope', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"texts": [{"text": "'),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('"}]}'),
    ]);
    const head = `POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`;
    const answer = await raw(Buffer.concat([Buffer.from(head), bytes]));
    expect(expectErrorEnvelope(answer, 400)).toContain('UTF-8');
  });

  it('malformed JSON is a 422 value_error.jsondecode with the position', async () => {
    const answer = await postRaw('/predict', '{"texts": [}');
    expect(answer.status).toBe(422);
    expect((answer.body.detail as { type: string; loc: unknown[] }[])[0]).toMatchObject({
      type: 'value_error.jsondecode',
      loc: ['body', 11],
    });
  });

  it('deeply nested JSON is a 413 envelope naming the depth limit', async () => {
    const deep = `{"texts": ${'['.repeat(5000)}${']'.repeat(5000)}}`;
    expect(expectErrorEnvelope(await postRaw('/predict', deep), 413)).toContain('16 levels');
  });

  it('an oversize body is a 413 envelope naming the byte limit', async () => {
    const big = JSON.stringify({ texts: [{ text: 'x'.repeat(70 * 1024) }] });
    expect(expectErrorEnvelope(await postRaw('/predict', big), 413)).toContain(`${64 * 1024} bytes`);
  });

  it('an over-long text is a 422 max_length', async () => {
    const answer = await postRaw('/predict', JSON.stringify({ texts: [{ text: 'y'.repeat(10_001) }] }));
    expect(answer.status).toBe(422);
    expect((answer.body.detail as { type: string }[])[0]!.type).toBe('value_error.any_str.max_length');
  });

  it.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/jsonx',
  ])('content type %s is a 415 envelope', async (type) => {
    expect(expectErrorEnvelope(await postRaw('/predict', '{"texts":[{"text":"a"}]}', type), 415)).toContain(
      'application/json',
    );
  });

  it('a Content-Length that lies is a 400 envelope', async () => {
    const answer = await raw(
      'POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\nConnection: close\r\n\r\n{}',
    );
    expectErrorEnvelope(answer, 400);
  });
});

describe('afterwards', () => {
  it('the server still answers / and /predict correctly', async () => {
    await expectStillServing();
  });
});
