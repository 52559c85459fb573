import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkCascadeArgs } from '../../../src/model/cascade/cascade-args.js';
import {
  CascadeTagModel,
  isCascade,
  spreadEmbeddings,
  textsNeedingEmbeddings,
} from '../../../src/model/cascade/cascade-model.js';
import { encoderStageArgs, fastStageArgs } from '../../../src/model/cascade/stages.js';
import {
  bindEmbeddings,
  decodeModel,
  type EncoderSpec,
  encodeModel,
  MODEL_FORMAT,
  ModelFormatError,
  parseTrainingArgs,
  trainTagger,
} from '../../../src/model/index.js';
import { TRAIN, VALIDATION } from '../fixtures.js';

const DIM = 4;
const SPEC: EncoderSpec = {
  name: 'cascade-test',
  source: 'local:/cascade-test',
  model_sha256: 'c'.repeat(64),
  tokenizer_sha256: 'd'.repeat(64),
  pooling: 'mean',
  max_tokens: 64,
  dim: DIM,
};
const embed = (text: string): Float32Array => {
  const h = createHash('sha256').update(text).digest();
  return Float32Array.from({ length: DIM }, (_, i) => (h[i]! - 128) / 64);
};
const PROBES = [
  'transformer language model for text',
  'object detection images',
  'kubernetes serving of models',
  'a graph of nodes',
  'something else entirely',
  '',
];
const CHOICE = {
  rule: { kind: 'tolerance', tolerance: 0.002 },
  reason: 'test',
  cv: { routed: 0.3, f1: 0.9, fast_f1: 0.8, encoder_f1: 0.9, rows: 23 },
} as const;

