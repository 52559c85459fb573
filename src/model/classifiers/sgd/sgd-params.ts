/**
 * The SGD classifiers' names and hyper-parameters, each declared once: its check, default and the range
 * `tagger optimize` draws it from. They are top-level training arguments (TrainingArgs extends
 * SgdHyperParams); the member classifiers ignore them. The defaults were validated by cross-validation on
 * dataset.csv (docs/model-decisions.md).
 */
import { bool, choice, type HyperParam, logUniform, num, oneOf, uniform } from '../../arg-checks.js';

/**
 * `ovr`: one binary SGD per class, scikit-learn's SGDClassifier rule for rule (sparse intercept decay,
 * normalised sigmoids as probabilities); `softmax`: multinomial log-loss SGD.
 */
export const SGD_CLASSIFIERS = ['ovr', 'softmax'] as const;
export type SgdClassifier = (typeof SGD_CLASSIFIERS)[number];

/** The per-class binary losses of the one-vs-rest SGD (scikit-learn's `SGDClassifier(loss=…)`). */
export const LOSSES = ['log_loss', 'hinge', 'modified_huber'] as const;
export type Loss = (typeof LOSSES)[number];
export type LearningRateSchedule = 'invscaling' | 'constant';

export interface SgdHyperParams {
  /** Shuffle the training rows at every epoch (seeded). */
  shuffle: boolean;
  /** L2 penalty strength. */
  alpha: number;
  /** Initial learning rate (sklearn's eta0). */
  learning_rate: number;
  /** Inverse-scaling exponent: eta = learning_rate / t^power_t, t = samples seen (from 1). */
  power_t: number;
  num_epochs: number;
  lr_schedule: LearningRateSchedule;
  /**
   * The binary loss of each one-vs-rest problem (`classifier: ovr` only; softmax is log loss by
   * definition), sklearn's rules: `log_loss` (probabilities: sigmoids normalised), `hinge` (a linear SVM;
   * sklearn gives no probabilities, Tagger returns the normalised sigmoids of the margins: they order the
   * tags like the scores and sum to 1, but are not calibrated), `modified_huber` (sklearn's probabilities:
   * (clip(score, -1, 1) + 1) / 2, normalised; uniform when all are 0).
   */
  loss: Loss;
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
}

export const SGD_HYPER_PARAMS: { readonly [K in keyof SgdHyperParams]: HyperParam<SgdHyperParams[K]> } = {
  shuffle: { check: bool, default: true },
  alpha: { check: num(0, 10), default: 3e-5, search: logUniform(1e-6, 1e-3) },
  learning_rate: { check: num(0, 100, { minExclusive: true }), default: 1, search: logUniform(1e-3, 1) },
  power_t: { check: num(0, 5), default: 0.1, search: uniform(0.05, 0.5) },
  num_epochs: { check: num(1, 100_000, { integer: true }), default: 60 },
  lr_schedule: { check: oneOf(['invscaling', 'constant']), default: 'invscaling' },
  loss: { check: oneOf(LOSSES), default: 'log_loss', search: choice(LOSSES) },
  average: { check: bool, default: false },
  ensemble: { check: num(1, 16, { integer: true }), default: 1 },
};
