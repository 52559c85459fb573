/**
 * The model choice's rules, as one table of data: the candidate kinds `tagger train` tries on the user's
 * own validation split (cheapest first by their estimated cost), what each needs, how rows, tags and text
 * length prune them, how their training time is estimated, the clean-up variants, the default time budget
 * and what counts as a tie. The constants are measurements (docs/model-decisions.md#the-model-choice has
 * them and the runs they came from); plan.ts applies the rules, choose.ts runs what they keep.
 */
import { DEFAULT_ENCODER } from '../../encoder/resolve.js';
import { LEGACY_CLEANUP, type TrainingArgs } from '../../model/index.js';

/** The data a choice is planned for, in the numbers the training costs grow with. */
export interface ChoiceShape {
  /** Rows of the training split (the validated fits' rows). */
  rows: number;
  /** Rows of the validation split (the refit adds them). */
  validationRows: number;
  /** Tags the model learns (min_freq applied on the whole file), `other` included. */
  tags: number;
  /** Several tags per text. */
  multiLabel: boolean;
  /** Non-zero TF-IDF values per row with the default features (char_wb 2–4 + word 1–2 n-grams). */
  nonZerosPerRow: number;
  /** Non-zero TF-IDF values per row with word 1–2 n-grams alone. */
  wordNonZerosPerRow: number;
  /** Words per row (fastText's inputs). */
  wordsPerRow: number;
  /** Distinct texts the encoder would embed (every split and the behavioural suite's texts). */
  textsToEmbed: number;
  /** The encoder's tokens per text, estimated from the characters. */
  tokensPerText: number;
}

/** A kind of model the choice can train. */
export interface CandidateRule {
  /** Its name in the choice's table and in `model_choice.json`. */
  readonly name: string;
  /** One line for people: what it is. */
  readonly summary: string;
  /** Its training arguments, over the user's data-handling arguments (subset, min_freq, accepted_tags). */
  readonly args: Readonly<Partial<Record<keyof TrainingArgs, unknown>>>;
  /** Needs the default sentence encoder installed (`npm run setup:encoder`). */
  readonly needsEncoder: boolean;
  /** Trains data with several tags per text. */
  readonly multiLabel: boolean;
  /** Fewest training rows it is tried on, and why (null: always). */
  readonly minRows: { rows: number; why: string } | null;
  /**
   * A kind that stands in for others where they are too slow: it is tried only when none of `instead` is
   * in the plan (over the budget, the memory, or left out), or when it is estimated at most `share` of the
   * cost of the one that is; `why` says so in the table.
   */
  readonly fallbackFor?: { instead: readonly string[]; share: number; why: string };
  /** Estimated CPU seconds (one thread) of its validated fit on data of this shape. */
  readonly cost: (shape: ChoiceShape) => number;
  /**
   * Estimated µs of one one-text prediction on data of this shape (the text's clean-up and n-grams, then
   * its scores), what breaks a tie: estimated, not measured, so the same data always gives the same
   * choice (a measured time on a shared machine is noise at these sizes; the table shows it beside).
   */
  readonly predictCost: (shape: ChoiceShape) => number;
  /** Breaks a tie between two candidates estimated within PREDICT_TIE of each other (1: the cheaper kind). */
  readonly servingRank: number;
}

/**
 * The dual coordinate-descent SVM, one-vs-rest, costs CPU seconds ≈ SVM_SECONDS × training rows × tags ×
 * (non-zero values per row)^SVM_VALUES_POWER: sparser rows take more passes to converge, so the time grows
 * with the square root of their values, not with them (2026-12-01, validated fits on one thread: BANKING77,
 * 8,505 rows × 78 tags, 1.8 s on word n-grams (22 values) and 4.5 s on the default n-grams (148); CLINC150,
 * 12,835 × 151, 5.4 s and 9.9 s (18 and 130 values); generated 42,500 × 501 on word unigrams (36), 50 s: a
 * from 5.6e-7 to 8.8e-7). The choice rescales every estimate by how the candidates so far compared.
 */
