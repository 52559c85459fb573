/**
 * Explanations of the member classifiers' model (member-model.ts), exact where exactness exists: each
 * member's score of the explained tag is its bias plus weight × value per feature (`bias + Σ
 * contributions + rest = score`, explain.ts's split, as the SGD model's), and a vote is described by how
 * it combines the members' probabilities. A soft vote of sigmoid / softmax / Platt probabilities is not
 * additive in the features, so no per-feature attribution of the vote itself is given. In an encoder
 * model a member that reads embeddings adds the embedding block's contribution as one `encoder` term.
 */
import { type Explanation, featureNames, type MemberExplanation, splitScore } from '../../explain.js';
import type { TaggerVectorizer } from '../../text/features.js';
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
  readonly vectorizer: TaggerVectorizer;
  /** A text's features (scratch buffers): `[0, n)`, an encoder model's embedding block the last `blockEntries`. */
  features(
    text: string,
    embedding?: Float32Array,
  ): { indices: Int32Array; values: Float64Array; n: number; blockEntries: number };
}

/** A text's features, copied out of the model's scratch, and where its TF-IDF entries end. */
interface ExplainedFeatures {
  indices: Int32Array;
  values: Float64Array;
  textEnd: number;
}

/**
 * Explains the most probable tag of `text`. A lone classifier is explained like the SGD model (its score
 * split exactly); a vote of several members lists each member's exact split and the vote's rule.
 */
export function explainMembers(
  model: MemberExplainableParts,
  text: string,
  top = 10,
  embedding?: Float32Array,
): Explanation {
  const found = model.features(text, embedding);
  const n = found.n;
  const features: ExplainedFeatures = {
    indices: found.indices.slice(0, n),
    values: found.values.slice(0, n),
    textEnd: n - found.blockEntries,
  };
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
    found.blockEntries,
  );
  // The tag explained: the most probable one among the tags the members score (first on ties).
  let bestClass = 0;
  for (let c = 1; c < model.classes.length; c++) {
    if (probabilities[model.classes[c]!]! > probabilities[model.classes[bestClass]!]!) bestClass = c;
  }
  const tag = model.tags[model.classes[bestClass]!]!;
  const members = model.members.map((member) => explainMember(model, member, features, bestClass, top));
  if (members.length === 1) {
    const { score, bias, contributions, rest, features: count, encoder } = members[0]!;
    return {
      tag,
      score,
      bias,
      contributions,
      rest,
      features: count,
      ...(encoder === undefined ? {} : { encoder }),
    };
  }
  const probability = probabilities[model.classes[bestClass]!]!;
  return { tag, features: features.textEnd, vote: { rule: 'weighted_mean', probability, members } };
}

function explainMember(
  model: MemberExplainableParts,
  member: Member,
  features: ExplainedFeatures,
  c: number,
  top: number,
): MemberExplanation {
  const K = member.nClasses;
  const scores = new Float64Array(K);
  const { indices, values, textEnd } = features;
  const end = member.readsEmbeddings ? indices.length : textEnd;
  memberScores(member, indices, values, 0, end, scores);
  const score = scores[c]!;
  memberProbabilitiesInPlace(member, scores, model.multiLabel);
  const split = splitScore(
    { indices: indices.subarray(0, textEnd), values: values.subarray(0, textEnd) },
    (column) => weightAt(member.weights, column, c),
    member.bias[c]!,
    top,
    featureNames(model.vectorizer),
    member.inputs === 'binary',
  );
  let encoder: number | undefined;
  if (member.readsEmbeddings && end > textEnd) {
    encoder = 0;
    for (let j = textEnd; j < end; j++) encoder += weightAt(member.weights, indices[j]!, c) * values[j]!;
  }
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
    ...(encoder === undefined ? {} : { encoder }),
  };
}
