/**
 * Serve configuration and the process around the app: flags/env resolution, startup order (the port opens
 * only after loading), startup failure messages and exit codes, graceful shutdown.
 */
import { spawn } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { ReloadResult } from '../../src/served-models/index.js';
import { resolveServeConfig, SERVE_DEFAULTS } from '../../src/server/config.js';
import {
  type RunningServer,
  runServeCommand,
  StartupError,
  serveUntilSignalled,
  startServer,
} from '../../src/server/server.js';
import { defaultEncoderThreads, defaultWorkers } from '../../src/server/worker-count.js';
import { defaultTrackingUri, type TrackingStore } from '../../src/tracking/index.js';
import { REPO_ROOT } from '../support/components.js';
import { instrumentStore } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { logServedRun, predictBody, servedRunId } from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();

describe('resolveServeConfig', () => {
  it('uses the documented defaults', () => {
    expect(resolveServeConfig({}, {})).toEqual({
      mode: 'runs',
      // sqlite:///mlflow.db, or ./mlruns where that folder holds experiments (test/tracking/file/file-store.test.ts)
      trackingUri: defaultTrackingUri(),
      experiment: 'best',
      host: '127.0.0.1',
      port: 8000,
      logLevel: 'info',
      modelCacheSize: 4,
      pinRunId: null,
      modelUri: null,
      gates: {
        minTestSize: 30,
        minTags: 2,
        allowIncomparable: false,
        minBehaviouralPassRate: 0,
        allowTestLeak: false,
      },
      storeWaitMs: 30_000,
      reloadIntervalMs: 60_000,
      shutdownDelayMs: 5_000,
      shutdownGraceMs: 10_000,
      workers: defaultWorkers().workers,
      http: undefined,
      encoders: {
        threads: defaultEncoderThreads(defaultWorkers().workers),
        maxBatch: 32,
        maxWaitMs: 0,
        maxQueue: 256,
        maxQueueTokens: 8_192,
        maxRequestTokens: 65_536,
        nice: 0,
      },
      allowDegraded: false,
      // Records go into the tracking database when it is one (src/monitoring/open.ts).
      monitoring: {
        storeUri:
          defaultTrackingUri() === 'sqlite:///mlflow.db'
            ? 'sqlite:///mlflow.db'
            : 'sqlite:///tagger-records.db',
        storeDisplayUri:
          defaultTrackingUri() === 'sqlite:///mlflow.db'
            ? 'sqlite:///mlflow.db'
            : 'sqlite:///tagger-records.db',
        sampleRate: 1,
        keepText: true,
        bufferSize: 10_000,
        flushMs: 1_000,
        retentionDays: 30,
        retentionRows: 5_000_000,
        sinkUrl: null,
        windowSeconds: 3_600,
        windowPredictions: 5_000,
        feedbackWindowSeconds: 604_800,
        minPredictions: 200,
        driftThreshold: 0.2,
        intervalMs: 10_000,
      },
    });
    expect(SERVE_DEFAULTS.host).toBe('127.0.0.1');
  });

  it('reads every setting from the environment, and flags win over it', () => {
    const env = {
      MLFLOW_TRACKING_URI: 'http://127.0.0.1:5000',
      TAGGER_EXPERIMENT: 'exp',
      TAGGER_HOST: '0.0.0.0',
      TAGGER_PORT: '9000',
      TAGGER_MODEL_CACHE_SIZE: '0',
      TAGGER_STORE_WAIT_MS: '500',
      TAGGER_LOG_LEVEL: 'WARN',
      TAGGER_RELOAD_INTERVAL_MS: '0',
      TAGGER_SHUTDOWN_GRACE_MS: '2500',
    };
    expect(resolveServeConfig({}, env)).toMatchObject({
      mode: 'runs',
      trackingUri: 'http://127.0.0.1:5000',
      experiment: 'exp',
      host: '0.0.0.0',
      port: 9000,
      modelCacheSize: 0,
      storeWaitMs: 500,
      logLevel: 'warn',
      reloadIntervalMs: 0,
      shutdownGraceMs: 2500,
    });
    expect(resolveServeConfig({ reloadInterval: '250' }, env)).toMatchObject({ reloadIntervalMs: 250 });
    expect(resolveServeConfig({ model: 'd' }, env)).toMatchObject({ mode: 'model', shutdownGraceMs: 2500 });
    expect(
      resolveServeConfig({ trackingUri: '/tmp/x', experiment: 'e2', host: '::1', port: '8001' }, env),
    ).toMatchObject({ trackingUri: '/tmp/x', experiment: 'e2', host: '::1', port: 8001 });
    expect(resolveServeConfig({}, { ...env, TAGGER_PORT: '' }).port).toBe(8000);
  });

  it('parses --model-uri, and refuses it with a pinned run, an explicit experiment or a bad URI', () => {
    expect(resolveServeConfig({ modelUri: 'models:/tagger@champion' }, {})).toMatchObject({
      mode: 'runs',
      modelUri: { kind: 'alias', name: 'tagger', alias: 'champion', uri: 'models:/tagger@champion' },
    });
    expect(
      resolveServeConfig({}, { TAGGER_MODEL_URI: 'runs:/abc123/model', TAGGER_EXPERIMENT: 'x' }),
    ).toMatchObject({
      modelUri: { kind: 'run', runId: 'abc123' },
    });
    expect(() => resolveServeConfig({ modelUri: 'models:/tagger/2', runId: 'abc' }, {})).toThrow(
      /--model-uri chooses the served run through the Model Registry, so --run-id cannot be used with it/,
    );
    expect(() => resolveServeConfig({ modelUri: 'models:/tagger/2', experiment: 'e' }, {})).toThrow(
      /--experiment/,
    );
    expect(() => resolveServeConfig({ modelUri: 'models:/tagger/Production' }, {})).toThrow(
      /stages are deprecated: point an alias at the version/,
    );
    expect(() => resolveServeConfig({ modelUri: 's3://bucket/model' }, {})).toThrow(
      /--model-uri: model URI 's3:\/\/bucket\/model' is not a models:\/ or runs:\/ URI/,
    );
    expect(() => resolveServeConfig({ model: 'dir', modelUri: 'models:/t/1' }, {})).toThrow(/--model-uri/);
  });

  it('switches to single-model mode with --model or TAGGER_MODEL', () => {
    expect(resolveServeConfig({ model: 'dir' }, {})).toMatchObject({ mode: 'model', modelDir: 'dir' });
    expect(resolveServeConfig({}, { TAGGER_MODEL: 'd2', MLFLOW_TRACKING_URI: 'x' })).toMatchObject({
      mode: 'model',
      modelDir: 'd2',
    });
  });

  it.each([
    [
      { port: 'abc' },
      {},
      '--port must be a TCP port (0 picks a free one), an integer from 0 to 65535; got "abc"',
    ],
    [{ port: '70000' }, {}, '--port must be a TCP port'],
    [{ port: '-1' }, {}, '--port must be a TCP port'],
    [{ port: '80.5' }, {}, '--port must be a TCP port'],
    [{}, { TAGGER_PORT: 'http' }, 'TAGGER_PORT must be a TCP port'],
    [
      {},
      { TAGGER_MODEL_CACHE_SIZE: 'many' },
      'TAGGER_MODEL_CACHE_SIZE must be the number of run models to keep loaded',
    ],
    [{}, { TAGGER_STORE_WAIT_MS: '1s' }, 'TAGGER_STORE_WAIT_MS must be a wait in milliseconds'],
    [{}, { TAGGER_LOG_LEVEL: 'loud' }, 'TAGGER_LOG_LEVEL must be one of'],
    [
      {},
      { TAGGER_RELOAD_INTERVAL_MS: '1m' },
      'TAGGER_RELOAD_INTERVAL_MS must be an interval in milliseconds',
    ],
    [{ reloadInterval: '-5' }, {}, '--reload-interval must be an interval in milliseconds'],
    [{}, { TAGGER_SHUTDOWN_GRACE_MS: 'soon' }, 'TAGGER_SHUTDOWN_GRACE_MS must be a grace period'],
    [
      { model: 'd', experiment: 'x' },
      {},
      '--model serves one saved model without a tracking store, so --experiment cannot',
    ],
    [{ host: 'a b' }, {}, '--host must be a host name or IP address (no spaces); got "a b"'],
  ])('refuses %j %j with a clear message', (flags, env, message) => {
    expect(() => resolveServeConfig(flags, env)).toThrow(StartupError);
    expect(() => resolveServeConfig(flags, env)).toThrow(message);
  });
});

