/** Training arguments: the one typed, validated set of hyper-parameters (stored as a run's args.json). */
import { bool, type Check, fail, num, oneOf } from './arg-checks.js';
import {
  type Calibration,
  HYPER_PARAM_CHECKS,
  MEMBER_CLASSIFIERS,
  type MemberClassifier,
  type MemberHyperParams,
  parseMembers,
  type SvmLoss,
  type VoteMemberArgs,
} from './classifiers/members/member-args.js';
import { ModelInputError } from './errors.js';

export type {
  Calibration,
  MemberClassifier,
  SvmLoss,
  VoteMemberArgs,
} from './classifiers/members/member-args.js';

/**
 * `char_wb+word`: the union of char_wb n-grams (2..ngram_max_range) and word unigrams + bigrams, each block
 * l2-normalised and scaled by 1/√2 (sklearn's FeatureUnion of two TfidfVectorizers; see features.ts).
 */
export type Analyzer = 'word' | 'char' | 'char_wb' | 'char_wb+word';
export type ThresholdMode = 'auto' | 'argmax' | 'tuned';
export type LearningRateSchedule = 'invscaling' | 'constant';
/**
 * `ovr` and `softmax` are trained by SGD (sgd.ts); the member classifiers are solved exactly (dual
 * coordinate descent, as liblinear) or in closed form (naive Bayes), see members.ts; `soft_vote` averages
 * the probabilities of several member classifiers over one shared vocabulary (`members`).
 */
export type Classifier = 'ovr' | 'softmax' | MemberClassifier | 'soft_vote';
/** The classifiers trained by SGD, to which the SGD arguments (alpha, learning_rate, loss, …) apply. */
export const isSgdClassifier = (classifier: Classifier): classifier is 'ovr' | 'softmax' =>
  classifier === 'ovr' || classifier === 'softmax';
/** The per-class binary loss of the one-vs-rest SGD (scikit-learn's `SGDClassifier(loss=…)`). */
export type Loss = 'log_loss' | 'hinge' | 'modified_huber';
/** sklearn's `class_weight`: null (every class 1) or `balanced` (n_samples / (n_classes × count)). */
export type ClassWeight = null | 'balanced';

export interface TrainingArgs {
  /** Shuffle the training rows at every epoch (seeded). */
  shuffle: boolean;
  /** Use only the first `subset` rows of the data; applied by the caller that loads the data. */
  subset: number | null;
  /** Tags with fewer training examples than this become `other`. */
  min_freq: number;
  lower: boolean;
  stem: boolean;
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
  /** L2 penalty strength. */
  alpha: number;
  /** Initial learning rate (sklearn's eta0). */
  learning_rate: number;
  /** Inverse-scaling exponent: eta = learning_rate / t^power_t, t = samples seen (from 1). */
  power_t: number;
  num_epochs: number;
  threshold: ThresholdMode;
  lr_schedule: LearningRateSchedule;
  /**
   * `ovr`: one binary log-loss SGD per class, scikit-learn's SGDClassifier(loss='log_loss') rule for rule
   * (sparse intercept decay, normalised sigmoids as probabilities); `softmax`: multinomial log-loss SGD.
   */
  classifier: Classifier;
  /**
   * The binary loss of each one-vs-rest problem (`classifier: ovr` only; softmax is log loss by
   * definition), sklearn's rules: `log_loss` (probabilities: sigmoids normalised), `hinge` (a linear SVM;
   * sklearn gives no probabilities, Tagger returns the normalised sigmoids of the margins: they order the
   * tags like the scores and sum to 1, but are not calibrated), `modified_huber` (sklearn's probabilities:
   * (clip(score, -1, 1) + 1) / 2, normalised; uniform when all are 0).
   */
  loss: Loss;
  /**
   * sklearn's `class_weight` of the SGD: `balanced` multiplies each step on a sample of class k (in class
   * k's binary problem, the positive samples) by n / (K × n_k), counted over the samples the SGD visits —
   * with `oversample` those are the oversampled rows, whose classes are equal, so every weight is ~1 (as
   * in sklearn fitted on oversampled rows); use it with `oversample: false`.
   */
  class_weight: ClassWeight;
  /** Return the average of all SGD iterates (averaged SGD, sklearn's `average=True`) instead of the last. */
  average: boolean;
  /**
   * Seed ensemble: train this many models (1..16) that differ only in their seeded randomness (the
   * oversampling draw and the SGD shuffles; member 0 uses the training seed itself, the others seeds
   * derived from it) on the same TF-IDF features, and keep the mean of their weights and intercepts. The
   * mean of linear models is one linear model whose scores are the members' mean scores, so prediction
   * costs the same as for one model; training costs `ensemble` times as much. 1 = a single model.
   */
  ensemble: number;
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
  /**
   * The member classifiers' inverse L2 regularisation (liblinear's C): linear_svm, logistic_regression,
   * nb_lr, nb_svm. The SGD arguments (alpha, learning_rate, power_t, num_epochs, loss, lr_schedule,
   * average, shuffle) apply to `ovr` / `softmax` only; the member classifiers ignore them.
   */
  C: number;
  /** linear_svm / nb_svm: `squared_hinge` (L2-loss, LinearSVC's default) or `hinge` (L1-loss). */
  svm_loss: SvmLoss;
  /** multinomial_nb / complement_nb: additive (Laplace/Lidstone) smoothing, sklearn's alpha. */
  nb_alpha: number;
  /** nb_lr / nb_svm: smoothing of the naive-Bayes log-count ratios (Wang & Manning 2012's α). */
  nb_ratio_alpha: number;
  /** nb_svm: Wang & Manning's interpolation β between the mean weight magnitude and the SVM's weights. */
  nb_svm_beta: number;
  /**
   * `sigmoid`: Platt scaling of each tag's score, fitted on out-of-fold scores of `calibration_folds`
   * stratified folds of the training rows, then the classifier refitted on all of them (sklearn's
   * CalibratedClassifierCV(method='sigmoid', ensemble=False)); `none`: the classifier's own probabilities.
   * Every tag needs at least `calibration_folds` training rows.
   */
  calibration: Calibration;
  calibration_folds: number;
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
}