export const SVM_SECONDS = 7.5e-7;
export const SVM_VALUES_POWER = 0.4;
/** CPU seconds per (row × epoch × fastText's per-example work in values, see fastTextCost). */
export const FASTTEXT_SECONDS_PER_VALUE = 2.8e-9;
/** The encoder's CPU seconds per token of the texts it embeds (one thread; all-MiniLM-L6-v2 int8: 3–4.3 ms per short text). */
export const ENCODER_SECONDS_PER_TOKEN = 2.5e-4;
/** The encoder's embedding size (all-MiniLM-L6-v2), the dense block's width beside the TF-IDF values. */
export const ENCODER_DIM = 384;
/** Characters per encoder token, for the estimate (English WordPiece: about 4). */
export const CHARS_PER_ENCODER_TOKEN = 4;

/**
 * µs of a prediction's fixed part per character of the text (its clean-up and n-gram lookups: 12 µs for
 * dataset.csv's ~250 characters, bench/model.ts), and per (non-zero value × tag) of a linear model's
 * scores (BANKING77: 148 values × 77 tags took 29–41 µs with the above).
 */
export const PREDICT_US_PER_CHAR = 0.04;
export const PREDICT_US_PER_WEIGHT = 0.003;
/** µs per (dimension × input or output row) of a fastText prediction (BANKING77: 19–22 µs). */
export const FASTTEXT_PREDICT_US_PER_VALUE = 0.003;

const charsOf = (shape: ChoiceShape): number => shape.tokensPerText * CHARS_PER_ENCODER_TOKEN;
/** A linear model's prediction over `nonZeros` values per text. */
const linearPredict = (shape: ChoiceShape, nonZeros: number): number =>
  PREDICT_US_PER_CHAR * charsOf(shape) + PREDICT_US_PER_WEIGHT * nonZeros * shape.tags;
/** The encoder's forward pass on one text. */
export const encoderPredict = (shape: ChoiceShape): number =>
  1e6 * ENCODER_SECONDS_PER_TOKEN * (shape.tokensPerText + 2);

/** The one-vs-rest SVM's validated fit over `nonZeros` values per row. */
const svmCost = (shape: ChoiceShape, nonZeros: number): number =>
  SVM_SECONDS * shape.rows * shape.tags * Math.max(1, nonZeros) ** SVM_VALUES_POWER;

/** fastText's work per example: its word (+ bigram) rows in and out, and the output layer (hs past 100 tags). */
function fastTextCost(shape: ChoiceShape): number {
  const dim = 50;
  const epochs = 25;
  const outputs = shape.multiLabel || shape.tags <= 100 ? shape.tags : Math.ceil(Math.log2(shape.tags));
  return FASTTEXT_SECONDS_PER_VALUE * shape.rows * epochs * dim * (4 * shape.wordsPerRow + outputs);
}

/** Embedding every text once (the encoder candidates pay it once between them). */
export const embeddingCost = (shape: ChoiceShape): number =>
  ENCODER_SECONDS_PER_TOKEN * shape.textsToEmbed * (shape.tokensPerText + 2);

/** From this many training rows the soft vote is the large-data one (pipeline.ts's LARGE_DATA_ARGS). */
const LARGE_VOTE_ROWS = 17_000;

/**
 * The candidates, in the order they are listed (the plan sorts them by cost). Their arguments were fixed
 * before the suite of data sets was run (docs/model-decisions.md#the-model-choice): the linear SVM on
 * word n-grams (cheap at any size), on the default features, the default soft vote, fastText's model,
 * and with the encoder the linear SVM over the TF-IDF and the embedding blocks, and the cascade.
 */
