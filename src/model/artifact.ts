/**
 * Versioned model artifact: `tagger-model.json` (format, tags, args, threshold, vocabulary, checksum)
 * plus `weights.bin` (little-endian float64: idf[V], weights[V*K] feature-major, bias[K]).
 * Decoding validates everything and reports problems as ModelFormatError, never as a crash.
 *
 * Format history: `tagger-model/1` — one TfidfVectorizer; `tagger-model/1.1` (additive) — the
 * `sublinear_tf` arg and the `char_wb+word` analyzer, whose manifest adds `blocks` (each block's analyzer,
 * n-gram range and feature count, in column order) and `block_weight`; the vocabulary and idf are the
 * blocks' concatenated; later, also additively, the `ensemble` arg (a seed ensemble is stored as its
 * members' averaged weights, one ordinary linear model, so only args records it); `tagger-model/1.2` — the
 * `loss` arg (hinge and modified-Huber models, whose probabilities differ: readers before it would have
 * read them as log-loss models), `class_weight`, `min_df` and `ngram_min_range`; the files' layout is
 * unchanged, the bump makes older readers refuse these models by format instead of by an unknown arg;
 * `tagger-model/1.3` — multi-label models (`multi_label` arg): the manifest adds `tag_thresholds`, one
 * probability threshold per tag, and the probabilities are the tags' own (not normalised);
 * `tagger-model/1.4` — the `encoder`, `encoder_weight` and `encoder_normalize` args; an encoder model's
 * manifest adds `encoder` (the EncoderSpec: name, source, sha256 of the ONNX model and of tokenizer.json,
 * pooling, max tokens, dim) and its weights hold (V + dim) × K values, the embedding block's rows after the
 * vocabulary's. Older readers refuse every 1.4 model by its format (a TF-IDF one too: its args have keys
 * they do not know). Decoding an encoder model needs `{ withEncoder: true }`, a promise that the caller
 * computes the embeddings with that encoder (checked against the spec's digests when it loads it).
 * All five are read; a model without an arg loads with the behaviour it was trained with: `/1` without
 * `sublinear_tf` (false), without `ensemble` 1, before 1.2 `loss` log_loss, `class_weight` null, `min_df`
 * 1 and `ngram_min_range` 2.
 */
import { parseTrainingArgs, type TrainingArgs } from './args.js';
import { type EncoderSpec, parseEncoderSpec } from './embeddings.js';
import { ModelFormatError, ModelInputError } from './errors.js';
import { FeatureUnion, type TaggerVectorizer, UNION_WORD_NGRAM_RANGE } from './features.js';
import { OTHER_TAG } from './labels.js';
import { type LinearModel, linkOf } from './sgd.js';
import { LinearTagModel, type TagModel } from './tagger.js';
import { type TfidfAnalyzer, TfidfVectorizer } from './tfidf.js';

export const MODEL_FORMAT = 'tagger-model/1.4';
/** Every format this version reads (older first). */
export const READABLE_MODEL_FORMATS: readonly string[] = Object.freeze([
  'tagger-model/1',
  'tagger-model/1.1',
  'tagger-model/1.2',
  'tagger-model/1.3',
  MODEL_FORMAT,
]);
const MANIFEST = 'tagger-model.json';
const WEIGHTS = 'weights.bin';
export const MODEL_FILES: readonly string[] = Object.freeze([MANIFEST, WEIGHTS]);

interface Manifest {
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
  /** `char_wb+word` only: the feature blocks in column order. */
  blocks?: ManifestBlock[];
  /** `char_wb+word` only: the factor every block's l2-normalised values are scaled by. */
  block_weight?: number;
  /** Encoder models (format 1.4): the encoder whose embeddings the model takes. */
  encoder?: EncoderSpec;
}

