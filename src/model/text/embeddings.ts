/**
 * Sentence embeddings as an input block of the model. src/model stays pure: it never runs an encoder; the
 * caller computes the embeddings (src/encoder) and hands them in, one Float32Array per text. The block is
 * stacked after the TF-IDF columns: each embedding, L2-normalised when `encoder_normalize` is set, scaled
 * by `encoder_weight`; the linear classifier learns one weight per (embedding dimension, tag) like any
 * other feature.
 */
import { ModelFormatError, ModelInputError } from '../errors.js';
import { float64Array, int32Array } from '../parallel.js';
import type { CsrMatrix } from './tfidf.js';

/** Which encoder made the embeddings a model was trained on; what loading checks the encoder against. */
export interface EncoderSpec {
  /** The name training was given (`minilm`, a directory, a hub id). */
  name: string;
  /** Where its files came from (`local:<dir>`, `hf:<id>@<commit>`). */
  source: string;
  model_sha256: string;
  tokenizer_sha256: string;
  pooling: 'mean';
  /** Token limit, special tokens included (longer texts are truncated by src/encoder's rule). */
  max_tokens: number;
  /** Embedding size. */
  dim: number;
}

/** Embeddings by text: every text a training or an evaluation sees must be in it. */
export type EmbeddingLookup = ReadonlyMap<string, Float32Array>;

/** The embedding block's settings, from the training args. */
export interface EmbeddingBlock {
  weight: number;
  normalize: boolean;
}

/** The factor an embedding's values are multiplied by: weight, over its norm when normalising. */
export function embeddingScale(v: Float32Array, block: EmbeddingBlock): number {
  if (!block.normalize) return block.weight;
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  return sum > 0 ? block.weight / Math.sqrt(sum) : 0;
}

/** Checks one embedding per text, each of `dim` finite values. */
export function checkEmbeddings(
  texts: readonly string[],
  embeddings: readonly Float32Array[] | undefined,
  spec: EncoderSpec,
): readonly Float32Array[] {
  if (embeddings === undefined || embeddings.length !== texts.length) {
    throw new ModelInputError(
      `model/embeddings: this model needs one sentence embedding (encoder ${spec.name}, ${spec.dim} values) per text; got ${embeddings === undefined ? 'none' : embeddings.length} for ${texts.length} text(s)`,
    );
  }
  embeddings.forEach((v, i) => {
    if (!(v instanceof Float32Array) || v.length !== spec.dim) {
      throw new ModelInputError(
        `model/embeddings: embedding ${i} has ${v instanceof Float32Array ? v.length : 'no'} values, the encoder ${spec.name} gives ${spec.dim}`,
      );
    }
  });
  return embeddings;
}

/** The embeddings of texts from a lookup; a text without one is an input error naming it. */
export function embeddingsOf(texts: readonly string[], lookup: EmbeddingLookup): Float32Array[] {
  return texts.map((text) => {
    const v = lookup.get(text);
    if (v === undefined) {
      throw new ModelInputError(
        `model/embeddings: no sentence embedding was given for the text ${JSON.stringify(text.slice(0, 80))}; compute the embeddings of every text before training or scoring`,
      );
    }
    return v;
  });
}

/**
 * `x` with the embedding block appended as columns x.nCols … x.nCols + dim − 1 of every row (in shared
 * memory when `shared`, for training threads: ../parallel.ts).
 */
export function appendEmbeddingBlock(
  x: CsrMatrix,
  embeddings: readonly Float32Array[],
  dim: number,
  block: EmbeddingBlock,
  shared = false,
): CsrMatrix {
  if (embeddings.length !== x.nRows) {
    throw new ModelInputError(`model/embeddings: ${embeddings.length} embeddings for ${x.nRows} rows`);
  }
  const nnz = x.indptr[x.nRows]!;
  const indptr = int32Array(x.nRows + 1, shared);
  const indices = int32Array(nnz + x.nRows * dim, shared);
  const data = float64Array(nnz + x.nRows * dim, shared);
  let at = 0;
  for (let r = 0; r < x.nRows; r++) {
    const from = x.indptr[r]!;
    const to = x.indptr[r + 1]!;
    indices.set(x.indices.subarray(from, to), at);
    data.set(x.data.subarray(from, to), at);
    at += to - from;
    const v = embeddings[r]!;
    const scale = embeddingScale(v, block);
    for (let d = 0; d < dim; d++) {
      indices[at] = x.nCols + d;
      data[at] = v[d]! * scale;
      at++;
    }
    indptr[r + 1] = at;
  }
  return { nRows: x.nRows, nCols: x.nCols + dim, indptr, indices, data };
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Checks an encoder spec read from a saved model (format 1.5). */
export function parseEncoderSpec(raw: unknown): EncoderSpec {
  const bad = (what: string): never => {
    throw new ModelFormatError(`model/artifact: the manifest's encoder ${what}`);
  };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return bad('must be an object');
  const e = raw as Record<string, unknown>;
  for (const key of ['name', 'source'] as const) {
    if (typeof e[key] !== 'string' || e[key] === '') bad(`needs a non-empty ${key}`);
  }
  for (const key of ['model_sha256', 'tokenizer_sha256'] as const) {
    if (typeof e[key] !== 'string' || !HEX64.test(e[key])) bad(`needs ${key} as 64 hex digits`);
  }
  if (e.pooling !== 'mean') bad(`pooling must be "mean", got ${JSON.stringify(e.pooling)}`);
  for (const key of ['max_tokens', 'dim'] as const) {
    const n = e[key];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 100_000) {
      bad(`needs ${key} as a positive integer, got ${JSON.stringify(n)}`);
    }
  }
  return {
    name: e.name as string,
    source: e.source as string,
    model_sha256: e.model_sha256 as string,
    tokenizer_sha256: e.tokenizer_sha256 as string,
    pooling: 'mean',
    max_tokens: e.max_tokens as number,
    dim: e.dim as number,
  };
}
