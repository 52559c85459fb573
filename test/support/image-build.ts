/**
 * Building the Tagger container image for the deployment tests: the local base
 * (deploy/image/make-local-base.sh: these machines reach no registry) and the root Containerfile on it,
 * as docs/deploy.md tells a user to. The image is tagged with a hash of its inputs, so an unchanged tree
 * reuses it and a changed one builds anew. Builds hold a machine-wide lock (machine-lock.ts: several
 * worktrees and runs share one podman store), have a time limit after which podman is stopped and the
 * lock released, and report their progress line by line.
 *
 * Run once per test run by the global setup (image-setup.ts); nothing here imports vitest, so the
 * setup can load it in vitest's main process.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './components.js';
import { withMachineLock } from './machine-lock.js';

const run = promisify(execFile);

/** The environment of every podman/buildah call: the committed containers.conf (runc, ulimits). */
export function podmanEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CONTAINERS_CONF: resolve(REPO_ROOT, 'deploy', 'containers.conf') };
}

/** Runs podman with the project's containers.conf; resolves with stdout, rejects with stderr. */
export async function podman(args: string[], timeoutMs = 600_000, signal?: AbortSignal): Promise<string> {
  try {
    const { stdout } = await run('podman', args, {
      env: podmanEnv(),
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
      ...(signal ? { signal } : {}),
    });
    return stdout;
  } catch (error) {
    const failed = error as { stderr?: string; message: string };
    throw new Error(`podman ${args.join(' ')} failed: ${failed.stderr?.trim() || failed.message}`);
  }
}

const NODE_VERSION = /--package=node@(\d+\.\d+\.\d+)/.exec(
  readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8'),
)![1]!;
export const BASE_IMAGE = `localhost/tagger-base:node-${NODE_VERSION}`;

/**
 * How long making the base and building the image may take together, under the lock (a normal build
 * takes 1–2 minutes; a loaded 2-core machine has taken over 15). Past it podman is stopped and the lock
 * released, so a hung build never blocks the next run.
 */
export const IMAGE_BUILD_TIMEOUT_MS = 25 * 60_000;
/** The longest a test may wait for the image: another run's build under the lock, then ours. */
export const IMAGE_WAIT_MS = 2 * IMAGE_BUILD_TIMEOUT_MS + 5 * 60_000;

/** Every file the Containerfile reads (see .containerignore), hashed with the base's name. */
function inputsHash(): string {
  const hash = createHash('sha256').update(BASE_IMAGE);
  const files: string[] = [];
  const walk = (path: string): void => {
    if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
    else files.push(path);
  };
  for (const entry of ['Containerfile', '.containerignore', 'package.json', 'package-lock.json']) {
    files.push(resolve(REPO_ROOT, entry));
  }
  for (const entry of ['tsconfig.json', 'tsconfig.build.json', 'src', 'ui', 'bin'])
    walk(resolve(REPO_ROOT, entry));
  for (const file of files.sort()) {
    hash.update(relative(REPO_ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** The image's name for the current tree (what the build makes, or made before). */
export const taggerImageRef = (): string => `localhost/tagger:test-${inputsHash()}`;

export interface BuiltImage {
  ref: string;
  /** Seconds spent making the base and building the image (0 when both were there). */
  baseSeconds: number;
  buildSeconds: number;
}

/**
 * Runs a program, passing each line it prints to `onLine`; rejects with its last lines when it fails,
 * and stops it (SIGTERM, then SIGKILL) when `signal` aborts.
 */
function runLogged(
  command: string,
  args: string[],
  onLine: (line: string) => void,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { env: podmanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    let partial = '';
    const take = (chunk: Buffer): void => {
      partial += chunk.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        onLine(line);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const abort = (): void => {
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    };
    signal.addEventListener('abort', abort, { once: true });
    child.once('error', fail);
    child.once('close', (code, killedBy) => {
      signal.removeEventListener('abort', abort);
      if (code === 0) done();
      else
        fail(
          new Error(
            `${command} ${args.join(' ')} ended with ${killedBy ?? `status ${code}`}:\n${tail.join('\n')}`,
          ),
        );
    });
  });
}

export interface BuildOptions {
  /** Told every progress line (default: nothing). */
  log?: (line: string) => void;
  /** The time limit (default IMAGE_BUILD_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Stops the build (the run is over). */
  signal?: AbortSignal;
}

/**
 * Makes the local base if it is missing and builds the image of the current tree if it is missing, under
 * the machine-wide lock. Passes the machine's CA bundle (NODE_EXTRA_CA_CERTS) as a build secret for
 * `npm ci` behind a TLS-inspecting proxy.
 */
export function buildTaggerImage(options: BuildOptions = {}): Promise<BuiltImage> {
  const log = options.log ?? (() => undefined);
  return withMachineLock(
    'tagger-image-build',
    async (signal) => {
      const ref = taggerImageRef();
      let baseSeconds = 0;
      let buildSeconds = 0;
      if ((await podman(['images', '--quiet', BASE_IMAGE], 60_000, signal)).trim() === '') {
        log(`making the local base ${BASE_IMAGE} (debootstrap, about a minute)`);
        const started = performance.now();
        await runLogged(
          'bash',
          [resolve(REPO_ROOT, 'deploy', 'image', 'make-local-base.sh'), BASE_IMAGE],
          (line) => line.startsWith('make-local-base:') && log(line),
          signal,
        );
        baseSeconds = (performance.now() - started) / 1000;
      } else log(`base ${BASE_IMAGE} is there`);
      if ((await podman(['images', '--quiet', ref], 60_000, signal)).trim() !== '') {
        log(`${ref} is there (the tree has not changed since it was built)`);
        return { ref, baseSeconds, buildSeconds };
      }
      log(`building ${ref} from the Containerfile (1–2 minutes)`);
      const started = performance.now();
      const ca = process.env.NODE_EXTRA_CA_CERTS;
      await runLogged(
        'podman',
        [
          'build',
          '--format',
          'docker',
          '--network',
          'host',
          ...(ca && existsSync(ca) ? ['--secret', `id=ca-certificates,src=${ca}`] : []),
          '--build-arg',
          `BASE=${BASE_IMAGE}`,
          '--tag',
          ref,
          REPO_ROOT,
        ],
        // `[2/3] STEP 4/8: RUN …`: stage and step, one line each.
        (line) => /^(\[\d+\/\d+\] )?STEP \d+\/\d+/.test(line) && log(`  ${line.slice(0, 100)}`),
        signal,
      );
      buildSeconds = (performance.now() - started) / 1000;
      log(`built ${ref} in ${buildSeconds.toFixed(0)} s`);
      // Test images of earlier trees: removed once they are two hours old and no container uses them
      // (no --force: another worktree's run may be using its own image right now).
      const older = (
        await podman(
          ['images', '--filter', 'until=2h', '--format', '{{.Repository}}:{{.Tag}}', 'localhost/tagger'],
          60_000,
        ).catch(() => '')
      )
        .split('\n')
        .filter((name) => name.startsWith('localhost/tagger:test-') && name !== ref);
      for (const name of older) await podman(['rmi', name], 60_000).catch(() => undefined);
      return { ref, baseSeconds, buildSeconds };
    },
    {
      timeoutMs: options.timeoutMs ?? IMAGE_BUILD_TIMEOUT_MS,
      onWait: log,
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
}
