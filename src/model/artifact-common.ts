/**
 * What every saved model has in common (see artifact.ts for the format history): the file names, the
 * manifest's shape, the weights file's checksum, the error every decoding problem becomes, and the
 * vectorizer's part of the manifest and of weights.bin (its idf comes first).
 */

import { ModelFormatError } from './errors.js';
import { type EncoderSpec, parseEncoderSpec } from './text/embeddings.js';
import { FeatureUnion, type TaggerVectorizer, UNION_WORD_NGRAM_RANGE } from './text/features.js';
import { type TfidfAnalyzer, TfidfVectorizer } from './text/tfidf.js';
import type { TrainingArgs } from './training-args.js';

export const MANIFEST = 'tagger-model.json';
export const WEIGHTS = 'weights.bin';

export interface Manifest {
  format: string;
  tags: string[];
  args: TrainingArgs;
  threshold: number | null;
  /** Multi-label models (format 1.3): each tag's probability threshold, in `tags` order. */
  tag_thresholds?: number[];
  ngram_range: [number, number];
  n_features: number;
  vocabulary: string[];
  weights_crc32: number;
  /**
   * The size of weights.bin in bytes (written since issue 42, in every format: readers before it ignore
   * it), so a loader refuses a file of another size before reading it.
   */
  weights_bytes?: number;
  /** `char_wb+word` only: the feature blocks in column order. */
  blocks?: ManifestBlock[];
  /** `char_wb+word` only: the factor every block's l2-normalised values are scaled by. */
  block_weight?: number;
  /** Member classifiers (format 1.4): the tags the members score, in their column order. */
  trained_tags?: string[];
  /** Member classifiers (format 1.4): each member's classifier, vote weight, inputs, link and Platt sigmoids. */
  members?: ManifestMember[];
  /** Encoder models (format 1.5): the encoder whose embeddings the model takes. */
  encoder?: EncoderSpec;
  /** Cascades (format 1.7): τ, how it was chosen, and each stage's manifest (cascade/cascade-artifact.ts). */
  cascade?: unknown;
}

export interface ManifestMember {
  classifier: string;
  weight: number;
  inputs: string;
  link: string;
  calibration: { a: number[]; b: number[] } | null;
  /**
   * tagger-model/1.6: how its weights are stored (before 1.6: dense float64). `layout` dense (V × trained
   * tags) or sparse by feature (start[V + 1], classes[stored], values[stored]); `dtype` of the values;
   * whether a per-feature (float, V) and a per-class (float64) term follow (member-weights.ts).
   */
  weights?: {
    layout: 'dense' | 'sparse';
    dtype: 'float32' | 'float64';
    stored: number;
    per_feature: boolean;
    per_class: boolean;
  };
}

export interface ManifestBlock {
  analyzer: TfidfAnalyzer;
  ngram_range: [number, number];
  n_features: number;
}

// CRC-32 (IEEE) detects truncation and bit rot; written out because src/model may import no Node modules.
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export const bad = (what: string): never => {
  throw new ModelFormatError(
    `model/artifact: ${what}; re-save the model with this version of tagger or retrain it`,
  );
};

/** The vectorizer's part of the manifest (its vocabulary, n-gram range and, for a union, its blocks). */
export function vectorizerManifest(
  vectorizer: TaggerVectorizer,
): Pick<Manifest, 'ngram_range' | 'n_features' | 'vocabulary' | 'blocks' | 'block_weight'> {
  const first = vectorizer instanceof FeatureUnion ? vectorizer.parts[0]! : vectorizer;
  return {
    ngram_range: [first.ngramMin, first.ngramMax],
    n_features: vectorizer.size,
    vocabulary: [...vectorizer.vocabulary],
    ...(vectorizer instanceof FeatureUnion
      ? {
          blocks: vectorizer.parts.map((p) => ({
            analyzer: p.analyzer,
            ngram_range: [p.ngramMin, p.ngramMax] as [number, number],
            n_features: p.size,
          })),
          block_weight: vectorizer.weight,
        }
      : {}),
  };
}

/** Little-endian float64 writer/reader over weights.bin; every value read must be finite. */
export function writeFloats(arrays: readonly Float64Array[]): Uint8Array {
  const bytes = new Uint8Array(8 * arrays.reduce((n, a) => n + a.length, 0));
  const view = new DataView(bytes.buffer);
  let offset = 0;
  for (const array of arrays) {
    for (let i = 0; i < array.length; i++, offset += 8) view.setFloat64(offset, array[i]!, true);
  }
  return bytes;
}

/**
 * weights.bin written block by block (little-endian): float64, float32 or int32 arrays one after another,
 * for layouts whose blocks are not all float64 (tagger-model/1.6's sparse and float32 weights).
 */
