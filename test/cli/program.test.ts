/**
 * The `tagger` program: its commands and help. Commands run in-process (test/support/cli.ts); real files,
 * a real local store.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, HELP_WIDTH } from '../../src/cli/index.js';
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

describe('every --help wraps at 100 columns (issue 42: serve --help had lines of 418 characters)', () => {
  /** Every command and subcommand of the program, by its path. */
  const commands = (command: Command, path: string[] = []): string[][] => [
    path,
    ...command.commands.flatMap((sub) => commands(sub, [...path, sub.name()])),
  ];

  it.each(commands(buildProgram()).map((path) => [path.join(' ') || '(tagger)', path]))(
    '%s --help',
    async (_, path) => {
      const result = await tagger([...path, '--help']);
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stdout.split('\n');
      const long = lines.filter((line) => line.length > HELP_WIDTH);
      expect(long, `lines over ${HELP_WIDTH} columns`).toEqual([]);
    },
  );

  it("wraps serve's settings under their descriptions, and a narrower terminal's help at its width", async () => {
    const result = await tagger(['serve', '--help']);
    expect(result.stdout).toMatch(
      /^ {2}--encoder-max-request-tokens <tokens> +encoder runs: most work one request.*\n {20,}\S/m,
    );
    let out = '';
    const stream = {
      isTTY: true,
      columns: 90,
      write: (text: string) => {
        out += text;
        return true;
      },
    };
    const program = buildProgram({ stdout: stream, stderr: stream } as unknown as Parameters<
      typeof buildProgram
    >[0]);
    program.commands.find((command) => command.name() === 'train')!.outputHelp();
    expect(Math.max(...out.split('\n').map((line) => line.length))).toBeLessThanOrEqual(90);
  });
});
