/**
 * `tagger predict` with a model of many tags (issue 31): texts on the command line and whole files list
 * the 20 most probable tags' probabilities past 20 tags, and say so (`probabilities_listed`; CSV columns
 * `tag_1,p_1,…`; the summary line); `--probabilities all | n` chooses. Commands run in-process.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LISTED_PROBABILITIES } from '../../src/model/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import { runCli } from '../support/cli.js';
import { logManyTagRun, manyTagRows } from '../support/many-tags.js';

const TAGS = 60;
/** The model's tags: the generated ones and `other`. */
const MODEL_TAGS = TAGS + 1;
const TEXTS = manyTagRows(4, TAGS, 77).map((row) => row.text);
let dir: string;
let store: string;
let input: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tagger-predict-many-'));
  store = join(dir, 'mlruns');
  await logManyTagRun(store, TAGS);
  await (await openTrackingStore(store)).close();
  input = join(dir, 'texts.csv');
  await writeFile(input, `id,text\n${TEXTS.map((text, i) => `${i},${text}`).join('\n')}\n`);
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const tagger = (args: string[]) => runCli(args, { env: { MLFLOW_TRACKING_URI: store } });

interface Item {
  predicted_tag: string;
  predicted_probabilities: Record<string, number>;
  probabilities_listed?: { listed: number; of: number };
}

describe(`tagger predict with a model of ${TAGS} tags`, () => {
  it('lists the 20 most probable tags by default and says so; --probabilities all lists every tag', async () => {
    const result = await tagger(['predict', ...TEXTS]);
    expect(result.code, result.stderr).toBe(0);
    const top = JSON.parse(result.stdout).predictions as Item[];
    const all = JSON.parse((await tagger(['predict', '--probabilities', 'all', ...TEXTS])).stdout)
      .predictions as Item[];
    top.forEach((item, i) => {
      expect(item.probabilities_listed).toEqual({ listed: DEFAULT_LISTED_PROBABILITIES, of: MODEL_TAGS });
      const ranked = Object.entries(all[i]!.predicted_probabilities).sort((a, b) => b[1] - a[1]);
      expect(item.predicted_probabilities).toEqual(
        Object.fromEntries(ranked.slice(0, DEFAULT_LISTED_PROBABILITIES)),
      );
      expect(all[i]).not.toHaveProperty('probabilities_listed');
      expect(Object.keys(all[i]!.predicted_probabilities)).toHaveLength(MODEL_TAGS);
    });
    const bad = await tagger(['predict', '--probabilities', 'some', TEXTS[0]!]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--probabilities must be 'all' or a whole number ≥ 1, got 'some'");
  });

  it('tags a file with tag_i, p_i columns of the most probable tags (CSV) or a listed count (JSON Lines)', async () => {
    const csv = join(dir, 'tags.csv');
    const result = await tagger([
      'predict',
      '--input',
      input,
      '--output',
      csv,
      '--probabilities',
      '3',
      '--quiet',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("Probabilities: the 3 most probable of the model's 61 tags per row");
    const rows = parse(await readFile(csv, 'utf8'), { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0]!)).toEqual([
      'line',
      'id',
      'text',
      'predicted_tag',
      'probability',
      'tag_1',
      'p_1',
      'tag_2',
      'p_2',
      'tag_3',
      'p_3',
    ]);
    const all = JSON.parse((await tagger(['predict', '--probabilities', 'all', ...TEXTS])).stdout)
      .predictions as Item[];
    rows.forEach((row, i) => {
      const ranked = Object.entries(all[i]!.predicted_probabilities).sort((a, b) => b[1] - a[1]);
      expect([row.tag_1, row.tag_2, row.tag_3]).toEqual(ranked.slice(0, 3).map(([tag]) => tag));
      expect(Number(row.p_1)).toBe(ranked[0]![1]);
      expect(row.predicted_tag).toBe(row.tag_1);
    });
    const jsonl = join(dir, 'tags.jsonl');
    expect((await tagger(['predict', '--input', input, '--output', jsonl, '--quiet'])).code).toBe(0);
    const lines = (await readFile(jsonl, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Item);
    for (const line of lines) {
      expect(Object.keys(line.predicted_probabilities)).toHaveLength(DEFAULT_LISTED_PROBABILITIES);
      expect(line.probabilities_listed).toEqual({ listed: DEFAULT_LISTED_PROBABILITIES, of: MODEL_TAGS });
    }
    // A kept column may not take one of the output's names.
    const clash = await tagger([
      'predict',
      '--input',
      input,
      '--output',
      join(dir, 'clash.csv'),
      '--keep-columns',
      'p_2',
      '--probabilities',
      '3',
    ]);
    expect(clash.code).not.toBe(0);
    expect(clash.stderr).toContain("'p_2' is a column of the output already");
  });
});