/** Resolves 'open' if a TCP connection to the port succeeds, 'refused' if it is refused. */
function probe(port: number): Promise<'open' | 'refused'> {
  return new Promise((done, fail) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      done('open');
    });
    socket.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNREFUSED' ? done('refused') : fail(error),
    );
  });
}

describe('startServer', () => {
  it('opens the port only after the runs and the best model are loaded', async () => {
    const port = await freePort();
    let release!: () => void;
    const gate = new Promise<void>((done) => {
      release = done;
    });
    let reached!: () => void;
    const loading = new Promise<void>((done) => {
      reached = done;
    });
    const store = instrumentStore(fx.store, {
      beforeRead: async () => {
        reached();
        await gate;
      },
    });
    const config = resolveServeConfig(
      { trackingUri: fx.dir, port, host: '127.0.0.1' },
      { TAGGER_LOG_LEVEL: 'silent', TAGGER_SHUTDOWN_DELAY_MS: '0' },
    );
    const starting = startServer(config, { openStore: async () => store });
    await loading; // startup is now reading artifacts
    expect(await probe(port)).toBe('refused');
    release();
    const server = await starting;
    try {
      expect(server.url).toBe(`http://127.0.0.1:${port}`);
      const response = await fetch(`${server.url}/runs?top=1`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { url: string; data: { runs: { run_id: string }[] } };
      expect(body.url).toBe(`http://127.0.0.1:${port}/runs?top=1`);
      expect(body.data.runs[0]!.run_id).toBe(fx.runs.broken);
    } finally {
      await server.close();
    }
    expect(await probe(port)).toBe('refused');
  });

  it('serves a saved model directory in single-model mode', async () => {
    const config = resolveServeConfig(
      { model: fx.modelDir, port: 0 },
      { TAGGER_LOG_LEVEL: 'silent', TAGGER_SHUTDOWN_DELAY_MS: '0' },
    );
    const server = await startServer(config);
    try {
      const response = await fetch(`${server.url}/predict`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ texts: [{ text: 'image classification' }] }),
      });
      const body = (await response.json()) as { data: Record<string, unknown> };
      expect(response.status).toBe(200);
      expect(Object.keys(body.data)).toEqual(['predictions']);
      expect((await fetch(`${server.url}/runs`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('applies the HTTP settings of the environment and counts reloads in /metrics', async () => {
    const config = resolveServeConfig(
      { trackingUri: fx.dir, port: 0 },
      {
        TAGGER_LOG_LEVEL: 'silent',
        TAGGER_SHUTDOWN_DELAY_MS: '0',
        TAGGER_API_KEYS: 'key-one',
        TAGGER_MAX_TEXTS: '2',
        TAGGER_RELOAD_INTERVAL_MS: '0',
      },
    );
    const server = await startServer(config);
    const auth = { authorization: 'Bearer key-one' };
    try {
      expect((await fetch(`${server.url}/runs`)).status).toBe(401);
      expect((await fetch(`${server.url}/runs`, { headers: auth })).status).toBe(200);
      const tooMany = await fetch(`${server.url}/predict`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ texts: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] }),
      });
      expect(tooMany.status).toBe(413);
      expect((await server.reload())?.outcome).toBe('unchanged');
      const metrics = await (await fetch(`${server.url}/metrics`, { headers: auth })).text();
      expect(metrics).toMatch(/tagger_reloads_total\{outcome="unchanged"\} 1/);
    } finally {
      await server.close();
    }
  });

  it('refuses a port that is taken, with a message', async () => {
    const config = resolveServeConfig(
      { model: fx.modelDir, port: 0 },
      { TAGGER_LOG_LEVEL: 'silent', TAGGER_SHUTDOWN_DELAY_MS: '0' },
    );
    const first = await startServer(config);
    try {
      const port = Number(new URL(first.url).port);
      const second = startServer({ ...config, port });
      await expect(second).rejects.toThrow(StartupError);
      await expect(second).rejects.toThrow(
        `127.0.0.1:${port} is already in use; pick another port with --port`,
      );
    } finally {
      await first.close();
    }
  });
});

