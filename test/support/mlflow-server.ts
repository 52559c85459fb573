/**
 * A real `mlflow server` for integration tests: SQLite backend and proxied artifacts in a temp dir,
 * one worker, loopback only, on a free port. Start one per test file and reuse it (startup runs ~40
 * Alembic migrations: ~10 s on a shared 2-core machine).
 *
 * The server runs in its own process group so `stop()` ends the CLI and the uvicorn worker it spawns
 * (by that group's id only); an `exit` hook does the same if a test run is interrupted.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { venvPython } from './components.js';
import { freePort } from './free-port.js';

// A fresh SQLite backend runs ~40 migrations; on a busy 2-core machine that took over 60 s, so the
// deadline is generous (it bounds a hang, it is not a speed assertion).
const READY_TIMEOUT_MS = 180_000;
const STOP_GRACE_MS = 10_000;

export interface MlflowServer {
  /** `http://127.0.0.1:<port>` (no credentials). */
  uri: string;
  /** Temp dir holding the database, artifacts and (basic-auth) config; removed by `stop()`. */
  dir: string;
  /** Set for the basic-auth variant. */
  admin?: { username: string; password: string };
  /** Server output so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Runs `mlflow server --app-name basic-auth` with a generated admin password. */
  basicAuth?: boolean;
  /** Another backend (e.g. `postgresql+psycopg2://…`) instead of SQLite in the temp dir. */
  backendStoreUri?: string;
  /** Another artifact store (e.g. `s3://bucket/prefix`, with `env` for its endpoint and keys). */
  artifactsDestination?: string;
  /** A fixed port (to restart a server where its clients expect it); default: a free one. */
  port?: number;
  /** Extra environment of the server process. */
  env?: Record<string, string>;
}

/** `.venv/bin/mlflow` next to the venv's Python; null (with a printed reason) when absent outside CI. */
export function venvMlflow(): string | null {
  const python = venvPython();
  if (python === null) return null;
  const mlflow = join(dirname(python), 'mlflow');
  if (existsSync(mlflow)) return mlflow;
  const reason = `mlflow CLI not found at ${mlflow}; install it with \`.venv/bin/pip install -r python/requirements.txt\``;
  if (process.env.CI && process.env.CI !== '0' && process.env.CI.toLowerCase() !== 'false') {
    throw new Error(`CI requires ${reason}`);
  }
  process.stderr.write(`[skip] ${reason}\n`);
  return null;
}

/** Environment for the server: no tracking variables of the developer leak in. */
function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('MLFLOW_')) env[key] = value;
  }
  // No telemetry (see mlflow-interop.ts): nothing leaves the machine, and no thread edits os.environ.
  return { ...env, PYTHONUNBUFFERED: '1', MLFLOW_DISABLE_TELEMETRY: 'true', ...extra };
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

export async function startMlflowServer(mlflow: string, options: StartOptions = {}): Promise<MlflowServer> {
  const dir = await mkdtemp(join(tmpdir(), 'tagger-mlflow-'));
  const port = options.port ?? (await freePort());
  const uri = `http://127.0.0.1:${port}`;
  const args = [
    'server',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--backend-store-uri',
    options.backendStoreUri ?? `sqlite:///${join(dir, 'mlflow.db')}`,
    '--artifacts-destination',
    options.artifactsDestination ?? join(dir, 'artifacts'),
    '--workers',
    '1',
  ];
  const extraEnv: Record<string, string> = { ...options.env };
  let admin: MlflowServer['admin'];
  if (options.basicAuth) {
    admin = { username: 'admin', password: `pw-${randomBytes(9).toString('base64url')}` };
    const ini = join(dir, 'basic_auth.ini');
    // MLflow 3.17 ships no default admin password: the ini (or MLFLOW_AUTH_ADMIN_PASSWORD) must set one.
    await writeFile(
      ini,
      [
        '[mlflow]',
        'default_permission = READ',
        `database_uri = sqlite:///${join(dir, 'basic_auth.db')}`,
        `admin_username = ${admin.username}`,
        `admin_password = ${admin.password}`,
        'authorization_function = mlflow.server.auth:authenticate_request_basic_auth',
        // Every request otherwise re-runs PBKDF2 on the password: 1-7 s per call on a busy 2-core box.
        'auth_cache_ttl_seconds = 300',
        '',
      ].join('\n'),
    );
    args.push('--app-name', 'basic-auth');
    extraEnv.MLFLOW_AUTH_CONFIG_PATH = ini;
    extraEnv.MLFLOW_FLASK_SERVER_SECRET_KEY = randomBytes(24).toString('hex');
  }

  const child = spawn(mlflow, args, {
    cwd: dir,
    env: serverEnv(extraEnv),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const proc of running) killGroup(proc, 'SIGKILL');
    });
  }
  let output = '';
  const append = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const stop = async (): Promise<void> => {
    killGroup(child, 'SIGTERM');
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS);
    if (child.exitCode === null && child.signalCode === null) await exited;
    clearTimeout(timer);
    // The worker may outlive the CLI briefly; make sure nothing of the group is left.
    killGroup(child, 'SIGKILL');
    running.delete(child);
    await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`mlflow server exited before becoming ready:\n${output}`);
    }
    try {
      const response = await fetch(`${uri}/health`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`mlflow server not ready after ${READY_TIMEOUT_MS} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { uri, dir, ...(admin ? { admin } : {}), output: () => output, stop };
}
