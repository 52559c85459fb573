/**
 * Label issues by confident learning: on dataset.csv with 20 rows flipped at random to another tag (three
 * sets of flips), at least 0.8 of the flips in the top 50 and at least 0.4 of the flagged rows flips (issue
 * 32); multi-label rows per tag; a plain JSON report; a clear error for data too small to cross-validate.
 */
import { describe, expect, it } from 'vitest';
import { createRng, DEFAULT_TRAINING_ARGS, parseTrainingArgs } from '../../src/model/index.js';
import { randomInt } from '../../src/model/rng.js';
import { DataError, readDataset } from '../../src/train/data.js';
import {
  findLabelIssues,
  type LabelIssueRow,
  LOGGED_ISSUES,
  labelIssuesOf,
  outOfFoldProbabilities,
  type TagIssue,
  type TagSetIssue,
  trainingLabelIssues,
} from '../../src/train/label-issues.js';
import { sharedDataset } from '../support/components.js';
import { flipTags } from '../support/label-noise.js';

const datasetPath = sharedDataset('dataset.csv');
const TOP = 50;

describe.skipIf(datasetPath === null)('label issues on dataset.csv with 20 flipped tags', () => {
  // Three sets of flips (issue 32's measure): recall of the flips in the top 50 at least 0.8 (16 of 20), and
  // precision of what is flagged at least 0.4, counting only the planted flips as right. Measured: flagged
  // 33, 41, 33 holding 16, 17, 16 flips (precision 0.485, 0.415, 0.485); every candidate, as before,
  // flagged 90, 102, 101 (precision 0.19–0.21).
  it.each([2025, 7, 99])(
    'flips seed %i: recall of the flips in the top 50 ≥ 0.8, precision of the flagged rows ≥ 0.4',
    async (flipSeed) => {
      const original = await readDataset(datasetPath!);
      const { rows, flipped } = flipTags(original, 20, flipSeed);
      const progress: number[] = [];
      const options = {
        args: DEFAULT_TRAINING_ARGS,
        seed: 42,
        onFold: (done: number) => progress.push(done),
      };
      const oof = outOfFoldProbabilities(rows, options);
      const report = labelIssuesOf(rows, oof, options);
      expect(progress).toEqual([1, 2, 3, 4, 5]);
      const top = report.issues.slice(0, TOP).filter((issue) => flipped.has(issue.row)).length;
      const flaggedFlips = report.issues.filter((issue) => flipped.has(issue.row)).length;
      expect(top / flipped.size).toBeGreaterThanOrEqual(0.8);
      expect(flaggedFlips / report.found).toBeGreaterThanOrEqual(0.4);
      // The estimate flags fewer rows than there are candidates (rows whose suggested tag differs).
      expect(report.found).toBeLessThan(report.candidates!);
      expect(report.issues).toHaveLength(report.found);

      // Each issue names the given and the suggested tag with both out-of-fold probabilities, by rank:
      // the normalized margin (the given tag's probability minus the best other tag's), lowest first.
      report.issues.forEach((issue, i) => {
        expect(issue.rank).toBe(i + 1);
        if (issue.kind !== 'tag') throw new Error('single-label data gives tag issues');
        const row = rows[issue.row]!;
        expect(issue).toMatchObject({ line: row.line, text: row.text, given_tag: row.tag });
        expect(issue.suggested_tag).not.toBe(issue.given_tag);
        const p = oof.probabilities[issue.row]!;
        const given = oof.tags.indexOf(issue.given_tag);
        expect(issue.given_probability).toBe(p[given]);
        expect(issue.suggested_probability).toBe(p[oof.tags.indexOf(issue.suggested_tag)]);
        expect(issue.margin).toBeCloseTo(p[given]! - Math.max(...p.filter((_, k) => k !== given)), 12);
        // Confident: the suggested tag reached its threshold; else it is the row's most probable tag.
        if (issue.confident) {
          expect(issue.suggested_probability).toBeGreaterThanOrEqual(
            report.thresholds[issue.suggested_tag] as number,
          );
        } else expect(issue.suggested_probability).toBe(Math.max(...p));
        if (i > 0) expect(issue.margin).toBeGreaterThanOrEqual((report.issues[i - 1] as TagIssue).margin);
      });
      // Flipped rows that are found get their original tag suggested back (most of them).
      const restored = report.issues.filter(
        (issue) =>
          flipped.has(issue.row) && issue.kind === 'tag' && issue.suggested_tag === original[issue.row]!.tag,
      );
      expect(restored.length).toBeGreaterThanOrEqual(0.8 * flaggedFlips);
      // Plain JSON: what `tagger label-issues --json` and the training artifact will hold.
      expect(JSON.parse(JSON.stringify(report))).toEqual(report);
      expect(report).toMatchObject({ multi_label: false, rows: rows.length, folds: 5, seed: 42 });
      expect(labelIssuesOf(rows, oof, { ...options, top: 5 }).issues).toEqual(report.issues.slice(0, 5));
    },
    300_000,
  );
});

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

    const long = 'alpha '.repeat(400);
    const many: LabelIssueRow[] = Array.from({ length: 60 }, (_, i) => ({
      text: i === 0 ? `bravo ${long}` : i % 2 ? 'bravo banana bridge' : 'alpha apple arrow',
      tag: i === 0 || i % 2 === 0 ? 'a' : 'b',
      line: i + 2,
    }));
    const found = trainingLabelIssues(many, parseTrainingArgs({ min_freq: 1, analyzer: 'word' }), 1);
    if (!('report' in found)) throw new Error(found.skipped);
    expect(found.seconds).toBeGreaterThan(0);
    expect(found.report.issues.length).toBeLessThanOrEqual(LOGGED_ISSUES);
    for (const issue of found.report.issues) expect(issue.text.length).toBeLessThanOrEqual(1000);
    const first = found.report.issues.find((issue) => issue.row === 0);
    if (first) expect(first.text).toMatch(/^bravo alpha .*…$/);
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
