/**
 * What `tagger train` and `tagger optimize` check before training (`checkCanLog` →
 * `FileTrackingStore.checkWritable`): the store folder, the experiment's folder and its artifact folder
 * can be written, and the experiment is not deleted. Tests run as root, whom permission bits do not
 * stop: a folder is made read-only with `chattr +i` (immutable: not even root may add a file to it), or
 * with chmod when not root; where neither works those cases are skipped with the reason.
 * `test/cli/train.test.ts` checks the same through the CLI, as user nobody.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../../src/tracking/file/file-store.js';
import { checkCanLog, TrackingError } from '../../../src/tracking/store.js';
import { useTempDir } from '../../support/temp-dir.js';

/** Makes `dir` refuse new files, even to root; returns how to undo it, or null when this system cannot. */
function freeze(dir: string): (() => void) | null {
  if (process.getuid?.() !== 0) {
    chmodSync(dir, 0o555);
    return () => chmodSync(dir, 0o755);
  }
  if (spawnSync('chattr', ['+i', dir]).status !== 0) return null;
  return () => {
    spawnSync('chattr', ['-i', dir]);
  };
}

/** Whether `freeze` works here (chattr needs CAP_LINUX_IMMUTABLE and a file system that supports it). */
const canFreeze = ((): boolean => {
  const probe = mkdtempSync(join(tmpdir(), 'tagger-freeze-probe-'));
  const undo = freeze(probe);
  undo?.();
  rmSync(probe, { recursive: true, force: true });
  if (undo === null)
    process.stderr.write('[skip] chattr +i is not available: read-only folder cases skipped\n');
  return undo !== null;
})();

/** Runs `check` with `dir` frozen, and returns what it threw. */
async function failureWhileFrozen(dir: string, check: () => Promise<void>): Promise<TrackingError> {
  const undo = freeze(dir);
  if (undo === null) throw new Error(`cannot make ${dir} read-only`);
  try {
    const error = await check().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(TrackingError);
    return error as TrackingError;
  } finally {
    undo();
  }
}

describe('checkCanLog on the file store', () => {
  const scratch = useTempDir('tagger-file-writable-', { each: true });
  let root: string;
  let store: FileTrackingStore;

  beforeEach(async () => {
    root = join(scratch.path, 'mlruns');
    store = await FileTrackingStore.open(root);
  });
  afterEach(async () => {
    await store.close();
  });

  it('passes on a writable store and experiment, and leaves nothing behind', async () => {
    const id = await store.createExperiment('best');
    const before = [(await readdir(root)).sort(), (await readdir(join(root, id))).sort()];
    await checkCanLog(store, 'best');
    expect([(await readdir(root)).sort(), (await readdir(join(root, id))).sort()]).toEqual(before);
  });

  it('for an experiment that does not exist yet, checks the store folder and creates nothing', async () => {
    await checkCanLog(store, 'later');
    expect(await store.getExperimentByName('later')).toBeNull();
    expect((await readdir(root)).sort()).toEqual(['.trash', '0']);
  });

  it('refuses a deleted experiment (training would end in the same error)', async () => {
    const id = await store.createExperiment('gone');
    // What MLflow's delete_experiment does: mark it deleted and move it to .trash.
    const meta = await readFile(join(root, id, 'meta.yaml'), 'utf8');
    await writeFile(
      join(root, id, 'meta.yaml'),
      meta.replace('lifecycle_stage: active', 'lifecycle_stage: deleted'),
    );
    await cp(join(root, id), join(root, '.trash', id), { recursive: true });
    await rm(join(root, id), { recursive: true });
    const error = await checkCanLog(store, 'gone').catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/'gone' is deleted/),
    });
  });

  it('fails when the store folder was replaced by a file', async () => {
    await rm(root, { recursive: true });
    await writeFile(root, 'not a folder');
    const error = await checkCanLog(store, 'best').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TrackingError);
    expect((error as TrackingError).message).toMatch(
      /^tracking: cannot write to the tracking folder .*mlruns .*runs cannot be logged there$/,
    );
  });

  it.skipIf(!canFreeze)('fails with PERMISSION_DENIED when the store folder is read-only', async () => {
    const error = await failureWhileFrozen(root, () => checkCanLog(store, 'best'));
    expect(error.code).toBe('PERMISSION_DENIED');
    expect(error.message).toContain(`the tracking folder ${root}`);
    expect(error.message).toMatch(/runs cannot be logged there$/);
  });

  it.skipIf(!canFreeze)(
    "fails naming the experiment when its folder is read-only, though the store's is not",
    async () => {
      const id = await store.createExperiment('best');
      const error = await failureWhileFrozen(join(root, id), () => checkCanLog(store, 'best'));
      expect(error.code).toBe('PERMISSION_DENIED');
      expect(error.message).toContain(`the folder of experiment 'best' ${join(root, id)}`);
      // The same store takes runs in another experiment.
      await checkCanLog(store, 'other');
    },
  );

  it.skipIf(!canFreeze)("fails when the experiment's artifact folder elsewhere is read-only", async () => {
    const id = await store.createExperiment('elsewhere');
    const artifacts = join(scratch.path, 'artifacts');
    await mkdir(artifacts);
    // An experiment whose artifact_location points outside the store (MLflow's --artifact-location).
    const metaPath = join(root, id, 'meta.yaml');
    const meta = await readFile(metaPath, 'utf8');
    await writeFile(
      metaPath,
      meta.replace(/^artifact_location: .*$/m, `artifact_location: ${pathToFileURL(artifacts).href}`),
    );
    await checkCanLog(store, 'elsewhere');
    const error = await failureWhileFrozen(artifacts, () => checkCanLog(store, 'elsewhere'));
    expect(error.code).toBe('PERMISSION_DENIED');
    expect(error.message).toContain(`the artifact folder of experiment 'elsewhere' ${artifacts}`);
  });
});
