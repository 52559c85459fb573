/**
 * The member classifiers' hyper-parameters, each declared once: its check, default and the range `tagger
 * optimize` draws it from. They are top-level training arguments (TrainingArgs extends MemberHyperParams),
 * every member of a vote may set its own (member-args.ts), and each member classifier's file lists the ones
 * it takes. The defaults are issue 25's (nb_alpha 0.01 by cross-validation on dataset.csv, the rest
 * scikit-learn's; docs/model-decisions.md).
 */
import { choice, type HyperParam, logUniform, num, oneOf, uniform } from '../../arg-checks.js';

/** LinearSVC's `loss`: `squared_hinge` (L2-loss SVM, liblinear's default) or `hinge` (L1-loss). */
export type SvmLoss = 'squared_hinge' | 'hinge';
/** `sigmoid`: Platt scaling fitted on out-of-fold scores (sklearn's CalibratedClassifierCV, ensemble=False). */
export type Calibration = 'none' | 'sigmoid';

/** The hyper-parameters of the member classifiers (top-level args, and each member's own). */
export interface MemberHyperParams {
  /**
   * Inverse L2 regularisation strength of the dual-CD classifiers (liblinear's / sklearn's C):
   * linear_svm, logistic_regression, nb_lr, nb_svm.
   */
  C: number;
  /** linear_svm / nb_svm: `squared_hinge` (L2-loss, LinearSVC's default) or `hinge` (L1-loss). */
  svm_loss: SvmLoss;
  /** multinomial_nb / complement_nb: additive (Laplace/Lidstone) smoothing, sklearn's alpha. */
  nb_alpha: number;
  /** nb_lr / nb_svm: smoothing of the naive-Bayes log-count ratios (Wang & Manning 2012's α). */
  nb_ratio_alpha: number;
  /**
   * nb_svm: Wang & Manning's interpolation β between the mean weight magnitude and the SVM's weights,
   * w' = (1 − β)·mean|w| + β·w; 1 keeps the SVM's weights.
   */
  nb_svm_beta: number;
  /**
   * `sigmoid`: Platt scaling of each tag's score, fitted on out-of-fold scores of `calibration_folds`
   * stratified folds of the training rows, then the classifier refitted on all of them (sklearn's
   * CalibratedClassifierCV(method='sigmoid', ensemble=False)); `none`: the classifier's own probabilities.
   * Every tag needs at least `calibration_folds` training rows.
   */
  calibration: Calibration;
}

/**
 * Every member hyper-parameter, in the order a member lists them (and `tagger optimize` draws them: every
 * one is drawn for every member, so the random stream does not depend on which classifier it is).
 */
export const MEMBER_HYPER_PARAMS: {
  readonly [K in keyof MemberHyperParams]: HyperParam<MemberHyperParams[K]>;
} = {
  C: { check: num(0, 1e6, { minExclusive: true }), default: 1, search: logUniform(0.01, 100) },
  svm_loss: {
    check: oneOf(['squared_hinge', 'hinge']),
    default: 'squared_hinge',
    search: choice(['squared_hinge', 'hinge']),
  },
  nb_alpha: { check: num(0, 1000, { minExclusive: true }), default: 0.01, search: logUniform(1e-3, 1) },
  nb_ratio_alpha: { check: num(0, 1000, { minExclusive: true }), default: 1, search: logUniform(0.1, 3) },
  nb_svm_beta: { check: num(0, 1), default: 0.25, search: uniform(0.1, 1) },
  calibration: { check: oneOf(['none', 'sigmoid']), default: 'none', search: choice(['none', 'sigmoid']) },
};

export const MEMBER_HYPER_PARAM_NAMES = Object.keys(MEMBER_HYPER_PARAMS) as (keyof MemberHyperParams)[];
