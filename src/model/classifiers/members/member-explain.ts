/**
 * Explanations of the member classifiers' model (member-model.ts), exact where exactness exists: each
 * member's score of the explained tag is its bias plus weight × value per feature (`bias + Σ
 * contributions + rest = score`, explain.ts's split, as the SGD model's), and a vote is described by how
 * it combines the members' probabilities. A soft vote of sigmoid / softmax / Platt probabilities is not
 * additive in the features, so no per-feature attribution of the vote itself is given.
 */
import {
  type Explanation,
  featureNames,
  type MemberExplanation,
  splitScore,
  textFeatures,
} from '../../explain.js';
import type { TaggerVectorizer } from '../../text/features.js';
import type { CleanOptions } from '../../text/preprocess.js';
import {
  combinedProbabilities,
  type MemberParts,
  memberProbabilitiesInPlace,
  memberScores,
} from './combine.js';
import { weightAt } from './member-weights.js';
import type { Member } from './train-member.js';

export interface MemberExplainableParts extends MemberParts {
  readonly tags: readonly string[];
  readonly args: Readonly<CleanOptions>;
  readonly vectorizer: TaggerVectorizer;
}

/**
 * Explains the most probable tag of `text`. A lone classifier is explained like the SGD model (its score
 * split exactly); a vote of several members lists each member's exact split and the vote's rule.
 */
export function explainMembers(model: MemberExplainableParts, text: string, top = 10): Explanation {
  const features = textFeatures(model.vectorizer, model.args, text);
  const n = features.indices.length;
  const probabilities = new Float64Array(model.tags.length);
  const widest = Math.max(...model.members.map((m) => m.nClasses));
  combinedProbabilities(
    model,
    features.indices,
    features.values,
    0,
    n,
    probabilities,
    new Float64Array(widest),
  );
  // The tag explained: the most probable one among the tags the members score (first on ties).
  let bestClass = 0;
  for (let c = 1; c < model.classes.length; c++) {
    if (probabilities[model.classes[c]!]! > probabilities[model.classes[bestClass]!]!) bestClass = c;
  }
  const tag = model.tags[model.classes[bestClass]!]!;
  const members = model.members.map((member) => explainMember(model, member, features, bestClass, top));
  if (members.length === 1) {
    const { score, bias, contributions, rest, features: count } = members[0]!;
    return { tag, score, bias, contributions, rest, features: count };
  }
  const probability = probabilities[model.classes[bestClass]!]!;
  return { tag, features: n, vote: { rule: 'weighted_mean', probability, members } };
}

function explainMember(
  model: MemberExplainableParts,
  member: Member,
  features: { indices: Int32Array; values: Float64Array },
  c: number,
  top: number,
): MemberExplanation {
  const K = member.nClasses;
  const scores = new Float64Array(K);
  memberScores(member, features.indices, features.values, 0, features.indices.length, scores);
  const score = scores[c]!;
  memberProbabilitiesInPlace(member, scores, model.multiLabel);
  const split = splitScore(
    features,
    (column) => weightAt(member.weights, column, c),
    member.bias[c]!,
    top,
    featureNames(model.vectorizer),
    member.inputs === 'binary',
  );
  const calibration = member.calibration;
  return {
    classifier: member.classifier,
    weight: member.weight,
    inputs: member.inputs,
    link: calibration === null ? member.link : 'platt',
    ...(calibration === null ? {} : { platt: { a: calibration.a[c]!, b: calibration.b[c]! } }),
    probability: scores[c]!,
    ...split,
    // The score as prediction computes it (the same sum in the same order).
    score,
  };
}
