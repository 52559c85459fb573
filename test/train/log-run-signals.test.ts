/**
 * A real `tagger train` process signalled while its run is being logged: the run ends KILLED with an end
 * time (never RUNNING, never FINISHED), the process exits 143 for SIGTERM and 130 for SIGINT, and serving
 * skips the run although it ranks first. The signal is sent at a known point — after the first model file
 * is stored — through a test-only preload (`test/support/pause-logging.ts`), not after a sleep. A signal
 * during the training itself stops it at once and leaves no run at all; `tagger optimize` signalled while a trial trains stops
 * after that training with its parent run KILLED. `log-run.test.ts` covers the same in-process.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { MODEL_FILES } from '../../src/model/index.js';
import { ServedRuns } from '../../src/served-models/index.js';
import { FileTrackingStore } from '../../src/tracking/index.js';
import { CLI_ENTRY } from '../support/cli.js';
import { REPO_ROOT, SAMPLE_DATA, TSX_LOADER } from '../support/components.js';
import { captureLog } from '../support/http.js';
import { useTempDir } from '../support/temp-dir.js';

const CLI = CLI_ENTRY;
const PAUSE_LOGGING = pathToFileURL(resolve(REPO_ROOT, 'test', 'support', 'pause-logging.ts')).href;
/** Small and fast; every training here uses the same arguments and seed, so the same f1. */
const FAST = JSON.stringify({ num_epochs: 3, ngram_max_range: 4 });

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `tagger train` into `store` as a child process; `preload` adds `--import` modules. */
function train(store: string, args: string, preload: string[] = []): ChildProcessWithoutNullStreams {
  const imports = [TSX_LOADER, ...preload].flatMap((url) => ['--import', url]);
  return spawn(
    process.execPath,
    [...imports, CLI, 'train', '--data', SAMPLE_DATA, '--args', args, '--tracking-uri', store],
    { cwd: REPO_ROOT, env: { ...process.env, MLFLOW_TRACKING_URI: '' } },
  );
}

/** Collects the output; calls `onStderr` with everything printed so far, at every chunk. */
function outcome(child: ChildProcessWithoutNullStreams, onStderr?: (stderr: string) => void): Promise<Exit> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    onStderr?.(stderr);
  });
  return new Promise((done) => child.once('close', (code, signal) => done({ code, signal, stdout, stderr })));
}

const scratch = useTempDir('tagger-log-signals-');
let store: string;
/** A complete run logged before the interrupted ones, with the same f1. */
let finishedRunId: string;

beforeAll(async () => {
  store = join(scratch.path, 'mlruns');
  const first = await outcome(train(store, FAST));
  expect(first.code, first.stderr).toBe(0);
  finishedRunId = /Logged run ([0-9a-f]{32})/.exec(first.stdout)?.[1] ?? '';
  expect(finishedRunId).not.toBe('');
}, 60_000);

