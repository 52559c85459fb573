/**
 * The parent watch of a process npm started (src/server/parent-watch.ts), on a process chain laid out as
 * npm lays it out — a runner without `npm_lifecycle_event`, `sh -c`, and the watching Node process with it
 * — but with a plain Node process standing in for npm: what it watches, that a SIGKILL to the runner (which
 * leaves the shell alive) is noticed, and that a process told its parent forwards signals watches only it.
 * `npm start` and `npx tagger serve` themselves are in test/e2e/signals.test.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PARENT_FORWARDS_SIGNALS_ENV } from '../../src/server/parent-watch.js';
import { REPO_ROOT, TSX_LOADER } from '../support/components.js';

const hasProc = existsSync('/proc/self/stat');
const WATCH = resolve(REPO_ROOT, 'src', 'server', 'parent-watch.ts');
const started = new Set<ChildProcess>();
/** Watchers (and their shells) left running by a case: killed by pid. */
const leftBehind = new Set<number>();
afterAll(() => {
  for (const child of started) child.kill('SIGKILL');
  for (const pid of leftBehind) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

/** Node code run by the watching process: prints what it watches, then "gone" when the watch fires. */
const WATCHER = `
const { npmAncestors, watchParent } = await import(${JSON.stringify(pathToFileURL(WATCH).href)});
console.log(JSON.stringify({ self: process.pid, watched: npmAncestors(process.env) }));
watchParent(() => { console.log('gone'); process.exit(0); }, 50);
setInterval(() => {}, 1000);
`;

let scriptDir: string | undefined;
afterAll(() => {
  if (scriptDir) rmSync(scriptDir, { recursive: true, force: true });
});

/**
 * runner (no npm_lifecycle_event, like npm) → sh -c → node watcher (with it, like a script npm runs).
 * `forwards`: the shell tells the watcher that its parent forwards signals, as start.js does.
 */
async function chain(forwards = false) {
  scriptDir ??= mkdtempSync(join(tmpdir(), 'tagger-parent-watch-'));
  const watcher = join(scriptDir, 'watcher.mjs');
  writeFileSync(watcher, WATCHER);
  const env = { ...process.env };
  delete env.npm_lifecycle_event;
  delete env[PARENT_FORWARDS_SIGNALS_ENV];
  const marker = forwards ? `${PARENT_FORWARDS_SIGNALS_ENV}=$$ ` : '';
  const script = `${marker}'${process.execPath}' --import '${TSX_LOADER}' '${watcher}'; echo shell-done`;
  const runner = spawn(
    process.execPath,
    [
      '-e',
      `require('node:child_process').spawn('sh', ['-c', process.argv[1]], { stdio: 'inherit', env: { ...process.env, npm_lifecycle_event: 'start' } }); setInterval(() => {}, 1000);`,
      script,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  started.add(runner);
  let out = '';
  runner.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  runner.stderr!.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const deadline = Date.now() + 30_000;
  while (!out.includes('"watched"')) {
    if (Date.now() > deadline) throw new Error(`the watcher did not start: ${out}`);
    await new Promise((done) => setTimeout(done, 50));
  }
  const report = JSON.parse(out.split('\n').find((line) => line.includes('"watched"'))!) as {
    self: number;
    watched: number[];
  };
  const until = async (text: string): Promise<void> => {
    const end = Date.now() + 10_000;
    while (!out.includes(text)) {
      if (Date.now() > end) throw new Error(`no "${text}" within 10 s: ${out}`);
      await new Promise((done) => setTimeout(done, 50));
    }
  };
  return { runner, report, until, output: () => out };
}

describe.skipIf(!hasProc)('watchParent below npm', () => {
  it('watches the shell and npm, and notices a SIGKILL to npm although the shell lives on', async () => {
    const { runner, report, until } = await chain();
    // [the shell, the runner]: everything up to the first process npm did not start.
    expect(report.watched).toHaveLength(2);
    expect(report.watched[1]).toBe(runner.pid);
    runner.kill('SIGKILL');
    await until('gone');
  }, 60_000);

  it('watches only its parent when the parent forwards signals and watches npm itself', async () => {
    // What scripts/start.js and the --workers primary tell the process they start (here: the shell).
    const { runner, report, output } = await chain(true);
    expect(report.watched).toHaveLength(1);
    leftBehind.add(report.self);
    leftBehind.add(report.watched[0]!);
    runner.kill('SIGKILL');
    await new Promise((done) => setTimeout(done, 500));
    expect(output()).not.toContain('gone');
  }, 60_000);
});
