/**
 * Several `tagger train` processes started at once on a new file store: before experiment creation took
 * a lock, they made duplicate `best` experiments (2 of 8 rounds), after which Tagger and MLflow each saw
 * a different one. Here 8 real processes are loaded first and then released together on a new store per
 * round, so every round races on both the store's own creation (`0/` Default, `.trash/`) and on `best`.
 * `../store-concurrency.test.ts` covers concurrent logging on every adapter; this file is about creation.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../../src/tracking/index.js';
import { REPO_ROOT, TSX_LOADER } from '../../support/components.js';
import { useTempDir } from '../../support/temp-dir.js';

const RACER = resolve(REPO_ROOT, 'test', 'support', 'file-store-racer.ts');
const RACERS = 8;
const ROUNDS = 20;
/** What README and `file-store.ts` name it; MLflow ignores dot-files at the root. */
const LOCK = '.tagger-experiments.lock';

/** A racer process: send it a command line, get its next output line. */
class Racer {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: ((line: string) => void)[] = [];
  private stderr = '';

  constructor() {
    this.child = spawn(process.execPath, ['--import', TSX_LOADER, RACER], { cwd: REPO_ROOT });
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on('line', (line) => this.waiting.shift()?.(line));
  }

  /** The next line the racer prints; fails if it exits first. */
  next(): Promise<string> {
    return new Promise((done, fail) => {
      const onExit = (code: number | null): void =>
        fail(new Error(`racer ${this.child.pid} exited (${code}): ${this.stderr}`));
      this.child.once('exit', onExit);
      this.waiting.push((line) => {
        this.child.off('exit', onExit);
        done(line);
      });
    });
  }

  send(command: string): Promise<string> {
    const answer = this.next();
    this.child.stdin.write(`${command}\n`);
    return answer;
  }

  stop(): void {
    this.child.stdin.end();
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

interface Answer {
  experimentId?: string;
  runId?: string;
  error?: string;
}

/** The `name:` of every experiment folder at the store's root (as MLflow lists them), by folder. */
async function experimentNames(root: string): Promise<Record<string, string>> {
  const names: Record<string, string> = {};
  for (const entry of await readdir(root, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === '.trash') continue;
    const meta = await readFile(join(root, entry.name, 'meta.yaml'), 'utf8');
    names[entry.name] = /^name: (.*)$/m.exec(meta)?.[1] ?? '(no name)';
  }
  return names;
}

const scratch = useTempDir('tagger-file-concurrency-');
let racers: Racer[] = [];

beforeAll(async () => {
  racers = Array.from({ length: RACERS }, () => new Racer());
  expect(await Promise.all(racers.map((racer) => racer.next()))).toEqual(Array(RACERS).fill('ready'));
}, 30_000);
afterAll(async () => {
  for (const racer of racers) racer.stop();
});

/** Releases every racer on `root` at once; checks the store ends with one Default and one `best`. */
async function raceOn(root: string, label: string): Promise<void> {
  const answers = (await Promise.all(racers.map((racer) => racer.send(`race ${root}`)))).map(
    (line) => JSON.parse(line) as Answer,
  );
  expect(
    answers.filter((answer) => answer.error !== undefined),
    `${label}: errors`,
  ).toEqual([]);
  const ids = new Set(answers.map((answer) => answer.experimentId));
  expect(ids.size, `${label}: every racer must end up in the same experiment`).toBe(1);
  const bestId = [...(ids as Set<string>)][0]!; // the one id (size checked above)

  // On disk, as MLflow sees it: exactly Default and one best, and no lock or temp file left over.
  expect(await experimentNames(root), label).toEqual({ '0': 'Default', [bestId]: 'best' });
  expect((await readdir(root)).sort(), label).toEqual(['.trash', '0', bestId].sort());

  const store = await FileTrackingStore.open(root);
  try {
    const runs = await store.searchRuns(bestId, { finishedOnly: true });
    expect(runs.map((run) => run.info.runId).sort(), `${label}: every racer's run`).toEqual(
      answers.map((answer) => answer.runId).sort(),
    );
  } finally {
    await store.close();
  }
}

describe('file store: processes creating the store and an experiment at once', () => {
  it(`${RACERS} processes on a new store end with one Default, one best and all ${RACERS} runs; ${ROUNDS} rounds`, async () => {
    for (let round = 0; round < ROUNDS; round += 1) {
      await raceOn(join(scratch.path, `mlruns-${round}`), `round ${round}`);
    }
  }, 30_000);

  it('a process killed while it held the lock does not block the others', async () => {
    const root = join(scratch.path, 'mlruns-crashed');
    await (await FileTrackingStore.open(root)).close();
    // A real process takes the lock as experiment creation does, and dies holding it.
    const crashed = new Racer();
    try {
      expect(await crashed.next()).toBe('ready');
      expect(await crashed.send(`hold ${join(root, LOCK)}`)).toBe('held');
      const exited = new Promise((done) => crashed.child.once('exit', done));
      crashed.child.kill('SIGKILL');
      await exited;
    } finally {
      crashed.stop();
    }
    expect(JSON.parse(await readFile(join(root, LOCK), 'utf8')).pid).toBe(crashed.child.pid);
    // The lock wait is 15 s; a lock taken for live would fail the test's 10 s first.
    await raceOn(root, 'after the crash');
  }, 10_000);
});
