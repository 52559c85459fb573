/**
 * One of several processes racing on file stores, for `test/tracking/file/file-store-concurrency.test.ts`.
 * Prints `ready` once loaded (loading TypeScript takes far longer than a round, so the test starts every
 * racer first and then releases them together). Then, per line on stdin:
 *
 * - `race <folder>`: opens the store there (a new folder: every racer creates it at once), gets or
 *   creates experiment `best` as `tagger train` does, logs one FINISHED run, and prints
 *   `{"experimentId","runId"}` — or `{"error"}` — as one JSON line;
 * - `hold <lock file>`: takes that lock file as experiment creation does, prints `held` and never lets
 *   go (the test SIGKILLs it: a process that crashed inside the critical section).
 *
 * Run with `node --import tsx`.
 */
import { createInterface } from 'node:readline';
import { openTrackingStore } from '../../src/tracking/index.js';
import { withLockFile } from '../../src/tracking/lock-file.js';
import { getOrCreateExperiment } from '../../src/tracking/store.js';

async function race(folder: string): Promise<{ experimentId: string; runId: string }> {
  const store = await openTrackingStore(folder);
  try {
    const experimentId = await getOrCreateExperiment(store, 'best');
    const { info } = await store.createRun(experimentId, { runName: `racer-${process.pid}` });
    await store.logBatch(info.runId, {
      params: { racer: String(process.pid) },
      metrics: [{ key: 'f1', value: 0.5, timestamp: Date.now(), step: 0 }],
    });
    await store.updateRun(info.runId, { status: 'FINISHED', endTime: Date.now() });
    return { experimentId, runId: info.runId };
  } finally {
    await store.close();
  }
}

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

say('ready');
for await (const line of createInterface({ input: process.stdin })) {
  const [command, path] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
  if (command === 'race') {
    say(
      JSON.stringify(
        await race(path).catch((error: unknown) => ({
          error: error instanceof Error ? error.message : String(error),
        })),
      ),
    );
  } else if (command === 'hold') {
    void withLockFile(path, () => {
      say('held');
      return new Promise<never>(() => {});
    });
  } else {
    throw new Error(`file-store-racer: unknown command '${line}'`);
  }
}
