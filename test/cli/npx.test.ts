/**
 * `npx tagger` in a checkout (issue 27, item 7): npm exec installs the project itself into npx's cache as
 * a `file:` link (npm 7+ does so to link a local package's bin) and runs its `prepare` script in the
 * checkout — which was `npm run build`, so the first `npx tagger …` rebuilt dist/ under any server running
 * from it (its inspection page answered for files that were gone). `prepare` now builds only for installs
 * (`npm ci`, `npm install`, `npm run setup`), not under `npm exec`.
 *
 * For real: a copy of the project (what the build reads, and the built dist/) in a temporary folder,
 * node_modules linked, `npx tagger --help` run by npm with a cache of its own, offline.
 */
import { spawnSync } from 'node:child_process';
import { cp, readdir, readFile, realpath, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/components.js';
import { useTempDir } from '../support/temp-dir.js';

const copy = useTempDir('tagger-npx-');
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  for (const part of [
    'package.json',
    'bin',
    'scripts',
    'src',
    'ui',
    'tsconfig.json',
    'tsconfig.build.json',
    'dist',
  ]) {
    await cp(join(REPO_ROOT, part), join(copy.path, part), { recursive: true });
  }
  await symlink(await realpath(join(REPO_ROOT, 'node_modules')), join(copy.path, 'node_modules'));
  // A shell after `npm run setup`: Node 24 first on PATH, npm's own variables unset; npm offline, with a
  // cache of its own so nothing outside the copy changes.
  env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')),
  );
  Object.assign(env, {
    PATH: `${join(copy.path, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`,
    npm_config_cache: join(copy.path, '.npm-cache'),
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  });
}, 60_000);

const modified = async (path: string): Promise<number> => (await stat(join(copy.path, path))).mtimeMs;

describe('npx tagger in a checkout', () => {
  it('runs the command line and builds nothing', async () => {
    const built = ['dist/cli/main.js', 'dist/ui/index.html'];
    const before = await Promise.all(built.map(modified));
    const npx = spawnSync('npx', ['tagger', '--help'], {
      cwd: copy.path,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(npx.status, `${npx.stdout}\n${npx.stderr}`).toBe(0);
    expect(npx.stdout).toMatch(/^Usage: tagger /);
    // npm took its usual path: the project linked into npx's cache (so its prepare script was run)…
    expect(await readdir(join(copy.path, '.npm-cache', '_npx'))).toHaveLength(1);
    // …and dist/ is as it was.
    expect(await Promise.all(built.map(modified))).toEqual(before);
  }, 120_000);

  it('prepare still builds after npm ci and npm install, and not under npm exec', async () => {
    // An npm that records what it is asked to run instead of building.
    const fakeNpm = join(copy.path, 'fake-npm.cjs');
    const asked = join(copy.path, 'asked.txt');
    await writeFile(
      fakeNpm,
      `require('fs').appendFileSync(${JSON.stringify(asked)}, process.argv.slice(2).join(' ') + '\\n');\n`,
    );
    for (const command of ['ci', 'install', 'exec', 'run-script']) {
      const prepare = spawnSync(process.execPath, ['scripts/prepare.js'], {
        cwd: copy.path,
        env: { ...env, npm_command: command, npm_execpath: fakeNpm },
        encoding: 'utf8',
      });
      expect(prepare.status, prepare.stderr).toBe(0);
    }
    expect((await readFile(asked, 'utf8')).trim().split('\n')).toEqual([
      'run build',
      'run build',
      'run build',
    ]);
  });
});
