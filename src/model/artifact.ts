/**
 * Versioned model artifact: `tagger-model.json` (format, tags, args, threshold, vocabulary, checksum)
 * plus `weights.bin` (little-endian float64: idf[V], weights[F*K] feature-major, bias[K]; F = V, or V + the
 * embedding size for an encoder model).
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
 * probability threshold per tag, and the probabilities are the tags' own (not normalised).
 * `tagger-model/1.4` — the member classifiers (linear_svm, logistic_regression, nb_lr, nb_svm,
 * multinomial_nb, complement_nb) and their soft vote (`classifier` one of them or `soft_vote`): the
 * manifest adds `trained_tags` (the tags the members score, in column order) and `members` (each one's
 * classifier, vote weight, inputs, link and Platt sigmoids), and weights.bin holds, after the idf, each
 * member's weights[V × trained tags] (feature-major) and bias; SGD models keep 1.3's layout under 1.4;
 * `tagger-model/1.5` — the `encoder`, `encoder_weight` and `encoder_normalize` args (SGD classifiers only):
 * an encoder model's manifest adds `encoder` (the EncoderSpec: name, source, sha256 of the ONNX model and
 * of tokenizer.json, pooling, max tokens, dim) and its weights hold (V + dim) × K values, the embedding
 * block's rows after the vocabulary's. Older readers refuse every 1.5 model by its format (a TF-IDF one
 * too: its args have keys they do not know). Decoding an encoder model needs `{ withEncoder: true }`, a
 * promise that the caller computes the embeddings with that encoder (checked against the spec's digests
 * when it loads it).
 * Every model is written in the current format; a reader checks that the format is at least the one that
 * introduced what the model uses (multi-label 1.3, member classifiers 1.4, an encoder 1.5).
 * All six are read; a model without an arg loads with the behaviour it was trained with: `/1` without
 * `sublinear_tf` (false), without `ensemble` 1, before 1.2 `loss` log_loss, `class_weight` null, `min_df`
 * 1 and `ngram_min_range` 2.
 */
import { isSgdClassifier, parseTrainingArgs, type TrainingArgs } from './args.js';
import {
  bad,
  crc32,
  decodeVectorizer,
  floatReader,
  MANIFEST,
  type Manifest,
  vectorizerManifest,
  WEIGHTS,
  writeFloats,
} from './artifact-common.js';
import {
  type CheckedManifest,
  decodeVoteModel,
  encodeVoteModel,
} from './classifiers/members/member-artifact.js';
import { SoftVoteTagModel } from './classifiers/members/member-model.js';
import { type LinearModel, linkOf } from './classifiers/sgd/sgd-solver.js';
import { ModelFormatError, ModelInputError } from './errors.js';
import { OTHER_TAG } from './labels.js';
import { LinearTagModel, type TagModel } from './tagger.js';
import { type EncoderSpec, parseEncoderSpec } from './text/embeddings.js';

export { crc32 } from './artifact-common.js';

export const MODEL_FORMAT = 'tagger-model/1.5';
/** Every format this version reads (older first). */
export const READABLE_MODEL_FORMATS: readonly string[] = Object.freeze([
  'tagger-model/1',
  'tagger-model/1.1',
  'tagger-model/1.2',
  'tagger-model/1.3',
  'tagger-model/1.4',
  MODEL_FORMAT,
]);
export const MODEL_FILES: readonly string[] = Object.freeze([MANIFEST, WEIGHTS]);

/** Whether a readable `format` is `min` or newer. */
const formatAtLeast = (format: string, min: string): boolean =>
  READABLE_MODEL_FORMATS.indexOf(format) >= READABLE_MODEL_FORMATS.indexOf(min);

export interface DecodeOptions {
  /**
   * The caller will give the model the embeddings of its encoder (it loads the encoder the manifest names
   * and checks its digests). Without it an encoder model is refused: nothing else could predict with it.
   */
  withEncoder?: boolean;
}

