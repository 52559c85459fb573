/**
 * Label issues on the shared dataset.csv with 20 rows flipped at random to another tag (three sets of
 * flips): at least 0.8 of the flips in the top 50 and at least 0.4 of the flagged rows flips (issue 32).
 * Beside label-issues.test.ts; a `*.dataset.test.ts` file trains on the shared data, so it is not part of
 * `npm run test:unit`.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAINING_ARGS } from '../../src/model/index.js';
import { readDataset } from '../../src/train/data.js';
import { labelIssuesOf, outOfFoldProbabilities, type TagIssue } from '../../src/train/label-issues.js';
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
