/**
 * PostgreSQL connections lost while Tagger holds them, on a real server (Debian's PostgreSQL on loopback,
 * test/support/stack.ts) and real `tagger` processes. The connection is lost at a known point without
 * sleeps: the test locks a table Tagger is about to use (`LOCK TABLE … IN ACCESS EXCLUSIVE MODE` in an
 * open transaction), waits until Tagger's statement waits on that lock — its pg client is then checked
 * out of the pool, mid-statement (mid-transaction for a write) — and ends that backend: with
 * `pg_terminate_backend` (the server closes the connection: what a failover, pgbouncer or an idle-session
 * killer does) or with SIGKILL (PostgreSQL then resets every connection and recovers: a crash, as
 * `pg_ctlcluster … stop -m immediate` followed by a start). The lock is then released.
 *
 * - `tagger train` whose run is being logged: one `tagger:` line, exit 1, the run FAILED (never
 *   RUNNING) — not an unhandled 'error' event.
 * - `tagger serve` whose reload is reading the runs: the server keeps serving, the reload fails with a
 *   warning and the next one reads the store again.
 * - `tagger train` whose PostgreSQL goes down late in logging (issue 34, item 6: the run, its metrics and
 *   model files stored, the logged model not final): back within the wait, the run ends FAILED; down
 *   longer, the next `tagger train` on the experiment marks it FAILED. Before, it stayed RUNNING.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { FAST_ARGS, spawnCli, startCli, trainArgv } from '../support/cli.js';
import { REPO_ROOT, SAMPLE_DATA } from '../support/components.js';
import { trainModel } from '../support/fixtures.js';
import {
  killServers,
  type LogLine,
  logServedRun,
  predictBody,
  spawnServer,
} from '../support/serve-process.js';
import { type Postgres, postgresBin, startPostgres } from '../support/stack.js';
import { useTempDir } from '../support/temp-dir.js';

const pgBin = postgresBin();
let postgres: Postgres | undefined;
const scratch = useTempDir('tagger-pg-faults-');

beforeAll(async () => {
  if (pgBin) postgres = await startPostgres(pgBin);
}, 120_000);
afterAll(async () => {
  killServers();
  await postgres?.stop();
});

/**
 * pg's own URL for a database of the test cluster (created when new), and MLflow's form of it; waits
 * while the cluster recovers from a crash an earlier case caused.
 */
async function database(name: string): Promise<{ url: string; uri: string }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const uri = postgres!.sqlalchemyUri(name);
      return { uri, url: uri.replace(/^postgresql\+psycopg2:/, 'postgresql:') };
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((done) => setTimeout(done, 200));
    }
  }
}

/** A client of the test's own (its lost connections are expected, never a crash of the test). */
async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/**
 * Locks `table` until `release()`; `waiter()` resolves with the pid of the first other backend of the
 * database that waits on a lock (Tagger's statement, checked out of its pool).
 */
async function lockTable(url: string, table: string) {
  const locker = await connect(url);
  await locker.query('BEGIN');
  await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  const watcher = await connect(url);
  return {
    waiter: async (timeoutMs = 90_000): Promise<number> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const { rows } = await watcher.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
        );
        if (rows[0]) return rows[0].pid;
        if (Date.now() > deadline) throw new Error(`nothing waited on the lock of ${table}`);
        await new Promise((done) => setTimeout(done, 50));
      }
    },
    terminate: async (pid: number) => {
      await watcher.query('SELECT pg_terminate_backend($1)', [pid]);
    },
    release: async () => {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end().catch(() => undefined);
      await watcher.end().catch(() => undefined);
    },
  };
}

/** Ends a backend with SIGKILL: PostgreSQL resets every connection and recovers (a crash). */
function killBackend(pid: number): void {
  process.kill(pid, 'SIGKILL');
}

/** Waits until the cluster accepts connections again after a crash, and runs `fn` with a client. */
async function whenBack<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const client = await connect(url);
      try {
        return await fn(client);
      } finally {
        await client.end();
      }
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((done) => setTimeout(done, 200));
    }
  }
}

/** `tagger train` on the sample data into `uri` as a real process. */
const train = (uri: string, artifactRoot: string, ...more: string[]) =>
  spawnCli(trainArgv(uri, ['--artifact-root', artifactRoot, ...more]), {
    cwd: scratch.path,
    timeoutMs: 120_000,
  });

