/**
 * The progress bar and messages on a terminal (issue 27, item 15): a bad row reported while the bar was
 * drawn was written at the end of the bar's line, so the two shared a line. Messages now go through
 * `Progress.log`: each on its own line above the bar, which is drawn again below them and ends on its own
 * line. The terminal here is a small emulator of what a real one does with the bytes written to it
 * (carriage return, line feed, cursor column, erase line, save and restore cursor).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.js';
import type { CliIo, CliStream } from '../../src/cli/io.js';
import { createProgress } from '../../src/train/progress.js';
import { cliFolder } from '../support/cli.js';

/** A terminal screen: the bytes written to it, interpreted. */
class Screen {
  lines: string[] = [''];
  private row = 0;
  private col = 0;
  private saved = { row: 0, col: 0 };

  private put(text: string): void {
    const line = this.lines[this.row]!.padEnd(this.col);
    this.lines[this.row] = line.slice(0, this.col) + text + line.slice(this.col + text.length);
    this.col += text.length;
  }

  write(data: string): void {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal control sequences are the input.
    const tokens = data.match(/\u001b\[[?\d;]*[A-Za-z]|\u001b[78]|\r|\n|[^\u001b\r\n]+/g) ?? [];
    for (const token of tokens) {
      if (token === '\r') this.col = 0;
      else if (token === '\n') {
        this.row += 1;
        this.col = 0;
        while (this.lines.length <= this.row) this.lines.push('');
      } else if (token === '\u001b7') this.saved = { row: this.row, col: this.col };
      else if (token === '\u001b8') ({ row: this.row, col: this.col } = this.saved);
      else if (token.startsWith('\u001b[')) {
        const command = token.at(-1)!;
        const n = Number(token.slice(2, -1) || '0');
        if (command === 'G') this.col = Math.max(0, n - 1);
        else if (command === 'K') {
          const line = this.lines[this.row]!;
          this.lines[this.row] =
            n === 2 ? '' : n === 1 ? ' '.repeat(this.col) + line.slice(this.col) : line.slice(0, this.col);
        }
        // Cursor visibility and other modes change nothing on the screen.
      } else this.put(token);
    }
  }

  text(): string[] {
    return this.lines.map((line) => line.trimEnd()).filter((line) => line !== '');
  }
}

/** A stream that is a terminal (as process.stderr is in one), writing to `screen`. */
const tty = (screen: Screen): CliStream & NodeJS.WriteStream =>
  ({
    isTTY: true,
    columns: 120,
    write: (text: string) => {
      screen.write(text);
      return true;
    },
  }) as unknown as CliStream & NodeJS.WriteStream;

const cli = cliFolder({ prefix: 'tagger-progress-tty-', trained: true });

describe('a progress bar on a terminal', () => {
  it('tagger predict --input: each bad row on its own line, the bar after them, the summary after the bar', async () => {
    const input = join(cli.dir, 'rows.csv');
    const good = Array.from({ length: 3_000 }, (_, i) => `${i},text ${i} about images and transformers`);
    good.splice(500, 0, '500,');
    good.splice(1500, 0, '1500,');
    await writeFile(input, `id,text\n${good.join('\n')}\n`);
    const screen = new Screen();
    const io: CliIo = { stdout: tty(screen), stderr: tty(screen) };
    const code = await main(
      ['predict', '--input', input, '--output', join(cli.dir, 'rows-tags.csv'), '--tracking-uri', cli.store],
      io,
    );
    const lines = screen.text();
    expect(code, lines.join('\n')).toBe(0);
    // Exactly: the two reports, the bar at its end, the summary; nothing sharing a line.
    expect(lines).toHaveLength(4);
    expect(lines[0]).toBe(`tagger: ${input}: line 502: no text; skipped`);
    expect(lines[1]).toBe(`tagger: ${input}: line 1502: no text; skipped`);
    expect(lines[2]).toMatch(/^tagging \[█+\] 100% 3,002 rows, [\d,]+ rows\/s, ETA 0 s$/);
    expect(lines[3]).toMatch(
      /^Tagged 3,000 of 3,002 rows of .* \(2 bad rows skipped\) in \d+\.\d s with run [0-9a-f]{32}\.$/,
    );
  });

  it('Progress.log: a message while the bar is drawn replaces its line, and the bar comes back below it', () => {
    const screen = new Screen();
    const progress = createProgress({ label: 'work', total: 10, stream: tty(screen) });
    progress.update(3, 'three');
    progress.log('a message\n');
    progress.update(7, 'seven');
    progress.log('another\n');
    progress.stop();
    screen.write('after\n');
    expect(screen.text()).toEqual([
      'a message',
      'another',
      expect.stringMatching(/^work \[[█░]+\] 7\/10 seven$/),
      'after',
    ]);
  });
});
