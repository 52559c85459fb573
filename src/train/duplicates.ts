/**
 * Duplicates handled on purpose (issue 40), as src/model/text/near-duplicates.ts defines them: two texts
 * are the same when their duplicate keys are equal (case, spacing, punctuation and digits aside), near
 * copies when their character 4-gram sets are at least 0.8 alike.
 *
 * - **A training's test split** (`separateTestRepeats`): test rows that are the same text as a training or
 *   validation row measure memory, not the model. Up to MAX_REPEATED_TEST_SHARE of the test rows (2 %: the
 *   natural repeats of published data sets — BANKING77 has 27 of 3,080, CLINC150 37 of 5,500) are taken
 *   out of the test split and counted in a warning (`test_repeats_removed`), so the f1 is honest and the
 *   run is served; more than that stays in the split as a leak the promotion gate holds back
 *   (`test_leak`), as before — so much overlap says the files themselves are wrong. Near copies that are
 *   not the same text stay (paraphrases are what an intent data set is made of: BANKING77 has 166), and
 *   are counted (`test_near_copies`).
 * - **A retrain's merged rows** (`testCopyFinder`, `withoutTestRepeats`): the test rows are the replaced
 *   run's and stay as they are, so it is the training rows that give way — a correction (feedback label,
 *   label-issue fix) whose text is the same as or a near copy of a test row is kept out of training
 *   (merge-corrections.ts), and a row of the replaced run's own data that is the same text as a test row
 *   (runs trained before test repeats were taken out) is left out too, so a retrain never gains by its
 *   own test rows.
 */
import { duplicateKey, type LabelledText, NearDuplicateIndex } from '../model/index.js';
import { type DatasetRow, lineList } from './data.js';
import type { DataWarning } from './data-checks.js';

/** Test rows repeating training rows, as a share of the test rows, taken out rather than held back. */
export const MAX_REPEATED_TEST_SHARE = 0.02;

/** Line numbers of rows read from a file, for messages ("" when the rows came from memory). */
function linesOf(rows: readonly LabelledText[]): string {
  const lines = rows
    .map((row) => (row as Partial<DatasetRow>).line)
    .filter((line): line is number => line !== undefined);
  return lines.length === rows.length && lines.length > 0 ? ` (${lineList(lines)} of the test data)` : '';
}

const percent = (part: number, whole: number): string => `${((100 * part) / whole).toFixed(1)}%`;

export interface SeparatedTest<T extends LabelledText> {
  /** The test rows the run is scored on. */
  test: T[];
  /** The test rows taken out (the same text as a training or validation row). */
  removed: T[];
  /** Test rows kept that are near copies (not the same text) of a training or validation row. */
  nearCopies: number;
  warnings: DataWarning[];
}

/**
 * The test split a run is scored on: `test` less the rows that are the same text as a row of `seen` (the
 * training and validation rows) when they are at most MAX_REPEATED_TEST_SHARE of it, with the warnings
 * that say what was done (see the header). Rows with no letter at all (an empty duplicate key) are never
 * called repeats.
 */
export function separateTestRepeats<T extends LabelledText>(
  seen: readonly LabelledText[],
  test: readonly T[],
): SeparatedTest<T> {
  const keys = new Set<string>();
  for (const row of seen) {
    const key = duplicateKey(row.text);
    if (key !== '') keys.add(key);
  }
  const repeats: T[] = [];
  const rest: T[] = [];
  for (const row of test) {
    if (keys.has(duplicateKey(row.text))) repeats.push(row);
    else rest.push(row);
  }
  const warnings: DataWarning[] = [];
  const allowed = repeats.length <= MAX_REPEATED_TEST_SHARE * test.length;
  if (repeats.length > 0 && allowed) {
    warnings.push({
      kind: 'test_repeats_removed',
      message: `${repeats.length} of the ${test.length} test rows (${percent(repeats.length, test.length)}) repeat a training or validation text (case, spacing, punctuation and digits aside)${linesOf(repeats)}: taken out of the test split, which has ${rest.length} rows, so its f1 is measured on texts the model never saw (up to ${100 * MAX_REPEATED_TEST_SHARE}% of the test rows are taken out; more is a leak that holds the run back)`,
    });
  } else if (repeats.length > 0) {
    // The words the promotion gate also recognises in runs logged before data-check kinds existed.
    warnings.push({
      kind: 'test_leak',
      message: `${repeats.length} of the ${test.length} test rows (${percent(repeats.length, test.length)}) have the same text as a training or validation row (case, spacing, punctuation and digits aside), more than the ${100 * MAX_REPEATED_TEST_SHARE}% taken out of a test split: the test f1 overstates how the model does on new texts; remove the duplicates`,
    });
  }
  const kept = allowed ? rest : [...test];
  const nearCopies = countNearCopies(seen, rest);
  if (nearCopies > 0) {
    warnings.push({
      kind: 'test_near_copies',
      message: `${nearCopies} of the ${kept.length} test rows (${percent(nearCopies, kept.length)}) are near copies of a training or validation text (character 4-grams at least 80% alike, not the same text): they stay in the test split, as paraphrases are part of the task, but they make its f1 a little optimistic`,
    });
  }
  return { test: kept, removed: allowed ? repeats : [], nearCopies, warnings };
}

/**
 * How many of `rows` are near copies of a row of `seen` (rows the same as one of `seen` are the caller's
 * to leave out). `seen`, the larger side, is indexed: adding a text costs about half of asking for one.
 */
function countNearCopies(seen: readonly LabelledText[], rows: readonly LabelledText[]): number {
  if (rows.length === 0 || seen.length === 0) return 0;
  const index = new NearDuplicateIndex();
  for (const row of seen) index.add(row.text);
  return rows.filter((row) => index.match(row.text) !== null).length;
}

/** How a text relates to a set of test rows: the same text, a near copy of one, or neither (null). */
export type TestCopy = 'same' | 'near' | null;

/** A function telling whether a text is the same as or a near copy of one of `test`'s texts. */
export function testCopyFinder(test: readonly LabelledText[]): (text: string) => TestCopy {
  const index = new NearDuplicateIndex();
  for (const row of test) index.add(row.text);
  return (text) => {
    const match = index.match(text);
    if (match === null) return null;
    return match.similarity === 1 ? 'same' : 'near';
  };
}

/**
 * `rows` less those that are the same text as a test row (see the header), and how many were left out.
 * Near copies of the replaced run's own rows stay: it learnt from them, and paraphrases are the task.
 */
export function withoutTestRepeats<T extends LabelledText>(
  rows: readonly T[],
  test: readonly LabelledText[],
): { rows: T[]; left: T[] } {
  const keys = new Set(test.map((row) => duplicateKey(row.text)).filter((key) => key !== ''));
  const kept: T[] = [];
  const left: T[] = [];
  for (const row of rows) (keys.has(duplicateKey(row.text)) ? left : kept).push(row);
  return { rows: kept, left };
}