export class ByteWriter {
  private readonly blocks: { kind: 'f64' | 'f32' | 'i32'; array: ArrayLike<number> }[] = [];
  private size = 0;

  float64s(array: ArrayLike<number>): this {
    return this.push('f64', array, 8);
  }
  float32s(array: ArrayLike<number>): this {
    return this.push('f32', array, 4);
  }
  int32s(array: ArrayLike<number>): this {
    return this.push('i32', array, 4);
  }
  /** Float32 for a Float32Array, else float64: values are written at the precision the model holds. */
  values(array: Float32Array | Float64Array): this {
    return array instanceof Float32Array ? this.float32s(array) : this.float64s(array);
  }

  private push(kind: 'f64' | 'f32' | 'i32', array: ArrayLike<number>, width: number): this {
    this.blocks.push({ kind, array });
    this.size += width * array.length;
    return this;
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    const view = new DataView(out.buffer);
    let at = 0;
    for (const { kind, array } of this.blocks) {
      for (let i = 0; i < array.length; i++) {
        if (kind === 'f64') {
          view.setFloat64(at, array[i]!, true);
          at += 8;
        } else if (kind === 'f32') {
          view.setFloat32(at, array[i]!, true);
          at += 4;
        } else {
          view.setInt32(at, array[i]!, true);
          at += 4;
        }
      }
    }
    return out;
  }
}

/** Reads what a ByteWriter wrote, block by block; a value past the end or non-finite is `bad`. */
export class ByteReader {
  private readonly view: DataView;
  private at = 0;

  constructor(bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private take(n: number, width: number): number {
    const from = this.at;
    if (from + n * width > this.view.byteLength)
      bad(`${WEIGHTS} ends before the values its manifest describes (truncated?)`);
    this.at += n * width;
    return from;
  }

  float64s(n: number): Float64Array {
    const from = this.take(n, 8);
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getFloat64(from + 8 * i, true);
    return finite(out, from);
  }
  float32s(n: number): Float32Array {
    const from = this.take(n, 4);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getFloat32(from + 4 * i, true);
    return finite(out, from);
  }
  int32s(n: number): Int32Array {
    const from = this.take(n, 4);
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getInt32(from + 4 * i, true);
    return out;
  }
  values(n: number, dtype: 'float32' | 'float64'): Float32Array | Float64Array {
    return dtype === 'float32' ? this.float32s(n) : this.float64s(n);
  }

  /** Refuses bytes left over: the file is not the one the manifest describes. */
  end(): void {
    if (this.at !== this.view.byteLength) {
      bad(
        `${WEIGHTS} has ${this.view.byteLength} bytes, but its manifest describes ${this.at} (truncated or extended?)`,
      );
    }
  }
}

function finite<T extends Float32Array | Float64Array>(values: T, byte: number): T {
  for (let i = 0; i < values.length; i++) {
    if (!Number.isFinite(values[i]!))
      bad(`${WEIGHTS} holds a non-finite number at byte ${byte + i * values.BYTES_PER_ELEMENT}`);
  }
  return values;
}

export function floatReader(bytes: Uint8Array): (from: number, n: number) => Float64Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (from, n) => {
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      out[i] = view.getFloat64((from + i) * 8, true);
      if (!Number.isFinite(out[i]!)) bad(`${WEIGHTS} holds a non-finite number at value ${from + i}`);
    }
    return out;
  };
}

/** A TF-IDF model's vocabulary, checked with its n-gram range and feature count (the families with a vectorizer). */
export function checkedVocabulary(m: Partial<Manifest>): string[] {
  const range = m.ngram_range;
  if (!Array.isArray(range) || range.length !== 2 || !range.every((n) => Number.isInteger(n) && n >= 1)) {
    bad(`ngram_range must be two positive integers, got ${JSON.stringify(range)}`);
  }
  const vocabulary = m.vocabulary;
  if (!Array.isArray(vocabulary) || !vocabulary.every((g) => typeof g === 'string' && g !== '')) {
    bad('vocabulary must be an array of non-empty strings');
  }
  const V = vocabulary!.length;
  if (m.n_features !== V)
    bad(`n_features is ${JSON.stringify(m.n_features)} but the vocabulary has ${V} entries`);
  return vocabulary!;
}

/** Rebuilds the vectorizer of a checked manifest from its vocabulary and idf. */
export function decodeVectorizer(
  m: Partial<Manifest>,
  args: TrainingArgs,
  vocabulary: string[],
  idf: Float64Array,
): TaggerVectorizer {
  const range = m.ngram_range!;
  try {
    return args.analyzer === 'char_wb+word'
      ? unionFromManifest(m, args, vocabulary, idf)
      : TfidfVectorizer.fromParts(
          {
            analyzer: args.analyzer,
            ngramMin: range[0],
            ngramMax: range[1],
            sublinearTf: args.sublinear_tf,
          },
          vocabulary,
          idf,
        );
  } catch (error) {
    if (error instanceof ModelFormatError) throw error;
    return bad(`cannot rebuild the vectorizer (${(error as Error).message})`);
  }
}