describe('runServeCommand startup failures (nothing listens, a StartupError says what to do)', () => {
  const env = { TAGGER_LOG_LEVEL: 'silent', TAGGER_PORT: '0', TAGGER_SHUTDOWN_DELAY_MS: '0' };
  it.each([
    [
      'a missing experiment',
      { experiment: 'nope' },
      /experiment "nope" in .* does not exist; train one first, e\.g\. `tagger train --data samples\/projects\.csv --experiment nope --tracking-uri \S+`/,
    ],
    [
      'an experiment without runs',
      { experiment: 'empty' },
      /experiment "empty" .* has no runs; train one first/,
    ],
    [
      'no loadable run',
      { experiment: 'allbroken' },
      /none of the 2 runs of experiment "allbroken" .* has loadable artifacts/,
    ],
    [
      'an unsupported tracking URI',
      { trackingUri: 'mysql://db/x' },
      /cannot open the tracking store mysql:\/\/db\/x: .*not supported/,
    ],
    [
      'an unsupported tracking URI with credentials (never echoed)',
      { trackingUri: 'mysql://user:s3cr3t@db/x' },
      /cannot open the tracking store mysql:\/\/db\/x: (?!.*s3cr3t)/,
    ],
    ['a bad port', { port: '70000' }, /--port must be a TCP port/],
    [
      'a missing model directory',
      { model: '/nonexistent/model' },
      /model directory \/nonexistent\/model does not exist/,
    ],
  ])('%s', async (_, flags, message) => {
    const trackingUri = 'trackingUri' in flags ? flags.trackingUri : fx.dir;
    const all = 'model' in flags ? flags : { trackingUri, ...flags };
    const error = await runServeCommand(all, env).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(message);
  });
});

