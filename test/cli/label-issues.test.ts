/**
 * `tagger label-issues`, and what `tagger train` logs of the same list: the rows of a data file whose tag is
 * probably wrong, found on the sample data with tags moved on purpose. Commands run in-process
 * (test/support/cli.ts); real files, a real local store.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { labelIssuesLine, labelIssuesSummary } from '../../src/cli/label-issues.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import type { LabelIssuesReport } from '../../src/train/label-issues.js';
import { cliFolder, expectCleanFailure } from '../support/cli.js';
import { REPO_ROOT, SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder();
const tagger = cli.tagger;

const csvCell = (value: string): string => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/** The sample data with every 20th row's tag moved to the next tag: rows a person should find. */
let moved: { file: string; lines: Map<number, { given: string; original: string }> };

beforeAll(async () => {
  const rows = parse(await readFile(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[];
  const tags = [...new Set(rows.map((row) => row.tag!))].sort();
  const file = join(cli.dir, 'moved.csv');
  const changed = rows.map((row, i) =>
    i % 20 === 7 ? { ...row, tag: tags[(tags.indexOf(row.tag!) + 1) % tags.length]! } : row,
  );
  await writeFile(
    file,
    `title,description,tag\n${changed.map((r) => [r.title!, r.description!, r.tag!].map(csvCell).join(',')).join('\n')}\n`,
  );
  const read = await readDataset(file);
  const lines = new Map<number, { given: string; original: string }>();
  read.forEach((row, i) => {
    if (i % 20 === 7) lines.set(row.line, { given: row.tag, original: rows[i]!.tag! });
  });
  moved = { file, lines };
});

describe('tagger label-issues', () => {
  it('lists the rows whose tag is probably wrong, most unlikely first, by line with both tags and probabilities', async () => {
    const result = await tagger(['label-issues', '--data', moved.file, '--top', '15']);
    expect(result.code, result.stderr).toBe(0);
    // Progress on stderr (not a terminal: plain lines), a fold at a time.
    expect(result.stderr).toMatch(/^label issues: 5\/5 out-of-fold models trained$/m);
    const [heading, header, ...rest] = result.stdout.trimEnd().split('\n');
    expect(heading).toMatch(
      /^\d+ rows of .*moved\.csv \(248 rows\) are probably mislabelled, the most unlikely first \(the first 15 shown; --top changes it\); confident learning on 5-fold out-of-fold probabilities, seed 42\.$/,
    );
    expect(header).toMatch(/^rank +line +given tag +p\(given\) +suggested tag +p\(suggested\) +text$/);
    const rows = rest.slice(0, -1).map((line) => line.trim().split(/\s+/));
    expect(rows).toHaveLength(15);
    expect(rows.map((row) => row[0])).toEqual(Array.from({ length: 15 }, (_, i) => String(i + 1)));
    expect(rest.at(-1)).toMatch(/^p\(given\), p\(suggested\): .* correct the tags in .*moved\.csv/);
    // Most moved rows are in the top 15, each named by its line with the moved tag and the original back.
    const hits = rows.filter((row) => moved.lines.has(Number(row[1])));
    expect(hits.length).toBeGreaterThanOrEqual(Math.ceil(moved.lines.size / 2));
    for (const row of hits) {
      const { given, original } = moved.lines.get(Number(row[1]))!;
      expect(row[2]).toBe(given);
      expect(Number(row[3])).toBeLessThan(Number(row[5]));
      if (row[4] !== original) expect(row[4]).not.toBe(given);
    }
    expect(hits.filter((row) => row[4] === moved.lines.get(Number(row[1]))!.original).length).toBeGreaterThan(
      hits.length / 2,
    );
  });

  it('--json prints the whole report, the same as the table', async () => {
    const result = await tagger(['label-issues', '--data', moved.file, '--json', '--quiet']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const report = JSON.parse(result.stdout) as LabelIssuesReport;
    expect(report).toMatchObject({ multi_label: false, rows: 248, folds: 5, seed: 42 });
    expect(report.issues).toHaveLength(report.found);
    const data = await readDataset(moved.file);
    for (const issue of report.issues) {
      if (issue.kind !== 'tag') throw new Error('single-label data gives tag issues');
      expect(issue).toMatchObject({ line: data[issue.row]!.line, text: data[issue.row]!.text });
      expect(issue.given_tag).toBe(data[issue.row]!.tag);
    }
    // Other folds and seeds are other out-of-fold models, still finding the moved rows.
    const other = await tagger([
      'label-issues',
      '--data',
      moved.file,
      '--json',
      '--quiet',
      '--folds',
      '3',
      '--seed',
      '7',
    ]);
    expect(other.code, other.stderr).toBe(0);
    expect(JSON.parse(other.stdout)).toMatchObject({ folds: 3, seed: 7 });
  });

  it('judges a multi-label file per tag: the tag to add or drop', async () => {
    const data = join(REPO_ROOT, 'samples', 'projects-multilabel.csv');
    const result = await tagger(['label-issues', '--data', data, '--top', '5', '--quiet']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^\d+ row tags of .*projects-multilabel\.csv \(288 rows\) are probably mislabelled/,
    );
    expect(lines[1]).toMatch(/^rank +line +suggested fix +p as given +p as fixed +tags +text$/);
    for (const line of lines.slice(2, 7)) {
      expect(line).toMatch(/^ +\d+ +\d+ +(add|drop) \S+ +0\.\d{4} +\d\.\d{4} +\S+ → \S+ +.+$/);
    }
    const json = JSON.parse(
      (await tagger(['label-issues', '--data', data, '--top', '5', '--quiet', '--json'])).stdout,
    ) as LabelIssuesReport;
    expect(json.multi_label).toBe(true);
    expect(json.issues.map((issue) => issue.kind)).toEqual(
      lines.slice(2, 7).map((line) => (/ add /.test(line) ? 'missing_tag' : 'extra_tag')),
    );
  });

  it('says what it needs for data too small to cross-validate', async () => {
    const small = join(cli.dir, 'small.csv');
    const rows = Array.from({ length: 8 }, (_, i) => `Title ${i},words of text ${i},${i % 2 ? 'a' : 'b'}`);
    await writeFile(small, `title,description,tag\n${rows.join('\n')}\n`);
    const result = await tagger(['label-issues', '--data', small, '--args', '{"min_freq": 1}']);
    expectCleanFailure(
      result,
      /^tagger: label-issues: every row must be predicted by a model trained without it, by 5-fold cross-validation, and 8 rows are too few for 5-fold cross-validation \(fold \d would test \d rows?\); use fewer folds or more data\. Each fold must hold at least 2 rows .* at least 10 rows for 5 folds/m,
    );
    // Fewer folds need fewer rows (and the calibrated SVM member fewer calibration folds on 4 rows).
    const args = '{"min_freq": 1, "calibration_folds": 2}';
    const two = await tagger(['label-issues', '--data', small, '--args', args, '--folds', '2']);
    expect(two.code, two.stderr).toBe(0);
    const usage = await tagger(['label-issues', '--data', small, '--folds', '1']);
    expectCleanFailure(usage, /--folds must be a whole number ≥ 2/);
  });
});

describe("tagger train's account of label issues found in a sample", () => {
  const report = {
    multi_label: false,
    rows: 20_000,
    sampled_from: 200_000,
    folds: 5,
    seed: 1,
    tags: ['a', 'b'],
    thresholds: {},
    found: 1,
    issues: [
      {
        rank: 1,
        row: 150_123,
        line: 150_125,
        text: 'x',
        kind: 'tag',
        given_tag: 'a',
        given_probability: 0.1,
        suggested_tag: 'b',
        suggested_probability: 0.9,
        confident: true,
        margin: -0.8,
      },
    ],
  } as unknown as LabelIssuesReport;

  it('says in its line and its JSON how many rows of how many were looked at', () => {
    const found = { report, seconds: 1.5 };
    expect(labelIssuesLine(found, 'big.csv')).toMatch(
      /^Label issues: 1 rows probably mislabelled among a sample of 20,000 of the 200,000 rows \(the most unlikely: line 150125,/,
    );
    expect(labelIssuesSummary(found)).toEqual({
      found: 1,
      rows: 20_000,
      sampled_from: 200_000,
      artifact: 'label_issues.json',
      seconds: 1.5,
    });
  });
});

describe('tagger train and label issues', () => {
  it('looks at the validation rows after logging the run by default, at every row with --label-issues folds, and not with --no-label-issues', async () => {
    const result = await tagger([
      'train',
      '--data',
      moved.file,
      '--tracking-uri',
      cli.store,
      '--run-name',
      'with-issues',
    ]);
    expect(result.code, result.stderr).toBe(0);
    // Found by the chosen model's validated fit on the validation rows: no training of its own.
    expect(result.stdout).toMatch(
      /^Label issues: (\d+ rows probably mislabelled|none found) among a sample of \d+ of the \d+ rows.*\(\d+\.\d s\)$/m,
    );
    // The run is logged before the search.
    expect(result.stderr.indexOf('tagger: logged run')).toBeGreaterThan(-1);
    const json = await tagger([
      'train',
      '--data',
      moved.file,
      '--tracking-uri',
      cli.store,
      '--json',
      '--quiet',
    ]);
    const answer = JSON.parse(json.stdout);
    expect(answer.label_issues).toEqual({
      found: expect.any(Number),
      rows: answer.sizes.validation,
      sampled_from: expect.any(Number),
      artifact: 'label_issues.json',
      seconds: expect.any(Number),
    });
    // Every row through 5 out-of-fold models, as `tagger label-issues` looks: the same list for the same
    // data, args and seed.
    const folds = await tagger([
      'train',
      '--data',
      moved.file,
      '--tracking-uri',
      cli.store,
      '--json',
      '--no-model-choice',
      '--label-issues',
      'folds',
    ]);
    expect(folds.code, folds.stderr).toBe(0);
    expect(folds.stderr).toMatch(/^label issues: 5\/5 out-of-fold models trained \(of 5\)/m);
    const without = await tagger([
      'train',
      '--data',
      moved.file,
      '--tracking-uri',
      cli.store,
      '--json',
      '--quiet',
      '--no-label-issues',
    ]);
    expect(JSON.parse(without.stdout)).not.toHaveProperty('label_issues');
    const bad = await tagger([
      'train',
      '--data',
      moved.file,
      '--tracking-uri',
      cli.store,
      '--label-issues',
      'all',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--label-issues is validation or folds, got 'all'/);

    const store = await openTrackingStore(cli.store);
    try {
      const run = await store.getRun(answer.run_id);
      expect(run!.metrics.label_issues).toBe(answer.label_issues.found);
      expect(run!.metrics.label_issues_seconds).toBeGreaterThanOrEqual(0);
      const sample = JSON.parse(
        new TextDecoder().decode(await store.readArtifact(answer.run_id, 'label_issues.json')),
      ) as LabelIssuesReport;
      expect(sample).toMatchObject({ source: 'validation_split', folds: 0, rows: answer.sizes.validation });
      const everyRow = JSON.parse(folds.stdout).run_id as string;
      const logged = JSON.parse(
        new TextDecoder().decode(await store.readArtifact(everyRow, 'label_issues.json')),
      ) as LabelIssuesReport;
      const listed = JSON.parse(
        (await tagger(['label-issues', '--data', moved.file, '--json', '--quiet'])).stdout,
      ) as LabelIssuesReport;
      expect(logged).toEqual(listed);
      const none = JSON.parse(without.stdout).run_id as string;
      await expect(store.readArtifact(none, 'label_issues.json')).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      expect((await store.getRun(none))!.metrics).not.toHaveProperty('label_issues');
    } finally {
      await store.close();
    }
  }, 120_000);
});
