/**
 * Label issues on the shared dataset.csv with 20 rows flipped at random to another tag: the ranking finds
 * at least as many of them in its top 50 as a plain self-confidence ranking of the same out-of-fold
 * probabilities (issue 25: 16–17 of 20 for that ranking; measured here 17 and 17 — and 17/17, 18/18 for two
 * other flips, seeds 7 and 99). Beside label-issues.test.ts; a `*.dataset.test.ts` file trains on the
 * shared data, so it is not part of `npm run test:unit`.
 */
import { describe, expect, it } from 'vitest';
import { createRng, DEFAULT_TRAINING_ARGS } from '../../src/model/index.js';
import { randomInt } from '../../src/model/rng.js';
import { type DatasetRow, readDataset } from '../../src/train/data.js';
import { labelIssuesOf, outOfFoldProbabilities } from '../../src/train/label-issues.js';
import { sharedDataset } from '../support/components.js';

const datasetPath = sharedDataset('dataset.csv');
const TOP = 50;

/** `count` distinct rows (seeded) given another tag, drawn uniformly from the other tags. */
function flipTags(
  rows: readonly DatasetRow[],
  count: number,
  seed: number,
): { rows: DatasetRow[]; flipped: Set<number> } {
  const rng = createRng(seed);
  const tags = [...new Set(rows.map((r) => r.tag))].sort();
  const flipped = new Set<number>();
  while (flipped.size < count) flipped.add(randomInt(rng, rows.length));
  return {
    rows: rows.map((row, i) => {
      if (!flipped.has(i)) return row;
      const others = tags.filter((t) => t !== row.tag);
      return { ...row, tag: others[randomInt(rng, others.length)]! };
    }),
    flipped,
  };
}

describe.skipIf(datasetPath === null)('label issues on dataset.csv with 20 flipped tags', () => {
  it('ranks at least as many flipped rows into its top 50 as plain self-confidence does (and at least 16)', async () => {
    const original = await readDataset(datasetPath!);
    const { rows, flipped } = flipTags(original, 20, 2025);
    const progress: number[] = [];
    const options = { args: DEFAULT_TRAINING_ARGS, seed: 42, onFold: (done: number) => progress.push(done) };
    const oof = outOfFoldProbabilities(rows, options);
    const report = labelIssuesOf(rows, oof, options);
    expect(progress).toEqual([1, 2, 3, 4, 5]);

    // The baseline: every row ranked by the out-of-fold probability of its given tag, lowest first.
    const plain = oof.probabilities
      .map((p, r) => ({ r, confidence: p[oof.given[r]![0]!]! }))
      .sort((a, b) => a.confidence - b.confidence || a.r - b.r)
      .slice(0, TOP)
      .filter(({ r }) => flipped.has(r)).length;
    const ours = report.issues.slice(0, TOP).filter((issue) => flipped.has(issue.row)).length;
    expect(ours).toBeGreaterThanOrEqual(plain);
    expect(ours).toBeGreaterThanOrEqual(16);

    // Each issue names the given and the suggested tag with both out-of-fold probabilities, by rank.
    report.issues.forEach((issue, i) => {
      expect(issue.rank).toBe(i + 1);
      if (issue.kind !== 'tag') throw new Error('single-label data gives tag issues');
      const row = rows[issue.row]!;
      expect(issue).toMatchObject({ line: row.line, text: row.text, given_tag: row.tag });
      expect(issue.suggested_tag).not.toBe(issue.given_tag);
      const p = oof.probabilities[issue.row]!;
      expect(issue.given_probability).toBe(p[oof.tags.indexOf(issue.given_tag)]);
      expect(issue.suggested_probability).toBe(p[oof.tags.indexOf(issue.suggested_tag)]);
      // Confident: the suggested tag reached its threshold; else it is the row's most probable tag.
      if (issue.confident) {
        expect(issue.suggested_probability).toBeGreaterThanOrEqual(
          report.thresholds[issue.suggested_tag] as number,
        );
      } else expect(issue.suggested_probability).toBe(Math.max(...p));
      if (i > 0)
        expect(issue.given_probability).toBeGreaterThanOrEqual(report.issues[i - 1]!.given_probability);
    });
    // Flipped rows that are found get their original tag suggested back (most of them).
    const restored = report.issues.filter(
      (issue) =>
        flipped.has(issue.row) && issue.kind === 'tag' && issue.suggested_tag === original[issue.row]!.tag,
    );
    expect(restored.length).toBeGreaterThanOrEqual(16);
    // Plain JSON: what `tagger label-issues --json` and the training artifact will hold.
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
    expect(report).toMatchObject({ multi_label: false, rows: rows.length, folds: 5, seed: 42 });
    expect(labelIssuesOf(rows, oof, { ...options, top: 5 }).issues).toEqual(report.issues.slice(0, 5));
  }, 300_000);
});
