/**
 * The member classifiers' model in the saved format (since `tagger-model/1.4`, see artifact.ts): the manifest's
 * `trained_tags` and `members`, and weights.bin as idf[V] (float64) then, per member, its weights and
 * bias[trained tags] (float64). Before 1.6 a member's weights are dense float64 (V × trained tags,
 * feature-major); since 1.6 each member says how they are stored (`weights`: dense or sparse by feature,
 * float32 or float64, with naive Bayes' per-feature and per-class terms; member-weights.ts). Decoding checks
 * the members against the args they were trained with (classifier, weight, inputs, link, calibration), so a
 * manifest edited by hand cannot pass for another model. Since 1.8 an encoder model's manifest has its
 * `encoder` spec, and a member that reads embeddings has weights for V + dim features (the embedding block's
 * after the vocabulary's).
 */
import {
  ByteReader,
  ByteWriter,
  bad,
  type CheckedManifest,
  checkedVocabulary,
  crc32,
  type DecodeOptions,
  decodeEncoderSpec,
  decodeVectorizer,
  formatAtLeast,
  MANIFEST,
  type ManifestMember,
  vectorizerManifest,
  WEIGHTS,
} from '../../artifact-common.js';
import { ModelInputError } from '../../errors.js';
import type { TagModel } from '../../tag-model.js';
import type { EncodedModel } from '../family.js';
import { MemberTagModel } from './member-model.js';
import { memberDefinition } from './member-table.js';
import { denseWeights, listedEntries, type MemberWeights, withRowSums, withRows } from './member-weights.js';
import type { Member } from './train-member.js';
import { memberSpecs } from './train-members.js';

export function encodeMemberModel(model: TagModel): EncodedModel {
  if (!(model instanceof MemberTagModel)) {
    throw new ModelInputError(
      'model/artifact: encodeModel needs a model returned by trainTagger or decodeModel',
    );
  }
  const { vectorizer, members } = model;
  const writer = new ByteWriter().float64s(vectorizer.idf);
  const entries = members.map((m): ManifestMember => {
    const w = m.weights;
    // The file keeps a sparse part as lists (the rows of frequent features are made when it is read).
    const listed = w.sparse === null ? null : listedEntries(w.sparse, w.nClasses);
    if (w.dense !== null) writer.values(w.dense);
    else writer.int32s(listed!.start).int32s(listed!.classes).values(listed!.values);
    if (w.perFeature !== null) writer.values(w.perFeature);
    if (w.perClass !== null) writer.float64s(w.perClass);
    writer.float64s(m.bias);
    const stored = w.dense ?? listed!.values;
    return {
      classifier: m.classifier,
      weight: m.weight,
      inputs: m.inputs,
      link: m.link,
      calibration: m.calibration === null ? null : { a: [...m.calibration.a], b: [...m.calibration.b] },
      weights: {
        layout: w.dense !== null ? 'dense' : 'sparse',
        dtype: stored instanceof Float32Array ? 'float32' : 'float64',
        stored: stored.length,
        per_feature: w.perFeature !== null,
        per_class: w.perClass !== null,
      },
    };
  });
  // A per-feature term is written at its own precision: the manifest's dtype is the stored values'.
  for (const [i, m] of members.entries()) {
    const pf = m.weights.perFeature;
    if (pf !== null && pf instanceof Float32Array !== (entries[i]!.weights!.dtype === 'float32')) {
      throw new ModelInputError(
        'model/artifact: a member stores its weights and its per-feature term at one precision',
      );
    }
  }
  return {
    bytes: writer.bytes(),
    manifest: {
      ...vectorizerManifest(vectorizer),
      ...(model.encoder === null ? {} : { encoder: { ...model.encoder } }),
      trained_tags: Array.from(model.classes, (k) => model.tags[k]!),
      members: entries,
    },
  };
}

const finiteList = (value: unknown, length: number): value is number[] =>
  Array.isArray(value) &&
  value.length === length &&
  value.every((v) => typeof v === 'number' && Number.isFinite(v));

/** The format that let the member classifiers take an encoder's embeddings. */
export const MEMBER_ENCODER_SINCE = 'tagger-model/1.8';

