/**
 * Rows whose labels are probably wrong, by confident learning (Northcutt, Jiang & Chuang 2021, as cleanlab):
 * 1. out-of-fold probabilities: every row is predicted by a model trained without it, through the
 *    cross-validation folds `tagger optimize` uses (cross-validate.ts), with the given training args;
 * 2. per-tag thresholds: a tag's threshold is the mean out-of-fold probability of that tag over the rows
 *    labelled with it (its mean self-confidence);
 * 3. a row's suggested tag is its most probable tag among those whose probability reaches their threshold
 *    (cleanlab's confident joint; `confident: true`), or, when no tag reaches its threshold, its most
 *    probable tag (`confident: false`); a row whose suggested tag differs from its given tag is a
 *    candidate;
 * 4. how many rows are mislabelled is estimated from the confident joint calibrated to the tags' row
 *    counts (cleanlab's `estimate_num_label_issues`, off-diagonal sum), and that many candidates are
 *    flagged, the most unlikely first: ranked by the normalized margin — the given tag's probability minus
 *    the best other tag's (cleanlab's `rank_by='normalized_margin'`).
 * Issue 32 found the previous rule (every candidate, ranked by self-confidence) flagged 76 rows of
 * dataset.csv, 3–4× the errors: on dataset.csv with 20 tags flipped at random (three seeds of flips) it
 * flagged 90–102 rows holding 19–20 flips (precision 0.19–0.21); this rule flags 33–41 holding 16–17 of
 * them (precision 0.41–0.48, recall in the top 50 at 0.8–0.85), where ranking by self-confidence within
 * the same estimate fell to 14 of 41 on one seed (test/train/label-issues.test.ts).
 * Multi-label rows are judged per tag, as cleanlab's multi-label mode does: each tag is a two-class problem
 * (listed or not) with its two thresholds, and an issue is a listed tag that probably does not apply
 * (`extra_tag`) or an unlisted one that probably does (`missing_tag`).
 * The report is plain JSON (for `tagger label-issues --json`, a training artifact and the inspection page).
 */
import { createHash } from 'node:crypto';
import {
  bindEmbeddings,
  encoderStageArgs,
  type LabelledText,
  MISTAKE_TEXT_CHARS,
  ModelInputError,
  multiLabelModelTags,
  normalizeTag,
  normalizeTagSet,
  OTHER_TAG,
  sampleIndices,
  type TrainEncoder,
  type TrainingArgs,
  tagsOf,
  trainTagger,
} from '../model/index.js';
import { crossValidationFolds, DEFAULT_FOLDS } from './cross-validate.js';
import { DataError } from './data.js';
import { checkTrainable, sameText } from './data-checks.js';
import type { HeldOutPredictions } from './pipeline.js';
import { MIN_SPLIT_ROWS } from './splits.js';

export interface LabelIssueOptions {
  args: TrainingArgs;
  /** Seeds the folds, their train/validation splits and the training. */
  seed: number;
  /** Cross-validation folds (default 5, as `tagger optimize`). */
  folds?: number;
  /** List at most this many issues (the most unlikely first); all by default. */
  top?: number;
  /** Told after each fold's model has predicted its rows (for a progress line). */
  onFold?: (done: number, folds: number) => void;
  /** For args that name an encoder: the embeddings of every row (computed once, see embeddings.ts). */
  encoder?: TrainEncoder;
}

/** A labelled row, optionally with the line of the file it came from (a DatasetRow has one). */
export type LabelIssueRow = LabelledText & { line?: number };

interface IssueBase {
  /** 1-based, most unlikely given label first. */
  rank: number;
  /** The row's index in the data (0-based). */
  row: number;
  /** The file line the row starts on, when the rows carry one. */
  line: number | null;
  text: string;
  /**
   * SHA-256 (hex) of the row's whole text as duplicate checks compare it (`textKey`): names the row for a
   * person's decision on it (`POST /review/label-issues`) across runs and however long the text is.
   */
  text_key: string;
  /** The out-of-fold probability of the label as given. */
  given_probability: number;
  /** The out-of-fold probability of the suggested label. */
  suggested_probability: number;
  /**
   * The suggested label reached its per-tag threshold (confident learning's confident joint); false: no
   * label did, and the suggestion is the most probable one.
   */
  confident: boolean;
}

