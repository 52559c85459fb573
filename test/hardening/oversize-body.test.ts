/**
 * A body over the byte limit gets its 413 and the message whichever way the client writes: a client that
 * writes its whole body before it reads anything (Python's urllib, many SDKs; here a raw socket that
 * waits for every byte to be written first, with a Content-Length and chunked), curl (which reads early),
 * and Python's urllib itself. Before the lingering close (src/http/lingering-close.ts) the server closed
 * the socket right after its answer and the rest of the body met a reset: a broken pipe, no 413.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { LINGER_IDLE_MS } from '../../src/http/lingering-close.js';
import { locateBinary, venvPython } from '../support/components.js';
import { runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';
import { useTempDir } from '../support/temp-dir.js';

const run = promisify(execFile);
const fx = useServingFixture();
const tmp = useTempDir('tagger-oversize-');
let app: TaggerApp;
let port: number;
const LIMIT = 1024 * 1024; // the default TAGGER_MAX_BODY_BYTES

beforeAll(async () => {
  ({ app } = await runsApp(fx.store));
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  port = Number(new URL(base).port);
});

afterAll(async () => {
  await app?.close();
});

/** A predict body of about `bytes` bytes: many short texts, as a client batching too much sends. */
function predictBody(bytes: number): Buffer {
  const item = '{"text":"Object detection with YOLO on drone images"},';
  const items = item.repeat(Math.ceil(bytes / item.length)).slice(0, -1);
  return Buffer.from(`{"texts":[${items}]}`);
}

const write = (socket: Socket, chunk: Buffer | string): Promise<void> =>
  new Promise((done, fail) => socket.write(chunk, (error) => (error ? fail(error) : done())));

interface WriteFirstAnswer {
  /** What writing the body ended with (null: every byte written). */
  writeError: string | null;
  status: number;
  body: Record<string, unknown> | null;
  /** How the server ended the connection: 'end' (FIN) or the error a reset gave. */
  ending: string;
}

/**
 * A client that writes the request line, the headers and the whole body, waiting for each write to be
 * taken, and only then reads the answer (never reading while it writes, as urllib does).
 */
function writeFirst(body: Buffer, chunked: boolean): Promise<WriteFirstAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(60_000, () => socket.destroy(new Error('the write-first client timed out')));
    socket.once('connect', async () => {
      let writeError: string | null = null;
      try {
        const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`;
        await write(
          socket,
          `POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`,
        );
        for (let at = 0; at < body.length; at += 256 * 1024) {
          const piece = body.subarray(at, at + 256 * 1024);
          await write(
            socket,
            chunked
              ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
              : piece,
          );
        }
        if (chunked) await write(socket, '0\r\n\r\n');
      } catch (error) {
        writeError = (error as NodeJS.ErrnoException).code ?? String(error);
      }
      const chunks: Buffer[] = [];
      let ending = 'end';
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', (error: NodeJS.ErrnoException) => {
        ending = error.code ?? String(error);
      });
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const [head = '', ...rest] = text.split('\r\n\r\n');
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
        let parsed: Record<string, unknown> | null = null;
        try {
          parsed = JSON.parse(rest.join('\r\n\r\n'));
        } catch {
          parsed = null;
        }
        resolve({ writeError, status, body: parsed, ending });
      });
      socket.end();
    });
    socket.once('error', (error) => {
      if (!socket.connecting) return;
      reject(error);
    });
  });
}

const LIMIT_MESSAGE = `the request body is larger than the limit of ${LIMIT} bytes (TAGGER_MAX_BODY_BYTES)`;

describe('an over-size body written whole before the client reads', () => {
  it.each([
    ['2 MB with a Content-Length', 2_000_000, false],
    ['50 MB with a Content-Length', 50_000_000, false],
    ['2 MB chunked', 2_000_000, true],
    ['50 MB chunked', 50_000_000, true],
  ])('%s: every byte is taken, then the 413 with its message', async (_, bytes, chunked) => {
    const answer = await writeFirst(predictBody(bytes), chunked);
    expect(answer.writeError).toBeNull();
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ 'status-code': 413, detail: LIMIT_MESSAGE });
    expect(answer.ending).toBe('end');
  });

  it('curl gets the 413 with its message', async (context) => {
    const curl = locateBinary('curl', '/usr/bin/curl', 'install it with `apt-get install curl`');
    if (curl === null) return context.skip();
    const file = join(tmp.path, 'big.json');
    writeFileSync(file, predictBody(2_000_000));
    const { stdout } = await run(curl, [
      '-sS',
      '-H',
      'content-type: application/json',
      '--data-binary',
      `@${file}`,
      '-w',
      '\n%{http_code}',
      `http://127.0.0.1:${port}/predict`,
    ]);
    const [body = '', status] = stdout.split('\n');
    expect(status).toBe('413');
    expect(JSON.parse(body)).toMatchObject({ detail: LIMIT_MESSAGE });
  });

  it("Python's urllib sending 200,000 texts gets the 413, not a broken pipe", async (context) => {
    const python = venvPython();
    if (python === null) return context.skip();
    const script = [
      'import json, sys, urllib.request, urllib.error',
      'body = json.dumps({"texts": [{"text": "a short text"}] * 200000}).encode()',
      `request = urllib.request.Request("http://127.0.0.1:${port}/predict", data=body, headers={"content-type": "application/json"})`,
      'try:',
      '    urllib.request.urlopen(request, timeout=60)',
      '    print("200")',
      'except urllib.error.HTTPError as error:',
      '    print(error.code, json.loads(error.read())["detail"])',
    ].join('\n');
    const { stdout } = await run(python, ['-c', script]);
    expect(stdout.trim()).toBe(`413 ${LIMIT_MESSAGE}`);
  });

  it('a client that stops sending part-way is closed once it has sent nothing for a while', async () => {
    const connections = (): Promise<number> =>
      new Promise((done, fail) => app.server.getConnections((error, n) => (error ? fail(error) : done(n))));
    expect(await connections()).toBe(0);
    // Half-open allowed: the server's FIN after its answer does not end this side (Node's default would).
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    await new Promise((done) => socket.once('connect', done));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    const ended = new Promise<void>((done) => socket.once('end', () => done()));
    // Announces 50 MB, sends 10 KB, then neither sends nor ends.
    await write(
      socket,
      `POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n${'x'.repeat(10_000)}`,
    );
    await ended;
    const answered = Date.now();
    expect(Buffer.concat(chunks).toString('utf8')).toMatch(/^HTTP\/1\.1 413 /);
    expect(await connections()).toBe(1);
    while ((await connections()) > 0) await new Promise((done) => setTimeout(done, 100));
    expect(Date.now() - answered).toBeGreaterThanOrEqual(LINGER_IDLE_MS - 500);
    socket.destroy();
  });

  it('afterwards the server answers a predict request', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ texts: [{ text: 'Object detection with YOLO' }] }),
    });
    expect(response.status).toBe(200);
  });
});
