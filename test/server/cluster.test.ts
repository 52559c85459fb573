/**
 * `tagger serve --workers <n>` as real processes on 127.0.0.1: every worker serves the same best run, a
 * killed worker is replaced while the service keeps answering, SIGTERM on the primary ends them all with
 * status 0, and a startup failure ends the primary with the worker's message instead of a restart loop.
 * Worker pids come from /proc (the API has no worker header on purpose).
 */
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { request } from 'node:http';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_WORKERS, resolveWorkerCount } from '../../src/server/cluster.js';
import { StartupError } from '../../src/server/config.js';
import { SERVE_NODE_FLAGS } from '../../src/server/node-flags.js';
import { redisServerPath } from '../support/components.js';
import { redisServer } from '../support/redis-server.js';
import { KeepAliveLoad, logServedRun, type ServeCommand, spawnServe } from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';

const hasProc = existsSync('/proc/self/task');
const redisBinary = redisServerPath();

const fx = useServingFixture();

/** `tagger serve --port 0 <args>` on the fixture's store, reloading only when told. */
const serve = (args: string[], extraEnv: NodeJS.ProcessEnv = {}): ServeCommand =>
  spawnServe(['--port', '0', ...args], {
    env: {
      MLFLOW_TRACKING_URI: fx.dir,
      TAGGER_RELOAD_INTERVAL_MS: '0',
      TAGGER_SHUTDOWN_DELAY_MS: '0',
      ...extraEnv,
    },
  });

async function until<T>(
  what: string,
  probe: () => T | undefined,
  maxMs: number,
  serve?: ServeCommand,
): Promise<T> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}\n${serve?.output().slice(-3000) ?? ''}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** One POST /predict on a fresh connection (so the primary hands every request to a worker anew). */
function predict(url: string): Promise<{ status: number; runId: string | undefined }> {
  return new Promise((done, fail) => {
    const body = JSON.stringify({ texts: [{ text: 'Transformers for text classification' }] });
    const req = request(
      `${url}/predict`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' }, timeout: 30_000 },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
        });
        res.on('end', () => {
          const parsed = JSON.parse(text) as { run_id?: string; data?: { run_id?: string } };
          done({ status: res.statusCode ?? 0, runId: parsed.data?.run_id ?? parsed.run_id });
        });
      },
    );
    req.on('error', fail);
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

describe('resolveWorkerCount', () => {
  it('defaults to the available cores and reads --workers, then TAGGER_WORKERS', async () => {
    const { defaultWorkers } = await import('../../src/server/worker-count.js');
    expect(resolveWorkerCount(undefined, {})).toBe(defaultWorkers().workers);
    expect(resolveWorkerCount('3', { TAGGER_WORKERS: '5' })).toBe(3);
    expect(resolveWorkerCount(undefined, { TAGGER_WORKERS: '5' })).toBe(5);
    expect(resolveWorkerCount('', { TAGGER_WORKERS: ' ' })).toBe(defaultWorkers().workers);
  });

  it.each(['0', '-1', '1.5', 'two', String(MAX_WORKERS + 1)])('rejects %j with a clear message', (value) => {
    expect(() => resolveWorkerCount(value, {})).toThrow(StartupError);
    expect(() => resolveWorkerCount(value, {})).toThrow(/--workers must be the number of worker processes/);
  });
});

