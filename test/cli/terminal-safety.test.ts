/**
 * What `tagger` prints cannot drive the terminal (issue 27, item 8): control characters that arrive in
 * inputs — an option, a run id, a path, a malformed row of a file — used to be echoed raw in error
 * messages, so ESC sequences could retitle the window, clear the screen or recolour text. They are now
 * written as visible `\uXXXX` escapes (src/cli/terminal.ts); tab and line feed stay. Commands run
 * in-process (test/support/cli.ts).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { printable } from '../../src/cli/terminal.js';
import { cliFolder } from '../support/cli.js';

const cli = cliFolder({ prefix: 'tagger-terminal-', trained: true });
const tagger = cli.tagger;

/** Anything a terminal acts on: C0 controls but tab and LF, DEL, C1 controls, bidirectional overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters is the point.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** ESC ] 0 ; title BEL (retitles the window), ESC [ 2 J (clears the screen), CSI as one C1 character. */
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eevil';

describe('control characters from inputs', () => {
  it('are shown as \\u escapes in error messages, never written raw', async () => {
    const cases = [
      // a run id echoed by the store's answer
      ['predict', '--run-id', `run${HOSTILE}`, '--tracking-uri', cli.store, 'a text'],
      // an option commander does not know
      ['predict', `--colour${HOSTILE}`, 'a text'],
      // a path that does not exist
      ['train', '--data', join(cli.dir, `missing${HOSTILE}.csv`), '--tracking-uri', cli.store],
      // an experiment name in a message
      ['predict', '--experiment', `exp${HOSTILE}`, '--tracking-uri', cli.store, 'a text'],
    ];
    for (const args of cases) {
      const result = await tagger(args);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr, args.join(' ')).not.toMatch(CONTROL);
      expect(result.stderr, args.join(' ')).toContain(
        '\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u202eevil',
      );
    }
  });

  it('in a malformed row of a file tagged in batch are escaped in the bad-row report', async () => {
    const input = join(cli.dir, 'rows.jsonl');
    await writeFile(input, `{"text":"fine"}\n${HOSTILE}{\n`);
    const result = await tagger([
      'predict',
      '--input',
      input,
      '--output',
      join(cli.dir, 'rows.csv'),
      '--tracking-uri',
      cli.store,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/line 2: not valid JSON/);
    expect(result.stderr).not.toMatch(CONTROL);
  });

  it('are escaped in results too, which stay valid JSON with the same values', async () => {
    const text = `object detection${HOSTILE}`;
    const result = await tagger(['predict', '--tracking-uri', cli.store, text]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(CONTROL);
    expect(JSON.parse(result.stdout).predictions[0].input_text).toBe(text);
  });

  it('printable keeps tab, line feed and ordinary text, including non-ASCII letters', () => {
    expect(printable('a\tb\nc — é ü 漢字')).toBe('a\tb\nc — é ü 漢字');
    expect(printable('\r\u007f\u0085\u2066')).toBe('\\u000d\\u007f\\u0085\\u2066');
  });
});
