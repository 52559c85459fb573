/**
 * The reference profile of a run: what its model's inputs and answers looked like on the test split, so
 * live traffic can be compared with it (drift.ts). Training builds it (src/train/pipeline.ts) and logs it
 * as the run artifact `reference_profile.json`; serving reads it with the run.
 *
 * Four signals, each a histogram over fixed bins (kept in the profile, so a later change of the bins
 * never misreads an older run's profile):
 * - `predicted_tag`: how often each tag was the model's answer;
 * - `confidence`: the probability of the answer (single-label), or the highest probability (multi-label);
 * - `unseen_ngrams`: the share of a text's words (word 1-grams as scikit-learn's word analyzer cuts them,
 *   lower-cased, stopwords left out) that never occur in the training texts — words from another domain
 *   raise it long before anything else moves;
 * - `text_length`: characters, on doubling bins.
 * The vocabulary (the training words) is part of the profile and independent of the model kind, so the
 * unseen-word signal means the same for every model Tagger trains.
 */
import { ModelInputError } from '../errors.js';
import type { Prediction } from '../tagger.js';
import { STOPWORDS } from '../text/preprocess.js';

export const PROFILE_FORMAT = 'tagger-reference/1';

/** The numeric signals; `predicted_tag` is the categorical one. */
export const NUMERIC_SIGNALS = ['confidence', 'unseen_ngrams', 'text_length'] as const;
export type NumericSignal = (typeof NUMERIC_SIGNALS)[number];
export const DRIFT_SIGNALS = ['predicted_tag', ...NUMERIC_SIGNALS] as const;
export type DriftSignal = (typeof DRIFT_SIGNALS)[number];

/** Bins by their lower edges: bin i holds [lower[i], lower[i+1]); the last is open; below lower[0] is bin 0. */
export interface Histogram {
  lower: number[];
  counts: number[];
}

export interface ReferenceProfile {
  format: typeof PROFILE_FORMAT;
  /** Test rows the histograms count. */
  rows: number;
  multi_label: boolean;
  /** How often each model tag was the predicted tag on the test split (every tag, zeros included). */
  predicted_tag: Record<string, number>;
  confidence: Histogram;
  unseen_ngrams: Histogram;
  text_length: Histogram;
  /** The training texts' words (see the module comment), sorted; at most VOCABULARY_LIMIT, most frequent kept. */
  vocabulary: string[];
}

/** Tenths: 0.0–0.1, …, 0.9–1.0 (1.0 itself lands in the last bin). */
const TENTHS = Array.from({ length: 10 }, (_, i) => i / 10);
/** Characters, doubling from 16: short titles to whole documents. */
const LENGTHS = [0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
export const DEFAULT_BINS: Readonly<Record<NumericSignal, readonly number[]>> = {
  confidence: TENTHS,
  unseen_ngrams: TENTHS,
  text_length: LENGTHS,
};

/** Most training words a profile keeps (~0.5 MB of JSON at most); the rarest are dropped first. */
export const VOCABULARY_LIMIT = 50_000;

const STOP = new Set(STOPWORDS);
/** scikit-learn's word token_pattern `(?u)\b\w\w+\b`: two or more word characters. */
const WORD = /[\p{L}\p{N}_]{2,}/gu;

/** The words of a text the unseen-word signal counts: lower-cased, 2+ word characters, no stopwords. */
export function profileWords(text: string): string[] {
  const out: string[] = [];
  for (const match of text.toLowerCase().matchAll(WORD)) if (!STOP.has(match[0])) out.push(match[0]);
  return out;
}

/** The training vocabulary: every word of the texts, the VOCABULARY_LIMIT most frequent when more, sorted. */
export function vocabularyOf(texts: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const text of texts)
    for (const word of profileWords(text)) counts.set(word, (counts.get(word) ?? 0) + 1);
  let words = [...counts.keys()];
  if (words.length > VOCABULARY_LIMIT) {
    words = words
      .sort((a, b) => counts.get(b)! - counts.get(a)! || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, VOCABULARY_LIMIT);
  }
  return words.sort();
}

