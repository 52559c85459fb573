/**
 * The Tagger container image for deployment tests, built once per set of build inputs: the local base
 * (deploy/image/make-local-base.sh: these machines reach no registry) and the root Containerfile on it.
 * The image is tagged with a hash of its inputs, so an unchanged tree reuses it and a changed one
 * builds anew; a lock directory keeps test files that ask at the same time from building twice.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { locateBinary, REPO_ROOT } from './components.js';

const run = promisify(execFile);

/** The environment of every podman/buildah call: the committed containers.conf (runc, ulimits). */
export function podmanEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CONTAINERS_CONF: resolve(REPO_ROOT, 'deploy', 'containers.conf') };
}

/** Debian's podman (`apt-get install podman buildah runc`); skip with a reason, or fail under CI. */
export function locatePodman(): string | null {
  return locateBinary('podman', '/usr/bin/podman', 'install it with `apt-get install podman buildah runc`');
}

/** Runs podman with the project's containers.conf; resolves with stdout, rejects with stderr. */
export async function podman(args: string[], timeoutMs = 600_000): Promise<string> {
  try {
    const { stdout } = await run('podman', args, {
      env: podmanEnv(),
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
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

/** Holds a lock directory while `work` runs; a lock older than `staleMs` is taken over. */
async function withLock<T>(name: string, work: () => Promise<T>, staleMs = 20 * 60_000): Promise<T> {
  const lock = join(tmpdir(), `${name}.lock`);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > staleMs)
        rmSync(lock, { recursive: true });
      await new Promise((done) => setTimeout(done, 500));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export interface BuiltImage {
  ref: string;
  /** Seconds spent making the base and building the image (0 when both were there). */
  baseSeconds: number;
  buildSeconds: number;
}

let built: Promise<BuiltImage> | undefined;

/**
 * The image of the current tree (built when missing), or null when podman is missing outside CI.
 * Passes the machine's CA bundle (NODE_EXTRA_CA_CERTS) as a build secret for `npm ci` behind a proxy.
 */
export function ensureTaggerImage(): Promise<BuiltImage> | null {
  if (locatePodman() === null) return null;
  built ??= withLock('tagger-image-build', async () => {
    const ref = `localhost/tagger:test-${inputsHash()}`;
    let baseSeconds = 0;
    let buildSeconds = 0;
    const baseStarted = performance.now();
    if ((await podman(['images', '--quiet', BASE_IMAGE])).trim() === '') {
      await run('bash', [resolve(REPO_ROOT, 'deploy', 'image', 'make-local-base.sh'), BASE_IMAGE], {
        env: podmanEnv(),
        timeout: 900_000,
      });
      baseSeconds = (performance.now() - baseStarted) / 1000;
    }
    if ((await podman(['images', '--quiet', ref])).trim() === '') {
      const buildStarted = performance.now();
      const ca = process.env.NODE_EXTRA_CA_CERTS;
      await podman([
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
      ]);
      buildSeconds = (performance.now() - buildStarted) / 1000;
      // Images of earlier trees are of no further use; keep the disk from filling up with them.
      const older = (await podman(['images', '--format', '{{.Repository}}:{{.Tag}}', 'localhost/tagger']))
        .split('\n')
        .filter((name) => name.startsWith('localhost/tagger:test-') && name !== ref);
      if (older.length > 0) await podman(['rmi', '--force', ...older]).catch(() => undefined);
    }
    return { ref, baseSeconds, buildSeconds };
  });
  return built;
}
