/**
 * The training arguments' shape: one typed set of hyper-parameters (stored as a run's args.json). The
 * classifier families declare their own (SGD: classifiers/sgd/sgd-params.ts; member classifiers:
 * classifiers/members/hyper-params.ts) and TrainingArgs extends them; args.ts validates a given set and
 * fills in the defaults. Types only, so every part of the model code can name the args without depending
 * on the table of classifiers that args.ts validates against.
 */
import type { FastTextHyperParams } from './classifiers/fasttext/fasttext-params.js';
import type { Calibration, MemberHyperParams, SvmLoss } from './classifiers/members/hyper-params.js';
import type { VoteMemberArgs } from './classifiers/members/member-args.js';
import type { MemberClassifier } from './classifiers/members/member-table.js';
import type {
  LearningRateSchedule,
  Loss,
  SgdClassifier,
  SgdHyperParams,
} from './classifiers/sgd/sgd-params.js';
import type { Analyzer } from './text/features.js';

export type { Analyzer, Calibration, LearningRateSchedule, Loss, MemberClassifier, SvmLoss, VoteMemberArgs };

/**
 * How a single-label run places its fallback threshold on the validation split (below it a prediction is
 * `other`): `argmax` places none, `tuned` the weighted-f1-best one, `auto` that one only when it beats
 * argmax, `balanced` the one best for the mean of the tags' accuracy and the recall of `other` (for data
 * whose `other` rows are few: out-of-scope detection). Multi-label runs take one threshold per tag instead.
 */
export type ThresholdMode = 'auto' | 'argmax' | 'tuned' | 'balanced';
/** Every `classifier` value: the SGD ones, each member classifier alone, and the soft vote over them. */
export type Classifier = SgdClassifier | MemberClassifier | 'soft_vote' | 'fasttext';
/** sklearn's `class_weight`: null (every class 1) or `balanced` (n_samples / (n_classes × count)). */
export type ClassWeight = null | 'balanced';

