/**
 * What `tagger optimize` searches: the features (analyzer, n-gram range, sublinear tf, min_df), class
 * balancing, and the classifier — SGD (loss, learning rate, power_t, alpha), one of the member classifiers
 * (C, naive-Bayes smoothing, SVM loss, calibration) or a soft vote of 2–4 distinct members, each with its own
 * hyper-parameters. With an encoder every trial is SGD (the only classifiers that take embeddings) and the
 * weight of the embedding block is searched too. Seeded: the same RNG gives the same trials.
 */
import {
  isSgdClassifier,
  MEMBER_CLASSIFIERS,
  type MemberClassifier,
  parseTrainingArgs,
  type TrainingArgs,
} from '../model/index.js';

/** The search space; bounds chosen around what works for short technical texts. */
export const SEARCH_SPACE = {
  analyzer: ['word', 'char', 'char_wb', 'char_wb+word'] as const,
  /**
   * Inclusive n-gram range ends per analyzer: [lowest min, highest min] and [lowest max, highest max]
   * (word n-grams beyond 3 are too sparse to help; `char_wb+word`'s range is its char_wb block's).
   */
  ngramMin: { word: [1, 2], char: [1, 3], char_wb: [1, 3], 'char_wb+word': [1, 3] } as const,
  ngramMax: { word: [1, 3], char: [3, 8], char_wb: [3, 8], 'char_wb+word': [3, 6] } as const,
  sublinearTf: [false, true] as const,
  minDf: [1, 2, 3] as const,
  /**
   * The classifier families: `sgd` is the base's SGD classifier (`ovr` unless the base is `softmax`); the
   * others are the member classifiers and the soft vote over them.
   */
  classifier: ['sgd', ...MEMBER_CLASSIFIERS, 'soft_vote'] as const,
  loss: ['log_loss', 'hinge', 'modified_huber'] as const,
  /**
   * Class balancing: by oversampling (the defaults), by sklearn's `balanced` class weights, or none.
   * (Both together would be balancing twice: `balanced` counts the oversampled rows, which are balanced.)
   */
  balancing: [
    { oversample: true, class_weight: null },
    { oversample: false, class_weight: 'balanced' },
    { oversample: false, class_weight: null },
  ] as const,
  learningRate: [1e-3, 1] as const,
  powerT: [0.05, 0.5] as const,
  alpha: [1e-6, 1e-3] as const,
  /** The dual-CD classifiers' C (log-uniform). */
  C: [0.01, 100] as const,
  /** Naive Bayes' smoothing (log-uniform) and NB-LR / NB-SVM's ratio smoothing (log-uniform). */
  nbAlpha: [1e-3, 1] as const,
  nbRatioAlpha: [0.1, 3] as const,
  nbSvmBeta: [0.1, 1] as const,
  svmLoss: ['squared_hinge', 'hinge'] as const,
  calibration: ['none', 'sigmoid'] as const,
  /** How many distinct members a soft vote draws. */
  voteMembers: [2, 4] as const,
  /**
   * With an encoder (`tagger optimize --encoder`), every trial uses it with an SGD classifier and the weight
   * of its embedding block is searched too (log-uniform); the embeddings are computed once for all trials.
   */
  encoderWeight: [0.25, 4] as const,
};

const logUniform = (random: () => number, [low, high]: readonly [number, number]): number =>
  Math.exp(Math.log(low) + random() * (Math.log(high) - Math.log(low)));

/** Rounds to 4 significant digits so logged params stay readable. */
const round = (value: number): number => Number(value.toPrecision(4));

const pick = <T>(random: () => number, values: readonly T[]): T =>
  values[Math.floor(random() * values.length)]!;
const between = (random: () => number, [low, high]: readonly [number, number]): number =>
  low + Math.floor(random() * (high - low + 1));
const uniform = (random: () => number, [low, high]: readonly [number, number]): number =>
  low + random() * (high - low);

const isSvm = (classifier: MemberClassifier): boolean =>
  classifier === 'linear_svm' || classifier === 'nb_svm';

/**
 * One member's own hyper-parameters. SVM members of a vote are Platt-calibrated (their margins are not
 * probabilities); a lone dual-CD classifier draws its calibration. Naive Bayes is never calibrated here: it
 * cannot score a tag that a calibration fold leaves without rows, which small tags (or a small `other`)
 * make likely, and one failed trial would end the search.
 */
