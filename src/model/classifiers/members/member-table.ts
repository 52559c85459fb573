/**
 * The member classifiers: the one table of them. A vote's `members` and `classifier` name them; every
 * lookup of a member classifier's facts (its hyper-parameters, inputs, link, search rules, fitting) goes
 * through it. The order is the one `tagger optimize` draws a vote's members from.
 */
import { COMPLEMENT_NB } from './complement-nb.js';
import { LINEAR_SVM } from './linear-svm.js';
import { LOGISTIC_REGRESSION } from './logistic-regression.js';
import type { MemberDefinition } from './member.js';
import { MULTINOMIAL_NB } from './multinomial-nb.js';
import { NB_LR } from './nb-lr.js';
import { NB_SVM } from './nb-svm.js';

export const MEMBER_DEFINITIONS = Object.freeze([
  LINEAR_SVM,
  LOGISTIC_REGRESSION,
  NB_LR,
  NB_SVM,
  MULTINOMIAL_NB,
  COMPLEMENT_NB,
] as const);

export type MemberClassifier = (typeof MEMBER_DEFINITIONS)[number]['name'];

/** The classifiers a soft vote can combine (and that `classifier` can name on their own). */
export const MEMBER_CLASSIFIERS: readonly MemberClassifier[] = Object.freeze(
  MEMBER_DEFINITIONS.map((d) => d.name),
);

export const isMemberClassifier = (classifier: string): classifier is MemberClassifier =>
  (MEMBER_CLASSIFIERS as readonly string[]).includes(classifier);

const BY_NAME = new Map<string, MemberDefinition>(MEMBER_DEFINITIONS.map((d) => [d.name, d]));

/** The declaration of a member classifier. */
export function memberDefinition(name: MemberClassifier): MemberDefinition {
  return BY_NAME.get(name)!;
}