export interface TrainingArgs extends SgdHyperParams, MemberHyperParams, FastTextHyperParams {
  /** Use only the first `subset` rows of the data; applied by the caller that loads the data. */
  subset: number | null;
  /** Tags with fewer training examples than this become `other`. */
  min_freq: number;
  /** The clean-up steps before the features (text/preprocess.ts's CleanOptions; models saved before 1.8: LEGACY_CLEANUP). */
  lower: boolean;
  stem: boolean;
  stopwords: boolean;
  ascii_only: boolean;
  strip_urls: boolean;
  analyzer: Analyzer;
  /**
   * Lower end of the n-gram range (2 as in tagifai; 1 adds single words / characters). For `char_wb+word`
   * it is the char_wb block's; the word block is always unigrams + bigrams.
   */
  ngram_min_range: number;
  /**
   * Upper end of the n-gram range. For `char_wb+word` it is the char_wb range; the word block is always
   * unigrams + bigrams.
   */
  ngram_max_range: number;
  /**
   * sklearn's integer `min_df`: n-grams found in fewer training documents than this are dropped from the
   * vocabulary (idf of the rest unchanged). 1 keeps every n-gram. (sklearn's fractional min_df is not
   * offered: JSON cannot tell 1 from 1.0, which sklearn reads differently.)
   */
  min_df: number;
  /** sklearn's `sublinear_tf`: a term count c is weighted 1 + ln(c) instead of c before idf and l2 norm. */
  sublinear_tf: boolean;
  threshold: ThresholdMode;
  /**
   * The classifier (classifiers/families.ts lists them by family): `ovr` / `softmax`, trained by SGD
   * (classifiers/sgd/); a member classifier alone or `soft_vote` over several (classifiers/members/).
   */
  classifier: Classifier;
  /**
   * sklearn's `class_weight` of the SGD: `balanced` multiplies each step on a sample of class k (in class
   * k's binary problem, the positive samples) by n / (K × n_k), counted over the samples the SGD visits —
   * with `oversample` those are the oversampled rows, whose classes are equal, so every weight is ~1 (as
   * in sklearn fitted on oversampled rows); use it with `oversample: false`.
   */
  class_weight: ClassWeight;
  /** Randomly oversample every class of the training split up to the largest class's size. */
  oversample: boolean;
  /**
   * After the validated fit (whose validation split gives the per-epoch validation loss, the threshold and
   * the validation f1), fit the model again with the same arguments and seed on train + validation and keep
   * that one, with the threshold chosen before: the served model learns from every row that is not test
   * data. false: the validated fit is the model.
   */
  refit: boolean;
  /** Tags kept as their own class (others become `other`); null keeps every tag. */
  accepted_tags: string[] | null;
  /**
   * Several tags per text: one-vs-rest (`classifier: ovr`) binary problems whose probabilities are the
   * independent per-tag sigmoids (or modified-Huber probabilities), each tag with its own probability
   * threshold chosen on the validation split (`threshold`: `argmax` keeps 0.5 for every tag, `tuned`
   * takes the f1-best threshold of each tag, `auto` takes it only where it beats 0.5). Rows give their
   * tags as a list (a `tags` column); a row whose tags are all rare or unaccepted counts as `other`; the
   * refit (`refit`) keeps the validated fit's tags and thresholds.
   * Oversampling groups rows by their rarest kept tag. Set from the data by `tagger train` (a `tags`
   * column means multi-label).
   */
  multi_label: boolean;
  /** `calibration: sigmoid`: the stratified folds the training rows are scored out of fold on (2..20). */
  calibration_folds: number;
  /**
   * What Platt's sigmoids (`calibration: sigmoid`) are fitted on: `folds`, the training rows scored out of
   * fold on `calibration_folds` folds (k more fits of the member); or `validation`, the validation split
   * scored by the validated fit (no more fits; the refit keeps those sigmoids and the validated fit's tags).
   * `tagger train` sets `validation` for large data (src/train/pipeline.ts's argsForSize).
   */
  calibration_data: 'folds' | 'validation';
  /**
   * The refit fits its vectorizer again on train + validation (true), or keeps the validated fit's
   * vocabulary and idf (false: the features of every row are computed once; `tagger train` sets it for large
   * data).
   */
  refit_vocabulary: boolean;
  /**
   * `soft_vote` only: the member classifiers, each `{classifier, weight?, …its hyper-parameters}` (those
   * it does not set come from the top-level args); the vote's probability of a tag is the weighted mean of
   * the members' probabilities. At least two. null for the other classifiers.
   */
  members: VoteMemberArgs[] | null;
  /**
   * A pretrained sentence encoder whose embeddings join the TF-IDF features (null: TF-IDF only): the
   * name `minilm` (installed by `npm run setup:encoder`), a directory with an ONNX model and
   * tokenizer.json, or a Hugging Face model id. The embeddings are an input block the model is given (see
   * `encoder_weight`); the model records the encoder's identity and digests (see embeddings.ts).
   */
  encoder: string | null;
  /**
   * The factor the embedding block is scaled by before it is stacked after the TF-IDF block (whose rows
   * have unit norm): with `encoder_normalize` the block's rows have norm `encoder_weight`.
   */
  encoder_weight: number;
  /** L2-normalise each embedding (as sentence-transformers' all-MiniLM-L6-v2 pipeline does) before weighting. */
  encoder_normalize: boolean;
  /**
   * A cascade run (needs `encoder`): a fast TF-IDF model (the default soft vote over the same features
   * args; cascade/stages.ts) answers every text, and the encoder model (these args) answers the texts the
   * fast one is unsure of — top probability below the threshold τ (multi-label: a tag's probability near
   * its threshold; cascade/routing.ts). τ is chosen from the two models' out-of-fold predictions on the
   * training rows by a rule fixed before looking: the fewest texts routed whose CV f1 is within
   * `cascade_tolerance` of the encoder model's (default), the best CV f1 routing at most
   * `cascade_max_routed` of the texts, or τ = `cascade_threshold` as given.
   */
  cascade: boolean;
  /** The default rule's tolerance: how far (in weighted f1) below the encoder model's CV f1 the cascade may be. */
  cascade_tolerance: number;
  /** The budget rule: the largest share of texts (0 < share < 1) the encoder may get; null: the tolerance rule. */
  cascade_max_routed: number | null;
  /** τ as given (0 < τ ≤ 1), no rule; null: chosen by a rule. */
  cascade_threshold: number | null;
}