/**
 * The members of `soft_vote` when the args name none (issue 25's configuration): a Platt-calibrated linear
 * SVM, NB-LR and multinomial naive Bayes; the hyper-parameters they do not set come from the top-level args.
 */
export const DEFAULT_VOTE_MEMBERS: readonly Readonly<Record<string, unknown>>[] = Object.freeze([
  Object.freeze({ classifier: 'linear_svm', calibration: 'sigmoid' }),
  Object.freeze({ classifier: 'nb_lr' }),
  Object.freeze({ classifier: 'multinomial_nb' }),
]);

/**
 * Defaults chosen by 5-fold cross-validation on dataset.csv only (holdout.csv untouched; evidence and the
 * adoption rules in src/model/README.md). classifier `ovr` (scikit-learn's one-vs-rest SGD) had the best CV
 * mean of the two classifiers; every alpha / epochs / averaging variant tried was within fold noise of it,
 * so those stay as validated before and `average` stays off (~40 % slower training for no gain). min_freq
 * 20 keeps mlops (≈44 rows in a 70 % training split) as its own class.
 * `analyzer: 'char_wb+word'` with `ngram_max_range` 4 and `refit` were adopted together (2026-11-21): over 3
 * training seeds they raised the CV f1 from 0.8770 to 0.8917 (4 of 5 folds up), and scikit-learn's version
 * of the same change gained about as much (0.8757 → 0.8887); neither alone met the adoption rule. The union
 * adds a second vectorizer pass per prediction (29–34 µs CPU per text in the bench, under the 50 µs aim);
 * refit doubles training time.
 * `sublinear_tf` stayed off (+0.001 over 3 seeds). A seed ensemble (`ensemble` 3 or 5) did not help
 * (−0.001 CV mean, 2–3 of 5 folds not worse) and costs k× the training, so `ensemble` stays 1.
 * `loss` stays log loss, `class_weight` null, `min_df` 1 and n-grams from 2 (2026-11-25): the best hinge
 * variants gained +0.006 … +0.007 over 3 seeds (2–3 of 5 folds up; scikit-learn +0.005 … +0.008), under the
 * +0.008 / 4-of-5 rule; balanced class weights were no better than oversampling.
 * threshold is `argmax` because a validation-tuned threshold (`auto`/`tuned`) lowered the cross-validated
 * f1 in every configuration tried: ~100 validation rows are too few to place it reliably.
 * `classifier: 'soft_vote'` (2026-11-25, issue 25), its default members a Platt-calibrated linear SVM (C 1),
 * NB-LR (C 1, ratio smoothing 1) and multinomial naive Bayes (`nb_alpha` 0.01), with `oversample: false`:
 * over 3 split seeds × 5 folds it raised the CV f1 from 0.8922 to 0.9031 (+0.0109, 12 of 15 folds up;
 * scikit-learn's same vote 0.9031 against its SGD's 0.8912) at ~16 µs CPU per prediction. The SGD
 * arguments (alpha, learning_rate, power_t, num_epochs, loss, …) keep their validated values for
 * `classifier: 'ovr'`, which was validated with `oversample: true`: pass both to train the previous model.
 * `encoder` is null (TF-IDF only); an encoder run's defaults are `ENCODER_DEFAULT_ARGS` over these.
 */