const nonEmptyLines = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '');

describe.runIf(pgBin !== null)('PostgreSQL: a connection lost while tagger train logs its run', () => {
  it.each([
    ['terminated by the server (pg_terminate_backend)', 'terminate'],
    ['reset with every other one (a backend killed: the server crashes and recovers)', 'crash'],
  ] as const)(
    '%s: one tagger: line, exit 1, the run FAILED and not RUNNING',
    async (_what, how) => {
      const { uri, url } = await database(`train_${how}`);
      const artifactRoot = join(scratch.path, `artifacts-${how}`);
      // The schema first, so the table to lock exists.
      await (await openTrackingStore(uri, { artifactRoot })).close();
      const lock = await lockTable(url, 'metrics');
      const training = train(uri, artifactRoot);
      try {
        // logBatch's first INSERT INTO metrics waits: its transaction holds a checked-out client.
        const pid = await lock.waiter();
        if (how === 'terminate') await lock.terminate(pid);
        else killBackend(pid);
      } finally {
        await lock.release();
      }
      const result = await training;

      expect(result.stderr).not.toMatch(/Unhandled 'error' event|^\s+at /m);
      expect(result.code, result.stderr).toBe(1);
      const messages = nonEmptyLines(result.stderr).filter((line) => line.startsWith('tagger:'));
      expect(messages, result.stderr).toHaveLength(1);
      expect(messages[0]).toMatch(
        /^tagger: tracking: postgresql\S*:\/\/127\.0\.0\.1:\d+\/train_\w+: the connection to the database was lost/,
      );

      const statuses = await whenBack(url, async (client) => {
        const { rows } = await client.query<{ status: string; end_time: string | null }>(
          'SELECT status, end_time FROM runs',
        );
        return rows;
      });
      expect(statuses).toHaveLength(1);
      expect(statuses[0]).toMatchObject({ status: 'FAILED', end_time: expect.anything() });
    },
    180_000,
  );
});

