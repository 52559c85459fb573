/**
 * A test-only preload for a real `tagger train` process on a SQL store (`node --import tsx --import
 * <this file> src/cli/main.ts train …`): the store stops right after storing the first model file of a
 * run — late in logging: the run, its metrics and most artifacts are stored, the logged model is not
 * final, the run not FINISHED — prints `paused <run id>` on stderr, and carries on when a line arrives on
 * stdin. A test can so take the database away at that point, without sleeps and without a hook in
 * Tagger's own code. `test/e2e/postgres-faults.test.ts` uses it.
 */
import { SqlTrackingStore } from '../../src/tracking/sql/sql-store.js';
import { pauseAtFirstModelFile } from './pause-at-model-file.js';

pauseAtFirstModelFile(SqlTrackingStore, async () => {
  await new Promise<void>((resume) => process.stdin.once('data', () => resume()));
  process.stdin.pause();
});