/**
 * Share of the text's words that are not in `vocabulary`; 1 for a text with no words at all (nothing of
 * it is known).
 */
export function unseenShare(text: string, vocabulary: ReadonlySet<string>): number {
  const words = profileWords(text);
  if (words.length === 0) return 1;
  let unseen = 0;
  for (const word of words) if (!vocabulary.has(word)) unseen++;
  return unseen / words.length;
}

/** FNV-1a offset basis and prime (32 bits): no structured collisions between short words, unlike ×31. */
const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 16_777_619;

/** FNV-1a hash of a word's UTF-16 units, on 32 bits. */
function wordHash(word: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), FNV_PRIME);
  return h;
}

/** A vocabulary (and the stopwords) as word hashes, for `unseenShareHashed`. */
export interface HashedVocabulary {
  words: ReadonlySet<number>;
  stopwords: ReadonlySet<number>;
}

const STOP_HASHES: ReadonlySet<number> = new Set(STOPWORDS.map(wordHash));

export function hashVocabulary(vocabulary: Iterable<string>): HashedVocabulary {
  const words = new Set<number>();
  for (const word of vocabulary) words.add(wordHash(word));
  return { words, stopwords: STOP_HASHES };
}

/**
 * `unseenShare` without cutting the text into strings: an ASCII text's words are hashed as they are
 * scanned (lower-cased on the fly) and looked up by hash — ~0.5 µs a text instead of ~3 µs, which matters
 * at every prediction. The same answer as `unseenShare` but for hash collisions (32 bits against a few
 * thousand words: about one word in a million counts as seen wrongly); a text with any non-ASCII
 * character takes the exact path.
 */
export function unseenShareHashed(
  text: string,
  vocabulary: HashedVocabulary,
  exact: ReadonlySet<string>,
): number {
  let words = 0;
  let unseen = 0;
  let h = FNV_OFFSET;
  let length = 0;
  const n = text.length;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? text.charCodeAt(i) : 32;
    if (c >= 128) return unseenShare(text, exact);
    const lower = c >= 65 && c <= 90 ? c + 32 : c;
    if ((lower >= 97 && lower <= 122) || (c >= 48 && c <= 57) || c === 95) {
      h = Math.imul(h ^ lower, FNV_PRIME);
      length++;
      continue;
    }
    if (length >= 2 && !vocabulary.stopwords.has(h)) {
      words++;
      if (!vocabulary.words.has(h)) unseen++;
    }
    h = FNV_OFFSET;
    length = 0;
  }
  return words === 0 ? 1 : unseen / words;
}

/** The answer's probability (single-label), or the highest probability (multi-label: maybe no tag at all). */
export function confidenceOf(prediction: Prediction, multiLabel: boolean): number {
  if (!multiLabel) return prediction.probabilities[prediction.predicted_tag] ?? 0;
  let best = 0;
  for (const p of Object.values(prediction.probabilities)) if (p > best) best = p;
  return best;
}

