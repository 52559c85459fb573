/**
 * The training arguments of the classifiers solved exactly or in closed form (dual coordinate descent,
 * naive Bayes) and of the soft vote over them: which hyper-parameters each classifier takes, and the
 * validation of a vote's `members`. A member takes every hyper-parameter it does not set from the
 * top-level args, so `{"classifier": "soft_vote", "C": 2}` sets C for every member that has one.
 */
import { type Check, fail, num, oneOf } from '../../arg-checks.js';
import { ModelInputError } from '../../errors.js';

/** The classifiers a soft vote can combine (and that `classifier` can name on their own). */
export const MEMBER_CLASSIFIERS = [
  'linear_svm',
  'logistic_regression',
  'nb_lr',
  'nb_svm',
  'multinomial_nb',
  'complement_nb',
] as const;
export type MemberClassifier = (typeof MEMBER_CLASSIFIERS)[number];

/** LinearSVC's `loss`: `squared_hinge` (L2-loss SVM, liblinear's default) or `hinge` (L1-loss). */
export type SvmLoss = 'squared_hinge' | 'hinge';
/** `sigmoid`: Platt scaling fitted on out-of-fold scores (sklearn's CalibratedClassifierCV, ensemble=False). */
export type Calibration = 'none' | 'sigmoid';

/** The hyper-parameters of the member classifiers (top-level args, and each member's own). */
export interface MemberHyperParams {
  /** Inverse L2 regularisation strength of the dual-CD classifiers (liblinear's / sklearn's C). */
  C: number;
  svm_loss: SvmLoss;
  /** Additive smoothing of multinomial / complement naive Bayes (sklearn's alpha). */
  nb_alpha: number;
  /** Additive smoothing of the naive-Bayes log-count ratios of nb_lr / nb_svm (Wang & Manning's α). */
  nb_ratio_alpha: number;
  /**
   * nb_svm's interpolation (Wang & Manning's β): w' = (1 − β)·mean|w| + β·w; 1 keeps the SVM's weights.
   */
  nb_svm_beta: number;
  calibration: Calibration;
}

/** One member of a soft vote, as validated: its classifier, its vote weight and its own hyper-parameters. */
export type VoteMemberArgs = { classifier: MemberClassifier; weight: number } & Partial<MemberHyperParams>;

/** Which hyper-parameters each classifier uses (a member lists exactly these, filled in). */
export const MEMBER_PARAMS: Readonly<Record<MemberClassifier, readonly (keyof MemberHyperParams)[]>> = {
  linear_svm: ['C', 'svm_loss', 'calibration'],
  logistic_regression: ['C', 'calibration'],
  nb_lr: ['C', 'nb_ratio_alpha', 'calibration'],
  nb_svm: ['C', 'svm_loss', 'nb_ratio_alpha', 'nb_svm_beta', 'calibration'],
  multinomial_nb: ['nb_alpha', 'calibration'],
  complement_nb: ['nb_alpha', 'calibration'],
};

export const HYPER_PARAM_CHECKS: Readonly<Record<keyof MemberHyperParams, Check>> = {
  C: num(0, 1e6, { minExclusive: true }),
  svm_loss: oneOf(['squared_hinge', 'hinge']),
  nb_alpha: num(0, 1000, { minExclusive: true }),
  nb_ratio_alpha: num(0, 1000, { minExclusive: true }),
  nb_svm_beta: num(0, 1),
  calibration: oneOf(['none', 'sigmoid']),
};

const checkWeight = num(0, 1000, { minExclusive: true });

/**
 * Validates a vote's `members` (an array of objects with a `classifier`, an optional `weight`, default 1,
 * and optional hyper-parameters of that classifier), filling each member's unset hyper-parameters from
 * `inherited` (the top-level args). A hyper-parameter its classifier does not use is refused, and so is a
 * vote of fewer than two members: a vote of one is that classifier alone.
 */
export function parseMembers(raw: unknown, inherited: MemberHyperParams): VoteMemberArgs[] {
  if (!Array.isArray(raw)) {
    return fail(
      'members',
      raw,
      'an array of members, e.g. [{"classifier": "linear_svm", "calibration": "sigmoid"}, {"classifier": "multinomial_nb"}]',
    );
  }
  if (raw.length < 2) {
    throw new ModelInputError(
      `model/args: a soft vote needs at least 2 members, got ${raw.length}; a vote of one is that classifier on its own, so set "classifier" to it instead (e.g. "classifier": "linear_svm")`,
    );
  }
  return raw.map((member, i) => parseMember(member, `members[${i}]`, inherited));
}

function parseMember(raw: unknown, where: string, inherited: MemberHyperParams): VoteMemberArgs {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return fail(where, raw, 'an object such as {"classifier": "nb_lr", "C": 1}');
  }
  const given = raw as Record<string, unknown>;
  const classifier = oneOf(MEMBER_CLASSIFIERS)(`${where}.classifier`, given.classifier) as MemberClassifier;
  const params = MEMBER_PARAMS[classifier];
  for (const key of Object.keys(given)) {
    if (key === 'classifier' || key === 'weight') continue;
    if (!Object.hasOwn(HYPER_PARAM_CHECKS, key)) {
      throw new ModelInputError(
        `model/args: unknown key "${key}" in ${where}; a member takes classifier, weight and its classifier's own: ${params.join(', ')}`,
      );
    }
    if (!params.includes(key as keyof MemberHyperParams)) {
      throw new ModelInputError(
        `model/args: ${where} (${classifier}) has no "${key}"; it takes ${params.join(', ')}`,
      );
    }
  }
  const member: Record<string, unknown> = {
    classifier,
    weight: given.weight === undefined ? 1 : checkWeight(`${where}.weight`, given.weight),
  };
  for (const key of params) {
    member[key] = Object.hasOwn(given, key)
      ? HYPER_PARAM_CHECKS[key](`${where}.${key}`, given[key])
      : inherited[key];
  }
  return member as VoteMemberArgs;
}

/** The hyper-parameters of `member` (the vote's member, or a lone classifier's top-level args), filled in. */
export function memberParams(
  member: VoteMemberArgs,
  inherited: MemberHyperParams,
): MemberHyperParams & { classifier: MemberClassifier; weight: number } {
  return {
    C: member.C ?? inherited.C,
    svm_loss: member.svm_loss ?? inherited.svm_loss,
    nb_alpha: member.nb_alpha ?? inherited.nb_alpha,
    nb_ratio_alpha: member.nb_ratio_alpha ?? inherited.nb_ratio_alpha,
    nb_svm_beta: member.nb_svm_beta ?? inherited.nb_svm_beta,
    calibration: member.calibration ?? inherited.calibration,
    classifier: member.classifier,
    weight: member.weight,
  };
}

export const isMemberClassifier = (classifier: string): classifier is MemberClassifier =>
  (MEMBER_CLASSIFIERS as readonly string[]).includes(classifier);
