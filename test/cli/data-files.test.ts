/**
 * The files people really have, through the `tagger` command on real files (issue 42, item 5): a Latin-1
 * file is refused by `train` and `predict --input` with what it looks like and read with `--encoding
 * latin1` (before: trained silently, every accented letter U+FFFD); UTF-16 with a byte-order mark is read
 * right; a `;`-separated file is sniffed, or its delimiter named; a bad row is reported once, on the line
 * it starts on (before: an unterminated quote on line 6 was "line 7", twice in batch tagging).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../src/tracking/index.js';
import { cliFolder, expectCleanFailure, trainArgv } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder({ prefix: 'tagger-data-files-', trained: true });
const tagger = cli.tagger;

/** The sample data with "café" in every title, as `delimiter`-separated text. */
async function sample(delimiter = ','): Promise<string> {
  const rows = parse(await readFile(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[];
  const quote = (cell: string) => `"${cell.replaceAll('"', '""')}"`;
  const body = rows
    .map((row) => [`${row.title} café`, row.description!, row.tag!].map(quote).join(delimiter))
    .join('\n');
  return `title${delimiter}description${delimiter}tag\n${body}\n`;
}

/** Latin-1 bytes of `text`, whose characters outside it (typographic dashes, quotes) become '-'. */
const latin1 = (text: string) =>
  Buffer.from([...text].map((ch) => (ch.charCodeAt(0) > 0xff ? '-' : ch)).join(''), 'latin1');

describe('tagger train on files people have', () => {
  it('refuses a Latin-1 file saying so, reads it with --encoding latin1, and records how it read it', async () => {
    const path = join(cli.dir, 'latin1.csv');
    await writeFile(path, latin1(await sample()));
    expectCleanFailure(
      await tagger(trainArgv(cli.store, ['--no-label-issues'], { data: path })),
      /^tagger: data: .*latin1\.csv is not UTF-8: line 2 has byte 0xE9, .*most likely Latin-1 \/ Windows-1252; as Latin-1 \(Windows-1252\) it reads ".*café.*"\. Read it with --encoding latin1/m,
    );
    const trained = await tagger(
      trainArgv(cli.store, ['--no-label-issues', '--encoding', 'latin1', '--json'], { data: path }),
    );
    expect(trained.code, trained.stderr).toBe(0);
    expect(trained.stderr).not.toMatch(/\uFFFD/);
    const runId = JSON.parse(trained.stdout).run_id as string;
    // Recorded, so `tagger retrain` reads the file again the same way.
    const store = await openTrackingStore(cli.store);
    try {
      expect((await store.getRun(runId))?.params).toMatchObject({ data_encoding: 'windows-1252' });
    } finally {
      await store.close();
    }
    // The accented word is a feature the model knows (an explanation names it), not U+FFFD.
    const run = await tagger([
      'predict',
      '--run-id',
      runId,
      '--tracking-uri',
      cli.store,
      '--explain',
      'café',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('café');
  });

  it('reads a UTF-16 file with a byte-order mark and a ;-separated one (sniffed), or the delimiter named', async () => {
    const utf16 = join(cli.dir, 'utf16.csv');
    await writeFile(
      utf16,
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(await sample(), 'utf16le')]),
    );
    const semicolons = join(cli.dir, 'semicolons.csv');
    await writeFile(semicolons, await sample(';'));
    for (const data of [utf16, semicolons]) {
      const trained = await tagger(trainArgv(cli.store, ['--no-label-issues'], { data }));
      expect(trained.code, trained.stderr).toBe(0);
    }
    const named = await tagger(
      trainArgv(cli.store, ['--no-label-issues', '--delimiter', ';'], { data: semicolons }),
    );
    expect(named.code, named.stderr).toBe(0);
    // The wrong one named: the message says which delimiter it read with.
    expectCleanFailure(
      await tagger(trainArgv(cli.store, ['--no-label-issues', '--delimiter', 'tab'], { data: semicolons })),
      /semicolons\.csv is not valid CSV: line 2: Invalid Closing Quote: .*\(read with --delimiter tab\)/,
    );
    expectCleanFailure(
      await tagger(trainArgv(cli.store, ['--delimiter', 'ab'], { data: semicolons })),
      /--delimiter must be one character such as , ; \| or tab/,
    );
    expectCleanFailure(
      await tagger(trainArgv(cli.store, ['--encoding', 'klingon'], { data: semicolons })),
      /unknown encoding 'klingon'/,
    );
  });

  it('names the line a bad row starts on, with the delimiter it was read with', async () => {
    const lines = (await sample()).split('\n');
    lines[5] = `"${lines[5]!.replaceAll('"', '')}`; // line 6: an opening quote never closed right
    const path = join(cli.dir, 'quote.csv');
    await writeFile(path, lines.slice(0, 40).join('\n'));
    expectCleanFailure(
      await tagger(trainArgv(cli.store, [], { data: path })),
      /quote\.csv is not valid CSV: the row starting on line 6 \(to line \d+\): .*a quote opened on line 6 is not closed where it should be.*\(read with delimiter ',', sniffed from the first lines; name another with --delimiter\)/,
    );
  });
});

describe('tagger predict --input on files people have', () => {
  const predict = (input: string, output: string, ...more: string[]) =>
    tagger([
      'predict',
      '--input',
      input,
      '--output',
      output,
      '--tracking-uri',
      cli.store,
      '--quiet',
      ...more,
    ]);

  it('a Latin-1 file: refused saying so, tagged with --encoding latin1 with its accents kept', async () => {
    const input = join(cli.dir, 'tag-latin1.csv');
    await writeFile(input, latin1(await sample()));
    expectCleanFailure(
      await predict(input, join(cli.dir, 'tags-latin1.csv')),
      /tag-latin1\.csv is not UTF-8: line 2 has byte 0xE9.*--encoding latin1/,
    );
    const done = await predict(input, join(cli.dir, 'tags-latin1.csv'), '--encoding', 'latin1');
    expect(done.code, done.stderr).toBe(0);
    const tagged = await readFile(join(cli.dir, 'tags-latin1.csv'), 'utf8');
    expect(tagged).toContain(' café ');
    expect(tagged).not.toContain('\uFFFD');
  });

  it('UTF-16 with a byte-order mark and a tab-separated file are tagged like the UTF-8 comma one', async () => {
    const reference = join(cli.dir, 'tag-utf8.csv');
    await writeFile(reference, await sample());
    await predict(reference, join(cli.dir, 'tags-utf8.csv'));
    const expected = await readFile(join(cli.dir, 'tags-utf8.csv'), 'utf8');
    const utf16 = join(cli.dir, 'tag-utf16.csv');
    await writeFile(
      utf16,
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(await sample(), 'utf16le')]),
    );
    const tabs = join(cli.dir, 'tag-tabs.csv');
    await writeFile(tabs, await sample('\t'));
    for (const [input, output] of [
      [utf16, 'tags-utf16.csv'],
      [tabs, 'tags-tabs.csv'],
    ] as const) {
      const done = await predict(input, join(cli.dir, output));
      expect(done.code, done.stderr).toBe(0);
      expect(await readFile(join(cli.dir, output), 'utf8')).toBe(expected);
    }
  });

  it('a quote opened on line 6 and never closed right: one bad row, reported on line 6', async () => {
    const lines = (await sample()).split('\n');
    lines[5] = `"${lines[5]!.replaceAll('"', '')}`;
    const input = join(cli.dir, 'tag-quote.csv');
    await writeFile(input, lines.slice(0, 40).join('\n'));
    const done = await predict(input, join(cli.dir, 'tags-quote.csv'));
    expect(done.code, done.stderr).toBe(0);
    const bad = done.stderr.split('\n').filter((line) => line.includes('malformed CSV row'));
    expect(bad).toEqual([
      expect.stringMatching(
        /^tagger: .*tag-quote\.csv: line 6: malformed CSV row, lines 6–\d+ \(.*a quote opened on line 6 is not closed where it should be.*\(read with delimiter ',', sniffed from the first lines; name another with --delimiter\)\); skipped$/,
      ),
    ]);
  });
});
