/**
 * A CSV file's delimiter, sniffed or named (src/model/data-files/csv-dialect.ts), and what a row that is
 * not valid CSV is reported as: where it starts, why, and how the file was read.
 */
import { describe, expect, it } from 'vitest';
import { csvProblem, parseDelimiter, sniffDelimiter } from '../../../src/model/index.js';

describe('sniffDelimiter', () => {
  it.each([
    ['commas', 'title,description,tag\nA,B,c\nD,E,f\n', ','],
    [
      'semicolons (a spreadsheet in many locales)',
      'title;description;tag\nA, with commas;B, too;c\nD;E;f\n',
      ';',
    ],
    ['tabs', 'title\tdescription\ttag\nA, b; c\tB\tc\n', '\t'],
    ['semicolons inside quoted comma fields', 'title,description,tag\n"a;b;c;d",x,y\n"e;f",z,w\n', ','],
    ['commas inside quoted semicolon fields', 'title;description;tag\n"a,b,c";x;y\n', ';'],
    ['a header only', 'title;description;tag', ';'],
    ['one column (no delimiter splits it)', 'text\nhello\nworld\n', ','],
    ['an empty file', '', ','],
  ])('%s', (_, head, expected) => {
    expect(sniffDelimiter(head)).toBe(expected);
  });

  it('prefers the delimiter that splits every line like the header', () => {
    // Commas split the header into 2 but the rows unevenly; semicolons split all into 3.
    expect(sniffDelimiter('a;b,c;d\n1;2;3\n4,5;6;7\n8;9;10\n')).toBe(';');
  });
});

describe('parseDelimiter', () => {
  it.each([
    [',', ','],
    [';', ';'],
    ['|', '|'],
    ['tab', '\t'],
    ['TAB', '\t'],
    ['\\t', '\t'],
    ['\t', '\t'],
  ])('%j is %j', (given, delimiter) => {
    expect(parseDelimiter(given)).toBe(delimiter);
  });

  it.each(['', ',,', '"', 'a', '7', '\n', '§'])('refuses %j', (given) => {
    expect(() => parseDelimiter(given)).toThrow(/--delimiter must be one character such as , ; \| or tab/);
  });
});

describe('csvProblem', () => {
  it('names the line the row starts on, the reason, a hint for quotes and the delimiter it was read with', () => {
    expect(
      csvProblem(
        {
          message: 'Invalid Closing Quote: got "C" at line 8 instead of delimiter',
          code: 'CSV_INVALID_CLOSING_QUOTE',
        },
        6,
        8,
        { delimiter: ';', sniffed: true },
      ),
    ).toBe(
      `the row starting on line 6 (to line 8): Invalid Closing Quote: got "C" at line 8 instead of delimiter; a quote opened on line 6 is not closed where it should be (a field with quotes in it is quoted whole, each quote doubled: "say ""hi""") (read with delimiter ';', sniffed from the first lines; name another with --delimiter)`,
    );
    expect(
      csvProblem(
        {
          message: 'Invalid Record Length: expect 3, got 4 on line 12',
          code: 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH',
        },
        12,
        12,
        {
          delimiter: '\t',
          sniffed: false,
        },
      ),
    ).toBe('line 12: Invalid Record Length: expect 3, got 4 on line 12 (read with --delimiter tab)');
  });
});