interface ManifestBlock {
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

/** Serialises a model trained by trainTagger into its files (name → bytes). */
export function encodeModel(model: TagModel): Record<string, Uint8Array> {
  if (!(model instanceof LinearTagModel)) {
    throw new ModelInputError(
      'model/artifact: encodeModel needs a model returned by trainTagger or decodeModel',
    );
  }
  const { vectorizer, linear } = model;
  const V = vectorizer.size;
  const F = linear.nFeatures;
  const K = linear.nClasses;
  const first = vectorizer instanceof FeatureUnion ? vectorizer.parts[0]! : vectorizer;
  const bytes = new Uint8Array(8 * (V + F * K + K));
  const view = new DataView(bytes.buffer);
  let offset = 0;
  for (const array of [vectorizer.idf, linear.weights, linear.bias]) {
    for (let i = 0; i < array.length; i++, offset += 8) view.setFloat64(offset, array[i]!, true);
  }
  const manifest: Manifest = {
    format: MODEL_FORMAT,
    tags: [...model.tags],
    args: model.args,
    threshold: model.threshold,
    ...(model.tagThresholds === null ? {} : { tag_thresholds: [...model.tagThresholds] }),
    ngram_range: [first.ngramMin, first.ngramMax],
    n_features: V,
    vocabulary: [...vectorizer.vocabulary],
    weights_crc32: crc32(bytes),
    ...(model.encoder === null ? {} : { encoder: { ...model.encoder } }),
  };
  if (vectorizer instanceof FeatureUnion) {
    manifest.blocks = vectorizer.parts.map((p) => ({
      analyzer: p.analyzer,
      ngram_range: [p.ngramMin, p.ngramMax],
      n_features: p.size,
    }));
    manifest.block_weight = vectorizer.weight;
  }
  return { [MANIFEST]: new TextEncoder().encode(JSON.stringify(manifest)), [WEIGHTS]: bytes };
}

const bad = (what: string): never => {
  throw new ModelFormatError(
    `model/artifact: ${what}; re-save the model with this version of tagger or retrain it`,
  );
};

export interface DecodeOptions {
  /**
   * The caller will give the model the embeddings of its encoder (it loads the encoder the manifest names
   * and checks its digests). Without it an encoder model is refused: nothing else could predict with it.
   */
  withEncoder?: boolean;
}

/** Loads files produced by encodeModel; checks the format version, shapes, checksum and values. */
export function decodeModel(files: Record<string, Uint8Array>, options: DecodeOptions = {}): TagModel {
  if (files === null || typeof files !== 'object') bad(`expected a map of model files, got ${String(files)}`);
  for (const name of MODEL_FILES) {
    if (!(files[name] instanceof Uint8Array))
      bad(`missing file ${name} (have: ${Object.keys(files).join(', ') || 'none'})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(files[MANIFEST]));
  } catch (error) {
    return bad(`${MANIFEST} is not valid UTF-8 JSON (${(error as Error).message})`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    bad(`${MANIFEST} must hold a JSON object`);
  const m = raw as Partial<Manifest>;
  if (typeof m.format !== 'string' || !m.format.startsWith('tagger-model/')) {
    bad(`${MANIFEST} has format ${JSON.stringify(m.format)}, which is not a tagger model`);
  }
  if (!READABLE_MODEL_FORMATS.includes(m.format!))
    bad(
      `unsupported model format ${JSON.stringify(m.format)} (this version reads ${READABLE_MODEL_FORMATS.join(', ')})`,
    );

  const tags = m.tags;
  if (
    !Array.isArray(tags) ||
    tags.length < 1 ||
    !tags.every((t) => typeof t === 'string') ||
    new Set(tags).size !== tags.length ||
    !tags.includes(OTHER_TAG)
  ) {
    bad(`tags must be distinct strings including "${OTHER_TAG}", got ${JSON.stringify(tags)}`);
  }
  let args: TrainingArgs;
  try {
    // Models saved before an arg existed were trained with its old behaviour: softmax for `classifier`,
    // raw term counts for `sublinear_tf`, a single model for `ensemble`, no refit for `refit`; fill those
    // in rather than the current defaults.
    const isObject = m.args !== null && typeof m.args === 'object' && !Array.isArray(m.args);
    const legacy: Record<string, unknown> = {};
    if (isObject && !Object.hasOwn(m.args as object, 'classifier')) legacy.classifier = 'softmax';
    if (isObject && !Object.hasOwn(m.args as object, 'sublinear_tf')) legacy.sublinear_tf = false;
    if (isObject && !Object.hasOwn(m.args as object, 'ensemble')) legacy.ensemble = 1;
    if (isObject && !Object.hasOwn(m.args as object, 'refit')) legacy.refit = false;
    if (isObject && !Object.hasOwn(m.args as object, 'loss')) legacy.loss = 'log_loss';
    if (isObject && !Object.hasOwn(m.args as object, 'class_weight')) legacy.class_weight = null;
    if (isObject && !Object.hasOwn(m.args as object, 'min_df')) legacy.min_df = 1;
    if (isObject && !Object.hasOwn(m.args as object, 'ngram_min_range')) legacy.ngram_min_range = 2;
    args = parseTrainingArgs(isObject ? { ...m.args, ...legacy } : m.args);
  } catch (error) {
    return bad(`invalid args (${(error as Error).message})`);
  }
  const threshold = m.threshold;
  if (threshold !== null && (typeof threshold !== 'number' || !(threshold >= 0 && threshold <= 1))) {
    bad(`threshold must be null or a number in [0, 1], got ${JSON.stringify(threshold)}`);
  }
  const tagThresholds = m.tag_thresholds;
  if (args!.multi_label) {
    const fits =
      READABLE_MODEL_FORMATS.indexOf(m.format!) >= READABLE_MODEL_FORMATS.indexOf('tagger-model/1.3') &&
      Array.isArray(tagThresholds) &&
      tagThresholds.length === tags!.length &&
      tagThresholds.every((t) => typeof t === 'number' && t >= 0 && t <= 1);
    if (!fits) {
      bad(
        `a multi-label model needs tag_thresholds, one number in [0, 1] per tag (${tags!.length}), got ${JSON.stringify(tagThresholds)}`,
      );
    }
    if (threshold !== null)
      bad(`a multi-label model has no single threshold, got ${JSON.stringify(threshold)}`);
  } else if (tagThresholds !== undefined) {
    bad('tag_thresholds belong to multi-label models, but args.multi_label is false');
  }
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
  let encoder: EncoderSpec | null = null;
  if (args!.encoder !== null) {
    if (m.format !== MODEL_FORMAT) bad(`an encoder model needs format ${MODEL_FORMAT}, got ${m.format}`);
    encoder = parseEncoderSpec(m.encoder);
    if (!options.withEncoder) {
      // Not `bad`: the model is fine, re-saving or retraining would not help.
      throw new ModelFormatError(
        `model/artifact: this model takes sentence embeddings from the encoder ${encoder.name} (${MODEL_FORMAT}), and this reader does not compute them`,
      );
    }
  } else if (m.encoder !== undefined) {
    bad('the manifest names an encoder, but args.encoder is null');
  }
  const F = V + (encoder?.dim ?? 0);
  const K = tags!.length;
  const bytes = files[WEIGHTS]!;
  const expected = 8 * (V + F * K + K);
  if (bytes.byteLength !== expected) {
    bad(
      `${WEIGHTS} has ${bytes.byteLength} bytes, expected ${expected} for ${F} features and ${K} tags (truncated?)`,
    );
  }
  if (m.weights_crc32 !== crc32(bytes))
    bad(`${WEIGHTS} does not match its checksum in ${MANIFEST} (corrupt)`);

  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const read = (from: number, n: number): Float64Array => {
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      out[i] = view.getFloat64((from + i) * 8, true);
      if (!Number.isFinite(out[i]!)) bad(`${WEIGHTS} holds a non-finite number at value ${from + i}`);
    }
    return out;
  };
  const idf = read(0, V);
  const linear: LinearModel = {
    nFeatures: F,
    nClasses: K,
    weights: read(V, F * K),
    bias: read(V + F * K, K),
    link: linkOf(args.classifier, args.loss, args.multi_label),
  };
  let vectorizer: TaggerVectorizer;
  try {
    vectorizer =
      args.analyzer === 'char_wb+word'
        ? unionFromManifest(m, args, vocabulary!, idf)
        : TfidfVectorizer.fromParts(
            {
              analyzer: args.analyzer,
              ngramMin: range![0],
              ngramMax: range![1],
              sublinearTf: args.sublinear_tf,
            },
            vocabulary!,
            idf,
          );
  } catch (error) {
    if (error instanceof ModelFormatError) throw error;
    return bad(`cannot rebuild the vectorizer (${(error as Error).message})`);
  }
  return new LinearTagModel(
    tags!,
    args!,
    threshold ?? null,
    vectorizer,
    linear,
    tagThresholds ?? null,
    encoder,
  );
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
