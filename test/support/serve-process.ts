/**
 * The real server as a child process (`node --import tsx src/server/server.ts`, env config only) and two load
 * generators against it, for the hot-reload, shutdown and fault tests:
 * - `KeepAliveLoad`: a few keep-alive connections each sending one POST /predict after another and
 *   recording every request's outcome (status, run id, error code, whether the socket was reused and
 *   whether the request was sent and settled before or after the test sent a signal), so a test can tell
 *   a refused new connection after the listener closed from a lost accepted request;
 * - `runAutocannon`: autocannon's programmatic API for extra, fixed-connection load (counts only).
 * Loopback only. Every child is killed (by its own pid) when the test file ends if it still runs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { resolve } from 'node:path';
import { MODEL_FILES } from '../../src/model/index.js';
import { getOrCreateExperiment, type TrackingStore } from '../../src/tracking/index.js';
import { REPO_ROOT, TSX_LOADER } from './components.js';
import type { TrainedModel } from './fixtures.js';
import { freePort } from './free-port.js';

const SERVER_ENTRY = resolve(REPO_ROOT, 'src', 'server', 'server.ts');

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Every JSON log line so far. */
  readonly lines: LogLine[];
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal) once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first log line (already written or to come) matching `match`. */
  waitForLog(match: (line: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  kill(): void;
}

const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Kills every server this file started that still runs, `spawnServe`'s included (call in afterAll). */
export function killServers(): void {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
  for (const each of serving) each.signal('SIGKILL');
}

/**
 * Starts `src/server/server.ts` with the given environment on a free loopback port and resolves once GET /
 * answers 200. Rejects with the server's stderr if it exits first, or after `readyTimeoutMs`.
 */
export async function spawnServer(
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', TSX_LOADER, SERVER_ENTRY], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      TAGGER_HOST: '127.0.0.1',
      TAGGER_PORT: String(port),
      TAGGER_LOG_LEVEL: 'warn',
      TAGGER_RELOAD_INTERVAL_MS: '0',
      // Tests about the shutdown delay set their own; the others stop at once.
      TAGGER_SHUTDOWN_DELAY_MS: '0',
      // Prediction records in memory unless a test says where: the default beside a file or REST store
      // is a SQLite file in the working directory, which is the repository here.
      TAGGER_RECORD_STORE: 'memory:',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  const lines: LogLine[] = [];
  const waiters: { match: (line: LogLine) => boolean; done: (line: LogLine) => void }[] = [];
  let partial = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    partial += chunk.toString('utf8');
    const complete = partial.split('\n');
    partial = complete.pop() ?? '';
    for (const text of complete) {
      if (text.trim() === '') continue;
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        continue;
      }
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.done(line);
        }
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });
  const url = `http://127.0.0.1:${port}`;

  const waitForLog = (match: (line: LogLine) => boolean, what: string, timeoutMs = 30_000) => {
    const found = lines.find(match);
    if (found) return Promise.resolve(found);
    return new Promise<LogLine>((done, fail) => {
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(waiter), 1);
        fail(new Error(`no log line "${what}" within ${timeoutMs} ms; stderr: ${stderr}`));
      }, timeoutMs);
      const waiter = {
        match,
        done: (line: LogLine) => {
          clearTimeout(timer);
          done(line);
        },
      };
      waiters.push(waiter);
    });
  };

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (hasExited) throw new Error(`server exited during startup: ${stderr}`);
    const ok = await fetch(`${url}/`).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server not ready within ${readyTimeoutMs} ms: ${stderr}`);
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  return {
    child,
    url,
    lines,
    stderr: () => stderr,
    exited,
    waitForLog,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The `tagger` command's TypeScript entry (as cli.ts's CLI_ENTRY; not imported: that loads the CLI here). */
const CLI_MAIN = resolve(REPO_ROOT, 'src', 'cli', 'main.ts');

/** A `tagger serve` process (`spawnServe`): its output so far, its end, and how to stop it. */
export interface ServeCommand {
  readonly child: ChildProcess;
  /** Its stdout and stderr so far, interleaved. */
  output(): string;
  /** Resolves with the exit code (null when a signal ended it). */
  readonly exit: Promise<number | null>;
  /** The URL of its first "Server listening at" line, once it is logged; rejects if it exits first. */
  listening(maxMs?: number): Promise<string>;
  /** Resolves once the output from offset `since` on matches `pattern`; rejects after `maxMs`. */
  waitForOutput(pattern: RegExp, since: number, maxMs: number): Promise<void>;
  /** Sends `signal` to the process, or to its process group when started `detached`. */
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM, then the exit code (SIGKILL if it has not exited within 15 s). */
  stop(): Promise<number | null>;
}

/** `tagger serve` processes started here: killed (by pid, or process group) if one runs when the tests end. */
const serving = new Set<{ signal(signal: NodeJS.Signals): void }>();
process.once('exit', () => {
  for (const each of serving) each.signal('SIGKILL');
});

/**
 * Starts `tagger serve <args>` as a real process (tsx on src/cli/main.ts) and returns at once: for tests of
 * the command itself (`--workers`, flags, config, signals), where `spawnServer` starts src/server/server.ts
 * alone. Its environment is this process's without the developer's MLFLOW_* and TAGGER_* variables, plus
 * `env`. `detached`: in a process group of its own, signalled as a group (the `--workers` primary's workers
 * included).
 */
export function spawnServe(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; detached?: boolean } = {},
): ServeCommand {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('MLFLOW_') && !key.startsWith('TAGGER_')) env[key] = value;
  }
  const child = spawn(process.execPath, ['--import', TSX_LOADER, CLI_MAIN, 'serve', ...args], {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { ...env, ...options.env },
    detached: options.detached ?? false,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const signal = (name: NodeJS.Signals): void => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(options.detached ? -child.pid : child.pid, name);
    } catch {
      // Already gone.
    }
  };
  const handle = { signal };
  serving.add(handle);
  let output = '';
  const append = (chunk: Buffer): void => {
    output += chunk.toString('utf8');
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exit = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      serving.delete(handle);
      done(code);
    }),
  );
  const stop = async (): Promise<number | null> => {
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), 15_000);
    try {
      return await exit;
    } finally {
      clearTimeout(timer);
      // Anything of the group still left.
      if (options.detached && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Gone.
        }
      }
    }
  };
  const waitForOutput = (pattern: RegExp, since: number, maxMs: number): Promise<void> =>
    new Promise((done, fail) => {
      const check = (): void => {
        if (!pattern.test(output.slice(since))) return;
        clearTimeout(timer);
        child.stdout!.off('data', check);
        child.stderr!.off('data', check);
        done();
      };
      const timer = setTimeout(() => {
        child.stdout!.off('data', check);
        child.stderr!.off('data', check);
        fail(new Error(`tagger serve did not log ${pattern} within ${maxMs} ms:\n${output}`));
      }, maxMs);
      child.stdout!.on('data', check);
      child.stderr!.on('data', check);
      check();
    });
  const listening = (maxMs = 90_000): Promise<string> =>
    new Promise((done, fail) => {
      const check = (): void => {
        const url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
        if (url === undefined) return;
        cleanup();
        done(url);
      };
      const onExit = (code: number | null): void => {
        cleanup();
        fail(new Error(`tagger serve exited (${code}) before listening:\n${output}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        void stop();
        fail(new Error(`tagger serve did not listen within ${maxMs} ms:\n${output}`));
      }, maxMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        child.stderr!.off('data', check);
        child.off('exit', onExit);
      };
      child.stdout!.on('data', check);
      child.stderr!.on('data', check);
      child.once('exit', onExit);
      check();
      if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode);
    });
  return { child, output: () => output, exit, listening, waitForOutput, signal, stop };
}

