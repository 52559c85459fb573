/**
 * What the inspection page reads about one run beyond its performance report: the test split's confusion
 * matrix and mistakes (`confusion_matrix.json`, `test_mistakes.json`, logged by training), the training
 * data's probable label errors (`label_issues.json`) and the per-epoch losses (metric history). Artifacts come from the tracking store and are checked like the
 * serving artifacts: a broken file is an ArtifactFormatError, never a crash.
 */
import { type ConfusionMatrix, type Mistake, RUN_ARTIFACTS } from '../model/index.js';
import type { MetricPoint } from '../tracking/store.js';
import { ArtifactFormatError, type ArtifactReader, readJsonArtifact } from './artifacts.js';

/** The confusion matrix as training logs it (checked on reading). */
export type ServedConfusion = ConfusionMatrix;

/** One logged mistake as training writes it (checked on reading). */
export type ServedMistake = Mistake;

export interface ServedMistakes {
  /** Null for a multi-label run (it logs no confusion matrix: a text's tags are not one cell). */
  confusion: ServedConfusion | null;
  /** Misclassified test rows in all; `mistakes` holds the most confident of them (capped by training). */
  total: number;
  mistakes: ServedMistake[];
}

/** Metrics logged once per epoch, as the page draws them (MLflow's step = the epoch). */
export const HISTORY_METRICS = ['train_loss', 'val_loss'] as const;

export type ServedHistory = Record<(typeof HISTORY_METRICS)[number], { step: number; value: number }[]>;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

function parseConfusion(raw: unknown): ServedConfusion {
  const where = RUN_ARTIFACTS.confusion;
  if (!isRecord(raw)) throw new ArtifactFormatError(`${where} must hold a JSON object`);
  const { labels, matrix } = raw;
  if (!Array.isArray(labels) || !labels.every((label) => typeof label === 'string')) {
    throw new ArtifactFormatError(`${where}: labels must be an array of strings`);
  }
  const square =
    Array.isArray(matrix) &&
    matrix.length === labels.length &&
    matrix.every((row) => Array.isArray(row) && row.length === labels.length && row.every(isCount));
  if (!square) {
    throw new ArtifactFormatError(
      `${where}: matrix must be ${labels.length} rows of ${labels.length} counts (one per label)`,
    );
  }
  return { labels: labels as string[], matrix: matrix as number[][] };
}

const isStringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((entry) => typeof entry === 'string');

function parseMistakes(raw: unknown): { multiLabel: boolean; total: number; mistakes: ServedMistake[] } {
  const where = RUN_ARTIFACTS.mistakes;
  if (!isRecord(raw)) throw new ArtifactFormatError(`${where} must hold a JSON object`);
  const { total, mistakes } = raw;
  const multiLabel = raw.multi_label === true;
  if (!Array.isArray(mistakes)) throw new ArtifactFormatError(`${where}: mistakes must be an array`);
  if (!isCount(total) || total < mistakes.length) {
    throw new ArtifactFormatError(`${where}: total must be a count of at least ${mistakes.length}`);
  }
  const parsed = mistakes.map((item, index): ServedMistake => {
    const ok =
      isRecord(item) &&
      typeof item.text === 'string' &&
      typeof item.true_tag === 'string' &&
      typeof item.predicted_tag === 'string' &&
      typeof item.confidence === 'number' &&
      item.confidence >= 0 &&
      item.confidence <= 1 &&
      (!multiLabel || (isStringList(item.true_tags) && isStringList(item.predicted_tags)));
    if (!ok) {
      throw new ArtifactFormatError(
        `${where}: mistakes[${index}] must have text, true_tag, predicted_tag (strings) and confidence (0..1)${multiLabel ? ', true_tags and predicted_tags (lists of strings)' : ''}`,
      );
    }
    const { text, true_tag, predicted_tag, confidence } = item as unknown as ServedMistake;
    if (!multiLabel) return { text, true_tag, predicted_tag, confidence };
    const { true_tags, predicted_tags } = item as unknown as Required<ServedMistake>;
    return { text, true_tag, predicted_tag, confidence, true_tags, predicted_tags };
  });
  return { multiLabel, total, mistakes: parsed };
}

/**
 * Reads and checks the error artifacts (a multi-label run has no confusion matrix); rejects with the
 * reader's error (e.g. NOT_FOUND) or a format error.
 */
export async function readMistakes(read: ArtifactReader): Promise<ServedMistakes> {
  const { multiLabel, total, mistakes } = parseMistakes(await readJsonArtifact(read, RUN_ARTIFACTS.mistakes));
  const confusion = multiLabel ? null : parseConfusion(await readJsonArtifact(read, RUN_ARTIFACTS.confusion));
  return { confusion, total, mistakes };
}

/**
 * The per-epoch losses in step order. Non-finite values (a diverged epoch) are left out: JSON cannot carry
 * them and a chart cannot draw them.
 */
export async function readHistory(
  metricHistory: (key: string) => Promise<MetricPoint[]>,
): Promise<ServedHistory> {
  const series = await Promise.all(
    HISTORY_METRICS.map(async (key) => {
      const points = (await metricHistory(key))
        .filter((point) => Number.isFinite(point.value))
        .sort((a, b) => a.step - b.step || a.timestamp - b.timestamp)
        .map((point) => ({ step: point.step, value: point.value }));
      return [key, points] as const;
    }),
  );
  return Object.fromEntries(series) as ServedHistory;
}

