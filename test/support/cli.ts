/**
 * Running the `tagger` command line in tests. `runCli` drives the commands in this process through
 * `main(argv, io)` with captured output — no TypeScript loader to start, so a case costs what its
 * command costs. `spawnCli` starts a real process (tsx on src/cli/main.ts) for what needs one: another
 * user, signals, a process's exit.
 */
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, expect } from 'vitest';
import { main } from '../../src/cli/index.js';
import type { CliIo } from '../../src/cli/io.js';
import { REPO_ROOT, SAMPLE_DATA, TSX_LOADER } from './components.js';
import { useTempDir } from './temp-dir.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Variables set for the command (undefined: unset); MLFLOW_TRACKING_URI is '' unless given. */
  env?: Record<string, string | undefined>;
  /** The working directory of the command (default: this process's). */
  cwd?: string;
}

/** The TypeScript entry of the `tagger` process. */
export const CLI_ENTRY = join(REPO_ROOT, 'src', 'cli', 'main.ts');

/** One in-process command line at a time: each changes process.env and the working directory. */
let running: Promise<unknown> = Promise.resolve();

/**
 * Runs `tagger <args>` in this process and resolves with its exit status and output.
 * @example const { code, stdout } = await runCli(['predict', 'YOLO'], { env: { MLFLOW_TRACKING_URI: store } });
 */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  const run = running.then(() => runNow(args, options));
  running = run.catch(() => undefined);
  return run;
}

async function runNow(args: readonly string[], options: CliOptions): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => err.push(text) },
  };
  const env = { MLFLOW_TRACKING_URI: '', ...options.env };
  const saved = new Map(Object.keys(env).map((key) => [key, process.env[key]]));
  const cwd = process.cwd();
  try {
    for (const [key, value] of Object.entries(env)) setVariable(key, value);
    if (options.cwd !== undefined) process.chdir(options.cwd);
    const code = await main(args, io);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    process.chdir(cwd);
    for (const [key, value] of saved) setVariable(key, value);
  }
}

function setVariable(key: string, value: string | undefined): void {
  if (value === undefined) delete process.env[key];
  else process.env[key] = value;
}

/** A real `tagger` process, e.g. as another user (`uid`, `gid`); killed after `timeoutMs`. */
export function spawnCli(
  args: readonly string[],
  options: CliOptions & { uid?: number; gid?: number; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, CLI_ENTRY, ...args],
      {
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        env: { ...process.env, MLFLOW_TRACKING_URI: '', ...options.env },
        timeout: options.timeoutMs ?? 120_000,
        ...(options.uid === undefined ? {} : { uid: options.uid }),
        ...(options.gid === undefined ? {} : { gid: options.gid }),
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** A `tagger` process under way (`startCli`): its output so far and its end. */
export interface CliProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Whether it has ended (process and streams closed). */
  ended(): boolean;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Processes `startCli` started: killed by their PID if one still runs when the test process exits. */
const startedCli = new Set<ChildProcessWithoutNullStreams>();
process.once('exit', () => {
  for (const child of startedCli)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/**
 * Starts a real `tagger <args>` process (tsx on src/cli/main.ts) and returns at once, for a test that acts
 * on it while it runs (signals, taking a store away); `detached`: in a process group of its own.
 */
export function startCli(
  args: readonly string[],
  options: CliOptions & {
    detached?: boolean /** Modules to `--import` first (test preloads). */;
    preload?: readonly string[];
  } = {},
): CliProcess {
  const preload = (options.preload ?? []).flatMap((module) => ['--import', module]);
  const child = spawn(process.execPath, ['--import', TSX_LOADER, ...preload, CLI_ENTRY, ...args], {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { ...process.env, MLFLOW_TRACKING_URI: '', ...options.env },
    detached: options.detached ?? false,
  });
  startedCli.add(child);
  let stdout = '';
  let stderr = '';
  let ended = false;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('close', (code, signal) => {
      ended = true;
      startedCli.delete(child);
      done({ code, signal });
    }),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, ended: () => ended, exited };
}

/** A clean failure: non-zero exit, a `tagger:` message, and no stack trace. */
export function expectCleanFailure(result: CliResult, message: RegExp): void {
  expect(result.code).not.toBe(0);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/^\s+at /m);
}

/**
 * Training arguments that train in about a second (short n-grams; few epochs where a test pins the SGD
 * model, which has them — the default soft vote has none): enough for CLI cases.
 */
export const FAST_ARGS = JSON.stringify({ num_epochs: 3, ngram_max_range: 4 });

/**
 * `tagger train` arguments that train in about a second on the sample data into `uri` (FAST_ARGS), then
 * `more`; `data` and `args` replace the sample data and FAST_ARGS. The argv most CLI tests start from.
 * @example await tagger(trainArgv(cli.store, ['--json']))
 */
export function trainArgv(
  uri: string,
  more: readonly string[] = [],
  options: { data?: string; args?: string } = {},
): string[] {
  return [
    'train',
    ...['--data', options.data ?? SAMPLE_DATA, '--args', options.args ?? FAST_ARGS, '--tracking-uri', uri],
    ...more,
  ];
}

/**
 * One test file's working folder for CLI cases, made before its tests and removed after them, and
 * `tagger` running there: in-process, or as a real process for another user (`uid`, `gid`). `given` is
 * the folder's name prefix, or options: with `trained`, its store (`folder.store`) holds one run trained
 * on the sample data before the tests.
 */
export function cliFolder(given: string | { prefix?: string; trained?: boolean } = {}) {
  const options = typeof given === 'string' ? { prefix: given } : given;
  const scratch = useTempDir(options.prefix ?? 'tagger-cli-');
  beforeAll(async () => {
    if (options.trained) {
      // The best run of experiment `best` in the folder's store, as `tagger train` logs it.
      const trained = await folder.tagger(trainArgv(folder.store, ['--quiet']));
      expect(trained.code, trained.stderr).toBe(0);
    }
  });
  const folder = {
    /** The folder (the commands' working directory). */
    get dir(): string {
      return scratch.path;
    },
    /** A file store in the folder (created by the first command that writes to it). */
    get store(): string {
      return join(folder.dir, 'mlruns');
    },
    tagger(
      args: readonly string[],
      env: Record<string, string | undefined> = {},
      user: { uid?: number; gid?: number; cwd?: string } = {},
    ): Promise<CliResult> {
      const cwd = user.cwd ?? folder.dir;
      return user.uid === undefined
        ? runCli(args, { env, cwd })
        : spawnCli(args, { env, cwd, uid: user.uid, ...(user.gid === undefined ? {} : { gid: user.gid }) });
    },
  };
  return folder;
}
