/**
 * A soft vote's `members`: their validation, and each member's hyper-parameters filled in. A member takes
 * every hyper-parameter it does not set from the top-level args, so `{"classifier": "soft_vote", "C": 2}`
 * sets C for every member that has one. Which hyper-parameters a member takes is its classifier's
 * declaration (member-table.ts); their checks are hyper-params.ts's.
 */
import { fail, num, oneOf } from '../../arg-checks.js';
import { ModelInputError } from '../../errors.js';
import { MEMBER_HYPER_PARAM_NAMES, MEMBER_HYPER_PARAMS, type MemberHyperParams } from './hyper-params.js';
import { MEMBER_CLASSIFIERS, type MemberClassifier, memberDefinition } from './member-table.js';

/** One member of a soft vote, as validated: its classifier, its vote weight and its own hyper-parameters. */
export type VoteMemberArgs = { classifier: MemberClassifier; weight: number } & Partial<MemberHyperParams>;

/** A member with every hyper-parameter filled in: what a member classifier is trained with. */
export type MemberSpec = MemberHyperParams & { classifier: MemberClassifier; weight: number };

/**
 * The members of `soft_vote` when the args name none (issue 25's configuration): a Platt-calibrated linear
 * SVM, NB-LR and multinomial naive Bayes; the hyper-parameters they do not set come from the top-level args.
 */
export const DEFAULT_VOTE_MEMBERS: readonly Readonly<Record<string, unknown>>[] = Object.freeze([
  Object.freeze({ classifier: 'linear_svm', calibration: 'sigmoid' }),
  Object.freeze({ classifier: 'nb_lr' }),
  Object.freeze({ classifier: 'multinomial_nb' }),
]);

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
  const params = memberDefinition(classifier).params;
  for (const key of Object.keys(given)) {
    if (key === 'classifier' || key === 'weight') continue;
    if (!Object.hasOwn(MEMBER_HYPER_PARAMS, key)) {
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
      ? MEMBER_HYPER_PARAMS[key].check(`${where}.${key}`, given[key])
      : inherited[key];
  }
  return member as VoteMemberArgs;
}

/** The hyper-parameters of `member` (the vote's member, or a lone classifier's top-level args), filled in. */
export function memberParams(member: VoteMemberArgs, inherited: MemberHyperParams): MemberSpec {
  const filled = Object.fromEntries(
    MEMBER_HYPER_PARAM_NAMES.map((key) => [key, member[key] ?? inherited[key]]),
  );
  return {
    ...(filled as unknown as MemberHyperParams),
    classifier: member.classifier,
    weight: member.weight,
  };
}
