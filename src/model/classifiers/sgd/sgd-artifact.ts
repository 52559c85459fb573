/**
 * An SGD model in the saved format (artifact.ts has the format history): the manifest's vectorizer fields
 * and, for an encoder model (format 1.5), its `encoder` spec; weights.bin is idf[V], weights[F × K]
 * (feature-major; F = V, or V + the embedding size for an encoder model) and bias[K], little-endian float64.
 */
import {
  bad,
  type CheckedManifest,
  checkedVocabulary,
  crc32,
  type DecodeOptions,
  decodeEncoderSpec,
  decodeVectorizer,
  floatReader,
  MANIFEST,
  vectorizerManifest,
  WEIGHTS,
  writeFloats,
} from '../../artifact-common.js';
import { ModelInputError } from '../../errors.js';
import type { TagModel } from '../../tag-model.js';
import type { EncodedModel } from '../family.js';
import { SgdTagModel } from './sgd-model.js';
import type { SgdClassifier } from './sgd-params.js';
import { type LinearModel, linkOf } from './sgd-solver.js';

export function encodeSgdModel(model: TagModel): EncodedModel {
  if (!(model instanceof SgdTagModel)) {
    throw new ModelInputError(
      'model/artifact: encodeModel needs a model returned by trainTagger or decodeModel',
    );
  }
  const { vectorizer, linear } = model;
  return {
    bytes: writeFloats([vectorizer.idf, linear.weights, linear.bias]),
    manifest: {
      ...vectorizerManifest(vectorizer),
      ...(model.encoder === null ? {} : { encoder: { ...model.encoder } }),
    },
  };
}

export function decodeSgdModel(
  checked: CheckedManifest,
  bytes: Uint8Array,
  options: DecodeOptions,
): SgdTagModel {
  const { manifest: m, args, tags } = checked;
  const vocabulary = checkedVocabulary(m);
  const encoder = decodeEncoderSpec(m, checked.format, args, options, 'tagger-model/1.5');
  const V = vocabulary.length;
  const F = V + (encoder?.dim ?? 0);
  const K = tags.length;
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
    link: linkOf(args.classifier as SgdClassifier, args.loss, args.multi_label),
  };
  const vectorizer = decodeVectorizer(m, args, vocabulary, idf);
  return new SgdTagModel(tags, args, checked.threshold, vectorizer, linear, checked.tagThresholds, encoder);
}
