/**
 * Checks of the data a training is about to use. Data no useful model can come from is refused with a
 * DataError before any training (every row has one tag, or every tag but one was folded into `other`);
 * data that gives a model whose metrics mislead is trained on, with warnings a person must see: tags
 * folded into `other` (named, with counts), rows repeated within the training data, texts with no word
 * the model can read, texts labelled with different tags, a test split too small to rank runs by (test
 * rows that repeat training texts are duplicates.ts's). Rows read from a file are named by line
 * (`DatasetRow.line`), others by position.
 */
import {
  cleanText,
  type DataCheckKind,
  duplicateKey,
  type LabelledText,
  multiLabelModelTags,
  OTHER_TAG,
  rowsPerTag,
  type TrainingArgs,
  tagsOf,
} from '../model/index.js';
import { DataError, type DatasetRow, lineList } from './data.js';

/** Below this many test rows an f1 moves by several points with one row: too noisy to rank runs. */
export const MIN_TRUSTED_TEST_ROWS = 30;

/** The same text for duplicate and leak checks: case, spacing and surrounding blanks do not count. */
export const sameText = (text: string): string => text.toLowerCase().replace(/\s+/g, ' ').trim();

/** The file line of a row read by readDataset, else its 1-based position in `rows`. */
const lineOf = (row: LabelledText, index: number): number => (row as Partial<DatasetRow>).line ?? index + 1;

/**
 * The tags a model of `kept` classes learns from rows: each row's kept tags, or `other` for a row with
 * none (single-label: its tag or `other`).
 */
function learntTags(rows: readonly LabelledText[], kept: ReadonlySet<string>): Set<string> {
  const learnt = new Set<string>();
  for (const row of rows) {
    const known = tagsOf(row).filter((tag) => kept.has(tag));
    for (const tag of known.length > 0 ? known : [OTHER_TAG]) learnt.add(tag);
  }
  return learnt;
}

/** How a model treats tags it does not keep, for messages. */
const foldedInto = (multiLabel: boolean): string =>
  multiLabel ? `dropped (a row left with none counts as '${OTHER_TAG}')` : `folded into '${OTHER_TAG}'`;

/** "lines 3 and 9" for rows from a file, "rows 3 and 9" for rows given in memory. */
function rowList(rows: readonly LabelledText[], indices: readonly number[]): string {
  const fromFile = rows.length > 0 && (rows[0] as Partial<DatasetRow>).line !== undefined;
  const text = lineList(indices.map((i) => lineOf(rows[i]!, i)));
  return fromFile ? text : text.replace(/^line/, 'row');
}

/**
 * Refuses training data that cannot give a useful model: one tag only, or one tag left once
 * `min_freq` / `accepted_tags` have folded the others into `other` (such a model answers that tag for
 * every text). `train` is the training split, as the model will see it.
 */
export function checkTrainable(train: readonly LabelledText[], args: TrainingArgs): void {
  const counts = rowsPerTag(train.map(tagsOf));
  // The tags the model will keep, counted as trainTagger counts them.
  const kept = new Set(multiLabelModelTags(train.map(tagsOf), args.min_freq, args.accepted_tags));
  const learnt = learntTags(train, kept);
  if (learnt.size >= 2) return;
  if (counts.size < 2) {
    throw new DataError(
      `data: every training row has the tag '${[...counts.keys()][0] ?? ''}': a model of one tag answers it for every text; give rows of at least two tags`,
    );
  }
  const folded = [...counts]
    .filter(([tag]) => !kept.has(tag))
    .sort((a, b) => b[1] - a[1])
    .map(([tag, count]) => `'${tag}': ${count} training row${count === 1 ? '' : 's'}`);
  const rule = `min_freq ${args.min_freq}${args.accepted_tags === null ? '' : ' and accepted_tags'}`;
  throw new DataError(
    `data: with ${rule}, ${args.multi_label ? `every tag but '${[...learnt][0]}' is ${foldedInto(true)}` : `every tag is ${foldedInto(false)}`} (${folded.join('; ')}), so the model would answer '${[...learnt][0]}' for every text; lower min_freq or accept more tags`,
  );
}

/**
 * Rows that repeat an earlier row's text and tag: each counts twice in training, and a repeat that the
 * split puts into the test rows inflates the test f1.
 */
export function duplicateRowsWarning(rows: readonly LabelledText[]): string | null {
  const seen = new Set<string>();
  const repeats: number[] = [];
  rows.forEach((row, index) => {
    const key = `${sameText(row.text)}\u0000${row.tag}`;
    if (seen.has(key)) repeats.push(index);
    else seen.add(key);
  });
  if (repeats.length === 0) return null;
  return `${repeats.length} row(s) repeat an earlier row's text and tag (${rowList(rows, repeats)}): the model learns them twice, and a repeat split into the test rows inflates the test f1; remove the repeats`;
}

/** What the clean-up steps the args turn on remove, for a message ("stopwords, URLs and …"). */
function removedByCleanUp(args: TrainingArgs): string {
  const removed = [
    ...(args.stopwords ? ['stopwords'] : []),
    ...(args.ascii_only ? ['punctuation', 'non-ASCII letters'] : []),
    ...(args.strip_urls ? ['URLs'] : []),
  ];
  if (removed.length === 0) return 'once whitespace is trimmed (no clean-up step removes words)';
  const list =
    removed.length === 1 ? removed[0]! : `${removed.slice(0, -1).join(', ')} and ${removed.at(-1)}`;
  return `once ${list} are removed`;
}

