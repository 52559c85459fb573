/**
 * Data files people really have (issue 42, item 5), read by readDataset as `tagger train`, `evaluate`,
 * `label-issues` and `optimize` read them: UTF-8 with or without a byte-order mark and UTF-16 with one;
 * anything else refused with what it looks like, and read with `encoding`; `,`, `;` and tab sniffed, or
 * the delimiter named; a row that is not valid CSV named by the line it starts on, with the delimiter.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataError, parseDataset, readDataset } from '../../src/train/data.js';
import { useTempDir } from '../support/temp-dir.js';

const tmp = useTempDir('tagger-data-reading-');
const ROWS = [
  ['Café recommendations', 'naïve Bayes over reviews, « ok »', 'nlp'],
  ['Drone images', 'detection; tracking, counting', 'cv'],
];
const csv = (delimiter: string) =>
  `${['title', 'description', 'tag'].join(delimiter)}\n${ROWS.map((row) => row.map((cell) => (/[",;\t]/.test(cell) ? `"${cell}"` : cell)).join(delimiter)).join('\n')}\n`;
const expected = ROWS.map(([title, description, tag], i) => ({
  record: i + 1,
  line: i + 2,
  text: `${title} ${description}`,
  tag,
}));

async function file(name: string, bytes: Uint8Array | string): Promise<string> {
  const path = join(tmp.path, name);
  await writeFile(path, bytes);
  return path;
}
const utf16 = (text: string, bom: number[], le: boolean) =>
  Buffer.concat([
    Buffer.from(bom),
    le ? Buffer.from(text, 'utf16le') : Buffer.from(text, 'utf16le').swap16(),
  ]);

describe('readDataset: encodings', () => {
  it.each([
    ['UTF-8', () => Buffer.from(csv(','))],
    [
      'UTF-8 with a byte-order mark',
      () => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(csv(','))]),
    ],
    ['UTF-16LE with a byte-order mark', () => utf16(csv(','), [0xff, 0xfe], true)],
    ['UTF-16BE with a byte-order mark', () => utf16(csv(','), [0xfe, 0xff], false)],
  ])('reads %s right', async (name, bytes) => {
    expect(await readDataset(await file(`${name}.csv`, bytes()))).toEqual(expected);
  });

  it('refuses Latin-1 with what it looks like, and reads it with encoding latin1', async () => {
    const path = await file('latin1.csv', Buffer.from(csv(','), 'latin1'));
    await expect(readDataset(path)).rejects.toThrow(DataError);
    await expect(readDataset(path)).rejects.toThrow(
      /^data: .*latin1\.csv is not UTF-8: line 2 has byte 0xE9, which UTF-8 does not allow there — the file is in another encoding, most likely Latin-1 \/ Windows-1252; as Latin-1 \(Windows-1252\) it reads "Café recommendations,.*"\. Read it with --encoding latin1/,
    );
    expect(await readDataset(path, { encoding: 'latin1' })).toEqual(expected);
  });

  it('reads a JSON dataset in UTF-16 too', async () => {
    const json = JSON.stringify(ROWS.map(([title, description, tag]) => ({ title, description, tag })));
    const rows = await readDataset(await file('data.json', utf16(json, [0xff, 0xfe], true)));
    expect(rows.map((row) => row.text)).toEqual(expected.map((row) => row.text));
  });
});

describe('parseDataset: delimiters', () => {
  it.each([
    ['commas', ','],
    ['semicolons', ';'],
    ['tabs', '\t'],
  ])('sniffs %s', (_, delimiter) => {
    expect(parseDataset(csv(delimiter), 'x.csv')).toEqual(expected);
  });

  it('reads the delimiter given, and says which one when the header comes out as one column', () => {
    expect(parseDataset(csv('|'), 'x.csv', { delimiter: '|' })).toEqual(expected);
    expect(() => parseDataset(csv(';'), 'x.csv', { delimiter: ',' })).toThrow(
      /x\.csv is not valid CSV: line 2: Invalid Opening Quote: .* \(read with --delimiter ','\)$/,
    );
    expect(() => parseDataset('title;description;tag\nA;B;nlp\n', 'x.csv', { delimiter: ',' })).toThrow(
      /x\.csv lacks column\(s\) title, description, tag; found title;description;tag\. The header is one column read with delimiter ',': if the file uses another, name it with --delimiter\./,
    );
  });
});

describe('parseDataset: the line a bad row starts on', () => {
  const lines = ['title,description,tag', 'a,b,nlp', 'c,d,cv', '', 'e,f,nlp', 'g,h,cv'];

  it('an unterminated quote on line 7 is reported on line 7 (csv-parse names where it noticed)', () => {
    const broken = [...lines, '"unterminated,x,nlp', 'i,j,cv', 'k,l,nlp'].join('\n');
    expect(() => parseDataset(broken, 'x.csv')).toThrow(
      /^data: x\.csv is not valid CSV: the row starting on line 7 \(to line 9\): Quote Not Closed: .*; a quote opened on line 7 is not closed where it should be .*\(read with delimiter ',', sniffed from the first lines; name another with --delimiter\)$/,
    );
  });

  it('a quote that closes in the wrong place, and a row of the wrong length, with the delimiter read', () => {
    expect(() => parseDataset([...lines, 'm,"n" o,cv'].join('\n'), 'x.csv')).toThrow(
      /line 7: Invalid Closing Quote/,
    );
    expect(() => parseDataset([...lines, 'm;n;o;p'].join('\n').replaceAll(',', ';'), 'x.csv')).toThrow(
      /x\.csv is not valid CSV: line 7: Invalid Record Length: .* \(read with delimiter ';', sniffed from the first lines/,
    );
  });
});