export const CANDIDATES: readonly CandidateRule[] = Object.freeze([
  {
    name: 'linear_svm_words',
    summary: 'linear SVM on word unigrams and bigrams',
    args: { classifier: 'linear_svm', analyzer: 'word', ngram_min_range: 1, ngram_max_range: 2 },
    fallbackFor: {
      instead: ['linear_svm'],
      share: 0.2,
      why: 'it stands in for linear_svm where character n-grams are too slow; it never led where both fit',
    },
    needsEncoder: false,
    multiLabel: true,
    minRows: null,
    predictCost: (shape) => linearPredict(shape, shape.wordNonZerosPerRow),
    servingRank: 1,
    cost: (shape) => svmCost(shape, shape.wordNonZerosPerRow),
  },
  {
    name: 'linear_svm',
    summary: 'linear SVM on character (2–4) and word (1–2) n-grams',
    args: { classifier: 'linear_svm' },
    needsEncoder: false,
    multiLabel: true,
    minRows: null,
    predictCost: (shape) => linearPredict(shape, shape.nonZerosPerRow),
    servingRank: 3,
    cost: (shape) => svmCost(shape, shape.nonZerosPerRow),
  },
  {
    name: 'soft_vote',
    summary:
      'soft vote of a calibrated linear SVM, NB-LR and naive Bayes (linear SVM + naive Bayes on large data)',
    args: { classifier: 'soft_vote' },
    needsEncoder: false,
    multiLabel: true,
    minRows: null,
    // Small data: the SVM calibrated on 5 folds (6 fits), NB-LR (its dual logistic regression: about 10
    // SVM fits' worth; BANKING77, 8,505 rows: 58 s against the SVM's 4.6 s), naive Bayes — 16× the SVM
    // (92 s there); large data: the SVM once, its sigmoids on the validation split, naive Bayes.
    predictCost: (shape) => 3 * linearPredict(shape, shape.nonZerosPerRow),
    servingRank: 4,
    cost: (shape) => svmCost(shape, shape.nonZerosPerRow) * (shape.rows >= LARGE_VOTE_ROWS ? 1.1 : 16),
  },
  {
    name: 'fasttext',
    summary: "fastText's supervised model (word bigrams, 25 epochs)",
    args: { classifier: 'fasttext' },
    // A fallback of the word SVM too: at 40,000 generated rows × 500 tags it scored validation f1 0.62
    // in 26 CPU s beside the word SVM's 0.86 (2026-12-02), and it led nowhere an SVM fit.
    fallbackFor: {
      instead: ['linear_svm', 'linear_svm_words'],
      share: 0.1,
      why: 'it stands in for a linear SVM where one is too slow; it led on no data set measured where one fit',
    },
    needsEncoder: false,
    multiLabel: true,
    minRows: { rows: 2_000, why: 'it underfits fewer rows (it never led on the sample data)' },
    predictCost: (shape) =>
      PREDICT_US_PER_CHAR * charsOf(shape) +
      FASTTEXT_PREDICT_US_PER_VALUE * 50 * (2 * shape.wordsPerRow + shape.tags),
    servingRank: 2,
    cost: fastTextCost,
  },
  {
    name: 'encoder',
    summary: `linear SVM on the n-grams and the ${DEFAULT_ENCODER} sentence embeddings`,
    // Platt's sigmoids fitted on the validation split: as good at argmax (BANKING77 dev 93.46 against
    // 93.39), and probabilities a threshold can use (CLINC150 val: out-of-scope recall 59 against 34).
    args: {
      classifier: 'linear_svm',
      encoder: DEFAULT_ENCODER,
      encoder_weight: 1,
      calibration: 'sigmoid',
      calibration_data: 'validation',
    },
    needsEncoder: true,
    multiLabel: true,
    minRows: null,
    predictCost: (shape) => linearPredict(shape, shape.nonZerosPerRow + ENCODER_DIM) + encoderPredict(shape),
    servingRank: 6,
    cost: (shape) => svmCost(shape, shape.nonZerosPerRow + ENCODER_DIM),
  },
  {
    name: 'cascade',
    summary: 'the soft vote answers, the encoder model the texts it is unsure of (τ out of fold)',
    args: { encoder: DEFAULT_ENCODER, cascade: true },
    needsEncoder: true,
    multiLabel: true,
    minRows: null,
    // Both stages out of fold on 5 folds, then both stages: 6 × (the vote + the SGD encoder model, about
    // the vote's cost again).
    predictCost: (shape) => 3 * linearPredict(shape, shape.nonZerosPerRow) + 0.3 * encoderPredict(shape),
    servingRank: 5,
    cost: (shape) =>
      6 * 2 * svmCost(shape, shape.nonZerosPerRow) * (shape.rows >= LARGE_VOTE_ROWS ? 1.1 : 16),
  },
]);

