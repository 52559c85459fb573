/**
 * Label issues by confident learning: multi-label rows per tag, tags folded into `other`, what a training
 * logs, a clear error for data too small to cross-validate. How well it finds flipped tags in dataset.csv
 * is label-issues.dataset.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createRng, parseTrainingArgs } from '../../src/model/index.js';
import { randomInt } from '../../src/model/rng.js';
import { DataError } from '../../src/train/data.js';
import {
  findLabelIssues,
  type LabelIssueRow,
  LOGGED_ISSUES,
  type TagSetIssue,
  TRAINING_LABEL_ISSUE_ROWS,
  trainingLabelIssues,
} from '../../src/train/label-issues.js';

describe('label issues, multi-label and bad input', () => {
  it('judges multi-label rows per tag: a listed tag that does not apply, an unlisted one that does', () => {
    const topics: Record<string, string[]> = {
      nlp: ['language', 'text', 'words', 'sentences', 'translation', 'grammar'],
      vision: ['images', 'pixels', 'camera', 'video', 'segmentation', 'faces'],
      ops: ['deployment', 'docker', 'monitoring', 'pipelines', 'kubernetes', 'serving'],
    };
    const names = Object.keys(topics);
    const rng = createRng(8);
    const rows: LabelIssueRow[] = Array.from({ length: 150 }, (_, i) => {
      const tags = [names[i % 3]!, ...(i % 5 === 0 ? [names[(i + 1) % 3]!] : [])];
      const words = tags.flatMap((tag) => Array.from({ length: 4 }, () => topics[tag]![randomInt(rng, 6)]!));
      return { text: words.join(' '), tag: tags.join('|'), tags, line: i + 2 };
    });
    // Planted: row 7 (vision words, tagged vision) also lists nlp; row 10 (vision and ops words) lost ops.
    rows[7] = { ...rows[7]!, tags: ['vision', 'nlp'], tag: 'nlp|vision' };
    rows[10] = { ...rows[10]!, tags: ['vision'], tag: 'vision' };
    const args = parseTrainingArgs({
      multi_label: true,
      threshold: 'tuned',
      min_freq: 5,
      analyzer: 'word',
      ngram_max_range: 1,
      ngram_min_range: 1,
    });
    const report = findLabelIssues(rows, { args, seed: 3 });
    expect(report.multi_label).toBe(true);
    const extra = report.issues.find((i) => i.row === 7) as TagSetIssue | undefined;
    expect(extra).toMatchObject({
      kind: 'extra_tag',
      tag: 'nlp',
      given_tags: ['nlp', 'vision'],
      suggested_tags: ['vision'],
      line: 9,
    });
    expect(extra!.given_probability + extra!.suggested_probability).toBeCloseTo(1, 12);
    const missing = report.issues.find((i) => i.row === 10) as TagSetIssue | undefined;
    expect(missing).toMatchObject({
      kind: 'missing_tag',
      tag: 'ops',
      given_tags: ['vision'],
      suggested_tags: ['ops', 'vision'],
    });
    expect(report.issues.slice(0, 4).map((i) => i.row)).toEqual(expect.arrayContaining([7, 10]));
  });

  it('names a tag folded into other as the data writes it (data_tag) and as the models know it', () => {
    const words = { a: ['alpha', 'apple', 'arrow', 'anchor'], b: ['bravo', 'banana', 'bridge', 'butter'] };
    const rng = createRng(5);
    const rows: LabelIssueRow[] = Array.from({ length: 80 }, (_, i) => {
      const tag = i % 2 === 0 ? 'a' : 'b';
      const text = Array.from({ length: 5 }, () => words[tag][randomInt(rng, 4)]!).join(' ');
      return { text, tag, line: i + 2 };
    });
    // Three rows of a rare tag (min_freq 5 folds it into `other`) that read like tag a.
    for (const i of [3, 13, 23]) rows[i] = { ...rows[i]!, tag: 'rare' };
    const args = parseTrainingArgs({ min_freq: 5, analyzer: 'word', ngram_min_range: 1, ngram_max_range: 1 });
    const report = findLabelIssues(rows, { args, seed: 2 });
    const folded = report.issues.filter((issue) => [3, 13, 23].includes(issue.row));
    expect(folded.length).toBeGreaterThan(0);
    for (const issue of folded) expect(issue).toMatchObject({ given_tag: 'other', data_tag: 'rare' });
    for (const issue of report.issues.filter((i) => ![3, 13, 23].includes(i.row))) {
      expect(issue).not.toHaveProperty('data_tag');
    }
  });

  it('is what a training logs: texts cut, at most LOGGED_ISSUES, and data too small is a reason, not a failure', () => {
    const rows = Array.from({ length: 8 }, (_, i) => ({ text: `text ${i} words`, tag: i % 2 ? 'a' : 'b' }));
    const args = parseTrainingArgs({ min_freq: 1 });
    const skipped = trainingLabelIssues(rows, args, 1);
    expect(skipped).toEqual({ skipped: expect.stringMatching(/^label-issues: .* 8 rows are too few/) });

    // Row 0 is 2,526 characters that read like tag a labelled b: an issue (at seeds 1, 2 and 3 alike)
    // whose text must be cut.
    const long = 'alpha apple arrow '.repeat(140);
    const many: LabelIssueRow[] = Array.from({ length: 60 }, (_, i) => ({
      text: i === 0 ? `bravo ${long}` : i % 2 ? 'bravo banana bridge' : 'alpha apple arrow',
      tag: i === 0 || i % 2 ? 'b' : 'a',
      line: i + 2,
    }));
    const found = trainingLabelIssues(many, parseTrainingArgs({ min_freq: 1, analyzer: 'word' }), 1);
    if (!('report' in found)) throw new Error(found.skipped);
    expect(found.seconds).toBeGreaterThan(0);
    expect(found.report.issues.length).toBeLessThanOrEqual(LOGGED_ISSUES);
    for (const issue of found.report.issues) expect(issue.text.length).toBeLessThanOrEqual(1000);
    const first = found.report.issues.find((issue) => issue.row === 0);
    expect(first, 'the long mislabelled row is an issue').toBeDefined();
    expect(first!.text).toMatch(/^bravo alpha .*…$/);
    expect(first!.text).toHaveLength(1000);

    // More issues than a run logs: every fourth row reads like b and is labelled a (3,000 of 12,000 rows;
    // the confident joint estimates about three quarters of them, measured 795 of 1,050 at 4,200 rows);
    // naive Bayes keeps it under a second. The report counts them all and keeps the LOGGED_ISSUES first.
    const flipped: LabelIssueRow[] = Array.from({ length: 12000 }, (_, i) => ({
      text: i % 2 || i % 4 === 0 ? 'bravo banana bridge' : 'alpha apple arrow',
      tag: i % 2 ? 'b' : 'a',
      line: i + 2,
    }));
    const capped = trainingLabelIssues(
      flipped,
      parseTrainingArgs({ min_freq: 1, analyzer: 'word', classifier: 'multinomial_nb' }),
      1,
    );
    if (!('report' in capped)) throw new Error(capped.skipped);
    expect(capped.report.found).toBeGreaterThan(LOGGED_ISSUES);
    expect(capped.report.issues).toHaveLength(LOGGED_ISSUES);
  });

  it('looks at a seeded sample of TRAINING_LABEL_ISSUE_ROWS rows of larger data, says so, and points into the data', () => {
    // Every tenth row reads like the other tag: issues a sample finds wherever it falls.
    const rows: LabelIssueRow[] = Array.from({ length: TRAINING_LABEL_ISSUE_ROWS + 1000 }, (_, i) => ({
      text: (i % 10 === 0) !== (i % 2 === 0) ? `bravo banana bridge ${i % 7}` : `alpha apple arrow ${i % 7}`,
      tag: i % 2 ? 'b' : 'a',
      line: i + 2,
    }));
    const args = parseTrainingArgs({ min_freq: 1, analyzer: 'word', classifier: 'multinomial_nb' });
    const found = trainingLabelIssues(rows, args, 3);
    if (!('report' in found)) throw new Error(found.skipped);
    expect(found.report).toMatchObject({ rows: TRAINING_LABEL_ISSUE_ROWS, sampled_from: rows.length });
    expect(found.report.found).toBeGreaterThan(0);
    for (const issue of found.report.issues) {
      expect(issue.text).toBe(rows[issue.row]!.text);
      expect(issue.line).toBe(rows[issue.row]!.line);
    }
    // The same seed samples the same rows; data within the bound is looked at whole.
    const again = trainingLabelIssues(rows, args, 3);
    if (!('report' in again)) throw new Error(again.skipped);
    expect(again.report.issues.map((issue) => issue.row)).toEqual(
      found.report.issues.map((issue) => issue.row),
    );
    const whole = trainingLabelIssues(rows.slice(0, 2000), args, 3);
    if (!('report' in whole)) throw new Error(whole.skipped);
    expect(whole.report.rows).toBe(2000);
    expect(whole.report.sampled_from).toBeUndefined();
  });

  it('says what it needs when the data is too small to cross-validate', () => {
    const rows = Array.from({ length: 8 }, (_, i) => ({ text: `text ${i} words`, tag: i % 2 ? 'a' : 'b' }));
    const args = parseTrainingArgs({ min_freq: 1 });
    expect(() => findLabelIssues(rows, { args, seed: 1 })).toThrow(DataError);
    expect(() => findLabelIssues(rows, { args, seed: 1 })).toThrow(
      /label-issues: every row must be predicted by a model trained without it, by 5-fold cross-validation, and 8 rows are too few .* at least 10 rows for 5 folds, more with several tags/,
    );
    expect(() => findLabelIssues([], { args, seed: 1 })).toThrow(/the data has no rows/);
    expect(() =>
      findLabelIssues(
        rows.map((r) => ({ ...r, tag: 'a' })),
        { args, seed: 1 },
      ),
    ).toThrow(/every training row has the tag 'a'/);
  });
});