export function decodeMemberModel(
  checked: CheckedManifest,
  bytes: Uint8Array,
  options: DecodeOptions,
): MemberTagModel {
  const { manifest: m, tags, args } = checked;
  const vocabulary = checkedVocabulary(m);
  const encoder = decodeEncoderSpec(m, checked.format, args, options, MEMBER_ENCODER_SINCE);
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
  // A member that reads embeddings has weights for the embedding block's columns too.
  const featuresOf = specs.map((spec) =>
    encoder !== null && memberDefinition(spec.classifier).readsEmbeddings ? V + encoder.dim : V,
  );
  const sinceSparse = formatAtLeast(checked.format, 'tagger-model/1.6');
  const layouts = saved!.map((entry, i) =>
    sinceSparse ? checkedLayout(entry?.weights, featuresOf[i]!, Kc, i + 1) : null,
  );
  const expected =
    8 * V +
    layouts.reduce(
      (sum, layout, i) =>
        sum + 8 * Kc + (layout === null ? 8 * featuresOf[i]! * Kc : layoutBytes(layout, featuresOf[i]!, Kc)),
      0,
    );
  if (bytes.byteLength !== expected) {
    bad(
      `${WEIGHTS} has ${bytes.byteLength} bytes, expected ${expected} for ${V} features${encoder === null ? '' : ` (+ ${encoder.dim} embedding dimensions)`}, ${specs.length} member(s) and ${Kc} trained tags (truncated?)`,
    );
  }
  if (m.weights_crc32 !== crc32(bytes))
    bad(`${WEIGHTS} does not match its checksum in ${MANIFEST} (corrupt)`);
  const reader = new ByteReader(bytes);
  const idf = reader.float64s(V);
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
    const layout = layouts[i];
    const F = featuresOf[i]!;
    const weights = layout
      ? readWeights(reader, layout, F, Kc, i + 1)
      : denseWeights(reader.float64s(F * Kc), F, Kc);
    const bias = reader.float64s(Kc);
    return {
      classifier: spec.classifier,
      weight: spec.weight,
      inputs,
      readsEmbeddings: F > V,
      nFeatures: F,
      nClasses: Kc,
      weights,
      bias,
      link,
      calibration: wantsCalibration
        ? { a: Float64Array.from(calibration!.a), b: Float64Array.from(calibration!.b) }
        : null,
    };
  });
  reader.end();
  const vectorizer = decodeVectorizer(m, args, vocabulary, idf);
  return new MemberTagModel(
    tags,
    args,
    checked.threshold,
    vectorizer,
    members,
    classes,
    checked.tagThresholds,
    encoder,
  );
}

type Layout = NonNullable<ManifestMember['weights']>;

/** A tagger-model/1.6 member's `weights` entry, checked. */
function checkedLayout(layout: unknown, V: number, K: number, member: number): Layout {
  const l = layout as Partial<Layout> | null;
  const ok =
    l !== null &&
    typeof l === 'object' &&
    (l.layout === 'dense' || l.layout === 'sparse') &&
    (l.dtype === 'float32' || l.dtype === 'float64') &&
    Number.isInteger(l.stored) &&
    l.stored! >= 0 &&
    l.stored! <= V * K &&
    (l.layout === 'sparse' || l.stored === V * K) &&
    typeof l.per_feature === 'boolean' &&
    typeof l.per_class === 'boolean';
  if (!ok) {
    bad(
      `member ${member} needs "weights" {layout: dense (${V * K} stored) | sparse, dtype: float32 | float64, stored, per_feature, per_class}, got ${JSON.stringify(layout)}`,
    );
  }
  return l as Layout;
}

/** The bytes a member's weights take (its bias not included). */
function layoutBytes(layout: Layout, V: number, K: number): number {
  const width = layout.dtype === 'float32' ? 4 : 8;
  return (
    width * layout.stored +
    (layout.layout === 'sparse' ? 4 * (V + 1) + 4 * layout.stored : 0) +
    (layout.per_feature ? width * V : 0) +
    (layout.per_class ? 8 * K : 0)
  );
}

/** A tagger-model/1.6 member's weights as its (checked) layout says they are stored. */
function readWeights(
  reader: ByteReader,
  layout: Layout,
  V: number,
  K: number,
  member: number,
): MemberWeights {
  const { dtype, stored } = layout;
  let dense: MemberWeights['dense'] = null;
  let sparse: MemberWeights['sparse'] = null;
  if (layout.layout === 'dense') dense = reader.values(stored, dtype);
  else {
    const start = reader.int32s(V + 1);
    const classes = reader.int32s(stored);
    if (start[0] !== 0 || start[V] !== stored)
      bad(`member ${member}'s sparse weights must start at 0 and end at ${stored}`);
    for (let f = 0; f < V; f++) {
      if (start[f + 1]! < start[f]!) bad(`member ${member}'s sparse weights go backwards at feature ${f}`);
      for (let q = start[f]!; q < start[f + 1]!; q++) {
        const k = classes[q]!;
        if (k < 0 || k >= K || (q > start[f]! && k <= classes[q - 1]!)) {
          bad(`member ${member}'s sparse weights name class ${k} out of order or range at feature ${f}`);
        }
      }
    }
    sparse = withRows({ start, classes, values: reader.values(stored, dtype), rowOf: null, rows: null }, K);
  }
  const perFeature = layout.per_feature ? reader.values(V, dtype) : null;
  const perClass = layout.per_class ? reader.float64s(K) : null;
  return withRowSums({ nFeatures: V, nClasses: K, dense, sparse, perFeature, perClass });
}
