/**
 * One huge row in a batch file (issue 27, item 6): a 50 MB row took the file worker's heap, and the whole
 * job ended with no line number and nothing written. A row over the limit (`maxRowBytes`, 1 MiB by
 * default) is now reported by line and skipped without being read into memory, and every other row is
 * tagged. RowLimiter, which does it, must not change what csv-parse reads otherwise: the property below
 * compares the rows and line numbers csv-parse reports with and without it, on generated CSV.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BadRow, BatchInputError, tagFile } from '../../src/batch/batch-predict.js';
import { DEFAULT_MAX_ROW_BYTES, RowLimiter, type TooLongRow } from '../../src/batch/batch-row-limit.js';
import { predictorFor } from '../../src/served-models/index.js';
import { trainModel } from '../support/fixtures.js';
import { useTempDir } from '../support/temp-dir.js';

const { model } = trainModel({ analyzer: 'word', ngram_max_range: 2 });
const scratch = useTempDir('tagger-row-limit-');

/** 3 MB of words: three times the default limit. */
const HUGE = 'object detection with transformers '.repeat(90_000);

describe('a row over the limit', () => {
  it('is reported by its line and skipped; the rows around it are tagged (CSV)', async () => {
    const input = await scratch.file(
      'huge.csv',
      `id,text\n1,BERT for sentiment analysis\n2,"${HUGE}\nsecond line of it"\n3,YOLO object detection\n4,${HUGE}\n5,Kubernetes serving\n`,
    );
    const output = join(scratch.path, 'huge-tags.csv');
    const bad: BadRow[] = [];
    const result = await tagFile(predictorFor(model), { input, output, onBadRow: (row) => bad.push(row) });
    expect(result).toMatchObject({ rows: 5, tagged: 3, bad: 2 });
    const size = (text: string) => `${Buffer.byteLength(text).toLocaleString('en-US')} bytes`;
    expect(bad).toEqual([
      {
        line: 4,
        reason: `the row is ${size(`2,"${HUGE}\nsecond line of it"`)}, over the limit of 1,048,576 bytes a row (--max-row-bytes)`,
      },
      {
        line: 6,
        reason: `the row is ${size(`4,${HUGE}`)}, over the limit of 1,048,576 bytes a row (--max-row-bytes)`,
      },
    ]);
    const rows = parseSync(await readFile(output, 'utf8'), { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.line, row.text])).toEqual([
      ['2', 'BERT for sentiment analysis'],
      ['5', 'YOLO object detection'],
      ['7', 'Kubernetes serving'],
    ]);
  });

  it('is reported by its line and skipped (JSON Lines, CRLF line breaks), with a limit of your own', async () => {
    const long = 'x'.repeat(500);
    const input = await scratch.file(
      'long.jsonl',
      [
        { text: 'BERT for sentiment analysis' },
        { text: long },
        { text: 'YOLO object detection' },
        { text: `${long} and more` },
      ]
        .map((row) => JSON.stringify(row))
        .join('\r\n'),
    );
    const output = join(scratch.path, 'long-tags.jsonl');
    const bad: BadRow[] = [];
    const result = await tagFile(predictorFor(model), {
      input,
      output,
      maxRowBytes: 400,
      onBadRow: (row) => bad.push(row),
    });
    expect(result).toMatchObject({ rows: 4, tagged: 2, bad: 2 });
    expect(bad.map((row) => row.line)).toEqual([2, 4]);
    expect(bad[0]!.reason).toBe('the row is 511 bytes, over the limit of 400 bytes a row (--max-row-bytes)');
    const lines = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { line: number });
    expect(lines.map((line) => line.line)).toEqual([1, 3]);
  });

  it('a CSV header over the limit makes the file unusable, with a clear message', async () => {
    const input = await scratch.file('wide-header.csv', `text,${'c'.repeat(2_000)}\nhello,world\n`);
    const error = await tagFile(predictorFor(model), {
      input,
      output: join(scratch.path, 'x.csv'),
      maxRowBytes: 1_000,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BatchInputError);
    expect((error as Error).message).toMatch(
      /wide-header\.csv: the header row \(line 1\) is 2,005 bytes, over the limit of 1,000 bytes a row/,
    );
  });

  it('the default limit is 1 MiB', () => {
    expect(DEFAULT_MAX_ROW_BYTES).toBe(1024 * 1024);
  });
});

