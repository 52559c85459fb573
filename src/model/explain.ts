/**
 * What an explanation of a prediction is, and the exact split every linear score shares: the tag's linear
 * score is its bias plus, for every feature of the text, weight × tf-idf value; the largest contributions
 * are listed and the others summed into `rest`, so `bias + Σ contributions + rest = score` holds for every
 * explanation (tested). Each family explains its own models with it (classifiers/sgd/sgd-explain.ts,
 * classifiers/members/member-explain.ts).
 * Written here because it needs the model's own weights and vocabulary; no library explains this model.
 */

import { FeatureUnion, type TaggerVectorizer } from './text/features.js';
import { type CleanOptions, cleanText } from './text/preprocess.js';
import type { TfidfAnalyzer } from './text/tfidf.js';

export interface FeatureContribution {
  /** The n-gram as the model sees it (after cleaning: lower-cased, stemmed when the model does). */
  feature: string;
  /** Which vectorizer produced it: `word` n-grams, `char_wb` or `char` n-grams. */
  analyzer: TfidfAnalyzer;
  /**
   * Its tf-idf value in this text (scaled by the union weight for `char_wb+word`); 1 for a member that
   * reads binary features (nb_lr, nb_svm: the feature is present).
   */
  value: number;
  /** weight × value: how much it moved the tag's score (negative: away from the tag). */
  contribution: number;
}

/** The exact linear part of an explanation: `bias + Σ contributions + rest = score`. */
export interface LinearExplanation {
  /** The tag's linear score, before the link (softmax, one-vs-rest, sigmoid or Platt) turns scores into probabilities. */
  score: number;
  bias: number;
  /** The largest contributions by absolute value, largest first. */
  contributions: FeatureContribution[];
  /** The sum of the contributions of every other feature of the text. */
  rest: number;
  /** How many features of the model the text has. */
  features: number;
}

/**
 * Why a model gave a text its tag. A linear model (SGD, or one member classifier alone) splits the tag's score
 * exactly (`LinearTagExplanation`); a vote of several members has no such split (`VoteTagExplanation`).
 */
export type Explanation = LinearTagExplanation | VoteTagExplanation;

/**
 * The tag's linear score split exactly: `bias + Σ contributions + rest = score`, plus `encoder` for an
 * encoder model.
 */
export interface LinearTagExplanation extends LinearExplanation {
  /** The tag explained: the one with the highest score (the predicted tag, unless the threshold fell back to `other`). */
  tag: string;
  /**
   * An encoder model only: the whole embedding block's contribution (Σ weight × value over its
   * dimensions), one aggregate term, so `bias + Σ contributions + rest + encoder = score`.
   */
  encoder?: number;
  vote?: undefined;
}

/**
 * A soft vote of several members. It averages the members' probabilities, which are not linear in the
 * features, so no exact per-feature split of the vote exists and none is made up: what is exact is each
 * member's split of its own score (`vote.members`) and the rule that combines their probabilities.
 */
export interface VoteTagExplanation {
  /** The tag explained: the one with the highest vote probability (first in tag order on ties). */
  tag: string;
  /** How many features of the model the text has (the members share them). */
  features: number;
  vote: VoteExplanation;
}

/** Whether an explanation is a vote's (else it is one linear score's). */
export const isVoteExplanation = (e: Explanation): e is VoteTagExplanation => e.vote !== undefined;

/** How a soft vote reached its probability of the explained tag. */
export interface VoteExplanation {
  /** `weighted_mean`: probability = Σ weightₘ · probabilityₘ / Σ weightₘ over the members. */
  rule: 'weighted_mean';
  probability: number;
  members: MemberExplanation[];
}

/** One member's exact explanation of the vote's tag: `bias + Σ contributions + rest = score`. */
export interface MemberExplanation extends LinearExplanation {
  classifier: string;
  /** Its weight in the vote. */
  weight: number;
  /** What it reads of the features: tf-idf values, or 1 per feature present (`binary`). */
  inputs: 'tfidf' | 'binary';
  /**
   * How its scores become its probabilities: `ovr` (sigmoids normalised to sum to 1), `sigmoid`
   * (multi-label, each tag's own), `softmax`, or `platt` (calibrated: 1 / (1 + exp(a·score + b)) per tag,
   * normalised to sum to 1 for single-label models).
   */
  link: 'ovr' | 'sigmoid' | 'softmax' | 'platt';
  /** The explained tag's Platt parameters, when `link` is `platt`. */
  platt?: { a: number; b: number };
  /** Its probability of the explained tag. */
  probability: number;
  /**
   * A member that reads an encoder run's embeddings: the whole embedding block's contribution, one
   * aggregate term, so `bias + Σ contributions + rest + encoder = score`.
   */
  encoder?: number;
}