/** Single-label: the given tag is probably wrong and `suggested_tag` probably right. */
export interface TagIssue extends IssueBase {
  kind: 'tag';
  /** The given tag's probability minus the best other tag's (negative: another tag is likelier): the rank. */
  margin: number;
  /** The tag as the models know it (`other` for a tag folded by min_freq or accepted_tags). */
  given_tag: string;
  /** Only when it differs from `given_tag`: the row's tag as written in the data, which was folded. */
  data_tag?: string;
  suggested_tag: string;
}

/**
 * Multi-label, one tag of one row: `extra_tag` — the row lists `tag`, which probably does not apply;
 * `missing_tag` — it does not list `tag`, which probably applies. The probabilities are of the tag being
 * listed or not, as given and as suggested.
 */
export interface TagSetIssue extends IssueBase {
  kind: 'extra_tag' | 'missing_tag';
  tag: string;
  given_tags: string[];
  suggested_tags: string[];
}

export type LabelIssue = TagIssue | TagSetIssue;

export interface LabelIssuesReport {
  multi_label: boolean;
  rows: number;
  /**
   * Where the held-out probabilities came from: `folds` (every row by a model of the other folds; `tagger
   * label-issues`, and runs before the model choice), or `validation_split` (`tagger train`: the rows of its
   * validation split, by the chosen model's validated fit, which never saw them; `folds` is then 0).
   */
  source?: 'folds' | 'validation_split';
  folds: number;
  seed: number;
  /** The tags as the models know them (rare or unaccepted ones are `other`). */
  tags: string[];
  /**
   * Per-tag thresholds (mean self-confidence); multi-label: `listed` for the tag's rows, `unlisted` (the
   * mean probability of the tag not applying) for the others. null for a tag no row has.
   */
  thresholds: Record<string, number | { listed: number | null; unlisted: number | null } | null>;
  /**
   * Present when the rows looked at are a seeded sample (`tagger train` on more than
   * TRAINING_LABEL_ISSUE_ROWS rows): how many rows the data had. `rows` is the sample's size, and issues'
   * `row` indices point into the data.
   */
  sampled_from?: number;
  /** How many issues were found (flagged: the estimated number of label errors; before `top`). */
  found: number;
  /**
   * Rows (multi-label: row tags) whose suggested label differs from the given one, flagged or not: the
   * estimate keeps the most unlikely `found` of them.
   */
  candidates?: number;
  issues: LabelIssue[];
}

/** Every row's out-of-fold probabilities (in `tags` order) and its label as the models see it. */
export interface OutOfFold {
  tags: string[];
  probabilities: number[][];
  /** Single-label: each row's tag index; multi-label: each row's tag indices. */
  given: number[][];
}

/**
 * Out-of-fold probabilities through the cross-validation folds: fold i's rows are predicted by the model
 * `trainTagger` fits on the other folds (its 85/15 train/validation split, refit as the args say). A tag a
 * fold's model does not have (too rare in its training rows) gets probability 0 there, and a row labelled
 * with it counts as `other` for that model, as the model sees it.
 */
export function outOfFoldProbabilities(
  data: readonly LabelIssueRow[],
  options: LabelIssueOptions,
): OutOfFold {
  const folds = options.folds ?? DEFAULT_FOLDS;
  if (data.length === 0) throw new DataError('label-issues: the data has no rows');
  checkTrainable(data, options.args);
  const indexed = data.map((row, index) => ({ ...row, index }));
  let parts: ReturnType<typeof crossValidationFolds>;
  try {
    parts = crossValidationFolds(indexed, folds, options.seed, { validated: false });
  } catch (error) {
    if (!(error instanceof DataError)) throw error;
    throw new DataError(
      `label-issues: every row must be predicted by a model trained without it, by ${folds}-fold cross-validation, and ${error.message.replace(/^data: /, '')}. Each fold must hold at least ${MIN_SPLIT_ROWS} rows of the data, split so that every tag is spread over the folds: at least ${MIN_SPLIT_ROWS * folds} rows for ${folds} folds, more with several tags (--folds is at least 2)`,
    );
  }
  const tags = multiLabelModelTags(data.map(tagsOf), options.args.min_freq, options.args.accepted_tags);
  const column = new Map(tags.map((tag, k) => [tag, k]));
  const probabilities: number[][] = data.map(() => []);
  const given: number[][] = data.map(() => []);
  for (const [done, fold] of parts.entries()) {
    // One fit on all of the other folds' rows: the model `refit` gives (the same rows in the same order, the
    // same seed), without the validated fit before it, whose only use is choosing thresholds.
    // A cascade run's label issues are its encoder stage's (the better probabilities of its two models).
    const args = options.args.cascade ? encoderStageArgs(options.args) : options.args;
    const { model: trained } = trainTagger([...fold.train, ...fold.validation], [], args, {
      seed: options.seed,
      ...(options.args.encoder !== null && options.encoder ? { encoder: options.encoder } : {}),
    });
    const model = options.encoder ? bindEmbeddings(trained, options.encoder.embeddings) : trained;
    const classes = new Set(model.tags);
    const predictions = model.predict(fold.test.map((row) => row.text));
    fold.test.forEach((row, i) => {
      const index = (row as (typeof indexed)[number]).index;
      const p = predictions[i]!.probabilities;
      probabilities[index] = tags.map((tag) => p[tag] ?? 0);
      const labels = options.args.multi_label
        ? normalizeTagSet(tagsOf(row), classes)
        : [normalizeTag(row.tag, classes)];
      given[index] = labels.map((tag) => column.get(tag) ?? column.get('other')!);
    });
    options.onFold?.(done + 1, folds);
  }
  return { tags, probabilities, given };
}