describe('CascadeTagModel', () => {
  let cascade: CascadeTagModel;
  let embeddings: Float32Array[];

  beforeAll(() => {
    const args = parseTrainingArgs({ encoder: SPEC.name, cascade: true, min_freq: 2, num_epochs: 3 });
    const lookup = new Map([...TRAIN, ...VALIDATION].map((row) => [row.text, embed(row.text)]));
    const fast = trainTagger(TRAIN, VALIDATION, fastStageArgs(args), { seed: 3 }).model;
    const encoder = trainTagger(TRAIN, VALIDATION, encoderStageArgs(args), {
      seed: 3,
      encoder: { spec: SPEC, embeddings: lookup },
    }).model;
    // τ between the probes' confidences, so that some texts are routed and some are not.
    const tops = fast.predict(PROBES).map((p) => Math.max(...Object.values(p.probabilities)));
    const sorted = [...tops].sort((a, b) => a - b);
    const threshold = (sorted[2]! + sorted[3]!) / 2;
    cascade = new CascadeTagModel({ args, fast, encoder, threshold, choice: CHOICE });
    embeddings = PROBES.map(embed);
  });

  it('the stages: the default soft vote without embeddings, and the encoder model', () => {
    expect(cascade.fast.args.classifier).toBe('soft_vote');
    expect(cascade.fast.encoder ?? null).toBeNull();
    expect(cascade.encoderModel.args.classifier).toBe('ovr');
    expect(cascade.encoderModel.args.cascade).toBe(false);
    expect(cascade.encoder).toEqual(SPEC);
    expect(isCascade(cascade)).toBe(true);
  });

  it('routes exactly the texts whose fast top probability is below τ, and says which stage answered', () => {
    const { predictions, routed } = cascade.predictFast(PROBES);
    const fastAlone = cascade.fast.predict(PROBES);
    expect(routed.length).toBeGreaterThan(0);
    expect(routed.length).toBeLessThan(PROBES.length);
    fastAlone.forEach((p, i) => {
      const top = Math.max(...Object.values(p.probabilities));
      expect(routed.includes(i)).toBe(top < cascade.routingThreshold);
    });
    expect(predictions.every((p) => p.stage === 'fast')).toBe(true);
    const all = cascade.predict(PROBES, embeddings);
    const encoderAlone = cascade.encoderModel.predict(PROBES, embeddings);
    all.forEach((p, i) => {
      const expected = routed.includes(i) ? encoderAlone[i]! : fastAlone[i]!;
      expect(p.stage).toBe(routed.includes(i) ? 'encoder' : 'fast');
      expect(p.predicted_tag).toBe(expected.predicted_tag);
      expect(p.probabilities).toEqual(expected.probabilities);
    });
  });

  it('lists only the probabilities asked for, and needs the embeddings of routed texts', () => {
    const limited = cascade.predict(PROBES, embeddings, { probabilities: 1 });
    for (const p of limited) expect(Object.keys(p.probabilities)).toEqual([p.predicted_tag]);
    expect(() => cascade.predict(PROBES)).toThrow(/needs one embedding per text/);
  });

  it('explains a text with the stage that answers it', () => {
    const { routed } = cascade.predictFast(PROBES);
    const confident = PROBES.findIndex((_, i) => !routed.includes(i));
    const unsure = routed[0]!;
    expect(cascade.explain(PROBES[confident]!, 3)).toEqual(cascade.fast.explain(PROBES[confident]!, 3));
    expect(cascade.explain(PROBES[unsure]!, 3, embeddings[unsure])).toEqual(
      cascade.encoderModel.explain(PROBES[unsure]!, 3, embeddings[unsure]),
    );
  });

  it('is evaluated like an encoder model once its embeddings are bound', () => {
    const bound = bindEmbeddings(cascade, new Map(PROBES.map((t) => [t, embed(t)])));
    expect(bound.predict(PROBES).map((p) => p.predicted_tag)).toEqual(
      cascade.predict(PROBES, embeddings).map((p) => p.predicted_tag),
    );
  });

  it("binds embeddings needing only the routed texts' (batch tagging and tagger predict embed no others)", () => {
    const { routed } = cascade.predictFast(PROBES);
    expect(textsNeedingEmbeddings(cascade, PROBES)).toEqual(routed);
    const onlyRouted = new Map(routed.map((i) => [PROBES[i]!, embeddings[i]!]));
    const bound = bindEmbeddings(cascade, onlyRouted);
    expect(bound.predict(PROBES)).toEqual(cascade.predict(PROBES, embeddings));
    const spread = spreadEmbeddings(
      PROBES.length,
      routed,
      routed.map((i) => embeddings[i]!),
      DIM,
    );
    expect(cascade.predict(PROBES, spread)).toEqual(cascade.predict(PROBES, embeddings));
    expect(textsNeedingEmbeddings(cascade.fast, PROBES)).toEqual([]);
    expect(textsNeedingEmbeddings(cascade.encoderModel, PROBES)).toEqual(PROBES.map((_, i) => i));
  });

  it('saves in the current format and loads predicting bit for bit', () => {
    const files = encodeModel(cascade);
    const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));
    expect(manifest.format).toBe(MODEL_FORMAT);
    expect(manifest.cascade.threshold).toBe(cascade.routingThreshold);
    expect(manifest.cascade.stages.map((s: { name: string }) => s.name)).toEqual(['fast', 'encoder']);
    const copy = decodeModel(files, { withEncoder: true });
    expect(isCascade(copy)).toBe(true);
    expect((copy as CascadeTagModel).choice).toEqual(CHOICE);
    expect(copy.predict(PROBES, embeddings)).toEqual(cascade.predict(PROBES, embeddings));
  });

  it('refuses a broken cascade artifact with a clear reason', () => {
    const files = encodeModel(cascade);
    const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));
    const withManifest = (m: unknown) => ({
      ...files,
      'tagger-model.json': new TextEncoder().encode(JSON.stringify(m)),
    });
    const bad = (m: unknown, pattern: RegExp) => {
      expect(() => decodeModel(withManifest(m), { withEncoder: true })).toThrow(ModelFormatError);
      expect(() => decodeModel(withManifest(m), { withEncoder: true })).toThrow(pattern);
    };
    bad(
      { ...manifest, cascade: { ...manifest.cascade, threshold: 0 } },
      /cascade.threshold must be a number in \(0, 1\]/,
    );
    bad({ ...manifest, cascade: undefined }, /holds no cascade/);
    bad({ ...manifest, format: 'tagger-model/1.6' }, /needs format tagger-model\/1.7/);
    bad(
      { ...manifest, cascade: { ...manifest.cascade, stages: [...manifest.cascade.stages].reverse() } },
      /must list the stages fast, encoder/,
    );
    const stages = manifest.cascade.stages.map((s: { bytes: number }, i: number) =>
      i === 0 ? { ...s, bytes: s.bytes - 8 } : s,
    );
    bad({ ...manifest, cascade: { ...manifest.cascade, stages } }, /bytes no stage owns|cascade stage fast/);
    const truncated = { ...files, 'weights.bin': files['weights.bin']!.subarray(0, 100) };
    expect(() => decodeModel(truncated, { withEncoder: true })).toThrow(
      /weights\.bin is 100 bytes, but tagger-model\.json says \d+/,
    );
    // A manifest that states no size (saved before it did): the checksum finds it.
    const legacy = {
      ...withManifest({ ...manifest, weights_bytes: undefined }),
      'weights.bin': truncated['weights.bin'],
    };
    expect(() => decodeModel(legacy, { withEncoder: true })).toThrow(/checksum/);
    // Without the promise to compute embeddings, the encoder stage is refused as any encoder model is.
    expect(() => decodeModel(files)).toThrow(/cascade stage encoder/);
  });

  it('the args: a cascade needs an encoder, and one rule', () => {
    const checked = (raw: Record<string, unknown>) => checkCascadeArgs(parseTrainingArgs(raw));
    expect(() => checked({ cascade: true })).toThrow(/no encoder is named/);
    expect(() => parseTrainingArgs({ encoder: 'm', cascade: true, cascade_threshold: 0 })).toThrow(
      /cascade_threshold/,
    );
    expect(() => parseTrainingArgs({ encoder: 'm', cascade: true, cascade_threshold: 1.2 })).toThrow(
      /cascade_threshold/,
    );
    expect(parseTrainingArgs({ encoder: 'm', cascade: true, cascade_threshold: 1 }).cascade_threshold).toBe(
      1,
    );
    for (const budget of [0, 1]) {
      expect(() => parseTrainingArgs({ encoder: 'm', cascade: true, cascade_max_routed: budget })).toThrow(
        /strictly between 0 and 1/,
      );
    }
    expect(() =>
      checked({ encoder: 'm', cascade: true, cascade_max_routed: 0.2, cascade_threshold: 0.8 }),
    ).toThrow(/contradict/);
    expect(() => checked({ cascade_max_routed: 0.2 })).toThrow(/"cascade" is false/);
    expect(() => checked({ encoder: 'm', cascade: true, cascade_max_routed: 0.2 })).not.toThrow();
  });
});