describe('REST tracking store at startup', () => {
  it('waits up to TAGGER_STORE_WAIT_MS for the server, then fails with what to do', async () => {
    const port = await freePort(); // nothing listens there
    const error = await runServeCommand(
      { trackingUri: `http://127.0.0.1:${port}` },
      {
        TAGGER_LOG_LEVEL: 'silent',
        TAGGER_PORT: '0',
        TAGGER_STORE_WAIT_MS: '300',
        TAGGER_SHUTDOWN_DELAY_MS: '0',
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(
      /was not ready within 300 ms.*; start the tracking server or raise TAGGER_STORE_WAIT_MS/,
    );
  });
});

describe('node src/server/server.ts (env only)', () => {
  const serverEntry = resolve(REPO_ROOT, 'src', 'server', 'server.ts');

  function run(env: Record<string, string>) {
    const child = spawn(process.execPath, ['--import', 'tsx', serverEntry], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', TAGGER_HOST: '127.0.0.1', TAGGER_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      stderr += String(chunk);
    });
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    return { child, exited, output: () => ({ stdout, stderr }) };
  }

  it('exits 1 with the message when startup fails', async () => {
    const { exited, output } = run({ MLFLOW_TRACKING_URI: fx.dir, TAGGER_EXPERIMENT: 'empty' });
    expect(await exited).toBe(1);
    expect(output().stderr).toMatch(/experiment "empty" .* has no runs; train one first/);
  });

  it('serves after loading and exits 0 after a graceful close on SIGTERM', async () => {
    const { child, exited, output } = run({ MLFLOW_TRACKING_URI: fx.dir });
    const url = await new Promise<string>((done, fail) => {
      child.stdout.on('data', () => {
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output().stdout);
        if (match) done(match[1]!);
      });
      child.on('exit', () => fail(new Error(`server exited early: ${output().stderr}`)));
    });
    const response = await fetch(`${url}/`);
    expect(response.status).toBe(200);
    expect(output().stdout).toContain('serving the best loadable run');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output().stdout).toContain('"msg":"stopped"');
  });
});

/** A raw loopback connection that collects everything the server sends. */
function rawConnection(
  port: number,
): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((done, fail) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let data = '';
    socket.on('data', (chunk) => {
      data += String(chunk);
    });
    const closed = new Promise<void>((onClose) => socket.once('close', () => onClose()));
    socket.once('connect', () => done({ socket, received: () => data, closed }));
    socket.once('error', fail);
  });
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((d) => setTimeout(d, 5));
}

const silentEnv = {
  TAGGER_LOG_LEVEL: 'silent',
  TAGGER_RELOAD_INTERVAL_MS: '0',
  TAGGER_SHUTDOWN_DELAY_MS: '0',
};

