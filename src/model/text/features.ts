/**
 * Feature extraction for the tagger: one TfidfVectorizer, or (`analyzer: 'char_wb+word'`) the union of a
 * char_wb n-gram vectorizer and a word unigram + bigram vectorizer, as scikit-learn's
 * `FeatureUnion([char_wb, word], transformer_weights={both: 1/√2})`: each block is l2-normalised on its
 * own, scaled by 1/√2 and the blocks are stacked side by side (char_wb features first), so a document
 * with features in both blocks has unit norm.
 */

import { ModelFormatError } from '../errors.js';

import {
  type CsrMatrix,
  type TextVectorizer,
  type TfidfAnalyzer,
  TfidfVectorizer,
  transformToCsr,
} from './tfidf.js';

/** Word n-gram range of the word block of `char_wb+word` (unigrams and bigrams). */
export const UNION_WORD_NGRAM_RANGE: readonly [number, number] = Object.freeze([1, 2]) as [number, number];
/** Weight of each block of a union: 1/√2, so two unit-norm blocks stack to a unit-norm row. */
export const UNION_BLOCK_WEIGHT = Math.SQRT1_2;

/** Horizontal stack of fitted TfidfVectorizers, each block scaled by `weight` (sklearn's FeatureUnion). */
export class FeatureUnion implements TextVectorizer {
  readonly parts: readonly TfidfVectorizer[];
  readonly weight: number;
  readonly size: number;
  /** Column offset of each part. */
  private readonly offsets: Int32Array;
  private indices = new Int32Array(256);
  private values = new Float64Array(256);

  constructor(parts: readonly TfidfVectorizer[], weight: number) {
    if (parts.length === 0)
      throw new ModelFormatError('model/features: a feature union needs at least one part');
    this.parts = Object.freeze([...parts]);
    this.weight = weight;
    this.offsets = new Int32Array(parts.length);
    let size = 0;
    parts.forEach((part, i) => {
      this.offsets[i] = size;
      size += part.size;
    });
    this.size = size;
  }

  /** Feature strings of every part, in column order. */
  get vocabulary(): readonly string[] {
    return this.parts.flatMap((p) => p.vocabulary);
  }

  /** Idf of every column, in column order. */
  get idf(): Float64Array {
    const out = new Float64Array(this.size);
    this.parts.forEach((p, i) => {
      out.set(p.idf, this.offsets[i]!);
    });
    return out;
  }

  vectorize(doc: string): number {
    let n = 0;
    for (let i = 0; i < this.parts.length; i++) {
      const part = this.parts[i]!;
      const m = part.countTerms(doc);
      if (n + m > this.indices.length) {
        const size = 2 * (n + m);
        const i2 = new Int32Array(size);
        i2.set(this.indices.subarray(0, n));
        this.indices = i2;
        const v2 = new Float64Array(size);
        v2.set(this.values.subarray(0, n));
        this.values = v2;
      }
      part.writeVector(this.indices, this.values, n, this.offsets[i]!, this.weight);
      n += m;
    }
    return n;
  }

  get vectorIndices(): Int32Array {
    return this.indices;
  }

  get vectorValues(): Float64Array {
    return this.values;
  }

  transform(docs: readonly string[], shared = false): CsrMatrix {
    return transformToCsr(this, docs, shared);
  }
}

export type TaggerVectorizer = TfidfVectorizer | FeatureUnion;

/**
 * `char_wb+word`: the union of char_wb n-grams (2..ngram_max_range) and word unigrams + bigrams, each block
 * l2-normalised and scaled by 1/√2 (sklearn's FeatureUnion of two TfidfVectorizers).
 */
export type Analyzer = TfidfAnalyzer | 'char_wb+word';

/** The training arguments the features are made with (TrainingArgs has them). */
export interface VectorizerArgs {
  analyzer: Analyzer;
  ngram_max_range: number;
  sublinear_tf: boolean;
  ngram_min_range?: number;
  min_df?: number;
}

/** Fits the feature extractor the training args describe on (preprocessed) documents. */
export function fitVectorizer(docs: readonly string[], args: VectorizerArgs): TaggerVectorizer {
  const sublinearTf = args.sublinear_tf;
  const minDf = args.min_df ?? 1;
  const ngramMin = args.ngram_min_range ?? 2;
  if (args.analyzer !== 'char_wb+word') {
    return TfidfVectorizer.fit(docs, {
      analyzer: args.analyzer,
      ngramMin,
      ngramMax: args.ngram_max_range,
      sublinearTf,
      minDf,
    });
  }
  const chars = TfidfVectorizer.fit(docs, {
    analyzer: 'char_wb',
    ngramMin,
    ngramMax: args.ngram_max_range,
    sublinearTf,
    minDf,
  });
  const words = TfidfVectorizer.fit(docs, {
    analyzer: 'word',
    ngramMin: UNION_WORD_NGRAM_RANGE[0],
    ngramMax: UNION_WORD_NGRAM_RANGE[1],
    sublinearTf,
    minDf,
  });
  return new FeatureUnion([chars, words], UNION_BLOCK_WEIGHT);
}