/**
 * The clean-up variants, tried with the cheapest candidate before the others (each kept only when the
 * validation split prefers it): none (only lower-casing, the default) and tagifai's whole clean-up.
 */
export const CLEANUP_VARIANTS: readonly { name: string; args: Readonly<Record<string, unknown>> }[] =
  Object.freeze([
    { name: 'none', args: {} },
    { name: 'tagifai', args: { ...LEGACY_CLEANUP } },
  ]);

/**
 * The default time budget, in CPU seconds of the training (the embedding pass, the candidates, the refit;
 * CPU, not wall: a busy machine stretches the wall time and must not change what is chosen; on one core
 * the two are the same): 3 minutes plus 4 ms per row of data, so 10,000 rows get 3 min 40 s and 200,000
 * rows 16 minutes: room for the encoder candidate on a few thousand short texts, never for the
 * hundred-minute kinds at hundreds of tags. `--time-budget` sets another.
 */
export const DEFAULT_BUDGET = Object.freeze({ baseSeconds: 180, secondsPerRow: 0.004 });

export const defaultBudgetSeconds = (rows: number): number =>
  DEFAULT_BUDGET.baseSeconds + DEFAULT_BUDGET.secondsPerRow * rows;

/** Estimated predict times within this factor of each other count as equal (the serving rank decides). */
export const PREDICT_TIE = 1.2;

/**
 * Two candidates tie when their validation f1 differ by less than this or by less than one validation
 * row's share (whichever is larger): a tie goes to the one that predicts faster.
 */
export const TIE_F1 = 0.002;

/** The clean-up variant is kept only when it beats none by more than a tie (choose.ts). */
export const tieMargin = (validationRows: number): number =>
  Math.max(TIE_F1, validationRows > 0 ? 1 / validationRows : TIE_F1);

/**
 * The fallback threshold (below it a prediction is `other`): tried only when the validation split has at
 * least MIN_OTHER_ROWS rows of `other` (texts that fit no tag), which a threshold can then get right —
 * fewer cannot show it helps, and without any it would only trade a tag's recall for nothing.
 */
export const MIN_OTHER_ROWS = 10;

/**
 * Where `other` is at most this share of the validation rows, a single-label candidate's fallback threshold
 * is placed for the balanced score (balancedOtherScore: the tags' accuracy and `other`'s recall, half each;
 * `threshold: balanced`), and the candidates are compared by their argmax answers' weighted f1: so few rows
 * weigh next to nothing in the weighted f1, which a model that never answers `other` barely loses — yet
 * catching texts that fit no tag is what such data asks (out-of-scope detection: CLINC150's 0.7 % of
 * out-of-scope training rows, scored by in-scope accuracy and out-of-scope recall) — while a comparison on
 * the balanced score itself would be decided by those few rows' luck (CLINC150: 15 validation rows of
 * `other`, each worth 0.033 of it; the linear SVM's aggressive threshold beat the encoder, 86.1 / 89.3 on
 * the test file against ...). Above it `other` is a tag like the rest and the weighted f1 decides.
 */
export const FEW_OTHERS_SHARE = 0.05;

/** What the candidates are compared by (its shape is the run record's: src/model/model-choice-report.ts). */
export type { ChoiceObjective } from '../../model/index.js';
