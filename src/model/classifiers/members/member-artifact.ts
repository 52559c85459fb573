/**
 * The member classifiers' model in the saved format (since `tagger-model/1.4`, see artifact.ts): the manifest's
 * `trained_tags` and `members`, and weights.bin as idf[V] then, per member, weights[V × trained tags]
 * (feature-major) and bias[trained tags]. Decoding checks the members against the args they were trained
 * with (classifier, weight, inputs, link, calibration), so a manifest edited by hand cannot pass for
 * another model.
 */
import {
  bad,
  type CheckedManifest,
  checkedVocabulary,
  crc32,
  decodeVectorizer,
  floatReader,
  MANIFEST,
  type ManifestMember,
  vectorizerManifest,
  WEIGHTS,
  writeFloats,
} from '../../artifact-common.js';
import { ModelInputError } from '../../errors.js';
import type { TagModel } from '../../tag-model.js';
import type { EncodedModel } from '../family.js';
import { MemberTagModel } from './member-model.js';
import { memberDefinition } from './member-table.js';
import type { Member } from './train-member.js';
import { memberSpecs } from './train-members.js';

export function encodeMemberModel(model: TagModel): EncodedModel {
  if (!(model instanceof MemberTagModel)) {
    throw new ModelInputError(
      'model/artifact: encodeModel needs a model returned by trainTagger or decodeModel',
    );
  }
  const { vectorizer, members } = model;
  return {
    bytes: writeFloats([vectorizer.idf, ...members.flatMap((m) => [m.weights, m.bias])]),
    manifest: {
      ...vectorizerManifest(vectorizer),
      trained_tags: Array.from(model.classes, (k) => model.tags[k]!),
      members: members.map(
        (m): ManifestMember => ({
          classifier: m.classifier,
          weight: m.weight,
          inputs: m.inputs,
          link: m.link,
          calibration: m.calibration === null ? null : { a: [...m.calibration.a], b: [...m.calibration.b] },
        }),
      ),
    },
  };
}

const finiteList = (value: unknown, length: number): value is number[] =>
  Array.isArray(value) &&
  value.length === length &&
  value.every((v) => typeof v === 'number' && Number.isFinite(v));

export function decodeMemberModel(checked: CheckedManifest, bytes: Uint8Array): MemberTagModel {
  const { manifest: m, tags, args } = checked;
  const vocabulary = checkedVocabulary(m);
  const trained = m.trained_tags;
  if (
    !Array.isArray(trained) ||
    trained.length < 1 ||
    new Set(trained).size !== trained.length ||
    !trained.every((t) => typeof t === 'string' && tags.includes(t))
  ) {
    bad(`trained_tags must be distinct tags of the model, got ${JSON.stringify(trained)}`);
  }
  const classes = Int32Array.from(trained!, (t) => tags.indexOf(t));
  const Kc = classes.length;
  const specs = memberSpecs(args);
  const saved = m.members;
  if (!Array.isArray(saved) || saved.length !== specs.length) {
    bad(`members must list the ${specs.length} member(s) the args describe, got ${JSON.stringify(saved)}`);
  }
  const V = vocabulary.length;
  const expected = 8 * (V + specs.length * (V * Kc + Kc));
  if (bytes.byteLength !== expected) {
    bad(
      `${WEIGHTS} has ${bytes.byteLength} bytes, expected ${expected} for ${V} features, ${specs.length} member(s) and ${Kc} trained tags (truncated?)`,
    );
  }
  if (m.weights_crc32 !== crc32(bytes))
    bad(`${WEIGHTS} does not match its checksum in ${MANIFEST} (corrupt)`);
  const read = floatReader(bytes);
  const idf = read(0, V);
  let offset = V;
  const members = specs.map((spec, i): Member => {
    const entry = saved![i]!;
    const definition = memberDefinition(spec.classifier);
    const inputs = definition.inputs;
    const link = definition.link(args.multi_label);
    if (
      entry === null ||
      typeof entry !== 'object' ||
      entry.classifier !== spec.classifier ||
      entry.weight !== spec.weight ||
      entry.inputs !== inputs ||
      entry.link !== link
    ) {
      bad(
        `member ${i + 1} must be ${JSON.stringify({ classifier: spec.classifier, weight: spec.weight, inputs, link })} as its args say, got ${JSON.stringify(entry)}`,
      );
    }
    const calibration = entry.calibration;
    const wantsCalibration = spec.calibration === 'sigmoid';
    const fits = wantsCalibration
      ? calibration !== null &&
        typeof calibration === 'object' &&
        finiteList(calibration.a, Kc) &&
        finiteList(calibration.b, Kc)
      : calibration === null;
    if (!fits) {
      bad(
        `member ${i + 1} (${spec.classifier}) must have ${wantsCalibration ? `calibration {a, b}, ${Kc} finite numbers each` : 'calibration null'}, got ${JSON.stringify(calibration)}`,
      );
    }
    const weights = read(offset, V * Kc);
    const bias = read(offset + V * Kc, Kc);
    offset += V * Kc + Kc;
    return {
      classifier: spec.classifier,
      weight: spec.weight,
      inputs,
      nFeatures: V,
      nClasses: Kc,
      weights,
      bias,
      link,
      calibration: wantsCalibration
        ? { a: Float64Array.from(calibration!.a), b: Float64Array.from(calibration!.b) }
        : null,
    };
  });
  const vectorizer = decodeVectorizer(m, args, vocabulary, idf);
  return new MemberTagModel(
    tags,
    args,
    checked.threshold,
    vectorizer,
    members,
    classes,
    checked.tagThresholds,
  );
}
