/**
 * The parts of the local production stack (deploy/compose.yaml) as real processes on loopback, for the
 * deployment test: PostgreSQL (Debian's, run as the `postgres` user since tests run as root), an S3 API
 * server (moto, standing in for MinIO), haproxy, and Tagger replicas as podman containers. Each start
 * function returns a handle whose `stop()` ends what it started, by PID or container id.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { locateBinary, REPO_ROOT } from './components.js';
import { freePort } from './free-port.js';
import { podman } from './image.js';

export interface Stoppable {
  stop(): Promise<void>;
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });

async function until(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

/** Stops a child by its PID with `signal`, then SIGKILL after `graceMs`; resolves once it exited. */
async function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Debian's PostgreSQL server binaries (`apt-get install postgresql`), e.g. /usr/lib/postgresql/15/bin. */
export function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  const version = existsSync(root) ? readdirSync(root).sort().at(-1) : undefined;
  const dir = version ? join(root, version, 'bin') : join(root, '15', 'bin');
  return locateBinary('PostgreSQL', join(dir, 'postgres'), 'install it with `apt-get install postgresql`')
    ? dir
    : null;
}

export interface Postgres extends Stoppable {
  port: number;
  /** The SQLAlchemy URI MLflow needs for database `name` (created here). */
  sqlalchemyUri(name: string): string;
  /** Takes the server down (a fast shutdown: every connection ends), keeping its data. */
  down(): Promise<void>;
  /** Brings it back on the same port with the same data; resolves once it accepts logins. */
  up(): Promise<void>;
}

/** A throwaway cluster in a temp dir, trust auth on 127.0.0.1 only, run as the `postgres` user. */
export async function startPostgres(bin: string): Promise<Postgres> {
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  const dir = mkdtempSync(join(tmpdir(), 'tagger-pg-'));
  chownSync(dir, uid, gid);
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], {
    uid,
    gid,
    encoding: 'utf8',
  });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const launch = (): ChildProcess =>
    spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
      { uid, gid, stdio: 'ignore' },
    );
  let server = launch();
  // Listening is not ready: during recovery it refuses logins ("the database system is starting up").
  const ready = async () =>
    spawnSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres'], {
      encoding: 'utf8',
    }).status === 0;
  const started = async (): Promise<void> => {
    await until(() => accepts(port), 'PostgreSQL to listen', 60_000);
    await until(ready, 'PostgreSQL to accept connections', 60_000);
  };
  await started();
  return {
    port,
    down: () => stopChild(server, 'SIGINT'),
    up: async () => {
      server = launch();
      await started();
    },
    sqlalchemyUri: (name) => {
      const created = spawnSync(
        join(bin, 'createdb'),
        ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name],
        {
          uid,
          gid,
          encoding: 'utf8',
        },
      );
      if (created.status !== 0 && !/already exists/.test(created.stderr)) {
        throw new Error(`createdb ${name} failed: ${created.stderr}`);
      }
      return `postgresql+psycopg2://postgres@127.0.0.1:${port}/${name}`;
    },
    stop: async () => {
      await stopChild(server, 'SIGINT'); // PostgreSQL's "fast" shutdown
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface S3Server extends Stoppable {
  url: string;
  /** Credentials moto accepts (any); what the MLflow server is given. */
  env: Record<string, string>;
}

/** moto's S3 API server from the venv, with `bucket` created. */
export async function startS3(python: string, bucket: string): Promise<S3Server> {
  const port = await freePort();
  const server = spawn(join(python, '..', 'moto_server'), ['-H', '127.0.0.1', '-p', String(port)], {
    stdio: 'ignore',
  });
  await until(() => accepts(port), 'the S3 server (moto)', 60_000);
  const url = `http://127.0.0.1:${port}`;
  const env = {
    MLFLOW_S3_ENDPOINT_URL: url,
    AWS_ACCESS_KEY_ID: 'tagger-test',
    AWS_SECRET_ACCESS_KEY: 'tagger-test',
    AWS_DEFAULT_REGION: 'us-east-1',
  };
  const made = spawnSync(
    python,
    ['-c', `import boto3; boto3.client('s3', endpoint_url='${url}').create_bucket(Bucket='${bucket}')`],
    { env: { ...process.env, ...env }, encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`creating bucket ${bucket} failed: ${made.stderr}`);
  return { url, env, stop: () => stopChild(server, 'SIGTERM') };
}

export interface Haproxy extends Stoppable {
  url: string;
  /** haproxy's log (health check state changes). */
  output(): string;
}

/** The committed deploy/haproxy/haproxy.cfg, listening on `port` and pointing at loopback `backends`. */
export function haproxyConfigFor(port: number, backends: number[]): string {
  const committed = readFileSync(resolve(REPO_ROOT, 'deploy', 'haproxy', 'haproxy.cfg'), 'utf8');
  let server = 0;
  const lines = committed.split('\n').map((line) => {
    if (/^\s*bind\s/.test(line)) return `  bind 127.0.0.1:${port}`;
    const named = /^\s*server\s+(\S+)\s+\S+:\d+(.*)$/.exec(line);
    if (named === null) return line;
    const backend = backends[server++];
    if (backend === undefined)
      throw new Error(`haproxy.cfg has more servers than the ${backends.length} given`);
    return `  server ${named[1]} 127.0.0.1:${backend}${named[2]}`;
  });
  if (server !== backends.length)
    throw new Error(`haproxy.cfg has ${server} servers, ${backends.length} given`);
  return lines.join('\n');
}

/**
 * haproxy with the committed configuration (health checks on /health/ready every 300 ms, retries with
 * redispatch), in front of `backends` (loopback ports).
 */
export async function startHaproxy(binary: string, backends: number[]): Promise<Haproxy> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tagger-haproxy-'));
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(config, haproxyConfigFor(port, backends));
  const child = spawn(binary, ['-f', config, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  });
  await until(() => accepts(port), 'haproxy to listen', 30_000);
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    stop: async () => {
      await stopChild(child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Replica {
  port: number;
  url: string;
  id: string;
}

/** One Tagger replica: a container of `image` on the host network, configured by `env`. */
export async function runReplica(image: string, port: number, env: Record<string, string>): Promise<Replica> {
  const envArgs = Object.entries({ ...env, TAGGER_PORT: String(port) }).flatMap(([k, v]) => [
    '--env',
    `${k}=${v}`,
  ]);
  const id = (
    await podman(['run', '--detach', '--read-only', '--health-interval', 'disable', ...envArgs, image])
  ).trim();
  return { port, url: `http://127.0.0.1:${port}`, id };
}

export async function untilReady(url: string, timeoutMs = 120_000): Promise<void> {
  await until(
    () =>
      fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.ok,
        () => false,
      ),
    `${url} to be ready`,
    timeoutMs,
  );
}
