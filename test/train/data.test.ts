import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataError, lineList, parseDataset, projectText, readDataset } from '../../src/train/data.js';
import { SAMPLE_DATA } from '../support/components.js';
import { useTempDir } from '../support/temp-dir.js';

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
  const scratch = useTempDir('tagger-data-');

  it('reports a missing file and a directory clearly', async () => {
    await expect(readDataset(join(scratch.path, 'nope.csv'))).rejects.toThrow(
      `data: file not found: ${join(scratch.path, 'nope.csv')}`,
    );
    await expect(readDataset(scratch.path)).rejects.toThrow(/is a directory/);
  });

  it('reads a file', async () => {
    const path = join(scratch.path, 'ok.csv');
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

describe('multi-label datasets', () => {
  it('read a tags column split at | , or ; (trimmed, each tag once) as a tag list', () => {
    const csv = 'title,description,tags\nA,one,"nlp| cv ,nlp"\nB,two,mlops;pytorch\nC,three,nlp\n';
    expect(parseDataset(csv, 'inline')).toEqual([
      { record: 1, line: 2, text: 'A one', tag: 'cv|nlp', tags: ['nlp', 'cv'] },
      { record: 2, line: 3, text: 'B two', tag: 'mlops|pytorch', tags: ['mlops', 'pytorch'] },
      { record: 3, line: 4, text: 'C three', tag: 'nlp', tags: ['nlp'] },
    ]);
  });

  it.each([
    ['title,description,tags\na,b,\nc,d," | ,"\n', /2 row\(s\) have no tags \(lines 2 and 3\)/],
    ['title,description,tag,tags\na,b,c,d\n', /has both a tag and a tags column/],
    ['title,description,tags\n', /has a header but no rows/],
  ])('refuse bad content %#', (csv, message) => {
    expect(() => parseDataset(csv, 'x.csv')).toThrow(message);
  });

  describe('JSON files', () => {
    const scratch = useTempDir('tagger-json-data-');
    const write = (name: string, value: unknown): Promise<string> =>
      scratch.file(name, typeof value === 'string' ? value : JSON.stringify(value));

    it('read records with a tags list (the course’s projects.json layout) or a tag string', async () => {
      const multi = await write('multi.json', [
        { id: 1, title: 'A', description: 'one', tags: ['nlp', ' cv', 'nlp', ''] },
        { id: 2, title: 'B', description: 'two', tags: 'mlops|pytorch' },
      ]);
      expect(await readDataset(multi)).toEqual([
        { record: 1, line: 1, text: 'A one', tag: 'cv|nlp', tags: ['nlp', 'cv'] },
        { record: 2, line: 2, text: 'B two', tag: 'mlops|pytorch', tags: ['mlops', 'pytorch'] },
      ]);
      const single = await write('single.json', [{ title: 'A', description: 'one', tag: 'nlp' }]);
      expect(await readDataset(single)).toEqual([{ record: 1, line: 1, text: 'A one', tag: 'nlp' }]);
    });

    it.each([
      ['not JSON', '[{', /is not valid JSON/],
      ['an object', { title: 'a' }, /must hold a JSON array of records/],
      ['an empty array', [], /holds no records/],
      ['a non-object entry', [{ title: 'a', description: 'b', tags: ['x'] }, 3], /entry 2 is not an object/],
      [
        'mixed tag and tags',
        [
          { title: 'a', description: 'b', tags: ['x'] },
          { title: 'c', description: 'd', tag: 'y' },
        ],
        /entry 2 has tag, but the first entry has tags/,
      ],
      ['a numeric tag list', [{ title: 'a', description: 'b', tags: [1] }], /tags must be a list of strings/],
      ['a numeric title', [{ title: 5, description: 'b', tag: 'x' }], /entry 1: title must be a string/],
      [
        'entries without tags or text',
        [
          { title: 'a', description: 'b', tags: [] },
          { title: '', description: ' ', tags: ['x'] },
        ],
        /1 row\(s\) have no tags \(entry 1\); 1 row\(s\) have neither a title nor a description \(entry 2\)/,
      ],
    ])('refuse %s', async (name, value, message) => {
      const path = await write(`${name.replaceAll(' ', '-')}.json`, value);
      await expect(readDataset(path)).rejects.toThrow(message);
    });
  });
});