const mean = (values: readonly number[]): number | null =>
  values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;

/** The rows whose given labels confident learning finds unlikely, most unlikely first. */
export function findLabelIssues(
  data: readonly LabelIssueRow[],
  options: LabelIssueOptions,
): LabelIssuesReport {
  return labelIssuesOf(data, outOfFoldProbabilities(data, options), options);
}

/** The report of confident learning on out-of-fold probabilities already computed (see findLabelIssues). */
export function labelIssuesOf(
  data: readonly LabelIssueRow[],
  oof: OutOfFold,
  options: LabelIssueOptions,
): LabelIssuesReport {
  if (options.args.multi_label) {
    const issues = multiLabelIssues(data, oof);
    const ranked = rank(issues.issues, (issue) => issue.given_probability);
    return report(ranked, ranked.length, issues.thresholds, data, oof, options);
  }
  const issues = singleLabelIssues(data, oof);
  // The most unlikely of the candidates, as many as the calibrated confident joint says are mislabelled.
  const ranked = rank(issues.issues, (issue) => (issue as { margin: number }).margin).slice(
    0,
    issues.estimate,
  );
  return report(ranked, issues.issues.length, issues.thresholds, data, oof, options);
}

function report(
  ranked: LabelIssue[],
  candidates: number,
  thresholds: LabelIssuesReport['thresholds'],
  data: readonly LabelIssueRow[],
  oof: OutOfFold,
  options: LabelIssueOptions,
): LabelIssuesReport {
  return {
    multi_label: options.args.multi_label,
    rows: data.length,
    source: 'folds',
    folds: options.folds ?? DEFAULT_FOLDS,
    seed: options.seed,
    tags: oof.tags,
    thresholds,
    found: ranked.length,
    candidates,
    issues: options.top === undefined ? ranked : ranked.slice(0, options.top),
  };
}

type Unranked = Omit<TagIssue, 'rank'> | Omit<TagSetIssue, 'rank'>;

/** By `key`, lowest first; ties by row, then tag, so the order is stable. */
function rank(issues: Unranked[], key: (issue: Unranked) => number): LabelIssue[] {
  return issues
    .sort(
      (a, b) =>
        key(a) - key(b) || a.row - b.row || ('tag' in a && 'tag' in b ? a.tag.localeCompare(b.tag) : 0),
    )
    .map((issue, i) => ({ ...issue, rank: i + 1 }) as LabelIssue);
}

/**
 * The number of label errors the confident joint implies (cleanlab's `estimate_num_label_issues`,
 * `off_diagonal_calibrated`): the joint's rows rescaled to the tags' row counts, its off-diagonal summed.
 */
function estimatedErrors(joint: readonly (readonly number[])[], rowsPerTag: readonly number[]): number {
  let errors = 0;
  joint.forEach((row, given) => {
    const total = row.reduce((a, b) => a + b, 0);
    if (total === 0) return;
    row.forEach((count, suggested) => {
      if (suggested !== given) errors += (count / total) * rowsPerTag[given]!;
    });
  });
  return Math.round(errors);
}

/** The key of a text as decisions on label issues and corrections match it (case and spacing aside). */
export const textKey = (text: string): string => createHash('sha256').update(sameText(text)).digest('hex');

