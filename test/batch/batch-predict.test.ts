/** Batch tagging of files: order, line numbers, bad rows, formats, and nothing half-written on failure. */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { MAX_BATCH_CHARS, type ReaderMessage, readBatches } from '../../src/batch/batch-io.js';
import { type BadRow, BatchInputError, tagFile } from '../../src/batch/batch-predict.js';
import { predictorFor } from '../../src/served-models/index.js';
import { trainModel } from '../support/fixtures.js';
import { useTempDir } from '../support/temp-dir.js';

const { model } = trainModel({ analyzer: 'word', ngram_max_range: 2 });
const scratch = useTempDir('tagger-batch-');

describe('tagFile', () => {
  it('tags a CSV in order with line numbers, skipping and reporting bad rows without stopping', async () => {
    const input = await scratch.file(
      'projects.csv',
      '\uFEFFid,title,description\n' +
        '1,BERT fine tuning,for sentiment analysis\n' +
        '2,,\n' +
        '3,"bad "quote",x\n' +
        '4,YOLO,"object\ndetection on drones"\n' +
        '5,Kubernetes,model serving pipelines\n',
    );
    const output = join(scratch.path, 'tags.csv');
    const bad: BadRow[] = [];
    const result = await tagFile(predictorFor(model), { input, output, onBadRow: (row) => bad.push(row) });
    expect(result).toMatchObject({ rows: 5, tagged: 3, bad: 2 });
    expect(bad).toEqual([
      { line: 3, reason: 'no text' },
      { line: 4, reason: expect.stringMatching(/^malformed CSV row/) },
    ]);
    const rows = parse(await readFile(output, 'utf8'), { columns: true }) as Record<string, string>[];
    const texts = [
      'BERT fine tuning for sentiment analysis',
      'YOLO object\ndetection on drones',
      'Kubernetes model serving pipelines',
    ];
    expect(rows.map((row) => [row.line, row.text])).toEqual([
      ['2', texts[0]],
      ['6', texts[1]],
      ['7', texts[2]],
    ]);
    const expected = model.predict(texts);
    for (const [i, row] of rows.entries()) {
      expect(row.predicted_tag).toBe(expected[i]!.predicted_tag);
      for (const tag of model.tags) expect(Number(row[`p_${tag}`])).toBe(expected[i]!.probabilities[tag]);
      expect(Number(row.probability)).toBe(expected[i]!.probabilities[row.predicted_tag!]);
    }
  });

  it('tags JSON Lines into JSON Lines or CSV, with --text-column, reporting lines that are not JSON objects', async () => {
    const input = await scratch.file(
      'texts.jsonl',
      '{"body":"transformers for translation"}\nnot json\n[1]\n\n{"body":""}\n{"body":42}\n{"body":"gan image synthesis"}\n',
    );
    const bad: BadRow[] = [];
    const jsonl = join(scratch.path, 'tags.jsonl');
    const result = await tagFile(predictorFor(model), {
      input,
      output: jsonl,
      textColumn: 'body',
      onBadRow: (row) => bad.push(row),
    });
    expect(result).toMatchObject({ rows: 6, tagged: 2, bad: 4 });
    expect(bad.map((row) => [row.line, row.reason.split(' (')[0]])).toEqual([
      [2, 'not valid JSON'],
      [3, 'not a JSON object'],
      [5, 'no text'],
      [6, 'the text is not a string'],
    ]);
    const lines = (await readFile(jsonl, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => [line.line, line.text])).toEqual([
      [1, 'transformers for translation'],
      [7, 'gan image synthesis'],
    ]);
    expect(lines[1].predicted_probabilities).toEqual(
      model.predict(['gan image synthesis'])[0]!.probabilities,
    );

    const csv = join(scratch.path, 'from-jsonl.csv');
    await tagFile(predictorFor(model), { input, output: csv, textColumn: 'body' });
    expect((parse(await readFile(csv, 'utf8'), { columns: true }) as unknown[]).length).toBe(2);
  });

  it('streams many rows in batches, in order', async () => {
    const count = 5_000;
    const lines = Array.from(
      { length: count },
      (_, i) => `${i},"text number ${i} about ${i % 2 ? 'images' : 'language'} models"`,
    );
    const input = await scratch.file('many.csv', `id,text\n${lines.join('\n')}\n`);
    const output = join(scratch.path, 'many.jsonl');
    const seen: number[] = [];
    const result = await tagFile(predictorFor(model), {
      input,
      output,
      batchSize: 64,
      onProgress: (p) => seen.push(p.rows),
    });
    expect(result).toMatchObject({ rows: count, tagged: count, bad: 0 });
    const out = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).line);
    expect(out).toEqual(Array.from({ length: count }, (_, i) => i + 2));
    expect(seen.length).toBeGreaterThan(count / 64 - 1);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });

  it('refuses unusable input with a clear error and leaves no output or temp file behind', async () => {
    const input = await scratch.file('no-text.csv', 'id,body\n1,hello\n');
    const cases: [Parameters<typeof tagFile>[1], RegExp][] = [
      [{ input, output: join(scratch.path, 'x.txt') }, /x\.txt: use a \.csv, \.jsonl or \.ndjson file/],
      [{ input, output: input }, /is the input file/],
      [
        { input: join(scratch.path, 'absent.csv'), output: join(scratch.path, 'x.csv') },
        /cannot read .*absent\.csv/,
      ],
      [
        { input, output: join(scratch.path, 'x.csv') },
        /has neither a 'text' column nor 'title' and 'description' \(its columns: id, body\)/,
      ],
      [
        { input, output: join(scratch.path, 'x.csv'), textColumn: 'missing' },
        /has no column 'missing' \(its columns: id, body\)/,
      ],
      [{ input, output: join(scratch.path, 'missing-dir', 'x.csv') }, /cannot tag .* into .*missing-dir/],
    ];
    for (const [options, message] of cases) {
      const error = await tagFile(predictorFor(model), options).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(BatchInputError);
      expect((error as Error).message).toMatch(message);
    }
    const left = await readdir(scratch.path);
    expect(left.filter((name) => name.includes('.tmp') || name === 'x.csv')).toEqual([]);
  });

  it('ends a batch early when its texts are long, so a batch stays bounded in size', async () => {
    const long = 'w'.repeat(Math.ceil(MAX_BATCH_CHARS / 2.5));
    const input = await scratch.file(
      'long.csv',
      `id,text\n${[1, 2, 3, 4, 5, 6].map((i) => `${i},${long}`).join('\n')}\n`,
    );
    const messages: ReaderMessage[] = [];
    await readBatches({ input, format: 'csv', batchSize: 512 }, (message) => {
      messages.push(message);
    });
    const sizes = messages.flatMap((message) => (message.kind === 'rows' ? [message.texts.length] : []));
    expect(sizes).toEqual([3, 3]);
    const output = join(scratch.path, 'long.csv.out.csv');
    expect(await tagFile(predictorFor(model), { input, output })).toMatchObject({
      rows: 6,
      tagged: 6,
      bad: 0,
    });
  });

  it('an empty CSV gives a header-only output', async () => {
    const input = await scratch.file('empty.csv', 'text\n');
    const output = join(scratch.path, 'empty-tags.csv');
    expect(await tagFile(predictorFor(model), { input, output })).toMatchObject({
      rows: 0,
      tagged: 0,
      bad: 0,
    });
    expect((await readFile(output, 'utf8')).trim()).toBe(
      ['line', 'text', 'predicted_tag', 'probability', ...model.tags.map((t) => `p_${t}`)].join(','),
    );
  });

  it('lists a multi-label model’s predicted tags per row (joined by | in CSV, a list in JSON Lines)', async () => {
    const multi = trainModel({
      analyzer: 'word',
      ngram_max_range: 2,
      multi_label: true,
      threshold: 'tuned',
    }).model;
    const texts = ['transformer language model for text', 'object detection in images', 'zzz'];
    const input = await scratch.file('multi.csv', `text\n${texts.join('\n')}\n`);
    const csv = join(scratch.path, 'multi-tags.csv');
    const jsonl = join(scratch.path, 'multi-tags.jsonl');
    await tagFile(predictorFor(multi), { input, output: csv });
    await tagFile(predictorFor(multi), { input, output: jsonl });
    const expected = multi.predict(texts);
    const rows = parse(await readFile(csv, 'utf8'), { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0]!).slice(0, 5)).toEqual([
      'line',
      'text',
      'predicted_tag',
      'probability',
      'predicted_tags',
    ]);
    expect(rows.map((row) => row.predicted_tags)).toEqual(expected.map((p) => p.predicted_tags.join('|')));
    expect(rows.map((row) => row.predicted_tag)).toEqual(expected.map((p) => p.predicted_tag));
    const lines = (await readFile(jsonl, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => line.predicted_tags)).toEqual(expected.map((p) => p.predicted_tags));
  });
});