describe.skipIf(!hasProc)('tagger serve --workers 2', () => {
  it('serves one run from every worker, replaces a killed worker, and stops on SIGTERM', async () => {
    const server = serve(['--workers', '2']);
    try {
      const url = await until(
        'the listening address',
        () => /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())?.[1],
        90_000,
        server,
      );
      const primary = server.child.pid!;
      const first = await until(
        'two workers listening',
        () => {
          const pids = childrenOf(primary);
          const listening = server.output().match(/Server listening at/g)?.length ?? 0;
          return pids.length === 2 && listening >= 2 ? pids : undefined;
        },
        90_000,
        server,
      );

      // Both workers skip the broken best run; only one says so (REPORTS_SKIPS_ENV in src/server/cluster.ts).
      expect(server.output().match(/skipping a run whose artifacts cannot be loaded/g)).toHaveLength(1);

      // Workers run with the serve flags (src/server/node-flags.ts), and V8 honours them: the young generation
      // (two semi-spaces) stays within 2 × 8 MiB, where Node's default lets it grow to 2 × 16 MiB at startup.
      for (const pid of first) {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        expect(argv).toEqual(expect.arrayContaining([...SERVE_NODE_FLAGS]));
      }
      const metrics = await fetch(`${url}/metrics`).then((r) => r.text());
      const newSpace = /^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)$/m.exec(metrics)?.[1];
      expect(Number(newSpace)).toBeGreaterThan(0);
      // /metrics sums the two workers (src/server/cluster-metrics.ts): at most 16 MiB each.
      expect(Number(newSpace)).toBeLessThanOrEqual(2 * 16 * 1024 * 1024);

      // Many requests over fresh connections reach both workers; every answer names the same run.
      const answers = await Promise.all(Array.from({ length: 40 }, () => predict(url)));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(new Set(answers.map((a) => a.runId))).toEqual(new Set([fx.runs.alpha]));

      // A worker killed outright is replaced; the other one keeps answering meanwhile.
      process.kill(first[0]!, 'SIGKILL');
      // A connection the killed worker had already accepted dies with it; new ones must not.
      await new Promise((done) => setTimeout(done, 300));
      const during = await Promise.all(Array.from({ length: 10 }, () => predict(url)));
      expect(during.every((a) => a.status === 200 && a.runId === fx.runs.alpha)).toBe(true);
      const replaced = await until(
        'a replacement worker',
        () => {
          const pids = childrenOf(primary);
          return pids.length === 2 && !pids.includes(first[0]!) ? pids : undefined;
        },
        60_000,
        server,
      );
      expect(replaced).toContain(first[1]);
      const replacement = replaced.find((pid) => pid !== first[1])!;
      expect(readFileSync(`/proc/${replacement}/cmdline`, 'utf8').split('\0')).toEqual(
        expect.arrayContaining([...SERVE_NODE_FLAGS]),
      );
      await until(
        'the replacement listening',
        () => ((server.output().match(/Server listening at/g)?.length ?? 0) >= 3 ? true : undefined),
        60_000,
        server,
      );
      const after = await Promise.all(Array.from({ length: 20 }, () => predict(url)));
      expect(after.every((a) => a.status === 200 && a.runId === fx.runs.alpha)).toBe(true);

      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
      for (const pid of replaced) expect(alive(pid)).toBe(false);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 180_000);

  /** Starts `--workers 2` on `experiment`; resolves with the URL and the two worker pids. */
  async function twoWorkers(
    experiment: string,
  ): Promise<{ server: ServeCommand; url: string; workers: number[] }> {
    const server = serve(['--workers', '2', '--experiment', experiment]);
    const url = await until(
      'the listening address',
      () => /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())?.[1],
      90_000,
      server,
    );
    const workers = await until(
      'two workers listening',
      () => {
        const pids = childrenOf(server.child.pid!);
        const listening = server.output().match(/Server listening at/g)?.length ?? 0;
        return pids.length === 2 && listening >= 2 ? pids : undefined;
      },
      90_000,
      server,
    );
    return { server, url, workers };
  }

  const listeningCount = (server: ServeCommand): number =>
    server.output().match(/Server listening at/g)?.length ?? 0;

  /** The service's URL once `workers` workers listen. */
  const listeningUrl = (server: ServeCommand, workers: number): Promise<string> =>
    until(
      `${workers} workers listening`,
      () =>
        listeningCount(server) >= workers
          ? /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())?.[1]
          : undefined,
      90_000,
      server,
    );

  it('keeps the healthy worker serving while a replacement cannot start, and retries it until it can', async () => {
    const experiment = 'cluster-outage';
    const runId = await logServedRun(fx.store, experiment, { name: 'only', f1: 0.7, model: fx.modelA });
    const { server, url, workers } = await twoWorkers(experiment);
    const experimentId = (await fx.store.getExperimentByName(experiment))!.experimentId;
    const folder = resolve(fx.dir, experimentId);
    try {
      // The store loses the experiment (as an MLflow server that is down): a new worker cannot load.
      renameSync(folder, `${folder}.away`);
      process.kill(workers[0]!, 'SIGKILL');
      await until(
        'two failed attempts to start a replacement',
        () =>
          (server.output().match(/a replacement worker could not start/g)?.length ?? 0) >= 2
            ? true
            : undefined,
        60_000,
        server,
      );
      // The primary did not give up, and the healthy worker answers every request.
      expect(alive(server.child.pid!)).toBe(true);
      const during = await Promise.all(Array.from({ length: 20 }, () => predict(url)));
      expect(during.map((a) => [a.status, a.runId])).toEqual(Array(20).fill([200, runId]));

      // The store is back: the next retry starts a replacement that serves.
      renameSync(`${folder}.away`, folder);
      await until(
        'the replacement listening',
        () => (listeningCount(server) >= 3 ? true : undefined),
        60_000,
        server,
      );
      expect(childrenOf(server.child.pid!)).toHaveLength(2);
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    } finally {
      if (existsSync(`${folder}.away`)) renameSync(`${folder}.away`, folder);
      server.child.kill('SIGKILL');
    }
  }, 180_000);

  it('starts a replacement with the run its siblings serve, not a newer best they have not loaded yet', async () => {
    const experiment = 'cluster-siblings';
    const served = await logServedRun(fx.store, experiment, { name: 'first', f1: 0.6, model: fx.modelA });
    const { server, url, workers } = await twoWorkers(experiment);
    try {
      // A better run appears; reloads are off (the interval is 0), so the workers keep the first one.
      const newer = await logServedRun(fx.store, experiment, { name: 'newer', f1: 0.9, model: fx.modelB });
      process.kill(workers[0]!, 'SIGKILL');
      await until(
        'the replacement listening',
        () => (listeningCount(server) >= 3 ? true : undefined),
        60_000,
        server,
      );
      const answers = await Promise.all(Array.from({ length: 40 }, () => predict(url)));
      expect(new Set(answers.map((a) => `${a.status} ${a.runId}`))).toEqual(new Set([`200 ${served}`]));
      // A reload (SIGHUP to the primary reaches every worker) moves them all to the newer run.
      process.kill(server.child.pid!, 'SIGHUP');
      await until(
        'both workers swapped',
        () =>
          (server.output().match(/reload: serving a new best run/g)?.length ?? 0) >= 2 ? true : undefined,
        60_000,
        server,
      );
      const later = await Promise.all(Array.from({ length: 40 }, () => predict(url)));
      expect(new Set(later.map((a) => `${a.status} ${a.runId}`))).toEqual(new Set([`200 ${newer}`]));
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 180_000);

  it('reports the whole process group in /metrics, whichever worker answers the scrape', async () => {
    const server = serve(['--workers', '3']);
    try {
      const url = await until(
        'three workers listening',
        () =>
          listeningCount(server) >= 3
            ? /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())?.[1]
            : undefined,
        90_000,
        server,
      );
      const sent = 30;
      const answers = await Promise.all(Array.from({ length: sent }, () => predict(url)));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      const readings: string[] = [];
      for (let scrape = 0; scrape < 6; scrape++) {
        const text = await fetch(`${url}/metrics`).then((r) => r.text());
        readings.push(
          /^tagger_http_requests_total\{method="POST",route="\/predict",status_code="200"\} (\d+)/m.exec(
            text,
          )?.[1] ?? 'absent',
        );
        expect(text).toMatch(new RegExp(`^tagger_served_run_info\\{run_id="${fx.runs.alpha}"\\} 1$`, 'm'));
      }
      // Six scrapes over fresh connections land on different workers; each reads the group's total.
      expect(readings).toEqual(Array(6).fill(String(sent)));
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 180_000);

  it.skipIf(redisBinary === null)(
    'counts the rate limit across workers through Redis',
    async () => {
      const redis = await redisServer(redisBinary!);
      const server = serve(['--workers', '2'], {
        TAGGER_RATE_LIMIT_MAX: '5',
        TAGGER_REDIS_URL: redis.url,
      });
      try {
        const url = await until(
          'two workers listening',
          () =>
            listeningCount(server) >= 2
              ? /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())?.[1]
              : undefined,
          90_000,
          server,
        );
        const statuses: number[] = [];
        for (let i = 0; i < 9; i++) statuses.push((await predict(url)).status);
        // Without Redis each worker counted on its own and let 9 of 9 through (5 + 4).
        expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429]);
        server.child.kill('SIGTERM');
        expect(await server.exit).toBe(0);
      } finally {
        server.child.kill('SIGKILL');
        await redis.stop();
      }
    },
    180_000,
  );

  it('removes itself from behind a balancer on SIGTERM without failing a request', async () => {
    const server = serve(['--workers', '2'], {
      TAGGER_SHUTDOWN_DELAY_MS: '1500',
      TAGGER_SHUTDOWN_GRACE_MS: '30000',
    });
    try {
      const url = await listeningUrl(server, 2);
      const kept = new KeepAliveLoad(url, { connections: 3 }).start();
      const fresh = new KeepAliveLoad(url, { connections: 3, keepAlive: false }).start();
      await Promise.all([kept.settleMore(100), fresh.settleMore(100)]);
      server.child.kill('SIGTERM');
      // The balancer's health check: every worker turns not ready at once, and it stops sending.
      while ((await fetch(`${url}/health/ready`).then((r) => r.status)) === 200) {}
      const outcomes = [...(await kept.stop()), ...(await fresh.stop())];
      const failed = outcomes.filter((o) => o.error !== undefined || o.status !== 200);
      console.log(
        `--workers 2, SIGTERM behind a balancer: ${outcomes.length} requests, ${failed.length} failed`,
      );
      expect(failed).toEqual([]);
      expect(await server.exit).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 180_000);

  it('resets no request of keep-alive clients hammering it directly through SIGTERM (no balancer)', async () => {
    const server = serve(['--workers', '2'], {
      TAGGER_SHUTDOWN_DELAY_MS: '1000',
      TAGGER_SHUTDOWN_GRACE_MS: '30000',
    });
    try {
      const url = await listeningUrl(server, 2);
      // Kept connections, as kube-proxy pins them to one pod; each loop reconnects after `Connection:
      // close` and ends at its first refused connection.
      const connections = 32;
      const load = new KeepAliveLoad(url, { connections }).start();
      await load.settleMore(300);
      load.markSignal();
      server.child.kill('SIGTERM');
      const outcomes = await load.ended();
      const reset = outcomes.filter((o) => o.error !== undefined && o.error !== 'ECONNREFUSED');
      console.log(
        `--workers 2, keep-alive clients through SIGTERM, no balancer: ${outcomes.length} requests ` +
          `(${outcomes.filter((o) => o.sentAfterSignal).length} after the signal), ${reset.length} reset`,
      );
      // Before: a worker's `Connection: close` sent its clients through the primary, whose queue was
      // reset when the last worker closed (2–14 of 32 loops lost a request).
      expect(reset).toEqual([]);
      expect(outcomes.filter((o) => o.status !== undefined && o.status !== 200)).toEqual([]);
      expect(outcomes.some((o) => o.sentAfterSignal && o.status === 200)).toBe(true);
      expect(await server.exit).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 180_000);

  it('exits non-zero with the workers’ message, once, when they cannot start', async () => {
    const server = serve(['--workers', '2', '--experiment', 'no-such-experiment']);
    try {
      const code = await Promise.race([
        server.exit,
        new Promise<'hang'>((done) => setTimeout(() => done('hang'), 90_000)),
      ]);
      expect(code).toBe(1);
      const lines = server.output().match(/^tagger: .*no-such-experiment.*$/gm) ?? [];
      expect(lines).toHaveLength(1);
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});
