/**
 * The model of the SGD classifiers (`ovr`, `softmax`): preprocessing + TF-IDF (and, for an encoder model,
 * the sentence embedding block) + one linear model, whose scores become probabilities by its link; the
 * predicted tag is the argmax (with an optional probability threshold below which it falls back to
 * `other`), or with `multi_label` every tag over its own threshold. sgd-artifact.ts reads its parts.
 */

import { ModelInputError } from '../../errors.js';
import type { LinearTagExplanation } from '../../explain.js';
import { type PredictOptions, predictionOf } from '../../prediction.js';
import type { Prediction, TagModel } from '../../tag-model.js';
import {
  checkEmbeddings,
  type EmbeddingBlock,
  type EncoderSpec,
  embeddingScale,
} from '../../text/embeddings.js';
import type { TaggerVectorizer } from '../../text/features.js';
import { cleanText } from '../../text/preprocess.js';
import type { TrainingArgs } from '../../training-args.js';
import { addLinearScores } from '../linear-scores.js';
import { argmax, probabilitiesInPlace } from '../links.js';
import { explainLinear } from './sgd-explain.js';
import type { LinearModel } from './sgd-solver.js';

/** The SGD classifiers' model: one linear model over the features (and an encoder model's embedding block). */
export class SgdTagModel implements TagModel {
  readonly tags: readonly string[];
  readonly args: TrainingArgs;
  readonly threshold: number | null;
  readonly tagThresholds: readonly number[] | null;
  readonly vectorizer: TaggerVectorizer;
  readonly linear: LinearModel;
  readonly encoder: EncoderSpec | null;
  // Scratch scores for predict(); overwritten by every call (JS is single-threaded).
  private readonly scores: Float64Array;

  constructor(
    tags: readonly string[],
    args: TrainingArgs,
    threshold: number | null,
    vectorizer: TaggerVectorizer,
    linear: LinearModel,
    tagThresholds: readonly number[] | null = null,
    encoder: EncoderSpec | null = null,
  ) {
    if (args.multi_label !== (tagThresholds !== null)) {
      throw new ModelInputError(
        'model/sgd: a multi-label model needs one threshold per tag, and a single-label model none',
      );
    }
    this.tags = Object.freeze([...tags]);
    this.args = Object.freeze({ ...args });
    this.threshold = threshold;
    this.tagThresholds = tagThresholds === null ? null : Object.freeze([...tagThresholds]);
    this.vectorizer = vectorizer;
    this.linear = linear;
    if ((args.encoder !== null) !== (encoder !== null)) {
      throw new ModelInputError(
        'model/sgd: an encoder model needs its encoder spec, and a TF-IDF model none',
      );
    }
    const expected = vectorizer.size + (encoder?.dim ?? 0);
    if (linear.nFeatures !== expected) {
      throw new ModelInputError(
        `model/sgd: the linear model has ${linear.nFeatures} features, the features give ${expected}`,
      );
    }
    this.encoder = encoder === null ? null : Object.freeze({ ...encoder });
    this.scores = new Float64Array(linear.nClasses);
  }

  /** The embedding block's settings (an encoder model's). */
  get embeddingBlock(): EmbeddingBlock {
    return { weight: this.args.encoder_weight, normalize: this.args.encoder_normalize };
  }

  /** Linear scores of one text (and its embedding, for an encoder model) into `this.scores`. */
  /** The features the last text scored had (its known n-grams, and its embedding): 0 is the prior. */
  private lastFeatures = 0;

  private score(text: string, embedding?: Float32Array): Float64Array {
    const scores = this.scores;
    const K = scores.length;
    const w = this.linear.weights;
    scores.set(this.linear.bias);
    const clean = cleanText(String(text), this.args);
    const n = this.vectorizer.vectorize(clean);
    // A sentence embedding is always something to go by.
    this.lastFeatures = n + (embedding === undefined ? 0 : 1);
    const indices = this.vectorizer.vectorIndices;
    const values = this.vectorizer.vectorValues;
    addLinearScores(w, K, indices, values, 0, n, scores);
    if (embedding !== undefined) {
      const offset = this.vectorizer.size;
      const scale = embeddingScale(embedding, this.embeddingBlock);
      for (let d = 0; d < embedding.length; d++) {
        const base = (offset + d) * K;
        const v = embedding[d]! * scale;
        for (let k = 0; k < K; k++) scores[k]! += w[base + k]! * v;
      }
    }
    return scores;
  }

  explain(text: string, top = 10, embedding?: Float32Array): LinearTagExplanation {
    const block =
      this.encoder === null ? undefined : checkEmbeddings([text], embedding && [embedding], this.encoder)[0];
    return explainLinear(this, text, top, block);
  }

  predict(
    texts: readonly string[],
    embeddings?: readonly Float32Array[],
    options?: PredictOptions,
  ): Prediction[] {
    const blocks = this.encoder === null ? undefined : checkEmbeddings(texts, embeddings, this.encoder);
    return texts.map((text, i) => {
      const p = this.score(text, blocks?.[i]);
      const best = argmax(p);
      probabilitiesInPlace(p, this.linear.link);
      return predictionOf(this, p, best, options, this.lastFeatures);
    });
  }
}
