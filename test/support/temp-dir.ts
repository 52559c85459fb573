/**
 * A test file's (or describe block's) scratch folder in the OS's temp folder: `useTempDir(prefix)`
 * registers a beforeAll that makes it and an afterAll that removes it, whatever the tests left in it;
 * `{ each: true }` makes a fresh one before each test and removes it after. Read `.path` in hooks and tests
 * (at collection it throws: the folder does not exist yet).
 *
 *   const scratch = useTempDir('tagger-feedback-');
 *   beforeAll(async () => {
 *     store = await openTrackingStore(join(scratch.path, 'mlruns'));
 *   });
 *   it('…', async () => {
 *     const input = await scratch.file('input.csv', 'id,text\n1,hello\n');
 *   });
 *
 * Call it before the hooks that use the folder: beforeAll hooks run in the order they were registered and
 * afterAll hooks in reverse (`sequence.hooks: 'stack'`, vitest.config.ts), so a store a later hook opens
 * there is closed before the folder goes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

export interface TempDir {
  /** The folder's absolute path. */
  readonly path: string;
  /** Writes `content` to the file `name` in the folder; resolves with the file's path. */
  file(name: string, content: string | Uint8Array): Promise<string>;
}

export function useTempDir(prefix = 'tagger-test-', options: { each?: boolean } = {}): TempDir {
  let path: string | undefined;
  const before = options.each ? beforeEach : beforeAll;
  const after = options.each ? afterEach : afterAll;
  before(async () => {
    path = await mkdtemp(join(tmpdir(), prefix));
  });
  after(async () => {
    const made = path;
    path = undefined;
    if (made !== undefined) await rm(made, { recursive: true, force: true });
  });
  const dir: TempDir = {
    get path(): string {
      if (path === undefined) throw new Error(`useTempDir('${prefix}'): read outside a hook or test`);
      return path;
    },
    async file(name, content) {
      const file = join(dir.path, name);
      await writeFile(file, content);
      return file;
    },
  };
  return dir;
}