function memberDraw(
  classifier: MemberClassifier,
  random: () => number,
  calibrate: 'draw' | 'svm',
): Record<string, unknown> {
  const drawn: Record<string, unknown> = {
    C: round(logUniform(random, SEARCH_SPACE.C)),
    svm_loss: pick(random, SEARCH_SPACE.svmLoss),
    nb_alpha: round(logUniform(random, SEARCH_SPACE.nbAlpha)),
    nb_ratio_alpha: round(logUniform(random, SEARCH_SPACE.nbRatioAlpha)),
    nb_svm_beta: round(uniform(random, SEARCH_SPACE.nbSvmBeta)),
  };
  const calibration = pick(random, SEARCH_SPACE.calibration);
  const naiveBayes = classifier === 'multinomial_nb' || classifier === 'complement_nb';
  drawn.calibration = naiveBayes
    ? 'none'
    : calibrate === 'svm'
      ? isSvm(classifier)
        ? 'sigmoid'
        : 'none'
      : calibration;
  const own: Record<string, unknown> = { classifier };
  const keys: Record<MemberClassifier, string[]> = {
    linear_svm: ['C', 'svm_loss'],
    logistic_regression: ['C'],
    nb_lr: ['C', 'nb_ratio_alpha'],
    nb_svm: ['C', 'svm_loss', 'nb_ratio_alpha', 'nb_svm_beta'],
    multinomial_nb: ['nb_alpha'],
    complement_nb: ['nb_alpha'],
  };
  for (const key of [...keys[classifier], 'calibration']) own[key] = drawn[key];
  return own;
}

/** Draws the arguments of one trial from the space, on top of `base` (which fixes everything else). */
export function sampleArgs(base: TrainingArgs, random: () => number): TrainingArgs {
  const analyzer = pick(random, SEARCH_SPACE.analyzer);
  const ngramMax = between(random, SEARCH_SPACE.ngramMax[analyzer]);
  const ngramMin = Math.min(ngramMax, between(random, SEARCH_SPACE.ngramMin[analyzer]));
  const balancing = pick(random, SEARCH_SPACE.balancing);
  // The embeddings need an SGD classifier, so an encoder search draws no family (a TF-IDF one as before).
  const family = base.encoder === null ? pick(random, SEARCH_SPACE.classifier) : 'sgd';
  const sgd = isSgdClassifier(base.classifier) ? base.classifier : 'ovr';
  const features = {
    ...base,
    analyzer,
    ngram_min_range: ngramMin,
    ngram_max_range: ngramMax,
    sublinear_tf: pick(random, SEARCH_SPACE.sublinearTf),
    min_df: pick(random, SEARCH_SPACE.minDf),
    oversample: balancing.oversample,
    class_weight: balancing.class_weight,
    ensemble: 1,
    members: null,
  };
  if (family === 'sgd') {
    return parseTrainingArgs({
      ...features,
      classifier: sgd,
      // Only one-vs-rest has the other losses; softmax keeps log loss.
      loss: sgd === 'ovr' ? pick(random, SEARCH_SPACE.loss) : 'log_loss',
      learning_rate: round(logUniform(random, SEARCH_SPACE.learningRate)),
      power_t: round(uniform(random, SEARCH_SPACE.powerT)),
      alpha: round(logUniform(random, SEARCH_SPACE.alpha)),
      ensemble: base.ensemble,
      // Drawn last and only with an encoder, so a TF-IDF search draws the same trials as before.
      ...(base.encoder === null
        ? {}
        : { encoder_weight: round(logUniform(random, SEARCH_SPACE.encoderWeight)) }),
    });
  }
  if (family !== 'soft_vote')
    return parseTrainingArgs({ ...features, ...memberDraw(family, random, 'draw') });
  const count = between(random, SEARCH_SPACE.voteMembers);
  const pool = [...MEMBER_CLASSIFIERS];
  const members = Array.from({ length: count }, () => {
    const classifier = pool.splice(Math.floor(random() * pool.length), 1)[0]!;
    return memberDraw(classifier, random, 'svm');
  });
  return parseTrainingArgs({ ...features, classifier: 'soft_vote', members });
}
