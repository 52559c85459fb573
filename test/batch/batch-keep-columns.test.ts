/**
 * Batch output keeps the input's own ids (issue 27, item 15): a tagged file used to carry only the line
 * number, so joining it back to the input meant counting lines. Each output row now keeps the input's
 * `id` column when there is one, or the columns named (`keepColumns`, `--keep-columns`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { BatchInputError, tagFile } from '../../src/batch/batch-predict.js';
import { predictorFor } from '../../src/served-models/index.js';
import { trainModel } from '../support/fixtures.js';
import { useTempDir } from '../support/temp-dir.js';

const { model } = trainModel({ analyzer: 'word', ngram_max_range: 2 });
const scratch = useTempDir('tagger-keep-');

const csvRows = async (path: string) =>
  parse(await readFile(path, 'utf8'), { columns: true }) as Record<string, string>[];
const jsonLines = async (path: string) =>
  (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('columns of the input kept in the output', () => {
  it("keeps the input's id column by default, right after line, for the rows tagged", async () => {
    const input = await scratch.file(
      'ids.csv',
      'source,id,title,description\nweb,P-17,BERT,sentiment analysis\nweb,P-18,,\nrss,P-19,YOLO,object detection\n',
    );
    const output = join(scratch.path, 'ids-tags.csv');
    await tagFile(predictorFor(model), { input, output });
    const raw = await readFile(output, 'utf8');
    expect(raw.split('\n')[0]!.startsWith('line,id,text,predicted_tag,probability,')).toBe(true);
    expect((await csvRows(output)).map((row) => [row.line, row.id, row.text])).toEqual([
      ['2', 'P-17', 'BERT sentiment analysis'],
      ['4', 'P-19', 'YOLO object detection'],
    ]);
  });

  it('keeps the columns named, in JSON Lines with their JSON values (null where a row lacks one)', async () => {
    const input = await scratch.file(
      'rows.jsonl',
      [
        { uid: 7, meta: { lang: 'en' }, text: 'transformers for translation' },
        { uid: 8, text: 'image segmentation with u-net' },
      ]
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    const output = join(scratch.path, 'rows-tags.jsonl');
    await tagFile(predictorFor(model), { input, output, keepColumns: ['uid', 'meta'] });
    const lines = await jsonLines(output);
    expect(lines.map((line) => Object.keys(line).slice(0, 4))).toEqual([
      ['line', 'uid', 'meta', 'text'],
      ['line', 'uid', 'meta', 'text'],
    ]);
    expect(lines.map((line) => [line.uid, line.meta])).toEqual([
      [7, { lang: 'en' }],
      [8, null],
    ]);
    // The same into CSV: JSON values as JSON, a missing one as an empty cell.
    const csv = join(scratch.path, 'rows-tags.csv');
    await tagFile(predictorFor(model), { input, output: csv, keepColumns: ['uid', 'meta'] });
    expect((await csvRows(csv)).map((row) => [row.uid, row.meta])).toEqual([
      ['7', '{"lang":"en"}'],
      ['8', ''],
    ]);
  });

  it('keeps nothing with keepColumns: [], and kept text is neutralised for spreadsheets like the rest', async () => {
    const input = await scratch.file('formula.csv', 'id,text\n=1+1,object detection\n');
    const none = join(scratch.path, 'none.csv');
    await tagFile(predictorFor(model), { input, output: none, keepColumns: [] });
    expect(Object.keys((await csvRows(none))[0]!).slice(0, 2)).toEqual(['line', 'text']);
    const kept = join(scratch.path, 'kept.csv');
    await tagFile(predictorFor(model), { input, output: kept });
    expect((await csvRows(kept))[0]!.id).toBe("'=1+1");
  });

  it('refuses a column the input lacks, or one the output has already', async () => {
    const input = await scratch.file('plain.csv', 'id,text\n1,hello world\n');
    const refused = async (keepColumns: string[]) =>
      (await tagFile(predictorFor(model), { input, output: join(scratch.path, 'x.csv'), keepColumns }).catch(
        (error: unknown) => error,
      )) as Error;
    const missing = await refused(['id', 'source']);
    expect(missing).toBeInstanceOf(BatchInputError);
    expect(missing.message).toMatch(
      /plain\.csv has no column 'source' to keep \(its columns: id, text\); check --keep-columns/,
    );
    const clash = await refused(['text', `p_${model.tags[0]}`]);
    expect(clash).toBeInstanceOf(BatchInputError);
    expect(clash.message).toMatch(/--keep-columns: 'text', 'p_.*' are columns of the output already/);
  });
});