const BASE_DEFAULTS = {
  shuffle: true,
  subset: null,
  min_freq: 20,
  lower: true,
  stem: false,
  analyzer: 'char_wb+word',
  ngram_min_range: 2,
  ngram_max_range: 4,
  min_df: 1,
  sublinear_tf: false,
  alpha: 3e-5,
  learning_rate: 1,
  power_t: 0.1,
  num_epochs: 60,
  threshold: 'argmax',
  lr_schedule: 'invscaling',
  classifier: 'soft_vote',
  loss: 'log_loss',
  class_weight: null,
  average: false,
  ensemble: 1,
  oversample: false,
  refit: true,
  accepted_tags: null,
  multi_label: false,
  C: 1,
  svm_loss: 'squared_hinge',
  nb_alpha: 0.01,
  nb_ratio_alpha: 1,
  nb_svm_beta: 0.25,
  calibration: 'none',
  calibration_folds: 5,
  encoder: null,
  encoder_weight: 1,
  encoder_normalize: true,
} as const;

export const DEFAULT_TRAINING_ARGS: TrainingArgs = Object.freeze({
  ...BASE_DEFAULTS,
  members: Object.freeze(parseMembers(DEFAULT_VOTE_MEMBERS, BASE_DEFAULTS).map((m) => Object.freeze(m))),
}) as TrainingArgs;

/**
 * What `encoder` changes besides adding the embeddings: the arguments 5-fold CV on dataset.csv chose for
 * the encoder configuration (src/model/README.md, 2026-11-25), applied to every key the user did not set
 * (by `argsForEncoder`, and by `parseTrainingArgs` to an object that names an encoder), so
 * `tagger train --encoder minilm` alone trains the chosen configuration. It was measured before issue 25
 * changed the TF-IDF defaults to the soft vote, so its TF-IDF base is the pre-issue-25 SGD model
 * (`classifier: 'ovr'` with `oversample: true`, no members; the embeddings need an SGD classifier anyway),
 * plus L2-normalised embeddings weighted 0.75 (CV 0.9294 over 3 seeds against 0.8917 for that TF-IDF
 * model alone, 5 of 5 folds up; the best candidate, hinge with alpha 3e-4, was 0.0015 above it with three
 * changes, inside the rule's 0.002 margin that prefers fewer changes).
 */
export const ENCODER_DEFAULT_ARGS: Readonly<Partial<TrainingArgs>> = Object.freeze({
  classifier: 'ovr',
  oversample: true,
  members: null,
  encoder_weight: 0.75,
  encoder_normalize: true,
});

/**
 * The arguments of an encoder run: `ENCODER_DEFAULT_ARGS` for every key not in `explicit` (the names the
 * user gave); args without an encoder are returned as they are.
 * @example argsForEncoder({ ...DEFAULT_TRAINING_ARGS, encoder: 'minilm' }, new Set(['encoder'])).classifier // 'ovr'
 */
export function argsForEncoder(args: TrainingArgs, explicit: ReadonlySet<string>): TrainingArgs {
  if (args.encoder === null) return args;
  const chosen = Object.entries(ENCODER_DEFAULT_ARGS).filter(([key]) => !explicit.has(key));
  return parseTrainingArgs({ ...args, ...Object.fromEntries(chosen) });
}

const CHECKS: Record<keyof TrainingArgs, Check> = {
  shuffle: bool,
  subset: (key, v) => (v === null ? null : num(1, Number.MAX_SAFE_INTEGER, { integer: true })(key, v)),
  min_freq: num(0, Number.MAX_SAFE_INTEGER, { integer: true }),
  lower: bool,
  stem: bool,
  analyzer: oneOf(['word', 'char', 'char_wb', 'char_wb+word']),
  ngram_min_range: num(1, 16, { integer: true }),
  ngram_max_range: num(1, 16, { integer: true }),
  min_df: num(1, Number.MAX_SAFE_INTEGER, { integer: true }),
  sublinear_tf: bool,
  alpha: num(0, 10),
  learning_rate: num(0, 100, { minExclusive: true }),
  power_t: num(0, 5),
  num_epochs: num(1, 100_000, { integer: true }),
  threshold: oneOf(['auto', 'argmax', 'tuned']),
  lr_schedule: oneOf(['invscaling', 'constant']),
  classifier: oneOf(['ovr', 'softmax', ...MEMBER_CLASSIFIERS, 'soft_vote']),
  loss: oneOf(['log_loss', 'hinge', 'modified_huber']),
  class_weight: (key, v) => (v === null ? null : oneOf(['balanced'])(key, v)),
  average: bool,
  ensemble: num(1, 16, { integer: true }),
  oversample: bool,
  refit: bool,
  accepted_tags: (key, v) => {
    if (v === null) return null;
    if (!Array.isArray(v) || v.length === 0 || !v.every((t) => typeof t === 'string' && t !== '')) {
      return fail(key, v, 'null or a non-empty array of non-empty tag strings');
    }
    return [...v];
  },
  multi_label: bool,
  ...HYPER_PARAM_CHECKS,
  calibration_folds: num(2, 20, { integer: true }),
  // Checked after the other args (a member inherits their values): see parseTrainingArgs.
  members: (_key, v) => v,
  encoder: (key, v) =>
    v === null
      ? null
      : typeof v === 'string' && v.trim() !== ''
        ? v
        : fail(key, v, 'null or a non-empty string'),
  encoder_weight: num(0, 100, { minExclusive: true }),
  encoder_normalize: bool,
};