/** Rebuilds a `char_wb+word` feature union from its manifest blocks (format 1.1). */
function unionFromManifest(
  m: Partial<Manifest>,
  args: TrainingArgs,
  vocabulary: string[],
  idf: Float64Array,
): FeatureUnion {
  const blocks = m.blocks;
  const expected = [
    { analyzer: 'char_wb', ngram_range: m.ngram_range },
    { analyzer: 'word', ngram_range: UNION_WORD_NGRAM_RANGE },
  ];
  if (
    m.format === 'tagger-model/1' ||
    !Array.isArray(blocks) ||
    blocks.length !== expected.length ||
    !blocks.every(
      (b, i) =>
        b !== null &&
        typeof b === 'object' &&
        b.analyzer === expected[i]!.analyzer &&
        Array.isArray(b.ngram_range) &&
        b.ngram_range.length === 2 &&
        b.ngram_range[0] === expected[i]!.ngram_range![0] &&
        b.ngram_range[1] === expected[i]!.ngram_range![1] &&
        Number.isInteger(b.n_features) &&
        b.n_features >= 1,
    )
  ) {
    return bad(
      `analyzer char_wb+word needs "blocks" [char_wb ${JSON.stringify(m.ngram_range)}, word [1,2]] with their feature counts, got ${JSON.stringify(blocks)}`,
    );
  }
  const total = blocks.reduce((sum, b) => sum + b.n_features, 0);
  if (total !== vocabulary.length)
    bad(`blocks hold ${total} features but the vocabulary has ${vocabulary.length}`);
  const weight = m.block_weight;
  if (typeof weight !== 'number' || !(weight > 0 && weight <= 1)) {
    bad(`block_weight must be a number in (0, 1], got ${JSON.stringify(weight)}`);
  }
  let from = 0;
  const parts = blocks.map((b) => {
    const to = from + b.n_features;
    const part = TfidfVectorizer.fromParts(
      {
        analyzer: b.analyzer,
        ngramMin: b.ngram_range[0],
        ngramMax: b.ngram_range[1],
        sublinearTf: args.sublinear_tf,
      },
      vocabulary.slice(from, to),
      idf.slice(from, to),
    );
    from = to;
    return part;
  });
  return new FeatureUnion(parts, weight!);
}

/** The manifest fields every model has, checked by decodeModel before it hands over to the family's decode. */
export interface CheckedManifest {
  manifest: Partial<Manifest>;
  tags: string[];
  args: TrainingArgs;
  threshold: number | null;
  tagThresholds: number[] | null;
  /** The manifest's format, one this version reads. */
  format: string;
}

export interface DecodeOptions {
  /**
   * The caller will give the model the embeddings of its encoder (it loads the encoder the manifest names
   * and checks its digests). Without it an encoder model is refused: nothing else could predict with it.
   */
  withEncoder?: boolean;
}

/** Every format this version reads (older first). */
export const READABLE_MODEL_FORMATS: readonly string[] = Object.freeze([
  'tagger-model/1',
  'tagger-model/1.1',
  'tagger-model/1.2',
  'tagger-model/1.3',
  'tagger-model/1.4',
  'tagger-model/1.5',
  'tagger-model/1.6',
  'tagger-model/1.7',
  'tagger-model/1.8',
]);
/** The format every model is written in: the newest. */
export const MODEL_FORMAT = READABLE_MODEL_FORMATS.at(-1)!;

/** Whether a readable `format` is `min` or newer. */
export const formatAtLeast = (format: string, min: string): boolean =>
  READABLE_MODEL_FORMATS.indexOf(format) >= READABLE_MODEL_FORMATS.indexOf(min);

/**
 * An encoder model's encoder spec from its manifest (null for a TF-IDF model): the format must be at least
 * `since` (the one that let this family take embeddings), and the reader must compute the embeddings.
 */
export function decodeEncoderSpec(
  m: Partial<Manifest>,
  format: string,
  args: TrainingArgs,
  options: DecodeOptions,
  since: string,
): EncoderSpec | null {
  if (args.encoder === null) return null;
  if (!formatAtLeast(format, since))
    bad(`an encoder model of classifier ${args.classifier} needs format ${since} or later, got ${format}`);
  const encoder = parseEncoderSpec(m.encoder);
  if (!options.withEncoder) {
    // Not `bad`: the model is fine, re-saving or retraining would not help.
    throw new ModelFormatError(
      `model/artifact: this model takes sentence embeddings from the encoder ${encoder.name} (${format}), and this reader does not compute them`,
    );
  }
  return encoder;
}
