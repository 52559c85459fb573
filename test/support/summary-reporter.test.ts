/**
 * The closing line of a run (test/support/summary-reporter.ts) counts every failure: a small fixture
 * suite run by vitest in a child process, with a beforeAll that throws, a beforeAll that times out (what
 * the deployment tests' image build did on a loaded machine), an afterAll that throws, and passing tests.
 * Tests a failed beforeAll leaves behind are skipped, not failed: the hooks must count, or the line reads
 * "0 failed" for a run that failed.
 */
import { spawnSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './components.js';
import { useTempDir } from './temp-dir.js';

const scratch = useTempDir('tagger-summary-');

const FIXTURES: Record<string, string> = {
  'hooks.fixture.ts': `
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
describe('a suite whose beforeAll throws', () => {
  beforeAll(() => { throw new Error('setup failed'); });
  it('a', () => expect(1).toBe(1));
  it('b', () => expect(1).toBe(1));
});
describe('a suite whose afterAll throws', () => {
  afterAll(() => { throw new Error('teardown failed'); });
  it('c', () => expect(1).toBe(1));
});`,
  'timeout.fixture.ts': `
import { beforeAll, expect, it } from 'vitest';
beforeAll(() => new Promise((done) => setTimeout(done, 5_000)), 100);
it('d', () => expect(1).toBe(1));`,
  'ok.fixture.ts': `
import { expect, it } from 'vitest';
it('e', () => expect(1).toBe(1));`,
  'vitest.config.mjs': `
export default { test: { include: ['*.fixture.ts'], reporters: [${JSON.stringify(resolve(REPO_ROOT, 'test', 'support', 'summary-reporter.ts'))}] } };`,
};

describe('the closing line of a run', () => {
  it('counts failed hooks as failures, not only failed tests', () => {
    for (const [name, text] of Object.entries(FIXTURES)) writeFileSync(join(scratch.path, name), text);
    // The fixtures import vitest from the repository's node_modules.
    symlinkSync(resolve(REPO_ROOT, 'node_modules'), join(scratch.path, 'node_modules'));
    const run = spawnSync(
      process.execPath,
      [resolve(REPO_ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', 'vitest.config.mjs'],
      {
        cwd: scratch.path,
        encoding: 'utf8',
        env: { ...process.env, CI: '', NO_COLOR: '1' },
        timeout: 60_000,
      },
    );
    const lines = run.stdout.trim().split('\n');
    expect(run.status, run.stderr).toBe(1);
    // c and e passed; a, b (behind the failed beforeAll) and d (behind the timed-out one) were skipped;
    // the two beforeAll hooks and the afterAll failed.
    expect(lines.at(-1), run.stdout).toBe('tests: 2 passed, 3 failed, 3 skipped');
  }, 60_000);
});