/**
 * Merges a partial args object (e.g. parsed args.json) over DEFAULT_TRAINING_ARGS, validating every key;
 * an object that names an `encoder` is merged over ENCODER_DEFAULT_ARGS first (an encoder run's defaults).
 * @example parseTrainingArgs({ analyzer: 'char', num_epochs: 10 }).alpha // 3e-5 (the default)
 */
export function parseTrainingArgs(raw: unknown): TrainingArgs {
  if (raw === undefined || raw === null) return { ...DEFAULT_TRAINING_ARGS };
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ModelInputError(
      `model/args: training args must be a JSON object, got ${JSON.stringify(raw)}; pass e.g. {"num_epochs": 10}`,
    );
  }
  const namesEncoder = Object.hasOwn(raw, 'encoder') && (raw as { encoder: unknown }).encoder != null;
  const out: Record<string, unknown> = {
    ...DEFAULT_TRAINING_ARGS,
    ...(namesEncoder ? ENCODER_DEFAULT_ARGS : {}),
  };
  for (const [key, value] of Object.entries(raw)) {
    // Own keys only: `constructor`, `toString`, `__proto__` (an own key after JSON.parse) … are unknown
    // args, not Object.prototype members; so only a known arg name is ever assigned to `out`.
    if (!Object.hasOwn(CHECKS, key)) {
      throw new ModelInputError(
        `model/args: unknown training arg "${key}" (value ${JSON.stringify(value)}); known args: ${Object.keys(CHECKS).join(', ')}`,
      );
    }
    out[key] = CHECKS[key as keyof TrainingArgs](key, value);
  }
  const args = out as unknown as TrainingArgs;
  if (args.ngram_min_range > args.ngram_max_range) {
    throw new ModelInputError(
      `model/args: "ngram_min_range" (${args.ngram_min_range}) must not exceed "ngram_max_range" (${args.ngram_max_range})`,
    );
  }
  if (args.classifier === 'softmax' && args.loss !== 'log_loss') {
    throw new ModelInputError(
      `model/args: "loss" ${JSON.stringify(args.loss)} needs "classifier": "ovr" (softmax regression is log loss by definition)`,
    );
  }
  if (args.multi_label && args.classifier === 'softmax') {
    throw new ModelInputError(
      'model/args: "multi_label" needs a one-vs-rest classifier, not "softmax" (softmax makes the tags compete for one probability mass)',
    );
  }
  if (args.ensemble > 1 && !isSgdClassifier(args.classifier)) {
    throw new ModelInputError(
      `model/args: "ensemble" (${args.ensemble}) averages SGD runs that differ in their random order; ${JSON.stringify(args.classifier)} is solved exactly, so its runs would not differ — use "ensemble": 1, or "classifier": "soft_vote" to combine different classifiers`,
    );
  }
  if (args.encoder !== null && !isSgdClassifier(args.classifier)) {
    throw new ModelInputError(
      `model/args: "encoder" needs classifier ovr or softmax (SGD), but the classifier is ${JSON.stringify(args.classifier)}; the member classifiers and soft_vote do not take embeddings — drop "classifier" (an encoder run defaults to ovr) or set "classifier": "ovr"`,
    );
  }
  args.members = votingMembers(raw as Record<string, unknown>, args);
  return args;
}

/** The validated `members` of a soft vote (the defaults when none are given); null for other classifiers. */
function votingMembers(raw: Record<string, unknown>, args: TrainingArgs): VoteMemberArgs[] | null {
  const given = Object.hasOwn(raw, 'members') ? raw.members : undefined;
  if (args.classifier !== 'soft_vote') {
    if (given !== undefined && given !== null) {
      throw new ModelInputError(
        `model/args: "members" go with "classifier": "soft_vote", but the classifier is ${JSON.stringify(args.classifier)}; drop "members" or set "classifier": "soft_vote"`,
      );
    }
    return null;
  }
  const inherited: MemberHyperParams = args;
  return parseMembers(given ?? DEFAULT_VOTE_MEMBERS, inherited);
}
