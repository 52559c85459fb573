/**
 * A `fasttext` model in the saved format (since `tagger-model/1.6`; artifact.ts has the format history): the
 * manifest's `fasttext` holds the dictionary's words, the feature settings, the dimension, the output layer
 * and, for a hierarchical softmax, the tag counts its tree is rebuilt from; weights.bin holds, little-endian,
 * the kept input rows' ids (int32: which word or bucket each kept row is), the kept input rows and the
 * output layer (float32 — what the model computes in).
 */
import { bad, type CheckedManifest, crc32, MANIFEST, WEIGHTS } from '../../artifact-common.js';
import { ModelInputError } from '../../errors.js';
import type { TagModel } from '../../tag-model.js';
import type { EncodedModel } from '../family.js';
import { FastTextFeatures } from './fasttext-features.js';
import { type FastTextOutput, FastTextTagModel } from './fasttext-model.js';
import { huffmanTree } from './fasttext-tree.js';

/** The manifest's `fasttext` object. */
interface FastTextManifest {
  words: string[];
  word_ngrams: number;
  minn: number;
  maxn: number;
  buckets: number;
  dim: number;
  output: FastTextOutput;
  /** Kept input rows. */
  rows: number;
  /** hs only: training rows per tag (model order), which the tree is built from. */
  tag_counts?: number[];
}

export function encodeFastTextModel(model: TagModel): EncodedModel {
  if (!(model instanceof FastTextTagModel)) {
    throw new ModelInputError(
      'model/artifact: encodeModel needs a model returned by trainTagger or decodeModel',
    );
  }
  const { features, dim, input, rowOf, output, loss, tree } = model.parts;
  // The rows the model reads, in input order (a matrix may hold rows it does not read: a training's).
  const ids: number[] = [];
  for (let row = 0; row < rowOf.length; row++) if (rowOf[row]! >= 0) ids.push(row);
  ids.sort((a, b) => rowOf[a]! - rowOf[b]!);
  const kept = ids.length;
  const bytes = new Uint8Array(4 * (kept + kept * dim + output.length));
  const view = new DataView(bytes.buffer);
  let at = 0;
  for (const id of ids) {
    view.setInt32(at, id, true);
    at += 4;
  }
  for (const id of ids) {
    const base = rowOf[id]! * dim;
    for (let d = 0; d < dim; d++, at += 4) view.setFloat32(at, input[base + d]!, true);
  }
  for (let i = 0; i < output.length; i++, at += 4) view.setFloat32(at, output[i]!, true);
  const manifest: FastTextManifest = {
    words: [...features.words],
    word_ngrams: features.spec.wordNgrams,
    minn: features.spec.minn,
    maxn: features.spec.maxn,
    buckets: features.spec.buckets,
    dim,
    output: loss,
    rows: kept,
    ...(tree === null ? {} : { tag_counts: [...model.parts.tagCounts!] }),
  };
  return { manifest: { fasttext: manifest }, bytes };
}

const isInt = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

export function decodeFastTextModel(checked: CheckedManifest, bytes: Uint8Array): FastTextTagModel {
  const { args, tags } = checked;
  const raw = (checked.manifest as { fasttext?: unknown }).fasttext;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    bad('a fasttext model needs its "fasttext" object');
  const m = raw as Partial<FastTextManifest>;
  const words = m.words;
  if (!Array.isArray(words) || !words.every((w) => typeof w === 'string' && w !== '' && !w.includes(' '))) {
    bad('fasttext.words must be an array of non-empty words without spaces');
  }
  if (new Set(words).size !== words!.length) bad('fasttext.words must be distinct');
  const spec = { wordNgrams: m.word_ngrams, minn: m.minn, maxn: m.maxn, buckets: m.buckets };
  const fromArgs = {
    wordNgrams: args.ft_word_ngrams,
    minn: args.ft_minn,
    maxn: args.ft_maxn,
    buckets: args.ft_buckets,
  };
  if (JSON.stringify(spec) !== JSON.stringify(fromArgs)) {
    bad(`fasttext's feature settings ${JSON.stringify(spec)} are not the args' ${JSON.stringify(fromArgs)}`);
  }
  if (m.dim !== args.ft_dim) bad(`fasttext.dim is ${JSON.stringify(m.dim)}, the args' ft_dim ${args.ft_dim}`);
  const K = tags.length;
  const expectedOutput = args.multi_label
    ? ['ova']
    : args.ft_loss === 'auto'
      ? ['softmax', 'hs']
      : [args.ft_loss];
  if (!expectedOutput.includes(m.output as string)) {
    bad(
      `fasttext.output must be ${expectedOutput.join(' or ')} for these args, got ${JSON.stringify(m.output)}`,
    );
  }
  const loss = m.output as FastTextOutput;
  const features = new FastTextFeatures(words!, fromArgs);
  const inputRows = features.inputRows;
  if (!isInt(m.rows, 0, inputRows))
    bad(`fasttext.rows must be an integer in [0, ${inputRows}], got ${JSON.stringify(m.rows)}`);
  const kept = m.rows!;
  const dim = args.ft_dim;
  const outputRows = loss === 'hs' ? K - 1 : K;
  const expected = 4 * (kept + kept * dim + outputRows * dim);
  if (bytes.byteLength !== expected) {
    bad(
      `${WEIGHTS} has ${bytes.byteLength} bytes, expected ${expected} for ${kept} input rows of ${dim} and ${outputRows} output rows (truncated?)`,
    );
  }
  if (checked.manifest.weights_crc32 !== crc32(bytes))
    bad(`${WEIGHTS} does not match its checksum in ${MANIFEST} (corrupt)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rowOf = new Int32Array(inputRows).fill(-1);
  let at = 0;
  for (let c = 0; c < kept; c++, at += 4) {
    const id = view.getInt32(at, true);
    if (id < 0 || id >= inputRows || rowOf[id] !== -1)
      bad(`${WEIGHTS}: input row ${c} names row ${id}, out of range or twice`);
    rowOf[id] = c;
  }
  const floats = (n: number): Float32Array => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++, at += 4) {
      out[i] = view.getFloat32(at, true);
      if (!Number.isFinite(out[i]!)) bad(`${WEIGHTS} holds a non-finite number at byte ${at}`);
    }
    return out;
  };
  const input = floats(kept * dim);
  const output = floats(outputRows * dim);
  let tagCounts: number[] | null = null;
  if (loss === 'hs') {
    const counts = m.tag_counts;
    if (
      !Array.isArray(counts) ||
      counts.length !== K ||
      !counts.every((c) => isInt(c, 0, Number.MAX_SAFE_INTEGER))
    ) {
      bad(`fasttext.tag_counts must be ${K} counts (one per tag) for a hierarchical softmax`);
    }
    tagCounts = counts!;
  }
  return new FastTextTagModel(
    tags,
    args,
    checked.threshold,
    {
      features,
      dim,
      input,
      rowOf,
      output,
      loss,
      tree: tagCounts === null ? null : huffmanTree(tagCounts),
      tagCounts,
    },
    checked.tagThresholds,
  );
}