/** One row (single-label) or one row's tag (multi-label) whose given label is probably wrong. */
export interface ServedLabelIssue {
  rank: number;
  /** The data file's line the row starts on; null when the rows had none. */
  line: number | null;
  text: string;
  /** `tag`: the row's tag is probably wrong; `extra_tag` / `missing_tag`: a multi-label row's tag `tag`. */
  kind: 'tag' | 'extra_tag' | 'missing_tag';
  given_probability: number;
  suggested_probability: number;
  confident: boolean;
  given_tag?: string;
  /** Single-label: the row's tag as written in the data, when the models know it as `given_tag` (folded). */
  data_tag?: string;
  /** SHA-256 of the row's whole text (src/train/label-issues.ts: textKey); absent in older runs. */
  text_key?: string;
  /** Single-label: the given tag's probability minus the best other tag's (the rank); absent in older runs. */
  margin?: number;
  suggested_tag?: string;
  tag?: string;
  given_tags?: string[];
  suggested_tags?: string[];
}

export interface ServedLabelIssues {
  multi_label: boolean;
  /** Rows looked at, the folds and the seed of the out-of-fold models. */
  rows: number;
  /** `folds`: every row by out-of-fold models; `validation_split`: the validation rows (folds 0); absent in older runs. */
  source?: 'folds' | 'validation_split';
  folds: number;
  seed: number;
  /** The tags as the models know them. */
  tags: string[];
  /** Issues found in all; `issues` holds the most unlikely of them (capped by training). */
  found: number;
  /** Rows whose suggested label differed from the given one, flagged or not; absent in older runs. */
  candidates?: number;
  /** Present when `rows` were a seeded sample of the training data: how many rows it had. */
  sampled_from?: number;
  issues: ServedLabelIssue[];
}

const isProbability = (value: unknown): value is number =>
  typeof value === 'number' && value >= 0 && value <= 1;

/** label_issues.json as training writes it (src/train/label-issues.ts), checked field by field. */
export function parseLabelIssues(raw: unknown): ServedLabelIssues {
  const where = RUN_ARTIFACTS.labelIssues;
  if (!isRecord(raw)) throw new ArtifactFormatError(`${where} must hold a JSON object`);
  const { multi_label, rows, folds, seed, tags, found, issues, candidates, sampled_from, source } = raw;
  if (source !== undefined && source !== 'folds' && source !== 'validation_split') {
    throw new ArtifactFormatError(`${where}: source must be folds or validation_split`);
  }
  if (typeof multi_label !== 'boolean')
    throw new ArtifactFormatError(`${where}: multi_label must be a boolean`);
  if (!isCount(rows) || !isCount(folds) || !isCount(seed)) {
    throw new ArtifactFormatError(`${where}: rows, folds and seed must be counts`);
  }
  if (!isStringList(tags)) throw new ArtifactFormatError(`${where}: tags must be an array of strings`);
  if (!Array.isArray(issues)) throw new ArtifactFormatError(`${where}: issues must be an array`);
  if (!isCount(found) || found < issues.length) {
    throw new ArtifactFormatError(`${where}: found must be a count of at least ${issues.length}`);
  }
  const parsed = issues.map((item, index): ServedLabelIssue => {
    const common =
      isRecord(item) &&
      isCount(item.rank) &&
      (item.line === null || isCount(item.line)) &&
      typeof item.text === 'string' &&
      isProbability(item.given_probability) &&
      isProbability(item.suggested_probability) &&
      typeof item.confident === 'boolean';
    const single =
      common &&
      !multi_label &&
      item.kind === 'tag' &&
      typeof item.given_tag === 'string' &&
      (item.data_tag === undefined || typeof item.data_tag === 'string') &&
      typeof item.suggested_tag === 'string';
    const multi =
      common &&
      multi_label &&
      (item.kind === 'extra_tag' || item.kind === 'missing_tag') &&
      typeof item.tag === 'string' &&
      isStringList(item.given_tags) &&
      isStringList(item.suggested_tags);
    if (!single && !multi) {
      throw new ArtifactFormatError(
        `${where}: issues[${index}] must have rank, line (a count or null), text, given_probability and suggested_probability (0..1), confident, and ${multi_label ? 'kind extra_tag or missing_tag, tag, given_tags and suggested_tags' : 'kind tag, given_tag and suggested_tag'}`,
      );
    }
    const issue = item as unknown as ServedLabelIssue;
    // Runs logged before decisions on issues existed have no text_key (they cannot be reviewed).
    const key = isRecord(item) && typeof item.text_key === 'string' && /^[0-9a-f]{64}$/.test(item.text_key);
    const base = {
      rank: issue.rank,
      line: issue.line,
      text: issue.text,
      ...(key ? { text_key: issue.text_key! } : {}),
      ...(isRecord(item) && typeof item.margin === 'number' && Number.isFinite(item.margin)
        ? { margin: item.margin }
        : {}),
      kind: issue.kind,
      given_probability: issue.given_probability,
      suggested_probability: issue.suggested_probability,
      confident: issue.confident,
    };
    return multi_label
      ? { ...base, tag: issue.tag!, given_tags: issue.given_tags!, suggested_tags: issue.suggested_tags! }
      : {
          ...base,
          given_tag: issue.given_tag!,
          ...(issue.data_tag === undefined ? {} : { data_tag: issue.data_tag }),
          suggested_tag: issue.suggested_tag!,
        };
  });
  return {
    multi_label,
    rows,
    ...(source === undefined ? {} : { source }),
    folds,
    seed,
    tags,
    found,
    ...(isCount(candidates) && candidates >= found ? { candidates } : {}),
    ...(isCount(sampled_from) && sampled_from > rows ? { sampled_from } : {}),
    issues: parsed,
  };
}

/** Reads and checks a run's label issues; rejects with the reader's error (e.g. NOT_FOUND) or a format error. */
export async function readLabelIssues(read: ArtifactReader): Promise<ServedLabelIssues> {
  return parseLabelIssues(await readJsonArtifact(read, RUN_ARTIFACTS.labelIssues));
}
