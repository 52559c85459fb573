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
 * `tagger-model/1.7` — cascades (`cascade` arg; model/cascade/): the manifest adds `cascade` (τ, the rule
 * and reason it was chosen by, and both stages' complete manifests) and weights.bin holds the stages'
 * weights one after the other (cascade/cascade-artifact.ts); the other models' layout is unchanged.
 * `tagger-model/1.8` — the clean-up steps are arguments (`stopwords`, `ascii_only`, `strip_urls`, beside
 * `lower` and `stem`), off by default; the files' layout is unchanged, the bump makes older readers, which
 * always applied tagifai's clean-up, refuse these models by format instead of predicting from other text.
 * Every manifest written since issue 42 also states `weights_bytes`, the size of weights.bin, in whatever
 * format (additive: older readers ignore it), so loaders refuse a weights file of another size before
 * reading it (statedWeightsBytes); decodeModel checks it first too.
 * Every model is written in the current format; a reader checks that the format is at least the one that
 * introduced what the model uses (multi-label 1.3, member classifiers 1.4, an encoder 1.5, a cascade 1.7).
 * All six are read (the families' own parts by their families: classifiers/sgd/sgd-artifact.ts,
 * classifiers/members/member-artifact.ts); a model without an arg loads with the behaviour it was trained with
 * (args.ts's parseSavedArgs): `/1` without `sublinear_tf` (false), without `ensemble` 1, before 1.2 `loss`
 * log_loss, `class_weight` null, `min_df` 1 and `ngram_min_range` 2, before 1.8 tagifai's clean-up.
 */
import { parseSavedArgs } from './args.js';
import {
  bad,
  type CheckedManifest,
  crc32,
  type DecodeOptions,
  formatAtLeast,
  MANIFEST,
  type Manifest,
  MODEL_FORMAT,
  READABLE_MODEL_FORMATS,
  WEIGHTS,
} from './artifact-common.js';
import { CASCADE_SINCE, packCascade, unpackCascade } from './cascade/cascade-artifact.js';
import { CascadeTagModel, isCascade } from './cascade/cascade-model.js';
import { familyOf } from './classifiers/families.js';
import { OTHER_TAG } from './labels.js';
import type { TagModel } from './tag-model.js';
import type { TrainingArgs } from './training-args.js';

export { crc32, type DecodeOptions, MODEL_FORMAT, READABLE_MODEL_FORMATS } from './artifact-common.js';
export const MODEL_FILES: readonly string[] = Object.freeze([MANIFEST, WEIGHTS]);

/** Serialises a model trained by trainTagger (or decoded) into its files (name → bytes), by its family. */
export function encodeModel(model: TagModel): Record<string, Uint8Array> {
  if (isCascade(model)) return encodeCascade(model);
  const { manifest, bytes } = familyOf(model.args.classifier).encode(model);
  return files(model, manifest, bytes);
}

/** A cascade: each stage encoded as a model of its own, packed into one manifest and one weights file. */
function encodeCascade(model: CascadeTagModel): Record<string, Uint8Array> {
  const stages = (
    [
      ['fast', model.fast],
      ['encoder', model.encoderModel],
    ] as const
  ).map(([name, stage]) => {
    const encoded = encodeModel(stage);
    return { name, manifest: encoded[MANIFEST]!, weights: encoded[WEIGHTS]! };
  });
  const { cascade, bytes } = packCascade(model.routingThreshold, model.choice, stages);
  return files(model, { encoder: model.encoder, cascade }, bytes);
}

/** The two files: the fields every manifest has, then the model's own (`fields`), and the weights. */
function files(
  model: TagModel,
  fields: Record<string, unknown>,
  bytes: Uint8Array,
): Record<string, Uint8Array> {
  const manifest = {
    // First, so a loader reads it off the file's first bytes without parsing the rest (statedWeightsBytes).
    weights_bytes: bytes.length,
    format: MODEL_FORMAT,
    tags: [...model.tags],
    args: model.args,
    threshold: model.threshold,
    ...(model.tagThresholds === null ? {} : { tag_thresholds: [...model.tagThresholds] }),
    weights_crc32: crc32(bytes),
    ...fields,
  };
  return { [MANIFEST]: new TextEncoder().encode(JSON.stringify(manifest)), [WEIGHTS]: bytes };
}

/**
 * The size of weights.bin a manifest (tagger-model.json's bytes) states: its first key, `{"weights_bytes":N,`
 * as encodeModel writes it, read off the first bytes without parsing the rest (a manifest holds the whole
 * vocabulary: parsing it twice cost as much as the check saves). Null when the manifest does not start so
 * (models saved before issue 42, or not a manifest: decodeModel says why, and checks the size again).
 */
export function statedWeightsBytes(manifest: Uint8Array): number | null {
  const head = new TextDecoder().decode(manifest.subarray(0, 40));
  const match = /^\{"weights_bytes":(\d{1,15}),/.exec(head);
  return match === null ? null : Number(match[1]);
}

/** The message of a weights.bin whose size is not its manifest's: the same whether found before or after reading. */
export const weightsSizeProblem = (actual: number, stated: number): string =>
  `${WEIGHTS} is ${actual} bytes, but ${MANIFEST} says ${stated}: not this model's weights (damaged, truncated or replaced)`;

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
    // A model saved before an arg existed was trained with its old behaviour, not today's default.
    args = parseSavedArgs(m.args);
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
  const bytes = files[WEIGHTS]!;
  if (m.weights_bytes !== undefined) {
    if (!Number.isSafeInteger(m.weights_bytes) || m.weights_bytes < 0)
      bad(`weights_bytes must be a whole number of bytes, got ${JSON.stringify(m.weights_bytes)}`);
    if (bytes.length !== m.weights_bytes) bad(weightsSizeProblem(bytes.length, m.weights_bytes));
  }
  const checked: CheckedManifest = {
    format: m.format!,
    manifest: m,
    tags: tags!,
    args: args!,
    threshold: threshold ?? null,
    tagThresholds: tagThresholds ?? null,
  };
  if (args!.encoder === null && m.encoder !== undefined) {
    bad('the manifest names an encoder, but args.encoder is null');
  }
  if (args!.cascade || m.cascade !== undefined) return decodeCascade(checked, bytes, options);
  const family = familyOf(args!.classifier);
  if (!formatAtLeast(m.format!, family.since))
    bad(`classifier ${args!.classifier} needs format ${family.since} or later, got ${m.format}`);
  return family.decode(checked, bytes, options);
}

/** A cascade (format 1.7): each stage decoded as a model of its own, then checked against the cascade's own fields. */
function decodeCascade(checked: CheckedManifest, bytes: Uint8Array, options: DecodeOptions): TagModel {
  const { format, manifest, args } = checked;
  if (!args.cascade) bad('the manifest holds a cascade, but args.cascade is false');
  if (!formatAtLeast(format, CASCADE_SINCE))
    bad(`a cascade needs format ${CASCADE_SINCE} or later, got ${format}`);
  if (manifest.cascade === undefined) bad('args.cascade is true, but the manifest holds no cascade');
  if (manifest.weights_crc32 !== crc32(bytes))
    bad(`${WEIGHTS} does not match its checksum in ${MANIFEST} (corrupt)`);
  const { threshold, choice, stages } = unpackCascade(manifest.cascade, bytes);
  const stage = (name: 'fast' | 'encoder'): TagModel => {
    try {
      return decodeModel(stages.get(name)!, options);
    } catch (error) {
      return bad(`cascade stage ${name}: ${(error as Error).message.replace(/^model\/artifact: /, '')}`);
    }
  };
  const fast = stage('fast');
  const encoder = stage('encoder');
  try {
    return new CascadeTagModel({ args, fast, encoder, threshold, choice });
  } catch (error) {
    return bad((error as Error).message.replace(/^model\/cascade: /, ''));
  }
}