/**
 * Rows with nothing left after the args' clean-up (stopwords, punctuation, URLs, … as they remove): no
 * feature at all, so the model learns nothing from them and tags such texts by its biases alone.
 */
export function unreadableTextsWarning(rows: readonly LabelledText[], args: TrainingArgs): string | null {
  const empty: number[] = [];
  rows.forEach((row, index) => {
    if (cleanText(row.text, args) === '') empty.push(index);
  });
  if (empty.length === 0) return null;
  return `${empty.length} row(s) have no feature: nothing is left of their text ${removedByCleanUp(args)} (${rowList(rows, empty)}); they teach the model nothing: rewrite or remove them${args.stopwords ? ', or train without "stopwords"' : ''}`;
}

/** One data warning, with its kind (recorded as the run's tag `tagger.data_checks`). */
export interface DataWarning {
  kind: DataCheckKind;
  message: string;
}

/**
 * Texts labelled with different tags, which no model can get right both times. (Test rows that repeat
 * training rows are duplicates.ts's: taken out of the test split, or a leak.)
 */
export function overlapWarnings(seen: readonly LabelledText[], test: readonly LabelledText[]): DataWarning[] {
  const warnings: DataWarning[] = [];
  const tagsOf = new Map<string, Set<string>>();
  for (const row of [...seen, ...test]) {
    // The same text as duplicates.ts compares them (case, spacing, punctuation and digits aside).
    const key = duplicateKey(row.text);
    if (key === '') continue;
    const tags = tagsOf.get(key) ?? new Set<string>();
    tags.add(row.tag);
    tagsOf.set(key, tags);
  }
  const conflicting = [...tagsOf.values()].filter((tags) => tags.size > 1).length;
  if (conflicting > 0) {
    warnings.push({
      kind: 'conflicting_labels',
      message: `${conflicting} text(s) appear with different tags: no model can get both right; check those labels`,
    });
  }
  return warnings;
}

/**
 * The warnings about what the model learnt and what it was tested on, after the training (one learnt tag
 * cannot occur here: checkTrainable refused it). Tags are counted on the whole training file (`data`), as
 * min_freq counts them; `train` is what the model learnt from.
 */
export function dataWarnings(
  data: readonly LabelledText[],
  train: readonly LabelledText[],
  classes: readonly string[],
  testSize: number,
  args: Pick<TrainingArgs, 'min_freq' | 'accepted_tags'>,
): {
  warnings: DataWarning[];
  trainedTags: number;
} {
  const counts = rowsPerTag(data.map(tagsOf));
  const kept = new Set(classes);
  const folded = [...counts].filter(([tag]) => !kept.has(tag)).sort((a, b) => b[1] - a[1]);
  const learnt = learntTags(train, kept);
  const multiLabel = data.some((row) => row.tags !== undefined);
  const accepted = args.accepted_tags === null ? null : new Set(args.accepted_tags);
  const warnings: DataWarning[] = [];
  if (folded.length > 0) {
    const why = (tag: string): string =>
      accepted !== null && !accepted.has(tag) ? 'not in accepted_tags' : `under min_freq ${args.min_freq}`;
    const shown = folded
      .slice(0, 10)
      .map(([tag, count]) => `'${tag}' (${count} row${count === 1 ? '' : 's'} in the file, ${why(tag)})`);
    const rows = folded.reduce((sum, [, count]) => sum + count, 0);
    warnings.push({
      kind: 'folded_tags',
      message: `${folded.length} tag(s) of ${counts.size}, on ${rows} row${rows === 1 ? '' : 's'} of the file in all, were ${foldedInto(multiLabel)}: ${shown.join(', ')}${folded.length > 10 ? ', …' : ''}`,
    });
  }
  if (testSize < MIN_TRUSTED_TEST_ROWS) {
    warnings.push({
      kind: 'small_test_split',
      message: `the test split has only ${testSize} rows: its f1 is too noisy to rank runs by (tagger serve skips runs tested on fewer than TAGGER_MIN_TEST_SIZE rows, default ${MIN_TRUSTED_TEST_ROWS})`,
    });
  }
  return { warnings, trainedTags: learnt.size };
}

/**
 * The most characters of one text a model trains on: the API's default limit on a text it answers
 * (TAGGER_MAX_TEXT_LENGTH, which `truncate` cuts a longer text to), so training sees what serving will.
 */
export const MAX_TRAINING_TEXT_CHARS = 10_000;

/**
 * The rows with every text cut to MAX_TRAINING_TEXT_CHARS, and the warning that counts the cut ones by
 * line (null when none was cut): a long text is trained on, not refused.
 */
export function cutLongTexts<T extends LabelledText>(
  rows: readonly T[],
): { rows: readonly T[]; warning: string | null } {
  const cut: number[] = [];
  const out = rows.map((row, index) => {
    if (row.text.length <= MAX_TRAINING_TEXT_CHARS) return row;
    cut.push(index);
    return { ...row, text: row.text.slice(0, MAX_TRAINING_TEXT_CHARS) };
  });
  if (cut.length === 0) return { rows, warning: null };
  return {
    rows: out,
    warning: `${cut.length} row(s) have texts longer than ${MAX_TRAINING_TEXT_CHARS.toLocaleString('en-US')} characters (${rowList(rows, cut)}): the model trained on their first ${MAX_TRAINING_TEXT_CHARS.toLocaleString('en-US')}, as the API cuts a longer text it is asked to (truncate)`,
  };
}