/** Column → (analyzer, name) of the vectorizer's features, built once per model. */
export interface FeatureNames {
  name(column: number): string;
  analyzer(column: number): TfidfAnalyzer;
}

const names = new WeakMap<TaggerVectorizer, FeatureNames>();

export function featureNames(vectorizer: TaggerVectorizer): FeatureNames {
  const known = names.get(vectorizer);
  if (known) return known;
  const parts = vectorizer instanceof FeatureUnion ? vectorizer.parts : [vectorizer];
  const starts: number[] = [];
  let start = 0;
  for (const part of parts) {
    starts.push(start);
    start += part.size;
  }
  const partOf = (column: number): number => {
    let i = parts.length - 1;
    while (i > 0 && column < starts[i]!) i--;
    return i;
  };
  const made: FeatureNames = {
    name: (column) => {
      const i = partOf(column);
      return parts[i]!.vocabulary[column - starts[i]!]!;
    },
    analyzer: (column) => parts[partOf(column)]!.analyzer,
  };
  names.set(vectorizer, made);
  return made;
}

/** A text's features as the vectorizer found them (copies: its buffers are overwritten by its next call). */
export interface TextFeatures {
  indices: Int32Array;
  values: Float64Array;
}

/** The cleaned text's features, copied out of the vectorizer's scratch buffers. */
export function textFeatures(
  vectorizer: TaggerVectorizer,
  args: Readonly<CleanOptions>,
  text: string,
): TextFeatures {
  const n = vectorizer.vectorize(cleanText(String(text), args));
  return { indices: vectorizer.vectorIndices.slice(0, n), values: vectorizer.vectorValues.slice(0, n) };
}

/**
 * The exact split of one linear score: `bias` plus `weightOf(column) × value` for every feature of the
 * text, the `top` largest (by absolute value) listed and the others summed into `rest`.
 */
export function splitScore(
  features: TextFeatures,
  weightOf: (column: number) => number,
  bias: number,
  top: number,
  names: FeatureNames,
  binary = false,
): LinearExplanation {
  const { indices } = features;
  const n = indices.length;
  const value = (j: number): number => (binary ? 1 : features.values[j]!);
  const contributions = new Float64Array(n);
  let score = bias;
  for (let j = 0; j < n; j++) {
    contributions[j] = weightOf(indices[j]!) * value(j);
    score += contributions[j]!;
  }
  // The `top` largest |contributions| (ties: the lower column first), kept in order by insertion into a
  // list of at most `top`: about one comparison per feature, where sorting all of them cost most of an
  // explanation (a vote explains three members per text).
  const limit = Math.min(n, Math.max(0, Math.trunc(top) || 0));
  const before = (a: number, b: number): boolean => {
    const ca = Math.abs(contributions[a]!);
    const cb = Math.abs(contributions[b]!);
    return ca > cb || (ca === cb && indices[a]! < indices[b]!);
  };
  const shown: number[] = [];
  for (let j = 0; j < n && limit > 0; j++) {
    if (shown.length < limit) shown.push(j);
    else if (before(j, shown[limit - 1]!)) shown[limit - 1] = j;
    else continue;
    // The new one is last: moved up past every one it goes before.
    for (let at = shown.length - 1; at > 0 && before(shown[at]!, shown[at - 1]!); at--) {
      [shown[at], shown[at - 1]] = [shown[at - 1]!, shown[at]!];
    }
  }
  const isShown = new Uint8Array(n);
  for (const j of shown) isShown[j] = 1;
  let rest = 0;
  for (let j = 0; j < n; j++) if (!isShown[j]) rest += contributions[j]!;
  return {
    score,
    bias,
    contributions: shown.map((j) => ({
      feature: names.name(indices[j]!),
      analyzer: names.analyzer(indices[j]!),
      value: value(j),
      contribution: contributions[j]!,
    })),
    rest,
    features: n,
  };
}
