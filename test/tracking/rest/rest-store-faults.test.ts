/**
 * The REST adapter against a fake MLflow server (node:http on 127.0.0.1) that answers what a real one
 * rarely does on demand: MLflow's JSON quirks, broken answers, slow answers, transient failures, and
 * the credentials it receives.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  chunkBatch,
  RestTrackingStore,
  type RestTrackingStoreOptions,
} from '../../../src/tracking/rest/rest-store.js';
import { TrackingError } from '../../../src/tracking/store.js';
import { expectTrackingError } from '../contract.js';

interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}
type Handler = (request: Recorded, response: ServerResponse) => void;

class FakeMlflow {
  readonly requests: Recorded[] = [];
  handler: Handler = (_request, response) =>
    json(response, 404, { error_code: 'ENDPOINT_NOT_FOUND', message: '' });
  private readonly sockets = new Set<import('node:net').Socket>();
  private constructor(private readonly server: Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(): Promise<FakeMlflow> {
    let fake: FakeMlflow | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const url = new URL(request.url ?? '/', 'http://fake');
        const recorded: Recorded = {
          method: request.method ?? '',
          path: decodeURIComponent(url.pathname),
          query: url.searchParams,
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        fake?.requests.push(recorded);
        fake?.handler(recorded, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeMlflow(server);
    return fake;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }
  get uri(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  reset(): void {
    this.requests.length = 0;
    this.handler = (_request, response) =>
      json(response, 404, { error_code: 'ENDPOINT_NOT_FOUND', message: '' });
  }
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function json(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  response.end(typeof body === 'string' ? body : JSON.stringify(body));
}

const RUN_ID = 'a'.repeat(32);
const BIG_EXPERIMENT_ID = '412853902376191245';
const runJson = (overrides: Record<string, unknown> = {}, data?: unknown) => ({
  info: {
    run_uuid: RUN_ID,
    run_id: RUN_ID,
    experiment_id: BIG_EXPERIMENT_ID,
    run_name: 'r',
    user_id: 'u',
    status: 'FINISHED',
    start_time: 1_732_200_001_234,
    end_time: 1_732_200_012_345,
    artifact_uri: `mlflow-artifacts:/${BIG_EXPERIMENT_ID}/${RUN_ID}/artifacts`,
    lifecycle_stage: 'active',
    ...overrides,
  },
  ...(data === undefined ? {} : { data }),
});

describe('RestTrackingStore against a fake server', () => {
  let fake: FakeMlflow;
  const stores: RestTrackingStore[] = [];
  const open = (options: Partial<RestTrackingStoreOptions> = {}): RestTrackingStore => {
    const store = new RestTrackingStore({
      uri: fake.uri,
      env: {},
      maxRetries: 3,
      backoffBaseMs: 1,
      backoffMaxMs: 5,
      timeoutMs: 5_000,
      ...options,
    });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    fake = await FakeMlflow.start();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    fake.reset();
  });
  afterAll(async () => {
    await fake.close();
  });

  describe('MLflow JSON quirks', () => {
    it('omitted lists and an empty search answer `{}` mean empty', async () => {
      fake.handler = (request, response) => {
        if (request.path.endsWith('/runs/get')) return json(response, 200, { run: runJson() });
        if (request.path.endsWith('/runs/search')) return json(response, 200, {});
        if (request.path.endsWith('/metrics/get-history')) return json(response, 200, {});
        json(response, 404, {});
      };
      const store = open();
      const run = await store.getRun(RUN_ID);
      expect(run).toEqual({
        info: {
          runId: RUN_ID,
          experimentId: BIG_EXPERIMENT_ID,
          runName: 'r',
          userId: 'u',
          status: 'FINISHED',
          startTime: 1_732_200_001_234,
          endTime: 1_732_200_012_345,
          artifactUri: `mlflow-artifacts:/${BIG_EXPERIMENT_ID}/${RUN_ID}/artifacts`,
          lifecycleStage: 'active',
        },
        metrics: {},
        params: {},
        tags: {},
        // No `inputs` in the answer: no dataset inputs, no outputs.
        inputs: [],
        outputs: [],
      });
      expect(await store.searchRuns(BIG_EXPERIMENT_ID)).toEqual([]);
      expect(await store.getMetricHistory(RUN_ID, 'f1')).toEqual([]);
    });

    it('parses "NaN", "Infinity", "-Infinity" and int64 given as strings', async () => {
      const metrics = [
        { key: 'nan', value: 'NaN', timestamp: 1, step: 0 },
        { key: 'up', value: 'Infinity', timestamp: '2', step: '3' },
        { key: 'down', value: '-Infinity', timestamp: 3 },
        { key: 'plain', value: 0.25, timestamp: 4, step: 1 },
      ];
      fake.handler = (request, response) => {
        if (request.path.endsWith('/runs/get')) return json(response, 200, { run: runJson({}, { metrics }) });
        if (request.path.endsWith('/metrics/get-history')) return json(response, 200, { metrics });
        json(response, 404, {});
      };
      const store = open();
      const run = await store.getRun(RUN_ID);
      expect(run?.metrics['nan']).toBeNaN();
      expect(run?.metrics['up']).toBe(Number.POSITIVE_INFINITY);
      expect(run?.metrics['down']).toBe(Number.NEGATIVE_INFINITY);
      expect(run?.metrics['plain']).toBe(0.25);
      const history = await store.getMetricHistory(RUN_ID, 'any');
      expect(history.map((p) => [p.key, p.value, p.timestamp, p.step])).toEqual([
        ['nan', Number.NaN, 1, 0],
        ['up', Number.POSITIVE_INFINITY, 2, 3],
        ['down', Number.NEGATIVE_INFINITY, 3, 0],
        ['plain', 0.25, 4, 1],
      ]);
    });

    it('sends non-finite metric values as MLflow strings, never null', async () => {
      fake.handler = (_request, response) => json(response, 200, {});
      await open().logBatch(RUN_ID, {
        metrics: [
          { key: 'a', value: Number.NaN, timestamp: 1, step: 0 },
          { key: 'b', value: Number.POSITIVE_INFINITY, timestamp: 1, step: 0 },
          { key: 'c', value: Number.NEGATIVE_INFINITY, timestamp: 1, step: 0 },
          { key: 'd', value: 0.5, timestamp: 1, step: 0 },
        ],
      });
      expect(fake.requests).toHaveLength(1);
      const sent = JSON.parse(fake.requests[0]!.body) as { metrics: { value: unknown }[] };
      expect(sent.metrics.map((m) => m.value)).toEqual(['NaN', 'Infinity', '-Infinity', 0.5]);
      expect(fake.requests[0]!.headers['content-type']).toBe('application/json');
    });

    it('keeps 18-digit experiment ids as exact strings both ways', async () => {
      fake.handler = (request, response) => {
        if (request.path.endsWith('/experiments/get-by-name')) {
          return json(
            response,
            200,
            `{"experiment":{"experiment_id":"${BIG_EXPERIMENT_ID}","name":"best","artifact_location":"mlflow-artifacts:/${BIG_EXPERIMENT_ID}","lifecycle_stage":"active","creation_time":1732200000000,"last_update_time":1732200000000,"workspace":"default"}}`,
          );
        }
        if (request.path.endsWith('/runs/search')) return json(response, 200, { runs: [runJson()] });
        if (request.path.endsWith('/runs/create'))
          return json(response, 200, { run: runJson({ status: 'RUNNING' }) });
        json(response, 404, {});
      };
      const store = open();
      const experiment = await store.getExperimentByName('best');
      expect(experiment).toEqual({
        experimentId: BIG_EXPERIMENT_ID,
        name: 'best',
        artifactLocation: `mlflow-artifacts:/${BIG_EXPERIMENT_ID}`,
        lifecycleStage: 'active',
        creationTime: 1_732_200_000_000,
        lastUpdateTime: 1_732_200_000_000,
      });
      const runs = await store.searchRuns(BIG_EXPERIMENT_ID, {
        orderByMetric: { key: 'f1', descending: true },
        finishedOnly: true,
      });
      expect(runs[0]?.info.experimentId).toBe(BIG_EXPERIMENT_ID);
      await store.createRun(BIG_EXPERIMENT_ID, { runName: 'x', startTime: 5 });
      expect(JSON.parse(fake.requests[1]!.body)).toEqual({
        experiment_ids: [BIG_EXPERIMENT_ID],
        run_view_type: 'ACTIVE_ONLY',
        max_results: 1000,
        order_by: ['metrics.f1 DESC'],
        filter: "attributes.status = 'FINISHED'",
      });
      expect(fake.requests[2]!.body).toContain(`"experiment_id":"${BIG_EXPERIMENT_ID}"`);
      expect(JSON.parse(fake.requests[2]!.body)).toMatchObject({ run_name: 'x', start_time: 5 });
    });

    it('quotes metric keys outside the identifier grammar in order_by', async () => {
      fake.handler = (_request, response) => json(response, 200, {});
      await open().searchRuns('1', { orderByMetric: { key: 'val/f1 score', descending: false } });
      expect(JSON.parse(fake.requests[0]!.body).order_by).toEqual(['metrics.`val/f1 score` ASC']);
    });

    it('follows next_page_token through every page of runs and metric history', async () => {
      fake.handler = (request, response) => {
        const token = request.path.endsWith('/runs/search')
          ? (JSON.parse(request.body) as { page_token?: string }).page_token
          : (request.query.get('page_token') ?? undefined);
        const page = token === undefined ? 0 : Number(token.replace('t', ''));
        const next = page < 2 ? { next_page_token: `t${page + 1}` } : {};
        if (request.path.endsWith('/runs/search')) {
          return json(response, 200, {
            runs: [runJson({ run_id: `run${page}`, run_uuid: `run${page}` })],
            ...next,
          });
        }
        return json(response, 200, {
          metrics: [{ key: 'f1', value: page, timestamp: page, step: page }],
          ...next,
        });
      };
      const store = open();
      expect((await store.searchRuns('1')).map((r) => r.info.runId)).toEqual(['run0', 'run1', 'run2']);
      expect((await store.getMetricHistory(RUN_ID, 'f1')).map((p) => p.value)).toEqual([0, 1, 2]);
      const historyQuery = fake.requests.find((r) => r.path.endsWith('/get-history'))!.query;
      expect(historyQuery.get('max_results')).toBe('25000');
    });

    it('a server repeating a page token is MALFORMED, not an endless loop: runs, history, artifact listing', async () => {
      fake.handler = (request, response) => {
        if (request.path.endsWith('/runs/get')) {
          // A local artifact root that is missing here: the adapter asks the server's own listing.
          return json(response, 200, { run: runJson({ artifact_uri: '/nonexistent/tagger-artifacts' }) });
        }
        return json(response, 200, {
          runs: [runJson()],
          metrics: [{ key: 'f1', value: 1, timestamp: 1, step: 0 }],
          files: [{ path: 'model', is_dir: true }],
          next_page_token: 'same',
        });
      };
      const store = open();
      for (const call of [
        () => store.searchRuns('1'),
        () => store.getMetricHistory(RUN_ID, 'f1'),
        () => store.listArtifacts(RUN_ID),
      ]) {
        const error = await expectTrackingError(call, 'MALFORMED');
        expect(error.message).toMatch(/repeated the page token 'same'/);
      }
    });
  });

  describe('malformed answers', () => {
    it('an HTML 404 page is MALFORMED (wrong URI or prefix), never "run not found"', async () => {
      fake.handler = (_request, response) => {
        response.writeHead(404, { 'Content-Type': 'text/html' });
        response.end('<!doctype html><title>Not Found</title><h1>Not Found</h1>');
      };
      const error = await expectTrackingError(() => open().getRun(RUN_ID), 'MALFORMED');
      expect(error.message).toContain('text/html');
      expect(error.message).toContain(fake.uri);
      expect(error.message).toContain('MLflow tracking server');
    });

    it('garbage JSON, empty bodies and truncated JSON with 200 are MALFORMED', async () => {
      for (const body of ['this is not json', '', '{"run": {"info": ']) {
        fake.handler = (_request, response) => {
          response.writeHead(200, { 'Content-Type': 'application/json' });
          response.end(body);
        };
        const error = await expectTrackingError(() => open().getRun(RUN_ID), 'MALFORMED');
        expect(error.message).toMatch(/invalid JSON|empty body/);
      }
    });

    it('wrong shapes and missing fields are MALFORMED naming the field', async () => {
      const cases: [string, unknown, string][] = [
        [
          '/experiments/get-by-name',
          // Raw text: an 18-digit id sent as a JSON number has already lost digits.
          '{"experiment": {"experiment_id": 412853902376191245, "name": "x"}}',
          'experiment_id',
        ],
        ['/runs/get', { run: { info: { ...runJson().info, status: undefined } } }, 'status'],
        ['/runs/get', { run: runJson({ start_time: 'yesterday' }) }, 'start_time'],
        [
          '/runs/get',
          { run: runJson({}, { metrics: [{ key: 'f1', value: 'high', timestamp: 1 }] }) },
          'value',
        ],
        ['/runs/get', { run: runJson({}, { params: 'lr=1' }) }, 'params'],
        ['/runs/get', { run: runJson({ lifecycle_stage: 'purged' }) }, 'lifecycle_stage'],
        ['/runs/get', [], '/'],
        ['/runs/search', { runs: {} }, 'runs'],
      ];
      for (const [path, body, field] of cases) {
        fake.handler = (_request, response) => json(response, 200, body);
        const store = open();
        const call =
          path === '/experiments/get-by-name'
            ? () => store.getExperimentByName('x')
            : path === '/runs/search'
              ? () => store.searchRuns('1')
              : () => store.getRun(RUN_ID);
        const error = await expectTrackingError(call, 'MALFORMED');
        expect(error.message).toContain(field);
      }
    });

    it('a response cut off mid-body is retried, then UNAVAILABLE', async () => {
      fake.handler = (_request, response) => {
        response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
        response.write('{"run": {"info": {');
        setTimeout(() => response.socket?.destroy(), 20);
      };
      const error = await expectTrackingError(() => open({ maxRetries: 1 }).getRun(RUN_ID), 'UNAVAILABLE');
      expect(error.message).toContain('gave up after 2 attempts');
      expect(fake.requests).toHaveLength(2);
    });

    it('a server that does not answer in time gives a timeout error', async () => {
      fake.handler = () => {
        // Never answers; the socket is destroyed when the fake closes.
      };
      const error = await expectTrackingError(
        () => open({ timeoutMs: 200, maxRetries: 0 }).getRun(RUN_ID),
        'UNAVAILABLE',
      );
      expect(error.message).toContain('within 200 ms');
      expect(error.message).toContain('MLFLOW_HTTP_REQUEST_TIMEOUT');
    });

    it('MLFLOW_HTTP_REQUEST_TIMEOUT (seconds) and MLFLOW_HTTP_REQUEST_MAX_RETRIES apply', async () => {
      fake.handler = () => {};
      const store = new RestTrackingStore({
        uri: fake.uri,
        env: { MLFLOW_HTTP_REQUEST_TIMEOUT: '0.2', MLFLOW_HTTP_REQUEST_MAX_RETRIES: '1' },
        backoffBaseMs: 1,
      });
      stores.push(store);
      const error = await expectTrackingError(() => store.getRun(RUN_ID), 'UNAVAILABLE');
      expect(error.message).toContain('within 200 ms');
      expect(fake.requests).toHaveLength(2);
      expect(
        () => new RestTrackingStore({ uri: fake.uri, env: { MLFLOW_HTTP_REQUEST_TIMEOUT: 'soon' } }),
      ).toThrow(/MLFLOW_HTTP_REQUEST_TIMEOUT='soon'/);
    });
  });

  describe('retries', () => {
    it('retries 503 until it succeeds', async () => {
      let calls = 0;
      fake.handler = (_request, response) => {
        calls += 1;
        if (calls <= 2) return json(response, 503, 'unavailable');
        json(response, 200, { run: runJson() });
      };
      expect((await open().getRun(RUN_ID))?.info.runId).toBe(RUN_ID);
      expect(fake.requests).toHaveLength(3);
    });

    it('honours Retry-After on 429 instead of its own (here: one minute) backoff', async () => {
      let calls = 0;
      fake.handler = (_request, response) => {
        calls += 1;
        if (calls === 1)
          return json(
            response,
            429,
            { error_code: 'REQUEST_LIMIT_EXCEEDED', message: 'slow down' },
            { 'Retry-After': '0' },
          );
        json(response, 200, { run: runJson() });
      };
      // Without Retry-After the first retry would wait ≥ 60 s and the test would time out.
      const store = open({ backoffBaseMs: 60_000, backoffMaxMs: 60_000 });
      expect((await store.getRun(RUN_ID))?.info.runId).toBe(RUN_ID);
      expect(fake.requests).toHaveLength(2);
    });

    it('gives up after maxRetries with the last error', async () => {
      fake.handler = (_request, response) => json(response, 502, '<html>bad gateway</html>');
      const error = await expectTrackingError(() => open({ maxRetries: 2 }).getRun(RUN_ID), 'UNAVAILABLE');
      expect(error.message).toContain('HTTP 502');
      expect(error.message).toContain('gave up after 3 attempts');
      expect(fake.requests).toHaveLength(3);
    });

    it('does not retry client errors', async () => {
      fake.handler = (_request, response) =>
        json(response, 400, {
          error_code: 'INVALID_PARAMETER_VALUE',
          message: 'Changing param values is not allowed.',
        });
      const error = await expectTrackingError(
        () => open().logBatch(RUN_ID, { params: { a: 'b' } }),
        'INVALID_ARGUMENT',
      );
      expect(error.message).toContain('Changing param values is not allowed.');
      expect(fake.requests).toHaveLength(1);
    });

    it('never re-sends runs/create after an ambiguous failure (500, timeout), but does after 503/429', async () => {
      fake.handler = (_request, response) =>
        json(response, 500, { error_code: 'INTERNAL_ERROR', message: 'db locked' });
      const failed = await expectTrackingError(() => open().createRun('1', { runName: 'x' }), 'UNAVAILABLE');
      expect(failed.message).toContain('db locked');
      expect(fake.requests).toHaveLength(1);

      fake.reset();
      fake.handler = () => {};
      const timedOut = await expectTrackingError(
        () => open({ timeoutMs: 200 }).createRun('1', { runName: 'x' }),
        'UNAVAILABLE',
      );
      expect(timedOut.message).toContain('may have been applied');
      expect(fake.requests).toHaveLength(1);

      fake.reset();
      let calls = 0;
      fake.handler = (_request, response) => {
        calls += 1;
        if (calls === 1) return json(response, 503, 'starting');
        if (calls === 2) return json(response, 429, 'busy');
        json(response, 200, { run: runJson({ status: 'RUNNING' }) });
      };
      expect((await open().createRun('1', { runName: 'x' })).info.runId).toBe(RUN_ID);
      expect(fake.requests).toHaveLength(3);
    });

    it('connection refused is retried, then UNAVAILABLE with a clear message', async () => {
      const closed = await FakeMlflow.start();
      const uri = closed.uri;
      await closed.close();
      const store = new RestTrackingStore({ uri, env: {}, maxRetries: 2, backoffBaseMs: 1, backoffMaxMs: 5 });
      stores.push(store);
      const error = await expectTrackingError(() => store.getExperimentByName('best'), 'UNAVAILABLE');
      expect(error.message).toContain(`cannot reach ${uri}`);
      expect(error.message).toContain('ECONNREFUSED');
      expect(error.message).toContain('gave up after 3 attempts');
      // Creates are safe to re-send when the connection was refused: nothing reached the server.
      const create = await expectTrackingError(() => store.createRun('1', { runName: 'x' }), 'UNAVAILABLE');
      expect(create.message).toContain('gave up after 3 attempts');
    });

    it('waitUntilReady waits for /health to turn 200', async () => {
      let calls = 0;
      fake.handler = (request, response) => {
        calls += 1;
        if (request.path !== '/health') return json(response, 404, {});
        response.writeHead(calls < 3 ? 503 : 200, { 'Content-Type': 'text/plain' });
        response.end(calls < 3 ? 'starting' : 'OK');
      };
      await open().waitUntilReady(30_000);
      expect(fake.requests.filter((r) => r.path === '/health')).toHaveLength(3);
    });
  });

  describe('credentials', () => {
    const artifactRoutes: Handler = (request, response) => {
      if (request.path.endsWith('/runs/get')) return json(response, 200, { run: runJson() });
      if (request.path.startsWith('/api/2.0/mlflow-artifacts/artifacts/')) {
        if (request.method === 'PUT') return json(response, 200, '');
        response.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        return response.end('bytes');
      }
      if (request.path === '/api/2.0/mlflow-artifacts/artifacts') return json(response, 200, {});
      json(response, 404, {});
    };
    const exercise = async (store: RestTrackingStore): Promise<void> => {
      await store.getRun(RUN_ID);
      await store.logArtifact(RUN_ID, 'a.txt', new Uint8Array([1]));
      expect(new TextDecoder().decode(await store.readArtifact(RUN_ID, 'a.txt'))).toBe('bytes');
      await store.listArtifacts(RUN_ID);
    };

    it('sends Bearer MLFLOW_TRACKING_TOKEN on tracking and artifact calls', async () => {
      fake.handler = artifactRoutes;
      await exercise(open({ env: { MLFLOW_TRACKING_TOKEN: 'tok-123' } }));
      expect(fake.requests.length).toBe(4);
      for (const request of fake.requests) expect(request.headers.authorization).toBe('Bearer tok-123');
    });

    it('sends Basic for username/password, which wins over a token', async () => {
      fake.handler = artifactRoutes;
      await exercise(
        open({
          env: {
            MLFLOW_TRACKING_USERNAME: 'alice',
            MLFLOW_TRACKING_PASSWORD: 'p@ss:w0rd',
            MLFLOW_TRACKING_TOKEN: 't',
          },
        }),
      );
      const expected = `Basic ${Buffer.from('alice:p@ss:w0rd').toString('base64')}`;
      for (const request of fake.requests) expect(request.headers.authorization).toBe(expected);
    });

    it('uses credentials embedded in the URI but never shows them', async () => {
      fake.handler = artifactRoutes;
      const store = open({ uri: `http://bob:s%40cret@127.0.0.1:${fake.port}` });
      expect(store.displayUri).toBe(fake.uri);
      await exercise(store);
      const expected = `Basic ${Buffer.from('bob:s@cret').toString('base64')}`;
      for (const request of fake.requests) expect(request.headers.authorization).toBe(expected);
    });

    it('sends no Authorization header without credentials', async () => {
      fake.handler = artifactRoutes;
      await exercise(open());
      for (const request of fake.requests) expect(request.headers.authorization).toBeUndefined();
    });

    it('401 is UNAUTHENTICATED and 403 PERMISSION_DENIED; no secret appears in any message', async () => {
      const secrets = { MLFLOW_TRACKING_USERNAME: 'alice', MLFLOW_TRACKING_PASSWORD: 'hunter2-secret' };
      const basic = Buffer.from('alice:hunter2-secret').toString('base64');
      const messages: string[] = [];
      const collect = async (fn: () => Promise<unknown>, code: string): Promise<TrackingError> => {
        const error = await expectTrackingError(fn, code);
        messages.push(error.message, String(error.stack));
        return error;
      };

      fake.handler = (_request, response) => {
        response.writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Basic realm="mlflow"' });
        response.end('You are not authenticated.');
      };
      const unauthenticated = await collect(() => open({ env: secrets }).getRun(RUN_ID), 'UNAUTHENTICATED');
      expect(unauthenticated.message).toContain('MLFLOW_TRACKING_USERNAME');
      expect(unauthenticated.message).toContain('MLFLOW_TRACKING_TOKEN');
      await collect(
        () => open({ env: { MLFLOW_TRACKING_TOKEN: 'tok-very-secret' } }).getRun(RUN_ID),
        'UNAUTHENTICATED',
      );
      await collect(
        () => open({ uri: `http://alice:uri-secret@127.0.0.1:${fake.port}` }).getRun(RUN_ID),
        'UNAUTHENTICATED',
      );

      fake.handler = (_request, response) => {
        response.writeHead(403, { 'Content-Type': 'text/plain' });
        response.end('Permission denied');
      };
      await collect(() => open({ env: secrets }).logBatch(RUN_ID, { tags: { a: 'b' } }), 'PERMISSION_DENIED');

      // A server echoing the credentials back in its error message is redacted.
      fake.handler = (request, response) =>
        json(response, 400, {
          error_code: 'INVALID_PARAMETER_VALUE',
          message: `bad header ${request.headers.authorization} for hunter2-secret`,
        });
      await collect(() => open({ env: secrets }).getRun(RUN_ID), 'INVALID_ARGUMENT');
      // Failures without a server answer too.
      fake.handler = () => {};
      await collect(
        () => open({ env: secrets, timeoutMs: 100, maxRetries: 0 }).getRun(RUN_ID),
        'UNAVAILABLE',
      );

      expect(messages.length).toBeGreaterThan(0);
      for (const message of messages) {
        for (const secret of ['hunter2-secret', basic, 'tok-very-secret', 'uri-secret']) {
          expect(message).not.toContain(secret);
        }
      }
    });

    it('does not follow redirects (they would carry the Authorization header elsewhere)', async () => {
      fake.handler = (_request, response) => {
        response.writeHead(302, { Location: 'http://127.0.0.1:1/elsewhere' });
        response.end();
      };
      await expectTrackingError(
        () => open({ env: { MLFLOW_TRACKING_TOKEN: 't' } }).getRun(RUN_ID),
        'MALFORMED',
      );
      expect(fake.requests).toHaveLength(1);
    });
  });

  describe('artifact URIs', () => {
    it('lists proxied artifacts as run-relative paths (the proxy answers basenames)', async () => {
      fake.handler = (request, response) => {
        if (request.path.endsWith('/runs/get')) return json(response, 200, { run: runJson() });
        if (request.path === '/api/2.0/mlflow-artifacts/artifacts') {
          return json(response, 200, {
            files: [
              { path: 'MLmodel', is_dir: false, file_size: '412' },
              { path: 'data', is_dir: true },
            ],
          });
        }
        json(response, 404, {});
      };
      expect(await open().listArtifacts(RUN_ID, 'model')).toEqual([
        { path: 'model/MLmodel', isDir: false, size: 412 },
        { path: 'model/data', isDir: true, size: null },
      ]);
      expect(fake.requests[1]!.query.get('path')).toBe(`${BIG_EXPERIMENT_ID}/${RUN_ID}/artifacts/model`);
    });

    it('keeps a path prefix of the tracking URI for API and artifact calls', async () => {
      fake.handler = (request, response) => {
        if (request.path === '/mlflow/api/2.0/mlflow/runs/get')
          return json(response, 200, { run: runJson() });
        if (
          request.path ===
          `/mlflow/api/2.0/mlflow-artifacts/artifacts/${BIG_EXPERIMENT_ID}/${RUN_ID}/artifacts/m/x.bin`
        ) {
          response.writeHead(200);
          return response.end('ok');
        }
        json(response, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no' });
      };
      const store = open({ uri: `${fake.uri}/mlflow` });
      expect(new TextDecoder().decode(await store.readArtifact(RUN_ID, 'm/x.bin'))).toBe('ok');
    });

    it('resolves mlflow-artifacts://host:port/... to that host', async () => {
      const other = await FakeMlflow.start();
      try {
        other.handler = (request, response) => {
          response.writeHead(
            request.path === '/api/2.0/mlflow-artifacts/artifacts/bucket/r/artifacts/f.txt' ? 200 : 404,
          );
          response.end('from other');
        };
        fake.handler = (_request, response) =>
          json(response, 200, {
            run: runJson({ artifact_uri: `mlflow-artifacts://127.0.0.1:${other.port}/bucket/r/artifacts` }),
          });
        expect(new TextDecoder().decode(await open().readArtifact(RUN_ID, 'f.txt'))).toBe('from other');
        expect(other.requests).toHaveLength(1);
      } finally {
        await other.close();
      }
    });

    it('a missing artifact is NOT_FOUND naming the artifact URI', async () => {
      fake.handler = (request, response) => {
        if (request.path.endsWith('/runs/get')) return json(response, 200, { run: runJson() });
        json(response, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'No such artifact' });
      };
      const error = await expectTrackingError(() => open().readArtifact(RUN_ID, 'model/w.bin'), 'NOT_FOUND');
      expect(error.message).toContain(
        `mlflow-artifacts:/${BIG_EXPERIMENT_ID}/${RUN_ID}/artifacts/model/w.bin`,
      );
    });

    it('a file the proxy fails with 500 is NOT_FOUND at once when its folder does not list it (S3 behind the proxy)', async () => {
      // MLflow's proxy turns S3's "no such key" into an unhandled error: 500, which would be retried.
      let downloads = 0;
      const listed = [{ path: 'args.json', is_dir: false, file_size: '2' }];
      fake.handler = (request, response) => {
        if (request.path.endsWith('/runs/get')) return json(response, 200, { run: runJson() });
        if (request.path === '/api/2.0/mlflow-artifacts/artifacts')
          return json(response, 200, { files: listed });
        downloads++;
        response.writeHead(500, { 'Content-Type': 'text/html' });
        response.end('<h1>Internal Server Error</h1>');
      };
      const store = open({ maxRetries: 5, backoffBaseMs: 200, backoffMaxMs: 200 });
      const error = await expectTrackingError(
        () => store.readArtifact(RUN_ID, 'reference_profile.json'),
        'NOT_FOUND',
      );
      expect(error.message).toContain('reference_profile.json does not exist');
      // Not retried: one download, then the listing.
      expect(downloads).toBe(1);
      // A file that is listed is a failing server: retried as before, then UNAVAILABLE.
      downloads = 0;
      await expectTrackingError(() => store.readArtifact(RUN_ID, 'args.json'), 'UNAVAILABLE');
      expect(downloads).toBe(6);
      // Only a 500 asks the listing: a 503 (the server says it is busy) is retried without it.
      const listings = () => fake.requests.filter((r) => r.path === '/api/2.0/mlflow-artifacts/artifacts');
      const before = listings().length;
      fake.handler = (request, response) => {
        if (request.path.endsWith('/runs/get')) return json(response, 200, { run: runJson() });
        if (request.path === '/api/2.0/mlflow-artifacts/artifacts') return json(response, 200, { files: [] });
        json(response, 503, { error_code: 'TEMPORARILY_UNAVAILABLE', message: 'busy' });
      };
      await expectTrackingError(() => store.readArtifact(RUN_ID, 'reference_profile.json'), 'UNAVAILABLE');
      expect(listings().length).toBe(before);
    });

    it('file:// roots on another machine and unknown schemes are named in the error', async () => {
      for (const uri of [
        'file://build-host/srv/mlruns/1/r/artifacts',
        'gs://bucket/1/r/artifacts',
        'http://example.invalid/files',
      ]) {
        fake.handler = (_request, response) => json(response, 200, { run: runJson({ artifact_uri: uri }) });
        const error = await expectTrackingError(() => open().readArtifact(RUN_ID, 'x.txt'), 'UNSUPPORTED');
        expect(error.message).toContain(uri);
      }
    });
  });

  it('rejects non-http tracking URIs', () => {
    expect(() => new RestTrackingStore({ uri: 'sqlite:///mlflow.db' })).toThrow(TrackingError);
  });
});

describe('chunkBatch', () => {
  it('keeps every request within MLflow limits and sends params first', () => {
    const chunks = chunkBatch({
      params: Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`p${i}`, 'v'])),
      tags: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`t${i}`, 'v'])),
      metrics: Array.from({ length: 1500 }, (_, i) => ({ key: 'm', value: i, timestamp: i, step: i })),
    });
    for (const chunk of chunks) {
      expect(chunk.params.length).toBeLessThanOrEqual(100);
      expect(chunk.tags.length).toBeLessThanOrEqual(100);
      expect(chunk.metrics.length).toBeLessThanOrEqual(1000);
      expect(chunk.params.length + chunk.tags.length + chunk.metrics.length).toBeLessThanOrEqual(1000);
      expect(Buffer.byteLength(JSON.stringify(chunk))).toBeLessThan(1_000_000);
    }
    expect(chunks.flatMap((c) => c.params)).toHaveLength(201);
    expect(chunks.flatMap((c) => c.tags)).toHaveLength(101);
    expect(chunks.flatMap((c) => c.metrics).map((m) => m.value)).toEqual(
      Array.from({ length: 1500 }, (_, i) => i),
    );
    const firstMetricChunk = chunks.findIndex((c) => c.metrics.length > 0);
    expect(chunks.slice(firstMetricChunk + 1).every((c) => c.params.length === 0)).toBe(true);
  });

  it('splits by size: 300 params of 5000 characters stay under 1 MB per request', () => {
    const chunks = chunkBatch({
      params: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, 'x'.repeat(5000)])),
    });
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    for (const chunk of chunks) expect(Buffer.byteLength(JSON.stringify(chunk))).toBeLessThan(1_000_000);
  });

  it('refuses non-integer timestamps and steps', () => {
    expect(() => chunkBatch({ metrics: [{ key: 'm', value: 1, timestamp: 1.5, step: 0 }] })).toThrow(
      /timestamp of metric 'm' must be an integer/,
    );
  });
});
