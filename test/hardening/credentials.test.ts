/**
 * Credentials given in a tracking URI or a Redis URL never reach a message or a log line, whatever form
 * the driver reads them in: a URI's userinfo (`postgresql://u:p@h`, `redis://:p@h`), a query parameter
 * (`?password=…`, libpq's `sslpassword`, ioredis' `sentinelPassword`), a parameter name spelt with
 * percent-escapes (`pass%77ord`, which pg and ioredis decode to `password`), or a password typed with an
 * unencoded `/`. Every place a URI is shown is driven for real: `--print-config`, a refused setting,
 * a startup error of `tagger serve` and of a one-shot command, a REST URI that does not parse, and the
 * log of a running server (real process, real PostgreSQL on loopback) whose reloads fail and whose Redis
 * is unreachable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { cliFolder } from '../support/cli.js';
import { trainModel } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { killServers, logServedRun, spawnServer } from '../support/serve-process.js';
import { type Postgres, postgresBin, startPostgres } from '../support/stack.js';

/** Every secret of this file contains this, so one search finds any of them. */
const SECRET = 'S3CRET';

/** A PostgreSQL URI with a password in each form pg reads, on a port where nothing listens. */
const deadPostgres = (port: number): string =>
  `postgresql+psycopg2://tagger:${SECRET}-userinfo@127.0.0.1:${port}/mlflow?sslmode=disable&password=${SECRET}-query&sslpassword=${SECRET}-ssl&pass%77ord=${SECRET}-escaped`;

/** A Redis URL with a password in each form ioredis reads. */
const redisUrl = (port: number): string =>
  `redis://user:${SECRET}-userinfo@127.0.0.1:${port}/0?password=${SECRET}-query&sentinelPassword=${SECRET}-sentinel&db=0`;

const cli = cliFolder({ prefix: 'tagger-credentials-' });

describe('credentials in URIs: what the CLI prints', () => {
  it('--print-config masks every credential of the tracking URI and the Redis URL', async () => {
    const result = await cli.tagger([
      'serve',
      '--print-config',
      '--tracking-uri',
      deadPostgres(1),
      '--redis-url',
      redisUrl(1),
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain(SECRET);
    expect(result.stdout).toMatch(
      /^tracking_uri +=\s+postgresql\+psycopg2:\/\/127\.0\.0\.1:1\/mlflow\?sslmode=disable&password=\*\*\*&sslpassword=\*\*\*&pass%77ord=\*\*\*\s+# --tracking-uri/m,
    );
    expect(result.stdout).toMatch(
      /^redis_url +=\s+redis:\/\/user:\*\*\*@127\.0\.0\.1:1\/0\?password=\*\*\*&sentinelPassword=\*\*\*&db=0\s+# --redis-url/m,
    );
  });

  it('a refused setting is quoted without its credentials', async () => {
    const result = await cli.tagger(['serve', '--print-config'], {
      TAGGER_REDIS_URL: `redis://127.0.0.1:1/0?password=${SECRET} with spaces`,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/TAGGER_REDIS_URL/);
    expect(result.stderr).not.toContain(SECRET);
  });

  it('a password typed with an unencoded "/" is not shown in part', async () => {
    const result = await cli.tagger([
      'serve',
      '--print-config',
      '--tracking-uri',
      `postgresql://tagger:${SECRET}/part@127.0.0.1:1/mlflow`,
    ]);
    expect(result.stdout).not.toContain(SECRET);
    expect(result.stdout).not.toContain('part@');
  });

  it('tagger serve and tagger predict failing on an unreachable database name it without credentials', async () => {
    const serve = await cli.tagger(['serve', '--tracking-uri', deadPostgres(1), '--workers', '1']);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toMatch(/^tagger: .*postgresql\+psycopg2:\/\/127\.0\.0\.1:1\/mlflow\?/m);
    expect(serve.stderr).not.toContain(SECRET);

    const predict = await cli.tagger(['predict', 'a text', '--tracking-uri', deadPostgres(1)]);
    expect(predict.code).toBe(1);
    expect(predict.stderr).toMatch(/^tagger: .*127\.0\.0\.1:1\/mlflow/m);
    expect(predict.stderr).not.toContain(SECRET);
  });

  it('a REST URI that does not parse is named without its credentials', async () => {
    const error = await openTrackingStore(`http://u:${SECRET}@127.0.0.1:99999/?token=${SECRET}`).catch(
      (caught: Error) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/not a valid URI/);
    expect((error as Error).message).not.toContain(SECRET);
  });
});

const pgBin = postgresBin();

describe.runIf(pgBin !== null)('credentials in URIs: what a running server logs', () => {
  let postgres: Postgres;
  let store: TrackingStore;
  let uri: string;
  beforeAll(async () => {
    postgres = await startPostgres(pgBin!);
    const plain = postgres.sqlalchemyUri('creds');
    // Trust authentication: PostgreSQL never asks for the password, so any value connects.
    uri = `${plain.replace('postgres@', `postgres:${SECRET}-userinfo@`)}?password=${SECRET}-query&pass%77ord=${SECRET}-escaped`;
    store = await openTrackingStore(plain, { artifactRoot: `${cli.dir}/artifacts` });
    await logServedRun(store, 'best', { name: 'served', f1: 0.8, model: trainModel({}) });
  }, 120_000);
  afterAll(async () => {
    killServers();
    await store?.close();
    await postgres?.stop();
  });

  it('failed reloads and an unreachable Redis are logged without any credential', async () => {
    const server = await spawnServer({
      MLFLOW_TRACKING_URI: uri,
      TAGGER_REDIS_URL: redisUrl(await freePort()),
      TAGGER_RATE_LIMIT_MAX: '1000',
      TAGGER_LOG_LEVEL: 'info',
    });
    try {
      // Reloads fail while the runs table is gone.
      const client = await import('pg').then(
        ({ default: pg }) =>
          new pg.Client({ connectionString: uri.replace(/^postgresql\+psycopg2:/, 'postgresql:') }),
      );
      await client.connect();
      try {
        await client.query('ALTER TABLE runs RENAME TO runs_elsewhere');
        for (let reload = 0; reload < 2; reload++) {
          const from = server.lines.length;
          server.child.kill('SIGHUP');
          await server.waitForLog(
            (line) => line.msg === 'SIGHUP reload finished' && server.lines.indexOf(line) >= from,
            'SIGHUP reload finished',
          );
        }
        await client.query('ALTER TABLE runs_elsewhere RENAME TO runs');
      } finally {
        await client.end();
      }
      await fetch(`${server.url}/predict`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ texts: [{ text: 'transfer learning' }] }),
      });
      const failed = server.lines.filter((line) => line.msg.startsWith('reload failed'));
      expect(failed.length).toBeGreaterThanOrEqual(2);
      expect(JSON.stringify(failed)).toMatch(/127\.0\.0\.1:\d+\/creds/);
      const redis = server.lines.filter((line) => 'redis' in line);
      expect(redis.length, JSON.stringify(server.lines)).toBeGreaterThan(0);
      expect(JSON.stringify(server.lines)).not.toContain(SECRET);
      expect(server.stderr()).not.toContain(SECRET);
    } finally {
      server.kill();
      await server.exited;
    }
  }, 120_000);
});
