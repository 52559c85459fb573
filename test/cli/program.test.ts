/**
 * The `tagger` program: its commands and help. Commands run in-process (test/support/cli.ts); real files,
 * a real local store.
 */
import { describe, expect, it } from 'vitest';
import { cliFolder } from '../support/cli.js';

const cli = cliFolder();
const tagger = cli.tagger;

describe('tagger --help', () => {
  it('lists the commands', async () => {
    const result = await tagger(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['train', 'optimize', 'predict', 'serve']) expect(result.stdout).toContain(command);
  });
});