describe('graceful shutdown (RunningServer.close)', () => {
  it('refuses new connections, closes idle keep-alive ones, finishes in-flight requests with Connection: close', async () => {
    const config = resolveServeConfig({ trackingUri: fx.dir, port: 0 }, silentEnv);
    const server = await startServer(config);
    const port = Number(new URL(server.url).port);
    expect(server.serving.lifecycle?.ready).toBe(true);

    // An idle keep-alive connection: one request answered, the connection left open.
    const idle = await rawConnection(port);
    idle.socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await until(() => idle.received().includes('"status-code":200'));
    expect(idle.received()).toMatch(/connection: keep-alive/i);

    // An in-flight request: headers and half of the body sent, so the server is inside the request.
    const body = predictBody(3);
    const busy = await rawConnection(port);
    busy.socket.write(
      `POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 20)}`,
    );
    await new Promise((d) => setImmediate(d));

    const closing = server.close();
    expect(server.serving.lifecycle?.draining).toBe(true);
    expect(server.serving.lifecycle?.ready).toBe(false);
    await idle.closed; // closed while the busy request still holds the drain open
    expect(await probe(port)).toBe('refused');

    busy.socket.write(body.slice(20));
    await busy.closed; // the server ends the connection after the response
    const response = busy.received();
    expect(response).toMatch(/^HTTP\/1\.1 200 /);
    expect(response).toMatch(/\r\nconnection: close\r\n/i);
    expect(response).toContain(`"run_id":"${fx.runs.alpha}"`);
    expect(await closing).toEqual({ drained: true });
  });

  it('cuts the connections still busy when the grace period runs out, and says it did', async () => {
    const config = resolveServeConfig(
      { trackingUri: fx.dir, port: 0 },
      { ...silentEnv, TAGGER_SHUTDOWN_GRACE_MS: '200' },
    );
    const server = await startServer(config);
    const port = Number(new URL(server.url).port);
    const stalled = await rawConnection(port);
    stalled.socket.write(
      'POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    );
    await new Promise((d) => setImmediate(d));
    expect(await server.close()).toEqual({ drained: false });
    await stalled.closed;
    expect(stalled.received()).toBe('');
    expect(await probe(port)).toBe('refused');
  });
});

describe('hot reload in a started server', () => {
  it('shuts down at once when a reload waits on an unreachable store: closing the store aborts it', async () => {
    let storeDown = false;
    let closeStore!: () => void;
    const closed = new Promise<void>((done) => {
      closeStore = done;
    });
    // Like the REST store with its server gone: reads wait (retrying) until the store is closed.
    const instrumented = instrumentStore(fx.store);
    const store: TrackingStore = {
      ...instrumented,
      searchRuns: async (id, o) => {
        if (storeDown) {
          await closed;
          throw new Error('tracking: the store is closed');
        }
        return instrumented.searchRuns(id, o);
      },
      close: async () => {
        closeStore();
        await instrumented.close();
      },
    };
    const config = resolveServeConfig({ trackingUri: fx.dir, port: 0 }, silentEnv);
    const server = await startServer(config, { openStore: async () => store });
    storeDown = true;
    const reloading = server.reload();
    expect(await server.close()).toEqual({ drained: true });
    expect((await reloading)?.outcome).toBe('failed');
  });

  it('polls the store on the configured interval and serves a new best run', async () => {
    const experiment = 'polled';
    const first = await logServedRun(fx.store, experiment, { name: 'first', f1: 0.5, model: fx.modelA });
    const reloads: [string, string][] = [];
    const config = resolveServeConfig(
      { trackingUri: fx.dir, experiment, port: 0 },
      { ...silentEnv, TAGGER_RELOAD_INTERVAL_MS: '50' },
    );
    const server = await startServer(config, {
      onReload: (outcome, runId) => reloads.push([outcome, runId]),
    });
    try {
      expect(await servedRunId(server.url)).toBe(first);
      const second = await logServedRun(fx.store, experiment, { name: 'second', f1: 0.8, model: fx.modelB });
      await vi.waitFor(() => expect(reloads).toContainEqual(['swapped', second]), { timeout: 20_000 });
      expect(await servedRunId(server.url)).toBe(second);
      const runs = (await (await fetch(`${server.url}/runs`)).json()) as {
        data: { runs: { run_id: string }[] };
      };
      expect(runs.data.runs.map((run) => run.run_id)).toEqual([second, first]);
    } finally {
      await server.close();
    }
    // Polling stopped with the close: no reload is reported afterwards.
    const count = reloads.length;
    await new Promise((d) => setTimeout(d, 200));
    expect(reloads.length).toBe(count);
  });

  it('reloads on demand and answers null in single-model mode', async () => {
    const config = resolveServeConfig({ model: fx.modelDir, port: 0 }, silentEnv);
    const server = await startServer(config);
    try {
      expect(await server.reload()).toBeNull();
    } finally {
      await server.close();
    }
  });
});

describe('serveUntilSignalled', () => {
  const logger = pino({ level: 'silent' });
  const unchanged: ReloadResult = { outcome: 'unchanged', runId: 'r', previousRunId: 'r', problems: [] };

  /** A RunningServer double that records calls; `close` resolves when the test says so. */
  function fakeServer() {
    let finishClose!: (value: { drained: boolean }) => void;
    const calls = { reload: 0, close: 0 };
    const server = {
      shutdownDelayMs: 0,
      shutdownGraceMs: 60_000,
      reload: async () => {
        calls.reload++;
        return unchanged;
      },
      close: () => {
        calls.close++;
        return new Promise<{ drained: boolean }>((done) => {
          finishClose = done;
        });
      },
    } as unknown as RunningServer;
    return { server, calls, finishClose: (drained: boolean) => finishClose({ drained }) };
  }

  it('reloads on SIGHUP, drains on SIGTERM and resolves after a clean drain', async () => {
    const { server, calls, finishClose } = fakeServer();
    const exits: number[] = [];
    const listeners = process.listenerCount('SIGHUP');
    const serving = serveUntilSignalled(server, { logger, exit: (code) => exits.push(code) });
    process.emit('SIGHUP');
    process.emit('SIGHUP');
    expect(calls.reload).toBe(2);
    expect(calls.close).toBe(0);
    process.emit('SIGTERM');
    await until(() => calls.close === 1);
    process.emit('SIGHUP'); // ignored while stopping, and must not kill the process
    expect(calls.reload).toBe(2);
    finishClose(true);
    await serving;
    expect(exits).toEqual([]);
    expect(process.listenerCount('SIGHUP')).toBe(listeners);
  });

  it('exits 1 at once on a second signal during the drain', async () => {
    const { server, calls, finishClose } = fakeServer();
    const exits: number[] = [];
    const serving = serveUntilSignalled(server, { logger, exit: (code) => exits.push(code) });
    process.emit('SIGINT');
    await until(() => calls.close === 1);
    expect(exits).toEqual([]);
    process.emit('SIGTERM');
    expect(exits).toEqual([1]);
    finishClose(true);
    await serving;
  });

  it('takes the same signal again within the window for the process group’s copy: the drain goes on', async () => {
    // `kill -TERM -- -<pgid>` and Ctrl-C reach the server directly and again from npm or `npm start`.
    const { server, calls, finishClose } = fakeServer();
    const exits: number[] = [];
    const serving = serveUntilSignalled(server, { logger, exit: (code) => exits.push(code) });
    process.emit('SIGTERM');
    await until(() => calls.close === 1);
    process.emit('SIGTERM');
    process.emit('SIGTERM');
    expect(exits).toEqual([]);
    finishClose(true);
    await serving;
    expect(exits).toEqual([]);
  });

  it('exits 1 at once on the same signal again after the window: a person’s second Ctrl-C', async () => {
    const { server, calls, finishClose } = fakeServer();
    const exits: number[] = [];
    const serving = serveUntilSignalled(server, {
      logger,
      exit: (code) => exits.push(code),
      repeatWindowMs: 50,
    });
    process.emit('SIGINT');
    await until(() => calls.close === 1);
    await new Promise((done) => setTimeout(done, 80));
    process.emit('SIGINT');
    expect(exits).toEqual([1]);
    finishClose(true);
    await serving;
  });

  it('exits 1 when the grace period ran out and requests were cut', async () => {
    const { server, calls, finishClose } = fakeServer();
    const exits: number[] = [];
    const serving = serveUntilSignalled(server, { logger, exit: (code) => exits.push(code) });
    process.emit('SIGTERM');
    await until(() => calls.close === 1);
    finishClose(false);
    await serving;
    expect(exits).toEqual([1]);
  });
});