function base(data: readonly LabelIssueRow[], row: number) {
  return { row, line: data[row]!.line ?? null, text: data[row]!.text, text_key: textKey(data[row]!.text) };
}

function singleLabelIssues(
  data: readonly LabelIssueRow[],
  { tags, probabilities, given }: OutOfFold,
): { issues: Unranked[]; thresholds: LabelIssuesReport['thresholds']; estimate: number } {
  const thresholds = tags.map((_, k) =>
    mean(probabilities.filter((_, r) => given[r]![0] === k).map((p) => p[k]!)),
  );
  const joint = tags.map(() => new Array<number>(tags.length).fill(0));
  const rowsPerTag = new Array<number>(tags.length).fill(0);
  const issues: Unranked[] = [];
  probabilities.forEach((p, r) => {
    const label = given[r]![0]!;
    rowsPerTag[label]!++;
    let suggested = -1;
    for (let k = 0; k < tags.length; k++) {
      const threshold = thresholds[k];
      if (threshold === null || threshold === undefined || p[k]! < threshold) continue;
      if (suggested < 0 || p[k]! > p[suggested]!) suggested = k;
    }
    const confident = suggested >= 0;
    if (confident) joint[label]![suggested]!++;
    if (!confident) suggested = p.indexOf(Math.max(...p));
    if (suggested === label) return;
    let other = 0;
    for (let k = 0; k < tags.length; k++) if (k !== label && p[k]! > other) other = p[k]!;
    issues.push({
      kind: 'tag',
      ...base(data, r),
      given_tag: tags[label]!,
      ...(data[r]!.tag === tags[label] ? {} : { data_tag: data[r]!.tag }),
      suggested_tag: tags[suggested]!,
      given_probability: p[label]!,
      suggested_probability: p[suggested]!,
      confident,
      margin: p[label]! - other,
    });
  });
  return {
    issues,
    thresholds: Object.fromEntries(tags.map((tag, k) => [tag, thresholds[k] ?? null])),
    estimate: estimatedErrors(joint, rowsPerTag),
  };
}

function multiLabelIssues(
  data: readonly LabelIssueRow[],
  { tags, probabilities, given }: OutOfFold,
): { issues: Unranked[]; thresholds: LabelIssuesReport['thresholds'] } {
  const issues: Unranked[] = [];
  const thresholds: LabelIssuesReport['thresholds'] = {};
  tags.forEach((tag, k) => {
    const listed = probabilities.map((_, r) => given[r]!.includes(k));
    const listedThreshold = mean(probabilities.filter((_, r) => listed[r]).map((p) => p[k]!));
    const unlistedThreshold = mean(probabilities.filter((_, r) => !listed[r]).map((p) => 1 - p[k]!));
    thresholds[tag] = { listed: listedThreshold, unlisted: unlistedThreshold };
    probabilities.forEach((p, r) => {
      const yes = p[k]!;
      const no = 1 - yes;
      // The confident class of this tag's two-class problem: the more probable of those over their
      // threshold; when neither is, the more probable of the two.
      const confidentYes = listedThreshold !== null && yes >= listedThreshold;
      const confidentNo = unlistedThreshold !== null && no >= unlistedThreshold;
      const confident = confidentYes || confidentNo;
      const suggestYes = confident ? confidentYes && (!confidentNo || yes > no) : yes > no;
      if (suggestYes === listed[r]) return;
      const givenTags = given[r]!.map((i) => tags[i]!);
      issues.push({
        kind: listed[r] ? 'extra_tag' : 'missing_tag',
        ...base(data, r),
        tag,
        given_tags: givenTags,
        suggested_tags: listed[r]
          ? givenTags.filter((t) => t !== tag)
          : tags.filter((t, i) => t === tag || given[r]!.includes(i)),
        given_probability: listed[r] ? yes : no,
        suggested_probability: listed[r] ? no : yes,
        confident,
      });
    });
  });
  return { issues, thresholds };
}

/** Issues a run logs at most (the most unlikely first; `found` counts them all), as for test mistakes. */
export const LOGGED_ISSUES = 1000;

/**
 * The most rows `tagger train` looks for label issues in: beyond it, a seeded sample of this many (the
 * report says so), so the five out-of-fold models cost at most five trainings on this many rows whatever
 * the data's size. `tagger label-issues` looks at every row.
 */
export const TRAINING_LABEL_ISSUE_ROWS = 20_000;

/** What a training found: the report and how long it took, or why it could not look. */
export type TrainingLabelIssues = { report: LabelIssuesReport; seconds: number } | { skipped: string };

