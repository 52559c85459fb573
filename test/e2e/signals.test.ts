/**
 * The stop signal reaches the server however it was started: `npm start` and `npx tagger serve` run it
 * below npm and a shell, which a process manager's SIGTERM to npm does not pass on. Each case signals
 * the outermost process (what a process manager or a container runtime does) and checks that the
 * server process below it is gone and its port closed: no orphaned server. Uses the compiled `dist/`
 * (as `npm start` does; `npm run setup` builds it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/components.js';
import { freePort } from '../support/free-port.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
const started: ChildProcess[] = [];
/** Processes found below the started ones: killed by PID after the tests if a case left them running. */
const belowStarted = new Set<number>();
const BIN = resolve(REPO_ROOT, 'node_modules', '.bin');

beforeAll(async () => {
  if (!existsSync(resolve(REPO_ROOT, 'dist', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build`');
});

afterAll(async () => {
  for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
  for (const pid of belowStarted) if (alive(pid)) process.kill(pid, 'SIGKILL');
});

/** Every process below `pid` (by walking /proc's parent links), in no particular order. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name, which is in parentheses and may contain spaces.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const walk = (parent: number): void => {
    for (const [child, itsParent] of parentOf) {
      if (itsParent === parent) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

const alive = (pid: number): boolean => {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(state); // a zombie has exited
  } catch {
    return false;
  }
};

const cmdline = (pid: number): string[] => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
};

async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

const answers = (url: string): Promise<boolean> =>
  fetch(`${url}/health/live`).then(
    (response) => response.status === 200,
    () => false,
  );

/** Starts `command` (npm with Node 24 first on PATH), waits until the server answers. */
async function startWrapped(
  args: string[],
): Promise<{ outer: ChildProcess; url: string; log: () => string }> {
  const port = await freePort();
  const outer = spawn(args[0]!, args.slice(1), {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      PATH: `${BIN}:${process.env.PATH ?? ''}`,
      MLFLOW_TRACKING_URI: fx.dir,
      TAGGER_PORT: String(port),
      TAGGER_HOST: '127.0.0.1',
      TAGGER_WORKERS: '1',
      TAGGER_LOG_LEVEL: 'warn',
      TAGGER_SHUTDOWN_DELAY_MS: '200',
      TAGGER_RELOAD_INTERVAL_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(outer);
  let log = '';
  outer.stdout!.on('data', (chunk: Buffer) => {
    log += chunk.toString('utf8');
  });
  outer.stderr!.on('data', (chunk: Buffer) => {
    log += chunk.toString('utf8');
  });
  const url = `http://127.0.0.1:${port}`;
  await until(() => answers(url), `the server started by ${args.join(' ')}`, 60_000);
  return { outer, url, log: () => log };
}

describe('SIGTERM to the outermost process of a wrapped start', () => {
  it.each([
    ['npm start', ['npm', 'start']],
    ['npx tagger serve', ['npx', 'tagger', 'serve']],
  ])(
    '%s: the server below npm shuts down gracefully, nothing is left running',
    async (_name, args) => {
      const { outer, url, log } = await startWrapped(args);
      const servers = descendants(outer.pid!).filter((pid) => cmdline(pid).includes('serve'));
      expect(servers.length, `a serve process below npm; log: ${log()}`).toBeGreaterThan(0);
      const below = descendants(outer.pid!);
      for (const pid of below) belowStarted.add(pid);

      outer.kill('SIGTERM');
      await until(async () => !(await answers(url)), 'the port to close');
      await until(() => below.every((pid) => !alive(pid)), `every process below npm to end; log: ${log()}`);
      // The server stopped through its graceful path, not by a kill.
      expect(log()).not.toMatch(/grace period over|exiting without waiting/);
    },
    120_000,
  );
});
