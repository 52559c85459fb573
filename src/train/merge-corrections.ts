/**
 * The next training set of `tagger retrain`: the served run's own training rows with every correction a
 * person gave — feedback labels on served predictions and label-issue fixes — merged in. A correction for
 * the text of a training row replaces that row's tag(s) (every row with that text, case and spacing
 * aside); one for a text the data lacks becomes a new row; one for a test row, or for a text that is the
 * same as a test row's or a near copy of one (duplicates.ts), is left out, so the new run is tested on
 * exactly the rows the run it would replace was tested on and can never gain by learning them (issue 40:
 * labels on test texts with "." appended took a test f1 from 0.93 to 0.99). Rows of the replaced run's
 * own data that are the same text as a test row (runs trained before such test rows were taken out of the
 * split) are left out too. Several corrections of one text that disagree are contradictory: the latest
 * wins, and they are counted. Corrected texts that duplicate checks call the same or near copies but the
 * merge keeps apart (they differ beyond case and spacing) and that disagree are counted and kept. Pure:
 * the caller reads the data and the corrections.
 */
import { type LabelledText, NearDuplicateIndex, neutraliseFormula, tagSetKey } from '../model/index.js';
import { sameText } from './data-checks.js';
import { testCopyFinder, withoutTestRepeats } from './duplicates.js';

/** A person's label for a text: from feedback on a served prediction, or a fix of a label issue. */
export interface Correction {
  text: string;
  tags: readonly string[];
  source: 'feedback' | 'label_issue';
  receivedMs: number;
}

/** A training row as the merge keeps it: its text, tag(s), and where it came from. */
export type MergedRow = LabelledText & {
  /** `data`: the parent's training data (maybe relabelled); else the correction it came from. */
  origin: 'data' | 'feedback' | 'label_issue';
};

export interface MergeInput {
  /** The parent run's training rows (train + validation: every row but the test rows). */
  pool: readonly LabelledText[];
  /** The parent run's test rows (kept as they are). */
  test: readonly LabelledText[];
  corrections: readonly Correction[];
  multiLabel: boolean;
}

export interface MergeSummary {
  /** Training rows whose tags a correction changed, by the correction's source. */
  relabelled: { feedback: number; label_issue: number };
  /** Corrections that agreed with the data (nothing changed). */
  confirmed: number;
  /** Rows added for texts the data lacked, by source. */
  added: { feedback: number; label_issue: number };
  /** Corrections of test rows (their very text), left out (the test rows stay as the parent was tested on). */
  testCorrections: number;
  /**
   * Corrections kept out of training because their text is the same as a test row's once case, spacing,
   * punctuation and digits are set aside, or a near copy of one, by source.
   */
  nearTest: { feedback: number; label_issue: number };
  /** Rows of the parent's own training data that are the same text as a test row, left out. */
  dataTestRepeats: number;
  /** Texts whose corrections disagreed with each other (the latest won). */
  contradictions: number;
  /**
   * Pairs of corrected texts that are near copies of each other with different tags (both kept), and the
   * first such pair, for the output.
   */
  nearContradictions: number;
  nearContradiction?: { texts: [string, string]; tags: [string[], string[]] };
}

export interface MergeResult {
  rows: MergedRow[];
  summary: MergeSummary;
}

const rowOf = (text: string, tags: readonly string[], multiLabel: boolean): LabelledText =>
  multiLabel ? { text, tag: tagSetKey(tags), tags: [...new Set(tags)].sort() } : { text, tag: tags[0] ?? '' };

const tagsOfRow = (row: LabelledText): string[] => [...(row.tags ?? [row.tag])].sort();
const same = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((tag, i) => tag === b[i]);

/** Pairs of the corrections' texts that are near copies of each other but disagree. */
function nearContradictions(
  latest: readonly Correction[],
): Pick<MergeSummary, 'nearContradictions' | 'nearContradiction'> {
  const index = new NearDuplicateIndex();
  let count = 0;
  let first: MergeSummary['nearContradiction'];
  for (const correction of latest) {
    // Texts the merge keeps apart (another spelling) that duplicate checks call the same, or near copies.
    const match = index.match(correction.text);
    if (match !== null) {
      const other = latest[match.id]!;
      const a = [...other.tags].sort();
      const b = [...correction.tags].sort();
      if (!same(a, b)) {
        count++;
        first ??= { texts: [other.text, correction.text], tags: [a, b] };
      }
    }
    index.add(correction.text);
  }
  return { nearContradictions: count, ...(first === undefined ? {} : { nearContradiction: first }) };
}

