/**
 * Which tests run where (vitest.config.ts): every folder of test/ is in the unit subset or named, with its
 * reason, as a full-suite folder — and the names there and the exclusions of NOT_UNIT still name something,
 * since the hand-kept list before issue 42 still said `service` and `serve` after their renames, so
 * test/served-models, test/server and test/platform ran in no unit run.
 */
import { globSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FULL_SUITE_FOLDERS, NOT_UNIT, UNIT_FOLDERS } from '../vitest.config.js';
import { REPO_ROOT } from './support/components.js';

const TEST_DIR = join(REPO_ROOT, 'test');
const folders = readdirSync(TEST_DIR, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

describe('the unit subset and the full suite', () => {
  it('every folder of test/ is a unit folder or a full-suite folder, and not both', () => {
    for (const folder of folders) {
      const unit = UNIT_FOLDERS.includes(folder);
      const full = Object.hasOwn(FULL_SUITE_FOLDERS, folder);
      expect(unit !== full, `test/${folder}: unit ${unit}, full suite only ${full}`).toBe(true);
    }
    expect(UNIT_FOLDERS).toEqual(
      expect.arrayContaining(['served-models', 'server', 'platform', 'model', 'http']),
    );
  });

  it('every full-suite folder is a folder of test/ holding tests, with a reason', () => {
    for (const [folder, reason] of Object.entries(FULL_SUITE_FOLDERS)) {
      expect(folders, `FULL_SUITE_FOLDERS names test/${folder}, which does not exist`).toContain(folder);
      expect(globSync(`test/${folder}/**/*.test.ts`, { cwd: REPO_ROOT }).length, folder).toBeGreaterThan(0);
      expect(reason.length).toBeGreaterThan(10);
    }
  });

  it('every NOT_UNIT exclusion matches a test file of a unit folder', () => {
    const unitFiles = new Set(
      UNIT_FOLDERS.flatMap((folder) => globSync(`test/${folder}/**/*.test.ts`, { cwd: REPO_ROOT })),
    );
    for (const pattern of NOT_UNIT) {
      const matched = globSync(pattern.startsWith('**/') ? `test/${pattern}` : pattern, {
        cwd: REPO_ROOT,
      }).filter((file) => unitFiles.has(file) || [...unitFiles].some((unit) => unit.startsWith(file)));
      expect(
        matched.length,
        `NOT_UNIT pattern ${pattern} matches no test file of a unit folder`,
      ).toBeGreaterThan(0);
    }
  });
});
