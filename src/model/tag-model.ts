/**
 * The shapes every tagger shares: labelled rows, predictions, the TagModel interface, training reports and
 * the result of a training. A leaf module, so every classifier family (classifiers/) can share them
 * without importing each other or the dispatch in tagger.ts.
 */

import type { Explanation } from './explain.js';
import type { ParallelRunner } from './parallel.js';
import type { Prediction, PredictOptions } from './prediction.js';
import type { EmbeddingLookup, EncoderSpec } from './text/embeddings.js';
import type { TrainingArgs } from './training-args.js';

export type { Prediction } from './prediction.js';

export interface LabelledText {
  text: string;
  /**
   * The text's tag; for a multi-label row, the key of its tag set (its tags sorted and joined by `|`),
   * which data checks compare rows by.
   */
  tag: string;
  /** Multi-label rows: every tag of the text (at least one). */
  tags?: readonly string[];
}

/** The tags of a labelled row: its list for a multi-label row, else its one tag. */
export const tagsOf = (row: LabelledText): readonly string[] => row.tags ?? [row.tag];

/** The `tag` of a multi-label row with these tags (see LabelledText.tag). */
export const tagSetKey = (tags: readonly string[]): string => [...new Set(tags)].sort().join('|');

export interface TagModel {
  /** The model's classes, sorted; always includes `other`. */
  readonly tags: readonly string[];
  readonly args: TrainingArgs;
  /** Fallback threshold on the top probability (null: plain argmax); null for a multi-label model. */
  readonly threshold: number | null;
  /** Multi-label: each tag's probability threshold, in `tags` order; null for a single-label model. */
  readonly tagThresholds: readonly number[] | null;
  /** The sentence encoder whose embeddings the model takes beside the texts; null or absent: none. */
  readonly encoder?: EncoderSpec | null;
  /**
   * One prediction per text, in order; never throws for any string. A model with an `encoder` needs
   * `embeddings`, one per text (src/encoder computes them); without one it ignores them.
   */
  predict(
    texts: readonly string[],
    embeddings?: readonly Float32Array[],
    options?: PredictOptions,
  ): Prediction[];
  /**
   * Why: the top-scoring tag's score as bias + per-feature contributions (the `top` largest listed), and
   * for an encoder model the embedding block's whole contribution as `encoder`.
   */
  explain(text: string, top?: number, embedding?: Float32Array): Explanation;
}

/**
 * One epoch's losses. With `ensemble` > 1 the members train one after another and each report is the mean
 * over members of their losses at that epoch (valLoss: the members' mean validation loss, not the averaged
 * model's), emitted while the last member trains.
 */
export interface EpochReport {
  epoch: number;
  epochs: number;
  /**
   * Training loss of the epoch's (oversampled) samples, each taken just before its SGD update: the mean
   * multiclass log loss (softmax), or the mean over samples of the summed per-class binary log losses (ovr).
   */
  trainLoss: number;
  /** Mean log loss on the validation split after the epoch; NaN when the split is empty. */
  valLoss: number;
}

/**
 * One member classifier trained (the member classifiers and the soft vote, which are solved exactly and have
 * no epochs): where the training is, for a progress line.
 */
export interface MemberReport {
  /** The validated fit, or the refit on train + validation (`args.refit`). */
  fit: 'validated' | 'refit';
  /** 1-based, in the order of the args' members. */
  member: number;
  members: number;
  classifier: string;
  /** How often it was fitted: 1, or `calibration_folds` + 1 when calibrated (each fold, then every row). */
  fits: number;
  /** Wall-clock seconds its training took. */
  seconds: number;
}

/** How far a member's fit is among its one-vs-rest classes: a fit over hundreds of tags takes minutes. */
export interface ClassesReport {
  fit: MemberReport['fit'];
  member: number;
  members: number;
  classifier: string;
  /** Classes (tags) solved so far, of `total`. */
  done: number;
  total: number;
}

/** The embeddings an encoder model trains on: the encoder's spec and every training text's embedding. */
export interface TrainEncoder {
  spec: EncoderSpec;
  embeddings: EmbeddingLookup;
}

export interface TrainOptions {
  seed: number;
  /**
   * Threads to spread the training over (parallel.ts); absent: the calling thread alone. A family whose
   * threads share its weights (fasttext's Hogwild!) then trains a slightly different model each time; the
   * others give the same model whatever the threads.
   */
  parallel?: ParallelRunner;
  /** Needed when `args.encoder` is set: the embeddings of every training and validation text. */
  encoder?: TrainEncoder;
  /**
   * Epoch losses of the validated fit (the one whose validation loss means something). The exact solvers
   * report once, after the fit (epoch 1 of 1).
   */
  onEpoch?: (r: EpochReport) => void;
  /** Epoch losses of the refit on train + validation (`args.refit`); `valLoss` is NaN there. */
  onRefitEpoch?: (r: EpochReport) => void;
  /** Member classifiers and soft votes: each member as it is trained, in the validated fit and the refit. */
  onMember?: (r: MemberReport) => void;
  /** Member classifiers: a member's fit's classes as they are solved. */
  onClasses?: (r: ClassesReport) => void;
  /**
   * The model's tags, fixed by the caller (labels.ts's multiLabelModelTags over the whole training file,
   * so a tag that passes `min_freq` there is kept whichever split its rows fall in); absent: counted on
   * `train`. Sorted, with `other`.
   */
  tags?: readonly string[];
  /**
   * With `args.refit`: return the validated fit (its `validationProbabilities` included) with a `refit`
   * that continues to the refit on train + validation, instead of refitting at once. The model choice
   * (src/train) compares candidates' validated fits and refits only the one it keeps.
   */
  deferRefit?: boolean;
}

/** A single-label model's threshold as a caller chose it (null: argmax) and the `threshold` arg recorded with it. */
export interface ThresholdChoice {
  threshold: number | null;
  mode: TrainingArgs['threshold'];
}

export interface TrainedTagger {
  model: TagModel;
  /** Per-epoch losses of the validated fit. */
  history: EpochReport[];
  threshold: number | null;
  /**
   * Weighted f1 on the validation split of the validated fit, with the chosen threshold(s). With `refit`
   * the returned model has seen the validation rows, so this is the model-selection score, not the model's.
   */
  validationF1: number;
  /** Multi-label: each tag's threshold (in the model's tag order); null for a single-label model. */
  tagThresholds: readonly number[] | null;
  /**
   * `options.deferRefit` only (with or without a refit to come): the validated fit's probabilities of the
   * validation rows, in the model's tag order (out of sample: the fit never saw those rows).
   */
  validationProbabilities?: readonly Float64Array[];
  /**
   * `options.deferRefit` with `args.refit` only: the refit on train + validation, keeping the threshold(s)
   * chosen on validation, or (single-label) the threshold and mode given, as the caller chose them from
   * `validationProbabilities`. Drop every other reference to this result first: the validated fit is
   * released before the refit starts.
   */
  refit?: (threshold?: ThresholdChoice) => TrainedTagger;
}