describe('tagger train interrupted while its run is logged', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)(
    '%s: the run ends KILLED with an end time and is not served; the process exits %i',
    async (signal, exitCode) => {
      const child = train(store, FAST, [PAUSE_LOGGING]);
      let runId = '';
      const exit = await outcome(child, (stderr) => {
        const paused = /^paused ([0-9a-f]{32})$/m.exec(stderr);
        if (paused && runId === '') {
          runId = paused[1]!;
          child.kill(signal);
        }
      });
      expect(runId, exit.stderr).not.toBe('');
      // Handled, not killed by the signal: the exit status is the shell's 128 + signal number.
      expect({ code: exit.code, signal: exit.signal }).toEqual({ code: exitCode, signal: null });
      expect(exit.stderr).toContain(
        `tagger: interrupted by ${signal}; the run being logged was marked KILLED`,
      );
      expect(exit.stdout).not.toMatch(/Logged run/);

      const tracking = await FileTrackingStore.open(store);
      try {
        const run = await tracking.getRun(runId);
        expect(run?.info.status).toBe('KILLED');
        expect(run?.info.endTime).toBeGreaterThanOrEqual(run!.info.startTime);
        // Stopped part-way through the model: some of its files stored, not all.
        const stored = await tracking.listArtifacts(runId, 'model');
        expect(stored.length).toBeGreaterThan(0);
        expect(stored.length).toBeLessThan(MODEL_FILES.length);
        // Serving ranks it first (the same f1 as the finished run, and newer) and serves the finished run.
        const servedRuns = await ServedRuns.load(tracking, {
          experiment: 'best',
          modelCacheSize: 2,
          log: captureLog(),
        });
        expect(servedRuns.runs[0]).toMatchObject({ runId, status: 'KILLED' });
        expect(servedRuns.bestRunId).toBe(finishedRunId);
      } finally {
        await tracking.close();
      }
    },
    60_000,
  );

  it('a signal during the training itself stops it at once, says so, and leaves no run', async () => {
    // About 10 s of epochs: the signal, sent at the first epoch's progress line, lands long before
    // logging even on a loaded machine (killed at once, the test takes about a second).
    // The SGD model, which has epochs (the default soft vote has none, and trains in a second).
    const slow = JSON.stringify({
      classifier: 'ovr',
      oversample: true,
      num_epochs: 2_000,
      ngram_max_range: 4,
    });
    const other = join(scratch.path, 'mlruns-training');
    const child = train(other, slow);
    let sent = false;
    const exit = await outcome(child, (stderr) => {
      if (!sent && /^training: 1\//m.test(stderr)) {
        sent = true;
        child.kill('SIGTERM');
      }
    });
    expect(sent, exit.stderr).toBe(true);
    // The training runs in a worker thread, so the signal is handled at once (exit 128 + 15).
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 143, signal: null });
    expect(exit.stderr).toMatch(
      /tagger: interrupted by SIGTERM; the training stopped after \d+ of \d+ epochs; nothing was logged/,
    );
    const tracking = await FileTrackingStore.open(other);
    try {
      expect(await tracking.getExperimentByName('best')).toBeNull();
    } finally {
      await tracking.close();
    }
  }, 60_000);
});

describe('tagger optimize interrupted', () => {
  it('SIGINT while a trial trains: the search stops after that training, its parent run ends KILLED, no run stays RUNNING', async () => {
    const search = join(scratch.path, 'mlruns-optimize');
    const child = spawn(
      process.execPath,
      [
        '--import',
        TSX_LOADER,
        CLI,
        'optimize',
        '--data',
        SAMPLE_DATA,
        '--args',
        FAST,
        '--trials',
        '40',
        '--output',
        join(scratch.path, 'best-args.json'),
        '--tracking-uri',
        search,
      ],
      { cwd: REPO_ROOT, env: { ...process.env, MLFLOW_TRACKING_URI: '' } },
    );
    let sent = false;
    // The progress line of trial 1 is printed once it is logged; trial 2 starts training right away.
    const exit = await outcome(child, (stderr) => {
      if (!sent && /^optimizing: 1\//m.test(stderr)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    expect(sent, exit.stderr).toBe(true);
    expect({ code: exit.code, signal: exit.signal }, exit.stderr).toEqual({ code: 130, signal: null });
    expect(exit.stderr).toMatch(/tagger: interrupted by SIGINT; /);
    expect(exit.stdout).not.toMatch(/Best of/);

    const tracking = await FileTrackingStore.open(search);
    try {
      const experiment = await tracking.getExperimentByName('optimization');
      const runs = await tracking.searchRuns(experiment!.experimentId);
      const parent = runs.find((run) => run.tags['mlflow.parentRunId'] === undefined);
      expect(parent?.info.status).toBe('KILLED');
      expect(parent?.info.endTime).toBeGreaterThanOrEqual(parent!.info.startTime);
      const trials = runs.filter((run) => run.tags['mlflow.parentRunId'] === parent?.info.runId);
      expect(trials.length).toBeGreaterThanOrEqual(1);
      expect(trials.length).toBeLessThan(40);
      expect(runs.filter((run) => run.info.status === 'RUNNING')).toEqual([]);
      expect(trials.filter((run) => run.info.status === 'FINISHED').length).toBeGreaterThanOrEqual(1);
    } finally {
      await tracking.close();
    }
  }, 120_000);
});
