/**
 * Runs never left RUNNING for ever (issue 34, item 6; src/train/run-ends.ts): the final status is tried
 * again while the store is unreachable, and the next training marks FAILED the runs whose logging
 * process is gone. The real PostgreSQL case is test/e2e/postgres-faults.test.ts.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileTrackingStore, getOrCreateExperiment, TrackingError } from '../../src/tracking/index.js';
import {
  FAILURE_TAG,
  failOrphanedRuns,
  LOGGING_PROCESS_TAG,
  LOGGING_STARTED_TAG,
  loggingTags,
  markEnded,
  ORPHAN_AFTER_MS,
} from '../../src/train/run-ends.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-run-ends-');
let store: FileTrackingStore;
beforeAll(async () => {
  store = await FileTrackingStore.open(join(scratch.path, 'mlruns'));
});
afterAll(async () => {
  await store?.close();
});

describe('failOrphanedRuns', () => {
  it('marks FAILED the RUNNING runs whose logging process is gone, and only those', async () => {
    const experimentId = await getOrCreateExperiment(store, 'orphans');
    const now = Date.now();
    const run = async (name: string, tags: Record<string, string>) =>
      (await store.createRun(experimentId, { runName: name, tags })).info.runId;
    const dead = await run('dead-here', {
      [LOGGING_PROCESS_TAG]: `${hostname()} 4194400`,
      [LOGGING_STARTED_TAG]: String(now),
    });
    const alive = await run('alive-here', {
      ...loggingTags(now),
      [LOGGING_PROCESS_TAG]: `${hostname()} ${process.ppid}`,
    });
    const oldElsewhere = await run('old-elsewhere', {
      [LOGGING_PROCESS_TAG]: 'another-host 12',
      [LOGGING_STARTED_TAG]: String(now - ORPHAN_AFTER_MS - 1),
    });
    const recentElsewhere = await run('recent-elsewhere', {
      [LOGGING_PROCESS_TAG]: 'another-host 12',
      [LOGGING_STARTED_TAG]: String(now - 60_000),
    });
    const notOurs = await run('another-tool', {});
    const finished = await run('finished', { [LOGGING_PROCESS_TAG]: `${hostname()} 4194401` });
    await store.updateRun(finished, { status: 'FINISHED', endTime: now });

    // pid 4194400 runs nowhere (above the largest pid_max Linux allows, 2^22); the parent of this process does.
    const marked = await failOrphanedRuns(store, 'orphans', now);
    expect(marked.map((m) => m.runName).sort()).toEqual(['dead-here', 'old-elsewhere']);
    const status = async (id: string) => (await store.getRun(id))!.info.status;
    expect(await status(dead)).toBe('FAILED');
    expect(await status(oldElsewhere)).toBe('FAILED');
    expect((await store.getRun(dead))!.tags[FAILURE_TAG]).toMatch(
      new RegExp(`^its tagger process \\(${hostname()} 4194400\\) ended while logging it`),
    );
    for (const id of [alive, recentElsewhere, notOurs]) expect(await status(id)).toBe('RUNNING');
    expect(await status(finished)).toBe('FINISHED');
    // Nothing more the second time, and nothing for an experiment that does not exist.
    expect(await failOrphanedRuns(store, 'orphans', now)).toEqual([]);
    expect(await failOrphanedRuns(store, 'no-such-experiment', now)).toEqual([]);
  });
});

describe('markEnded', () => {
  /** A store whose updateRun fails `failures` times with `code` first. */
  function flaky(failures: number, code: 'UNAVAILABLE' | 'NOT_FOUND') {
    const calls = { n: 0 };
    const fake = {
      updateRun: async () => {
        calls.n++;
        if (calls.n <= failures) throw new TrackingError(code, 'tracking: down');
      },
    } as unknown as FileTrackingStore;
    return { fake, calls };
  }

  it('tries again while the store is unreachable, says once that it waits, and gives up after the wait', async () => {
    const waits: number[] = [];
    const back = flaky(2, 'UNAVAILABLE');
    expect(
      await markEnded(back.fake, 'r', 'FAILED', { waitMs: 10_000, onWait: (ms) => waits.push(ms) }),
    ).toBe(true);
    expect(back.calls.n).toBe(3);
    expect(waits).toEqual([10_000]);
    const gone = flaky(1_000, 'UNAVAILABLE');
    expect(await markEnded(gone.fake, 'r', 'FAILED', { waitMs: 600 })).toBe(false);
    expect(gone.calls.n).toBeGreaterThan(1);
  });

  it('does not wait for what waiting cannot fix, nor after a stop signal', async () => {
    const missing = flaky(1, 'NOT_FOUND');
    expect(await markEnded(missing.fake, 'r', 'FAILED')).toBe(false);
    expect(missing.calls.n).toBe(1);
    const stopped = flaky(1, 'UNAVAILABLE');
    const signal = AbortSignal.abort();
    expect(await markEnded(stopped.fake, 'r', 'KILLED', { signal })).toBe(false);
    expect(stopped.calls.n).toBe(1);
  });
});