/** A POST /predict body with `count` texts. */
export function predictBody(count = 2): string {
  const texts = Array.from({ length: count }, (_, i) => ({
    text: `transfer learning with transformers for image classification ${i}`,
  }));
  return JSON.stringify({ texts });
}

/**
 * The run that answers one POST /predict of `count` texts (predictBody) at `url`: which run a server
 * serves now. A status other than 200 throws, with the body.
 */
export async function servedRunId(url: string, count = 1): Promise<string> {
  const response = await fetch(`${url}/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: predictBody(count),
  });
  if (response.status !== 200) throw new Error(`POST /predict: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { data: { run_id: string } }).data.run_id;
}

export interface RequestOutcome {
  /** Which connection loop sent it. */
  loop: number;
  status?: number;
  runId?: string;
  /** The error code (ECONNREFUSED, ECONNRESET, …) when no response arrived. */
  error?: string;
  /** Sent on a keep-alive connection that had answered before. */
  reused: boolean;
  /** The test had sent its signal (see `markSignal`) before this request was sent / settled. */
  sentAfterSignal: boolean;
  settledAfterSignal: boolean;
  /** Positions in one sequence of every send and settle of the load: orders events without clocks. */
  sentAt: number;
  settledAt: number;
}

/**
 * `connections` loops, each sending POST /predict one after another over a shared keep-alive agent
 * (one socket per loop), or with `keepAlive: false` on a fresh connection per request (as a load
 * balancer's pool may). A loop ends on `stop()` or at its first ECONNREFUSED (nothing listens any more).
 */
