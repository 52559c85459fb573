/**
 * An SGD model's explanation: its top tag's linear score split exactly (explain.ts's `splitScore`), and for
 * an encoder model the embedding block's whole contribution as one more term, `encoder`, so `bias + Σ
 * contributions + rest + encoder = score`.
 */
import { featureNames, type LinearTagExplanation, splitScore, textFeatures } from '../../explain.js';
import { embeddingScale } from '../../text/embeddings.js';
import type { TaggerVectorizer } from '../../text/features.js';
import type { CleanOptions } from '../../text/preprocess.js';
import { addLinearScores } from '../linear-scores.js';
import type { LinearModel } from './sgd-solver.js';

export interface ExplainableParts {
  readonly tags: readonly string[];
  readonly args: Readonly<CleanOptions> & {
    readonly encoder_weight?: number;
    readonly encoder_normalize?: boolean;
  };
  readonly vectorizer: TaggerVectorizer;
  readonly linear: LinearModel;
}

/**
 * Explains the top-scoring tag of `text`: its score, bias and the `top` features that moved it most, and
 * for an encoder model (`embedding` given) the embedding block's contribution as one `encoder` term.
 * @example explainLinear(model, 'Transformers for NER', 5).contributions[0] // { feature: 'transformers', … }
 */
export function explainLinear(
  model: ExplainableParts,
  text: string,
  top = 10,
  embedding?: Float32Array,
): LinearTagExplanation {
  const { linear, vectorizer } = model;
  const K = linear.nClasses;
  const w = linear.weights;
  const features = textFeatures(vectorizer, model.args, text);
  const scores = Float64Array.from(linear.bias);
  addLinearScores(w, K, features.indices, features.values, 0, features.indices.length, scores);
  // The embedding block's columns follow the vectorizer's; its per-tag sums are one term each. Added to
  // the scores as predict adds them, so the score still matches predict's.
  const encoderScores = new Float64Array(K);
  if (embedding !== undefined) {
    const scale = embeddingScale(embedding, {
      weight: model.args.encoder_weight ?? 1,
      normalize: model.args.encoder_normalize ?? true,
    });
    for (let d = 0; d < embedding.length; d++) {
      const base = (vectorizer.size + d) * K;
      const v = embedding[d]! * scale;
      for (let k = 0; k < K; k++) {
        const c = w[base + k]! * v;
        scores[k]! += c;
        encoderScores[k]! += c;
      }
    }
  }
  let best = 0;
  for (let k = 1; k < K; k++) if (scores[k]! > scores[best]!) best = k;
  const split = splitScore(
    features,
    (column) => w[column * K + best]!,
    linear.bias[best]!,
    top,
    featureNames(vectorizer),
  );
  // The score as predict computes it (the same sum in the same order), so it matches predict bit for bit.
  return {
    tag: model.tags[best]!,
    ...split,
    score: scores[best]!,
    ...(embedding === undefined ? {} : { encoder: encoderScores[best]! }),
  };
}