/** Serialises a model trained by trainTagger into its files (name → bytes). */
export function encodeModel(model: TagModel): Record<string, Uint8Array> {
  const common = (bytes: Uint8Array) => ({
    format: MODEL_FORMAT,
    tags: [...model.tags],
    args: model.args,
    threshold: model.threshold,
    ...(model.tagThresholds === null ? {} : { tag_thresholds: [...model.tagThresholds] }),
    weights_crc32: crc32(bytes),
  });
  if (model instanceof SoftVoteTagModel) {
    const { bytes, manifest } = encodeVoteModel(model);
    return files({ ...common(bytes), ...manifest }, bytes);
  }
  if (!(model instanceof LinearTagModel)) {
    throw new ModelInputError(
      'model/artifact: encodeModel needs a model returned by trainTagger or decodeModel',
    );
  }
  const { vectorizer, linear } = model;
  const bytes = writeFloats([vectorizer.idf, linear.weights, linear.bias]);
  return files(
    {
      ...common(bytes),
      ...vectorizerManifest(vectorizer),
      ...(model.encoder === null ? {} : { encoder: { ...model.encoder } }),
    },
    bytes,
  );
}

function files(manifest: Manifest, bytes: Uint8Array): Record<string, Uint8Array> {
  return { [MANIFEST]: new TextEncoder().encode(JSON.stringify(manifest)), [WEIGHTS]: bytes };
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
      formatAtLeast(m.format!, 'tagger-model/1.3') &&
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
  const bytes = files[WEIGHTS]!;
  const checked: CheckedManifest = {
    manifest: m,
    tags: tags!,
    args: args!,
    threshold: threshold ?? null,
    tagThresholds: tagThresholds ?? null,
    vocabulary: vocabulary!,
  };
  // parseTrainingArgs refuses an encoder with the member classifiers, so only an SGD model has one.
  if (args!.encoder === null && m.encoder !== undefined) {
    bad('the manifest names an encoder, but args.encoder is null');
  }
  if (!isSgdClassifier(args!.classifier)) {
    if (!formatAtLeast(m.format!, 'tagger-model/1.4'))
      bad(`classifier ${args!.classifier} needs format tagger-model/1.4 or later, got ${m.format}`);
    return decodeVoteModel(checked, bytes);
  }
  const encoder = decodeEncoder(m, args!, options);
  const F = V + (encoder?.dim ?? 0);
  const K = tags!.length;
  const expected = 8 * (V + F * K + K);
  if (bytes.byteLength !== expected) {
    bad(
      `${WEIGHTS} has ${bytes.byteLength} bytes, expected ${expected} for ${F} features and ${K} tags (truncated?)`,
    );
  }
  if (m.weights_crc32 !== crc32(bytes))
    bad(`${WEIGHTS} does not match its checksum in ${MANIFEST} (corrupt)`);
  const read = floatReader(bytes);
  const idf = read(0, V);
  const linear: LinearModel = {
    nFeatures: F,
    nClasses: K,
    weights: read(V, F * K),
    bias: read(V + F * K, K),
    link: linkOf(args!.classifier as 'ovr' | 'softmax', args!.loss, args!.multi_label),
  };
  const vectorizer = decodeVectorizer(m, args!, vocabulary!, idf);
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

/** An SGD model's encoder spec (format 1.5 and later), null for a TF-IDF model. */
function decodeEncoder(m: Partial<Manifest>, args: TrainingArgs, options: DecodeOptions): EncoderSpec | null {
  if (args.encoder === null) return null;
  if (!formatAtLeast(m.format!, 'tagger-model/1.5'))
    bad(`an encoder model needs format tagger-model/1.5 or later, got ${m.format}`);
  const encoder = parseEncoderSpec(m.encoder);
  if (!options.withEncoder) {
    // Not `bad`: the model is fine, re-saving or retraining would not help.
    throw new ModelFormatError(
      `model/artifact: this model takes sentence embeddings from the encoder ${encoder.name} (${m.format}), and this reader does not compute them`,
    );
  }
  return encoder;
}
