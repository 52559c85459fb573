/**
 * The model of the member classifiers: one vectorizer, whose features are computed once per text, and one
 * member (a classifier alone) or several (a soft vote), each a linear model over them. A member's scores
 * become its probabilities by its link or its Platt sigmoids; a lone member's are the model's, a vote's are
 * the weighted mean of its members' (combine.ts). Tags no training row had get probability 0. Predictions
 * then follow the same rules as the SGD model's (threshold fallback, per-tag thresholds). In an encoder
 * run the members that read embeddings (member.ts's readsEmbeddings) also score the text's embedding
 * block, after the vocabulary's columns, as the SGD model does; the others score the TF-IDF block alone.
 */

import { ModelInputError } from '../../errors.js';
import type { Explanation } from '../../explain.js';
import { type PredictOptions, predictionOf } from '../../prediction.js';
import type { Prediction, TagModel } from '../../tag-model.js';
import { checkEmbeddings, type EncoderSpec, embeddingScale } from '../../text/embeddings.js';
import type { TaggerVectorizer } from '../../text/features.js';
import { cleanText } from '../../text/preprocess.js';
import type { TrainingArgs } from '../../training-args.js';
import { combinedProbabilities, type MemberParts } from './combine.js';
import { explainMembers } from './member-explain.js';
import type { Member } from './train-member.js';

/** The TagModel of the member classifiers (one alone, or a soft vote); member-artifact.ts reads its parts. */
export class MemberTagModel implements TagModel, MemberParts {
  readonly tags: readonly string[];
  readonly args: TrainingArgs;
  readonly threshold: number | null;
  readonly tagThresholds: readonly number[] | null;
  readonly vectorizer: TaggerVectorizer;
  readonly members: readonly Member[];
  readonly classes: Int32Array;
  readonly multiLabel: boolean;
  /** The encoder whose embeddings the members that read them take; null for a TF-IDF model. */
  readonly encoder: EncoderSpec | null;
  // Scratch for predict(); overwritten by every call (JS is single-threaded).
  private readonly probabilities: Float64Array;
  private readonly scratch: Float64Array;
  // An encoder model's features of one text: the vectorizer's entries, then the embedding block.
  private indices = new Int32Array(0);
  private values = new Float64Array(0);

  constructor(
    tags: readonly string[],
    args: TrainingArgs,
    threshold: number | null,
    vectorizer: TaggerVectorizer,
    members: readonly Member[],
    classes: Int32Array,
    tagThresholds: readonly number[] | null = null,
    encoder: EncoderSpec | null = null,
  ) {
    if (args.multi_label !== (tagThresholds !== null)) {
      throw new ModelInputError(
        'model/members: a multi-label model needs one threshold per tag, and a single-label model none',
      );
    }
    if (members.length === 0 || members.some((m) => m.nClasses !== classes.length)) {
      throw new ModelInputError('model/members: every member must score the same trained tags');
    }
    this.tags = Object.freeze([...tags]);
    this.args = Object.freeze({ ...args });
    this.threshold = threshold;
    this.tagThresholds = tagThresholds === null ? null : Object.freeze([...tagThresholds]);
    this.vectorizer = vectorizer;
    this.members = Object.freeze([...members]);
    this.classes = classes;
    this.multiLabel = args.multi_label;
    if ((args.encoder !== null) !== (encoder !== null)) {
      throw new ModelInputError(
        'model/members: an encoder model needs its encoder spec, and a TF-IDF model none',
      );
    }
    const V = vectorizer.size;
    for (const member of members) {
      const expected = V + (member.readsEmbeddings ? (encoder?.dim ?? Number.NaN) : 0);
      if (member.nFeatures !== expected) {
        throw new ModelInputError(
          `model/members: the ${member.classifier} member has ${member.nFeatures} features, the ${member.readsEmbeddings ? 'TF-IDF and embedding blocks give' : 'vocabulary gives'} ${expected}`,
        );
      }
    }
    this.encoder = encoder === null ? null : Object.freeze({ ...encoder });
    this.probabilities = new Float64Array(tags.length);
    this.scratch = new Float64Array(classes.length);
  }

  /** The features the last text scored had (its vocabulary's, and an encoder model's embedding block; 0: the answer is the prior). */
  private lastFeatures = 0;

  /**
   * The features of one text (the vectorizer's, computed once) and, for an encoder model, its embedding
   * block after them: `[0, n)` with the block's `blockEntries` last.
   */
  features(
    text: string,
    embedding?: Float32Array,
  ): { indices: Int32Array; values: Float64Array; n: number; blockEntries: number } {
    const n = this.vectorizer.vectorize(cleanText(String(text), this.args));
    this.lastFeatures = n + (embedding?.length ?? 0);
    const { vectorIndices, vectorValues } = this.vectorizer;
    if (embedding === undefined) return { indices: vectorIndices, values: vectorValues, n, blockEntries: 0 };
    const dim = embedding.length;
    if (this.indices.length < n + dim) {
      this.indices = new Int32Array(2 * (n + dim));
      this.values = new Float64Array(2 * (n + dim));
    }
    this.indices.set(vectorIndices.subarray(0, n));
    this.values.set(vectorValues.subarray(0, n));
    const scale = embeddingScale(embedding, {
      weight: this.args.encoder_weight,
      normalize: this.args.encoder_normalize,
    });
    const V = this.vectorizer.size;
    for (let d = 0; d < dim; d++) {
      this.indices[n + d] = V + d;
      this.values[n + d] = embedding[d]! * scale;
    }
    return { indices: this.indices, values: this.values, n: n + dim, blockEntries: dim };
  }

  /** The model's probabilities of one text into `this.probabilities`. */
  private probabilitiesOf(text: string, embedding?: Float32Array): Float64Array {
    const { indices, values, n, blockEntries } = this.features(text, embedding);
    combinedProbabilities(this, indices, values, 0, n, this.probabilities, this.scratch, blockEntries);
    return this.probabilities;
  }

  /** An encoder model needs one embedding per text (src/encoder computes them); a TF-IDF one ignores them. */
  predict(
    texts: readonly string[],
    embeddings?: readonly Float32Array[],
    options?: PredictOptions,
  ): Prediction[] {
    const blocks = this.encoder === null ? undefined : checkEmbeddings(texts, embeddings, this.encoder);
    return texts.map((text, i) => {
      const p = this.probabilitiesOf(text, blocks?.[i]);
      let best = 0;
      for (let k = 1; k < p.length; k++) if (p[k]! > p[best]!) best = k;
      return predictionOf(this, p, best, options, this.lastFeatures);
    });
  }

  explain(text: string, top = 10, embedding?: Float32Array): Explanation {
    const block =
      this.encoder === null ? undefined : checkEmbeddings([text], embedding && [embedding], this.encoder)[0];
    return explainMembers(this, text, top, block);
  }
}