const cut = (text: string): string =>
  text.length <= MISTAKE_TEXT_CHARS ? text : `${text.slice(0, MISTAKE_TEXT_CHARS - 1)}…`;

/**
 * What `tagger train` logs as `label_issues.json`: confident learning on the training file's rows (every row
 * of `--data` that the training reads, the test split's too when it is carved from the file, so each line
 * points into the file a person corrects), with the training's args, seed and 5 folds; at most
 * LOGGED_ISSUES issues, their texts cut like the test mistakes'; on more than TRAINING_LABEL_ISSUE_ROWS
 * rows, a seeded sample of that many (`sampled_from` says so). Data or args that cannot be
 * cross-validated (too few rows for the folds, naive Bayes calibration without a tag's rows in a fold, …) do
 * not fail the training: the result says why nothing was looked for.
 */
export function trainingLabelIssues(
  data: readonly LabelIssueRow[],
  args: TrainingArgs,
  seed: number,
  onFold?: LabelIssueOptions['onFold'],
  encoder?: TrainEncoder,
): TrainingLabelIssues {
  const all = args.subset === null ? data : data.slice(0, args.subset);
  const picked =
    all.length > TRAINING_LABEL_ISSUE_ROWS
      ? Array.from(sampleIndices(all.length, TRAINING_LABEL_ISSUE_ROWS, seed)).sort((a, b) => a - b)
      : null;
  const rows = picked === null ? all : picked.map((i) => all[i]!);
  const started = performance.now();
  let report: LabelIssuesReport;
  try {
    report = findLabelIssues(rows, {
      args,
      seed,
      top: LOGGED_ISSUES,
      ...(onFold ? { onFold } : {}),
      ...(encoder ? { encoder } : {}),
    });
  } catch (error) {
    if (error instanceof DataError || error instanceof ModelInputError) return { skipped: error.message };
    throw error;
  }
  const issues = report.issues.map((issue) => ({
    ...issue,
    text: cut(issue.text),
    ...(picked === null ? {} : { row: picked[issue.row]! }),
  }));
  return {
    report: { ...report, ...(picked === null ? {} : { sampled_from: all.length }), issues },
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * What `tagger train` logs as `label_issues.json` (since the model choice): confident learning on the rows
 * of its validation split, as predicted by the chosen model's validated fit, which never saw them — no
 * training of its own, so a fraction of a second at any size, and a training stopped during it keeps its
 * run. The report says which rows it looked at (`source: validation_split`, `rows` of `sampled_from`);
 * `tagger label-issues` looks at every row through 5 folds.
 */
export function heldOutLabelIssues(
  data: readonly LabelIssueRow[],
  heldOut: HeldOutPredictions,
  args: TrainingArgs,
  seed: number,
): TrainingLabelIssues {
  const started = performance.now();
  const kept = heldOut.rows.filter((i) => i >= 0 && i < data.length);
  const probabilityOf = new Map(heldOut.rows.map((row, r) => [row, heldOut.probabilities[r]!]));
  const rows = kept.map((i) => data[i]!);
  const tags = [...heldOut.tags];
  const classes = new Set(tags);
  const column = new Map(tags.map((tag, k) => [tag, k]));
  const other = column.get(OTHER_TAG);
  if (rows.length < MIN_SPLIT_ROWS || other === undefined) {
    return {
      skipped: `label-issues: the validation split held ${rows.length} row(s), too few to look for label issues in; run tagger label-issues`,
    };
  }
  const oof: OutOfFold = {
    tags,
    probabilities: kept.map((i) => Array.from(probabilityOf.get(i)!)),
    given: rows.map((row) =>
      (args.multi_label ? normalizeTagSet(tagsOf(row), classes) : [normalizeTag(row.tag, classes)]).map(
        (tag) => column.get(tag) ?? other,
      ),
    ),
  };
  let report: LabelIssuesReport;
  try {
    report = labelIssuesOf(rows, oof, { args, seed, top: LOGGED_ISSUES });
  } catch (error) {
    if (error instanceof DataError || error instanceof ModelInputError) return { skipped: error.message };
    throw error;
  }
  const issues = report.issues.map((issue) => ({ ...issue, text: cut(issue.text), row: kept[issue.row]! }));
  return {
    report: { ...report, source: 'validation_split', folds: 0, sampled_from: data.length, issues },
    seconds: (performance.now() - started) / 1000,
  };
}
