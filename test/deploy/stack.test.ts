/**
 * The deployment, tested for real on one machine (what deploy/compose.yaml runs, as processes and
 * containers on loopback): three Tagger replicas built from the Containerfile, behind haproxy with health
 * checks and retries, reading one MLflow tracking server on PostgreSQL whose artifacts go to an S3 API
 * (moto, standing in for MinIO), sharing rate limits through Redis. Under steady load, SIGKILL of a
 * replica and a rolling restart fail no request; a better run reaches every replica within the reload
 * interval; the replicas together allow exactly the rate-limit budget, and keep serving when Redis or the
 * MLflow server goes away. Every phase prints its request counts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { locateBinary, redisServerPath, venvPython } from '../support/components.js';
import { type TrainedModel, trainModel } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { type BuiltImage, ensureTaggerImage, IMAGE_WAIT_MS, podman } from '../support/image.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../support/mlflow-server.js';
import { type RedisServer, redisServer } from '../support/redis-server.js';
import {
  KeepAliveLoad,
  logServedRun,
  predictBody,
  type RequestOutcome,
  servedRunId,
} from '../support/serve-process.js';
import {
  type Haproxy,
  type Postgres,
  postgresBin,
  type Replica,
  runReplica,
  type S3Server,
  startHaproxy,
  startPostgres,
  startS3,
  untilReady,
} from '../support/stack.js';

const building = ensureTaggerImage();
const mlflowCli = venvMlflow();
const python = venvPython();
const pgBin = postgresBin();
const redisBin = redisServerPath();
const haproxyBin = locateBinary('haproxy', '/usr/sbin/haproxy', 'install it with `apt-get install haproxy`');
const missing = [building, mlflowCli, python, pgBin, redisBin, haproxyBin].some((c) => c === null);

const RELOAD_MS = 2_000;
let image: BuiltImage;
let postgres: Postgres;
let s3: S3Server;
let mlflow: MlflowServer;
let mlflowStart: Parameters<typeof startMlflowServer>[1];
let redis: RedisServer;
let haproxy: Haproxy;
let store: TrackingStore;
let models: { first: TrainedModel; better: TrainedModel };
let ports: number[];
let replicas: Replica[] = [];
let firstRun: string;

function replicaEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    MLFLOW_TRACKING_URI: mlflow.uri,
    TAGGER_WORKERS: '1',
    TAGGER_RELOAD_INTERVAL_MS: String(RELOAD_MS),
    // Longer than haproxy needs to see readiness fail (one 300 ms check) and stop routing here.
    TAGGER_SHUTDOWN_DELAY_MS: '1500',
    TAGGER_SHUTDOWN_GRACE_MS: '10000',
    TAGGER_REDIS_URL: redis.url,
    TAGGER_LOG_LEVEL: 'warn',
    ...extra,
  };
}

async function startReplicas(extra: Record<string, string> = {}): Promise<void> {
  replicas = await Promise.all(ports.map((port) => runReplica(image.ref, port, replicaEnv(extra))));
  await Promise.all(replicas.map((replica) => untilReady(replica.url)));
}

async function removeReplicas(): Promise<void> {
  await Promise.all(
    replicas.map((r) => podman(['rm', '--force', '--time', '0', r.id]).catch(() => undefined)),
  );
  replicas = [];
}

// The timeout covers waiting for the image, which the build's own time limit ends first if it hangs.
beforeAll(async () => {
  if (missing) return;
  const started = performance.now();
  [image, postgres, redis] = await Promise.all([building!, startPostgres(pgBin!), redisServer(redisBin!)]);
  s3 = await startS3(python!, 'tagger');
  mlflowStart = {
    backendStoreUri: postgres.sqlalchemyUri('mlflow'),
    artifactsDestination: 's3://tagger/artifacts',
    env: s3.env,
  };
  mlflow = await startMlflowServer(mlflowCli!, mlflowStart);
  mlflowStart.port = Number(new URL(mlflow.uri).port);
  store = await openTrackingStore(mlflow.uri);
  models = {
    first: trainModel({ analyzer: 'char_wb', ngram_max_range: 4 }),
    better: trainModel({ analyzer: 'word', ngram_max_range: 2, alpha: 1e-3 }),
  };
  firstRun = await logServedRun(store, 'best', { name: 'first', f1: 0.6, model: models.first });
  ports = await Promise.all([freePort(), freePort(), freePort()]);
  await startReplicas();
  haproxy = await startHaproxy(haproxyBin!, ports);
  await untilReady(haproxy.url);
  console.log(`deployment stack up in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}, IMAGE_WAIT_MS + 300_000);

afterAll(async () => {
  await removeReplicas();
  await haproxy?.stop();
  await store?.close();
  await mlflow?.stop();
  await s3?.stop();
  await redis?.stop();
  await postgres?.stop();
});

/** Counts of a phase: requests sent, failed (no response or not 200), per status and error. */
function report(phase: string, outcomes: RequestOutcome[]): RequestOutcome[] {
  const counts = new Map<string, number>();
  for (const o of outcomes) {
    const key = o.error ?? String(o.status);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const failed = outcomes.filter((o) => o.error !== undefined || o.status !== 200);
  console.log(
    `${phase}: ${outcomes.length} requests, ${failed.length} failed; ${[...counts].map(([k, n]) => `${k}: ${n}`).join(', ')}`,
  );
  return failed;
}

/** Steady load through haproxy: keep-alive clients and a fresh connection per request. */
function steadyLoad(url: string): { stop(): Promise<RequestOutcome[]> } {
  const kept = new KeepAliveLoad(url, { connections: 3 }).start();
  const fresh = new KeepAliveLoad(url, { connections: 3, keepAlive: false }).start();
  return { stop: async () => [...(await kept.stop()), ...(await fresh.stop())] };
}

/** The run a replica serves, or undefined while it does not answer 200. */
const servedRun = (url: string): Promise<string | undefined> => servedRunId(url).catch(() => undefined);

const metric = async (url: string, pattern: RegExp): Promise<number> => {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  let total = 0;
  for (const match of text.matchAll(pattern)) total += Number(match[1]);
  return total;
};

describe.skipIf(missing)(
  'three replicas behind haproxy, one MLflow server on PostgreSQL + S3, shared Redis',
  () => {
    it('fails no request when a replica is killed or all are restarted one by one under load', async () => {
      expect(new Set(await Promise.all(replicas.map((r) => servedRun(r.url))))).toEqual(new Set([firstRun]));
      const load = steadyLoad(haproxy.url);
      await new Promise((done) => setTimeout(done, 1_000));

      // A replica dies outright; the container restarts it (as a Deployment would).
      const victim = replicas[1]!;
      await podman(['kill', '--signal', 'KILL', victim.id]);
      await new Promise((done) => setTimeout(done, 1_000));
      await podman(['start', victim.id]);
      await untilReady(victim.url);

      // Rolling restart: SIGTERM one at a time, wait until it is ready again.
      for (const replica of replicas) {
        await podman(['stop', '--time', '30', replica.id]);
        expect((await podman(['inspect', '--format', '{{.State.ExitCode}}', replica.id])).trim()).toBe('0');
        await podman(['start', replica.id]);
        await untilReady(replica.url);
      }
      await new Promise((done) => setTimeout(done, 1_000));
      const failed = report('SIGKILL of one replica + rolling restart of three', await load.stop());
      expect(failed).toEqual([]);
    }, 300_000);

    it('brings a better run to every replica within the reload interval', async () => {
      const better = await logServedRun(store, 'best', { name: 'better', f1: 0.9, model: models.better });
      const logged = Date.now();
      for (const replica of replicas) {
        for (;;) {
          if ((await servedRun(replica.url)) === better) break;
          // Bounded: two intervals plus a reload's own time.
          expect(Date.now() - logged).toBeLessThan(2 * RELOAD_MS + 10_000);
          await new Promise((done) => setTimeout(done, 200));
        }
      }
      console.log(`better run served by all 3 replicas ${Date.now() - logged} ms after it was logged`);
    }, 120_000);

    it('keeps serving the last good model while the MLflow server is down, and recovers when it is back', async () => {
      const failedReloads = () =>
        Promise.all(replicas.map((r) => metric(r.url, /^tagger_reloads_total\{outcome="failed"\} (\d+)/gm)));
      const before = await failedReloads();
      const served = await servedRun(replicas[0]!.url);
      await mlflow.stop();
      const load = steadyLoad(haproxy.url);
      // Every replica notices (a failed reload) and goes on serving what it had.
      for (;;) {
        const now = await failedReloads();
        if (now.every((n, i) => n > before[i]!)) break;
        await new Promise((done) => setTimeout(done, 500));
      }
      for (const replica of replicas) {
        // Readiness stays 200: a replica with a model serves it; /metrics shows the failing reloads.
        expect((await fetch(`${replica.url}/health/ready`)).status).toBe(200);
        expect(await servedRun(replica.url)).toBe(served);
      }
      const failed = report('MLflow server down', await load.stop());
      expect(failed).toEqual([]);

      mlflow = await startMlflowServer(mlflowCli!, mlflowStart);
      const recovered = () =>
        Promise.all(
          replicas.map((r) => metric(r.url, /^tagger_reloads_total\{outcome="unchanged"\} (\d+)/gm)),
        );
      const base = await recovered();
      for (;;) {
        if ((await recovered()).every((n, i) => n > base[i]!)) break;
        await new Promise((done) => setTimeout(done, 500));
      }
      console.log('MLflow server back: every replica reloaded from it again');
    }, 300_000);

    it('allows exactly the rate-limit budget across the replicas, and fails open when Redis goes away', async () => {
      await removeReplicas();
      await startReplicas({ TAGGER_RATE_LIMIT_MAX: '20', TAGGER_RATE_LIMIT_WINDOW_MS: '120000' });
      await untilReady(haproxy.url);
      // Fresh connections, so haproxy spreads them over the three replicas; all come from one address.
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) {
        const response = await fetch(`${haproxy.url}/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', connection: 'close' },
          body: predictBody(1),
        });
        statuses.push(response.status);
        await response.arrayBuffer();
      }
      console.log(
        `rate limit 20 per window over 3 replicas: ${statuses.filter((s) => s === 200).length} × 200, ${statuses.filter((s) => s === 429).length} × 429`,
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.slice(20)).toEqual(Array(10).fill(429));

      await redis.stop();
      const open: number[] = [];
      for (let i = 0; i < 30; i++) {
        const response = await fetch(`${haproxy.url}/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', connection: 'close' },
          body: predictBody(1),
        });
        open.push(response.status);
        await response.arrayBuffer();
      }
      const counted = await Promise.all(
        replicas.map((r) => metric(r.url, /^tagger_rate_limit_store_errors_total (\d+)/gm)),
      );
      console.log(
        `Redis down: ${open.filter((s) => s === 200).length} of 30 × 200; fail-open counted ${counted.join(' + ')}`,
      );
      expect(open).toEqual(Array(30).fill(200));
      expect(counted.reduce((a, b) => a + b, 0)).toBe(30);
    }, 300_000);
  },
);