describe.runIf(pgBin !== null)('PostgreSQL: a connection lost while tagger serve reads the store', () => {
  let store: TrackingStore;
  let url: string;
  let uri: string;
  beforeAll(async () => {
    ({ uri, url } = await database('serve'));
    store = await openTrackingStore(uri, { artifactRoot: join(scratch.path, 'artifacts-serve') });
    await logServedRun(store, 'best', { name: 'served', f1: 0.8, model: trainModel({}) });
  }, 120_000);
  afterAll(async () => {
    await store?.close();
  });

  it.each([
    ['terminated by the server', 'terminate'],
    ['reset with every other one (crash and recovery)', 'crash'],
  ] as const)(
    '%s: the server keeps serving, the reload fails with a warning, the next one reads again',
    async (_what, how) => {
      const server = await spawnServer({ MLFLOW_TRACKING_URI: uri, TAGGER_LOG_LEVEL: 'info' });
      try {
        const sighup = async (): Promise<LogLine> => {
          const from = server.lines.length;
          server.child.kill('SIGHUP');
          return server.waitForLog(
            (line) => line.msg === 'SIGHUP reload finished' && server.lines.indexOf(line) >= from,
            'SIGHUP reload finished',
            90_000,
          );
        };
        const lock = await lockTable(url, 'runs');
        let finished: Promise<LogLine>;
        try {
          finished = sighup();
          const pid = await lock.waiter();
          if (how === 'terminate') await lock.terminate(pid);
          else killBackend(pid);
        } finally {
          await lock.release();
        }
        expect(await finished).toMatchObject({ outcome: 'failed' });
        expect(server.child.exitCode).toBeNull();
        const predicted = await fetch(`${server.url}/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: predictBody(1),
        });
        expect(predicted.status).toBe(200);
        // Once PostgreSQL is back, the next reload reads it again.
        await whenBack(url, async (client) => client.query('SELECT 1'));
        expect(await sighup()).toMatchObject({ outcome: 'unchanged' });
        expect(server.stderr()).not.toMatch(/Unhandled 'error' event/);
      } finally {
        server.kill();
        await server.exited;
      }
    },
    180_000,
  );
});

const PAUSE_SQL_LOGGING = pathToFileURL(resolve(REPO_ROOT, 'test', 'support', 'pause-sql-logging.ts')).href;

/**
 * `tagger train` into `uri` that pauses late in logging (test/support/pause-sql-logging.ts); `atPause`
 * runs then (the database is taken away), and the training goes on. Resolves with its exit and output;
 * `onLine` sees every stderr line as it comes.
 */
async function trainPausedLate(
  uri: string,
  artifactRoot: string,
  atPause: () => Promise<void>,
  onLine: (line: string) => void = () => undefined,
): Promise<{ code: number | null; stderr: string; runId: string }> {
  const job = startCli(
    [
      'train',
      ...['--data', SAMPLE_DATA, '--args', FAST_ARGS, '--tracking-uri', uri, '--artifact-root', artifactRoot],
      ...['--quiet', '--no-label-issues'],
    ],
    { cwd: scratch.path, preload: [PAUSE_SQL_LOGGING] },
  );
  let runId = '';
  let paused!: () => void;
  const pausedAt = new Promise<void>((done) => {
    paused = done;
  });
  job.child.stderr.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      const match = /^paused ([0-9a-f]{32})$/.exec(line);
      if (match) {
        runId = match[1]!;
        paused();
      }
      if (line !== '') onLine(line);
    }
  });
  await Promise.race([pausedAt, job.exited]);
  expect(runId, job.stderr()).not.toBe('');
  await atPause();
  job.child.stdin.end('go\n');
  const { code } = await job.exited;
  return { code, stderr: job.stderr(), runId };
}

async function runStatus(url: string, runId: string): Promise<{ status: string; failure: string | null }> {
  return whenBack(url, async (client) => {
    const { rows } = await client.query<{ status: string }>('SELECT status FROM runs WHERE run_uuid = $1', [
      runId,
    ]);
    const tags = await client.query<{ value: string }>(
      "SELECT value FROM tags WHERE run_uuid = $1 AND key = 'tagger.failure'",
      [runId],
    );
    return { status: rows[0]?.status ?? 'missing', failure: tags.rows[0]?.value ?? null };
  });
}

describe.runIf(pgBin !== null)('PostgreSQL lost late in logging (issue 34, item 6)', () => {
  it('back while tagger waits: the run ends FAILED, never RUNNING', async () => {
    const { uri, url } = await database('late_back');
    const artifactRoot = join(scratch.path, 'artifacts-late-back');
    let waiting!: () => void;
    const toldWaiting = new Promise<void>((done) => {
      waiting = done;
    });
    const training = trainPausedLate(
      uri,
      artifactRoot,
      () => postgres!.down(),
      (line) => {
        if (
          /^tagger: logging run [0-9a-f]{32} failed and the tracking store is unreachable; trying to mark the run FAILED/.test(
            line,
          )
        )
          waiting();
      },
    );
    // Once tagger says it waits for the store, the store comes back.
    await Promise.race([toldWaiting, training]);
    await postgres!.up();
    const result = await training;
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(await runStatus(url, result.runId)).toEqual({ status: 'FAILED', failure: null });
  }, 180_000);

  it('down until tagger gives up: it says so, and the next tagger train marks the run FAILED', async () => {
    const { uri, url } = await database('late_down');
    const artifactRoot = join(scratch.path, 'artifacts-late-down');
    let result: Awaited<ReturnType<typeof trainPausedLate>>;
    try {
      result = await trainPausedLate(uri, artifactRoot, () => postgres!.down());
    } finally {
      await postgres!.up();
    }
    expect(result.code, result.stderr).toBe(1);
    const messages = nonEmptyLines(result.stderr).filter((line) => line.startsWith('tagger:'));
    expect(messages.at(-1)).toMatch(
      new RegExp(
        `; run ${result.runId} could not be marked FAILED either \\(the store stayed unreachable\\), so it shows as RUNNING until the next tagger train or optimize on experiment 'best' marks it FAILED$`,
      ),
    );
    expect((await runStatus(url, result.runId)).status).toBe('RUNNING');

    const next = await train(uri, artifactRoot, '--quiet', '--no-label-issues');
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(
      new RegExp(
        `^tagger: run ${result.runId} \\(train-[\\d-]+\\) of experiment 'best' was left RUNNING by a tagger that stopped while logging it \\(\\S+ \\d+\\); marked FAILED$`,
        'm',
      ),
    );
    const after = await runStatus(url, result.runId);
    expect(after.status).toBe('FAILED');
    expect(after.failure).toMatch(/ended while logging it, before it could mark it FAILED/);
  }, 240_000);
});