export class KeepAliveLoad {
  readonly outcomes: RequestOutcome[] = [];
  private readonly agent: Agent;
  private stopped = false;
  private signalled = false;
  private sequence = 0;
  private active = 0;
  private readonly loops: Promise<void>[] = [];
  /** Requests sent per socket. `req.reusedSocket` is false for a request that waited in the agent's queue
   * and then got a socket that had served another request, so reuse is counted here instead. */
  private readonly sentOn = new WeakMap<Socket, number>();

  constructor(
    private readonly url: string,
    private readonly options: { connections: number; body?: string; keepAlive?: boolean },
  ) {
    this.agent = new Agent({ keepAlive: options.keepAlive ?? true, maxSockets: options.connections });
  }

  start(): this {
    for (let loop = 0; loop < this.options.connections; loop++) this.loops.push(this.run(loop));
    return this;
  }

  /** Records that the test is about to signal the server: outcomes after this are marked. */
  markSignal(): void {
    this.signalled = true;
  }

  /** The current position in the send/settle sequence. */
  now(): number {
    return this.sequence;
  }

  /** Resolves once `count` more requests have settled, or every loop has ended. */
  async settleMore(count: number): Promise<void> {
    const target = this.outcomes.length + count;
    while (this.outcomes.length < target && this.active > 0) await new Promise((d) => setTimeout(d, 10));
  }

  /** Stops sending (requests under way finish) and resolves with every outcome. */
  async stop(): Promise<RequestOutcome[]> {
    this.stopped = true;
    return this.ended();
  }

  /** Resolves once every loop has ended (each got ECONNREFUSED, or `stop()` was called). */
  async ended(): Promise<RequestOutcome[]> {
    await Promise.all(this.loops);
    this.agent.destroy();
    return this.outcomes;
  }

  private async run(loop: number): Promise<void> {
    const body = this.options.body ?? predictBody();
    this.active++;
    try {
      while (!this.stopped) {
        const outcome = await this.one(loop, body);
        this.outcomes.push(outcome);
        if (outcome.error === 'ECONNREFUSED') return;
      }
    } finally {
      this.active--;
    }
  }

  private one(loop: number, body: string): Promise<RequestOutcome> {
    const sentAfterSignal = this.signalled;
    const sentAt = ++this.sequence;
    return new Promise((done) => {
      const req = request(`${this.url}/predict`, {
        method: 'POST',
        agent: this.agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      });
      let settled = false;
      let reused = false;
      req.once('socket', (socket: Socket) => {
        const before = this.sentOn.get(socket) ?? 0;
        reused = before > 0;
        this.sentOn.set(socket, before + 1);
      });
      const finish = (fields: Partial<RequestOutcome>) => {
        if (settled) return;
        settled = true;
        done({
          loop,
          reused,
          sentAfterSignal,
          settledAfterSignal: this.signalled,
          sentAt,
          settledAt: ++this.sequence,
          ...fields,
        });
      };
      req.once('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.once('end', () => {
          let runId: string | undefined;
          try {
            const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
              data?: { run_id?: string };
            };
            runId = parsed.data?.run_id;
          } catch {
            runId = undefined;
          }
          finish({ status: response.statusCode ?? 0, ...(runId === undefined ? {} : { runId }) });
        });
        response.once('error', (error: NodeJS.ErrnoException) =>
          finish({ error: error.code ?? error.message }),
        );
      });
      req.once('error', (error: NodeJS.ErrnoException) => finish({ error: error.code ?? error.message }));
      req.end(body);
    });
  }
}

