import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataError, lineList, parseDataset, projectText, readDataset } from '../../src/train/data.js';
import { SAMPLE_DATA } from '../support/components.js';

describe('parseDataset', () => {
  it('joins title and description and keeps the tag', () => {
    const rows = parseDataset('id,title,description,tag\n1,Hello,"world, again",nlp\n', 'inline');
    expect(rows).toEqual([{ record: 1, line: 2, text: 'Hello world, again', tag: 'nlp' }]);
  });

  it('accepts quoted newlines, doubled quotes, a BOM and columns in any order', () => {
    const csv = '\uFEFFtag,description,title\ncv,"line one\nline ""two""",Title\n';
    expect(parseDataset(csv, 'inline')).toEqual([
      { record: 1, line: 2, text: 'Title line one\nline "two"', tag: 'cv' },
    ]);
  });

  it('names missing columns and what was found', () => {
    expect(() => parseDataset('id,title,label\n1,a,b\n', 'x.csv')).toThrow(
      /x\.csv lacks column\(s\) description, tag; found id, title, label/,
    );
  });

  it.each([
    ['', /x\.csv is empty/],
    ['title,description,tag\n', /x\.csv has a header but no rows/],
    ['title,description,tag\na,b,\n', /x\.csv: 1 row\(s\) have an empty tag \(line 2\)/],
    [
      'title,description,tag\n,  ,nlp\n',
      /x\.csv: 1 row\(s\) have neither a title nor a description \(line 2\)/,
    ],
    ['title,description,tag\n"unterminated,b,c\n', /x\.csv is not valid CSV/],
    ['title,description,tag\na,b\n', /x\.csv is not valid CSV/],
  ])('rejects bad content %#', (csv, message) => {
    expect(() => parseDataset(csv, 'x.csv')).toThrow(DataError);
    expect(() => parseDataset(csv, 'x.csv')).toThrow(message);
  });
});

describe('line numbers in messages', () => {
  it('gives each row the line it starts on, past quoted newlines and blank lines', () => {
    const csv = 'title,description,tag\na,b,c\n\n"x\ny",z,t\nq,"multi\n\nline",u\nlast,one,v\n';
    expect(parseDataset(csv, 'x.csv').map((row) => [row.record, row.line])).toEqual([
      [1, 2],
      [2, 4],
      [3, 6],
      [4, 9],
    ]);
  });

  it('names every row without a text or a tag at once, by line', () => {
    const csv = ['title,description,tag', 'ok,fine,nlp', ' , ,nlp', '"two', 'lines",x,', ',,cv'].join('\n');
    expect(() => parseDataset(csv, 'x.csv')).toThrow(
      'data: x.csv: 1 row(s) have an empty tag (line 4); 2 row(s) have neither a title nor a description (lines 3 and 6); fill them in or remove them',
    );
  });

  it('lineList shows up to ten lines and then the count', () => {
    expect(lineList([7])).toBe('line 7');
    expect(lineList([2, 5, 9])).toBe('lines 2, 5 and 9');
    const many = Array.from({ length: 25 }, (_, i) => i + 2);
    expect(lineList(many)).toBe('lines 2, 3, 4, 5, 6, 7, 8, 9, 10, …, 26 (25 rows)');
  });
});

describe('readDataset', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tagger-data-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reports a missing file and a directory clearly', async () => {
    await expect(readDataset(join(dir, 'nope.csv'))).rejects.toThrow(
      `data: file not found: ${join(dir, 'nope.csv')}`,
    );
    await expect(readDataset(dir)).rejects.toThrow(/is a directory/);
  });

  it('reads a file', async () => {
    const path = join(dir, 'ok.csv');
    await writeFile(path, 'title,description,tag\nA,B,mlops\n');
    expect(await readDataset(path)).toEqual([
      { record: 1, line: 2, text: projectText('A', 'B'), tag: 'mlops' },
    ]);
  });

  it('reads the bundled sample data: at least 200 rows over the four tags', async () => {
    const rows = await readDataset(SAMPLE_DATA);
    expect(rows.length).toBeGreaterThanOrEqual(200);
    expect(new Set(rows.map((row) => row.tag))).toEqual(
      new Set(['computer-vision', 'natural-language-processing', 'mlops', 'other']),
    );
  });
});
