/**
 * Exact explanations of a linear tagger's prediction: the tag's linear score is its bias plus, for
 * every feature of the text, weight × tf-idf value. The largest contributions are listed; the others are
 * summed into `rest`, so `bias + Σ contributions + rest = score` holds for every explanation (tested).
 * Written here because it needs the model's own weights and vocabulary; no library explains this model.
 */
import { embeddingScale } from './embeddings.js';
import { FeatureUnion, type TaggerVectorizer } from './features.js';
import { cleanText } from './preprocess.js';
import type { LinearModel } from './sgd.js';
import type { TfidfAnalyzer } from './tfidf.js';

export interface FeatureContribution {
  /** The n-gram as the model sees it (after cleaning: lower-cased, stemmed when the model does). */
  feature: string;
  /** Which vectorizer produced it: `word` n-grams, `char_wb` or `char` n-grams. */
  analyzer: TfidfAnalyzer;
  /** Its tf-idf value in this text (scaled by the union weight for `char_wb+word`). */
  value: number;
  /** weight × value: how much it moved the tag's score (negative: away from the tag). */
  contribution: number;
}

export interface Explanation {
  /** The tag explained: the one with the highest score (the predicted tag, unless the threshold fell back to `other`). */
  tag: string;
  /** The tag's linear score, before the softmax / one-vs-rest link turns scores into probabilities. */
  score: number;
  bias: number;
  /** The largest contributions by absolute value, largest first. */
  contributions: FeatureContribution[];
  /** The sum of the contributions of every other feature of the text. */
  rest: number;
  /** How many features of the model the text has. */
  features: number;
  /**
   * An encoder model only: the whole embedding block's contribution (Σ weight × value over its
   * dimensions), one aggregate term, so `bias + Σ contributions + rest + encoder = score`.
   */
  encoder?: number;
}

export interface ExplainableParts {
  readonly tags: readonly string[];
  readonly args: {
    readonly lower: boolean;
    readonly stem: boolean;
    readonly encoder_weight?: number;
    readonly encoder_normalize?: boolean;
  };
  readonly vectorizer: TaggerVectorizer;
  readonly linear: LinearModel;
}

/** Column → (analyzer, name) of the vectorizer's features, built once per model. */
interface FeatureNames {
  name(column: number): string;
  analyzer(column: number): TfidfAnalyzer;
}

const names = new WeakMap<TaggerVectorizer, FeatureNames>();

function featureNames(vectorizer: TaggerVectorizer): FeatureNames {
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

/**
 * Explains the top-scoring tag of `text`: its score, bias and the `top` features that moved it most.
 * @example explainLinear(model, 'Transformers for NER', 5).contributions[0] // { feature: 'transformers', … }
 */
export function explainLinear(
  model: ExplainableParts,
  text: string,
  top = 10,
  embedding?: Float32Array,
): Explanation {
  const { linear, vectorizer } = model;
  const K = linear.nClasses;
  const w = linear.weights;
  const clean = cleanText(String(text), { lower: model.args.lower, stem: model.args.stem });
  const n = vectorizer.vectorize(clean);
  // Copied: the vectorizer's buffers are scratch, overwritten by its next call.
  const indices = vectorizer.vectorIndices.slice(0, n);
  const values = vectorizer.vectorValues.slice(0, n);
  const scores = Float64Array.from(linear.bias);
  for (let j = 0; j < n; j++) {
    const base = indices[j]! * K;
    for (let k = 0; k < K; k++) scores[k]! += w[base + k]! * values[j]!;
  }
  // The embedding block's columns follow the vectorizer's; its per-tag sums are one term each.
  const encoderScores = new Float64Array(K);
  if (embedding !== undefined) {
    const scale = embeddingScale(embedding, {
      weight: model.args.encoder_weight ?? 1,
      normalize: model.args.encoder_normalize ?? true,
    });
    for (let d = 0; d < embedding.length; d++) {
      const base = (vectorizer.size + d) * K;
      for (let k = 0; k < K; k++) encoderScores[k]! += w[base + k]! * embedding[d]! * scale;
    }
    for (let k = 0; k < K; k++) scores[k]! += encoderScores[k]!;
  }
  let best = 0;
  for (let k = 1; k < K; k++) if (scores[k]! > scores[best]!) best = k;

  const order = Array.from({ length: n }, (_, j) => j);
  const contribution = (j: number): number => w[indices[j]! * K + best]! * values[j]!;
  order.sort((a, b) => Math.abs(contribution(b)) - Math.abs(contribution(a)) || indices[a]! - indices[b]!);
  const shown = order.slice(0, Math.max(0, top));
  let rest = 0;
  for (const j of order.slice(shown.length)) rest += contribution(j);
  const feature = featureNames(vectorizer);
  return {
    tag: model.tags[best]!,
    score: scores[best]!,
    bias: linear.bias[best]!,
    contributions: shown.map((j) => ({
      feature: feature.name(indices[j]!),
      analyzer: feature.analyzer(indices[j]!),
      value: values[j]!,
      contribution: contribution(j),
    })),
    rest,
    features: n,
    ...(embedding === undefined ? {} : { encoder: encoderScores[best]! }),
  };
}