export interface AutocannonCounts {
  /** Responses by status code, counted from autocannon's `response` events. */
  statuses: Map<number, number>;
  /** Error messages/codes of failed requests, counted from `reqError` events. */
  errors: Map<string, number>;
  /** autocannon's own totals: responses with a status outside 2xx, requests sent. */
  non2xx: number;
  sent: number;
}

interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number) => void): void;
  on(event: 'reqError', listener: (error: NodeJS.ErrnoException) => void): void;
  stop(): void;
}
type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: { non2xx: number; requests: { sent: number } }) => void,
) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/**
 * Starts autocannon with fixed connections against POST /predict (`body`: two short texts unless given);
 * `stop()` ends it and resolves with the counts (autocannon reports at its next one-second tick).
 */
export function runAutocannon(
  url: string,
  connections = 4,
  body = predictBody(),
): { stop(): Promise<AutocannonCounts>; counts: AutocannonCounts } {
  const counts: AutocannonCounts = { statuses: new Map(), errors: new Map(), non2xx: 0, sent: 0 };
  let finished!: (value: AutocannonCounts) => void;
  let failed!: (error: Error) => void;
  const result = new Promise<AutocannonCounts>((done, fail) => {
    finished = done;
    failed = fail;
  });
  const instance = autocannon(
    {
      url: `${url}/predict`,
      method: 'POST',
      connections,
      pipelining: 1,
      duration: 120,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body,
    },
    (error, summary) => {
      if (error) failed(error);
      else {
        counts.non2xx = summary.non2xx;
        counts.sent = summary.requests.sent;
        finished(counts);
      }
    },
  );
  instance.on('response', (_client, statusCode) => {
    counts.statuses.set(statusCode, (counts.statuses.get(statusCode) ?? 0) + 1);
  });
  instance.on('reqError', (error) => {
    const key = error.code ?? error.message;
    counts.errors.set(key, (counts.errors.get(key) ?? 0) + 1);
  });
  return {
    counts,
    stop: () => {
      instance.stop();
      return result;
    },
  };
}

const encoder = new TextEncoder();

/** Logs a finished run into `experiment` of a store the way `tagger train` lays it out; returns its id. */
export async function logServedRun(
  store: TrackingStore,
  experiment: string,
  plan: {
    name: string;
    f1: number;
    model: TrainedModel;
    brokenModel?: boolean;
    tags?: Record<string, string>;
    /** Final metrics besides f1 (e.g. behavioural_pass_rate). */
    metrics?: Record<string, number>;
  },
): Promise<string> {
  const experimentId = await getOrCreateExperiment(store, experiment);
  const startTime = Date.now();
  const run = await store.createRun(experimentId, {
    runName: plan.name,
    startTime,
    ...(plan.tags ? { tags: plan.tags } : {}),
  });
  const runId = run.info.runId;
  await store.logBatch(runId, {
    metrics: Object.entries({ ...plan.metrics, f1: plan.f1 }).map(([key, value]) => ({
      key,
      value,
      timestamp: startTime,
      step: 0,
    })),
    params: Object.fromEntries(Object.entries(plan.model.args).map(([k, v]) => [k, JSON.stringify(v)])),
  });
  await store.logArtifact(runId, 'args.json', encoder.encode(JSON.stringify(plan.model.args)));
  await store.logArtifact(runId, 'performance.json', encoder.encode(JSON.stringify(plan.model.performance)));
  for (const name of MODEL_FILES) {
    const bytes = plan.model.files[name]!;
    // Half a file: present but undecodable, like an interrupted upload.
    await store.logArtifact(
      runId,
      `model/${name}`,
      plan.brokenModel ? bytes.slice(0, Math.floor(bytes.length / 2)) : bytes,
    );
  }
  await store.updateRun(runId, { status: 'FINISHED', endTime: startTime + 1 });
  return runId;
}