/** What csv-parse reads from `bytes` split into `chunks`-sized pieces, optionally through a RowLimiter. */
async function readCsv(bytes: Buffer, chunk: number, maxBytes?: number) {
  const pieces: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunk) pieces.push(bytes.subarray(i, i + chunk));
  const tooLong: TooLongRow[] = [];
  let source: NodeJS.ReadableStream = Readable.from(pieces);
  if (maxBytes !== undefined) {
    source = source.pipe(new RowLimiter({ maxBytes, format: 'csv', onTooLong: (row) => tooLong.push(row) }));
  }
  const parser = source.pipe(
    parse({
      columns: true,
      bom: true,
      skip_records_with_error: true,
      skip_empty_lines: true,
      on_record: (record: Record<string, string>, context: { lines: number }) => [record, context.lines],
    }),
  );
  const skipped: number[] = [];
  parser.on('skip', (error: { lines?: number }) => skipped.push(error.lines ?? 0));
  const rows: [number, Record<string, string>][] = [];
  for await (const [record, line] of parser as AsyncIterable<[Record<string, string>, number]>) {
    rows.push([line, record]);
  }
  return { rows, skipped, tooLong };
}

describe('RowLimiter', () => {
  /** CSV fields: plain, quoted with commas, quotes and line breaks, a stray quote, empty. */
  const field = fc.oneof(
    fc.stringMatching(/^[a-z ]{0,12}$/),
    fc.stringMatching(/^[a-z,"\n ]{0,12}$/).map((text) => `"${text.replaceAll('"', '""')}"`),
    fc.stringMatching(/^[a-z]{1,4}"[a-z]{0,4}$/),
    fc.constant('"a\r\nb"'),
    fc.constant(''),
  );
  const csv = fc
    .record({
      rows: fc.array(fc.tuple(field, field), { maxLength: 12 }),
      eol: fc.constantFrom('\n', '\r\n'),
      bom: fc.boolean(),
      blank: fc.boolean(),
      last: fc.boolean(),
    })
    .map(({ rows, eol, bom, blank, last }) => {
      const lines = ['a,b', ...rows.map(([x, y]) => `${x},${y}`)];
      if (blank) lines.splice(1, 0, '');
      return Buffer.from(`${bom ? '\uFEFF' : ''}${lines.join(eol)}${last ? eol : ''}`);
    });

  it('passes every row through unchanged when none is over the limit', async () => {
    await fc.assert(
      fc.asyncProperty(csv, fc.integer({ min: 1, max: 9 }), async (bytes, chunk) => {
        const limited = await readCsv(bytes, chunk, 1_000);
        expect(limited.tooLong).toEqual([]);
        expect(limited).toEqual({ ...(await readCsv(bytes, 64)), tooLong: [] });
      }),
      { numRuns: 300 },
    );
  });

  it('leaves out exactly the rows over the limit, on the lines csv-parse gives them', async () => {
    await fc.assert(
      fc.asyncProperty(
        csv,
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 8, max: 20 }),
        async (bytes, chunk, max) => {
          const all = await readCsv(bytes, 64);
          const limited = await readCsv(bytes, chunk, max);
          // Rows whose record (as csv-parse read it) is over the limit are reported at the line csv-parse gave them…
          const over = limited.tooLong.map((row) => row.line);
          if (limited.tooLong.some((row) => row.header)) return;
          // …and every row that is not reported comes through with the same line and values.
          expect(limited.rows).toEqual(all.rows.filter(([line]) => !over.includes(line)));
          for (const row of limited.tooLong) expect(row.bytes).toBeGreaterThan(max);
          for (const [line, record] of limited.rows) {
            expect(line).toBeGreaterThan(0);
            expect(Object.keys(record)).toEqual(['a', 'b']);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