/** The bin of `value` among `lower` edges (binary search; NaN counts as the first bin). */
export function binOf(value: number, lower: readonly number[]): number {
  let lo = 0;
  let hi = lower.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (value >= lower[mid]!) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export function histogramOf(values: readonly number[], lower: readonly number[]): Histogram {
  const counts = new Array<number>(lower.length).fill(0);
  for (const value of values) counts[binOf(value, lower)]!++;
  return { lower: [...lower], counts };
}

/** The numeric signals of one prediction, for the profile and for live records alike. */
export interface PredictionSignals {
  confidence: number;
  unseenShare: number;
  textLength: number;
}

export function signalsOf(
  text: string,
  prediction: Prediction,
  multiLabel: boolean,
  vocabulary: ReadonlySet<string>,
): PredictionSignals {
  return {
    confidence: confidenceOf(prediction, multiLabel),
    unseenShare: unseenShare(text, vocabulary),
    textLength: text.length,
  };
}

export interface ProfileInput {
  /** Texts the model learnt from: their words are the vocabulary. */
  trainTexts: readonly string[];
  testTexts: readonly string[];
  /** The model's predictions of `testTexts`, in order. */
  testPredictions: readonly Prediction[];
  /** Every tag the model knows. */
  tags: readonly string[];
  multiLabel: boolean;
}

export function buildReferenceProfile(input: ProfileInput): ReferenceProfile {
  if (input.testTexts.length !== input.testPredictions.length) {
    throw new ModelInputError('model/profile: one prediction per test text is needed');
  }
  const vocabulary = vocabularyOf(input.trainTexts);
  const known = new Set(vocabulary);
  const predicted: Record<string, number> = {};
  for (const tag of input.tags) predicted[tag] = 0;
  const signals = input.testTexts.map((text, i) => {
    const prediction = input.testPredictions[i]!;
    predicted[prediction.predicted_tag] = (predicted[prediction.predicted_tag] ?? 0) + 1;
    return signalsOf(text, prediction, input.multiLabel, known);
  });
  return {
    format: PROFILE_FORMAT,
    rows: input.testTexts.length,
    multi_label: input.multiLabel,
    predicted_tag: predicted,
    confidence: histogramOf(
      signals.map((s) => s.confidence),
      DEFAULT_BINS.confidence,
    ),
    unseen_ngrams: histogramOf(
      signals.map((s) => s.unseenShare),
      DEFAULT_BINS.unseen_ngrams,
    ),
    text_length: histogramOf(
      signals.map((s) => s.textLength),
      DEFAULT_BINS.text_length,
    ),
    vocabulary,
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0;

function parseHistogram(raw: unknown, name: string): Histogram {
  if (!isRecord(raw) || !Array.isArray(raw.lower) || !Array.isArray(raw.counts)) {
    throw new ModelInputError(`reference profile: ${name} must be {lower: [numbers], counts: [counts]}`);
  }
  const { lower, counts } = raw;
  if (lower.length === 0 || lower.length > 1000 || counts.length !== lower.length) {
    throw new ModelInputError(`reference profile: ${name} needs one count per bin (1 to 1000 bins)`);
  }
  if (
    !lower.every(
      (edge, i) => typeof edge === 'number' && Number.isFinite(edge) && (i === 0 || edge > lower[i - 1]),
    )
  ) {
    throw new ModelInputError(`reference profile: ${name}.lower must be increasing finite numbers`);
  }
  if (!counts.every(isCount)) {
    throw new ModelInputError(`reference profile: ${name}.counts must be whole numbers ≥ 0`);
  }
  return { lower: lower as number[], counts: counts as number[] };
}

/** Checks a profile read from a run's artifacts (outside input); throws ModelInputError naming the problem. */
export function parseReferenceProfile(raw: unknown): ReferenceProfile {
  if (!isRecord(raw)) throw new ModelInputError('reference profile: must be a JSON object');
  if (raw.format !== PROFILE_FORMAT) {
    throw new ModelInputError(
      `reference profile: format ${JSON.stringify(raw.format)} is not ${PROFILE_FORMAT} (written by another Tagger version)`,
    );
  }
  if (!isCount(raw.rows)) throw new ModelInputError('reference profile: rows must be a whole number ≥ 0');
  if (typeof raw.multi_label !== 'boolean') {
    throw new ModelInputError('reference profile: multi_label must be true or false');
  }
  if (!isRecord(raw.predicted_tag) || !Object.values(raw.predicted_tag).every(isCount)) {
    throw new ModelInputError('reference profile: predicted_tag must map tags to counts');
  }
  if (!Array.isArray(raw.vocabulary) || !raw.vocabulary.every((word) => typeof word === 'string')) {
    throw new ModelInputError('reference profile: vocabulary must be a list of words');
  }
  return {
    format: PROFILE_FORMAT,
    rows: raw.rows,
    multi_label: raw.multi_label,
    // A null prototype: a tag named `__proto__` stays an ordinary key.
    predicted_tag: Object.assign(Object.create(null) as Record<string, number>, raw.predicted_tag),
    confidence: parseHistogram(raw.confidence, 'confidence'),
    unseen_ngrams: parseHistogram(raw.unseen_ngrams, 'unseen_ngrams'),
    text_length: parseHistogram(raw.text_length, 'text_length'),
    vocabulary: raw.vocabulary as string[],
  };
}
