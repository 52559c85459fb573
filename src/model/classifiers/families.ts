/**
 * The classifier families: the one table of them. Every `classifier` value belongs to one family, and
 * everything that depends on the classifier — validating its args, training, saving and loading its model,
 * progress, `tagger optimize`'s draws — is a lookup here, never a branch on its name. The order is the one
 * `tagger optimize` picks among them.
 */
import { ModelInputError } from '../errors.js';
import type { Classifier } from '../training-args.js';
import type { ClassifierFamily } from './family.js';
import { FASTTEXT_FAMILY } from './fasttext/fasttext-family.js';
import { MEMBERS_FAMILY } from './members/members-family.js';
import { SGD_FAMILY } from './sgd/sgd-family.js';

export const CLASSIFIER_FAMILIES: readonly ClassifierFamily[] = Object.freeze([
  SGD_FAMILY,
  MEMBERS_FAMILY,
  FASTTEXT_FAMILY,
]);

/** Every `classifier` value, family by family. */
export const CLASSIFIERS: readonly Classifier[] = Object.freeze(
  CLASSIFIER_FAMILIES.flatMap((f) => f.classifiers),
);

const BY_CLASSIFIER = new Map<string, ClassifierFamily>(
  CLASSIFIER_FAMILIES.flatMap((family) => family.classifiers.map((c) => [c, family] as const)),
);

/** The family of a classifier; an unknown name is an input error listing the known ones. */
export function familyOf(classifier: string): ClassifierFamily {
  const family = BY_CLASSIFIER.get(classifier);
  if (family === undefined) {
    throw new ModelInputError(
      `model/args: unknown classifier ${JSON.stringify(classifier)}; the classifiers are ${CLASSIFIERS.join(', ')}`,
    );
  }
  return family;
}

/** Whether a classifier can learn several tags per text (one-vs-rest; softmax cannot). */
export const learnsSeveralTags = (classifier: Classifier): boolean =>
  familyOf(classifier).learnsSeveralTags(classifier);

/** The classifiers whose models take sentence embeddings beside the texts. */
export const EMBEDDING_CLASSIFIERS: readonly Classifier[] = Object.freeze(
  CLASSIFIER_FAMILIES.filter((f) => f.takesEmbeddings).flatMap((f) => f.classifiers),
);