export function mergeCorrections(input: MergeInput): MergeResult {
  const summary: MergeSummary = {
    relabelled: { feedback: 0, label_issue: 0 },
    confirmed: 0,
    added: { feedback: 0, label_issue: 0 },
    testCorrections: 0,
    nearTest: { feedback: 0, label_issue: 0 },
    dataTestRepeats: 0,
    contradictions: 0,
    nearContradictions: 0,
  };
  // The latest correction of each text; a text with disagreeing corrections counts once.
  const latest = new Map<string, Correction>();
  const disagreeing = new Set<string>();
  for (const correction of [...input.corrections].sort((a, b) => a.receivedMs - b.receivedMs)) {
    const key = sameText(correction.text);
    const before = latest.get(key);
    if (before !== undefined && !same([...before.tags].sort(), [...correction.tags].sort()))
      disagreeing.add(key);
    latest.set(key, correction);
  }
  summary.contradictions = disagreeing.size;
  Object.assign(summary, nearContradictions([...latest.values()]));
  const testTexts = new Set(input.test.map((row) => sameText(row.text)));
  const copyOfTest = testCopyFinder(input.test);
  // A correction the test rows keep out: counted once, as a test correction or a near copy of one.
  const keptOut = new Set<string>();
  const keepOut = (key: string, correction: Correction): boolean => {
    if (testTexts.has(sameText(correction.text))) {
      if (!keptOut.has(key)) summary.testCorrections++;
    } else if (copyOfTest(correction.text) !== null) {
      if (!keptOut.has(key)) summary.nearTest[correction.source]++;
    } else return false;
    keptOut.add(key);
    return true;
  };
  const own = withoutTestRepeats(input.pool, input.test);
  summary.dataTestRepeats = own.left.length;
  const used = new Set<string>();
  const rows: MergedRow[] = own.rows.map((row) => {
    const key = sameText(row.text);
    const correction = latest.get(key);
    if (correction === undefined || keepOut(key, correction)) return { ...row, origin: 'data' };
    const counted = !used.has(key);
    used.add(key);
    const tags = [...new Set(correction.tags)].sort();
    if (same(tagsOfRow(row), tags)) {
      if (counted) summary.confirmed++;
      return { ...row, origin: 'data' };
    }
    summary.relabelled[correction.source]++;
    return { ...rowOf(row.text, tags, input.multiLabel), origin: correction.source };
  });
  for (const [key, correction] of latest) {
    if (used.has(key) || keepOut(key, correction)) continue;
    summary.added[correction.source]++;
    rows.push({ ...rowOf(correction.text, correction.tags, input.multiLabel), origin: correction.source });
  }
  return { rows, summary };
}

/**
 * One CSV field, RFC 4180: always quoted, quotes doubled, and a cell a spreadsheet would run as a formula
 * neutralised with a leading `'` (`feedback export --merged` writes these files for people to open; the
 * data reader takes the `'` away again, so the texts read back the same).
 */
const field = (value: string): string => `"${neutraliseFormula(value).replaceAll('"', '""')}"`;

/**
 * Rows as a training file that reads back to the very same texts: a text is split at its first space into
 * `title` and `description` (training joins them with one space again); a text without a space is all
 * title (read back with one trailing space, which cleaning drops).
 */
export function trainingCsv(rows: readonly LabelledText[], multiLabel: boolean): string {
  const lines = [`title,description,${multiLabel ? 'tags' : 'tag'}`];
  for (const row of rows) {
    const space = row.text.indexOf(' ');
    const title = space < 0 ? row.text : row.text.slice(0, space);
    const description = space < 0 ? '' : row.text.slice(space + 1);
    const label = multiLabel ? tagsOfRow(row).join('|') : row.tag;
    lines.push(`${field(title)},${field(description)},${field(label)}`);
  }
  return `${lines.join('\n')}\n`;
}
