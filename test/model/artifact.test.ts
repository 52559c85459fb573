/** Model artifact: round trip, and a clear ModelFormatError for each kind of broken input. */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../src/model/args.js';
import {
  crc32,
  decodeModel,
  encodeModel,
  MODEL_FILES,
  MODEL_FORMAT,
  READABLE_MODEL_FORMATS,
  statedWeightsBytes,
} from '../../src/model/artifact.js';
import { ModelFormatError, ModelInputError } from '../../src/model/errors.js';
import { type TagModel, trainTagger } from '../../src/model/tagger.js';
import { SGD, TRAIN, VALIDATION } from './fixtures.js';

const { model } = trainTagger(
  TRAIN,
  VALIDATION,
  parseTrainingArgs({
    ...SGD,
    min_freq: 2,
    num_epochs: 5,
    analyzer: 'char_wb',
    ngram_max_range: 3,
    threshold: 'tuned',
  }),
  { seed: 7 },
);
const files = encodeModel(model);
/** The parsed manifest of saved model files. */
const manifestOf = (saved: Record<string, Uint8Array>) =>
  JSON.parse(new TextDecoder().decode(saved['tagger-model.json'])) as Record<string, unknown>;
/** The saved model files with `patch` merged over their manifest. */
const patchManifest = (saved: Record<string, Uint8Array>, patch: Record<string, unknown>) => ({
  ...saved,
  'tagger-model.json': new TextEncoder().encode(JSON.stringify({ ...manifestOf(saved), ...patch })),
});
const manifest = () => manifestOf(files);
const withManifest = (patch: Record<string, unknown>) => patchManifest(files, patch);

describe('model artifact', () => {
  it('produces exactly MODEL_FILES with a versioned manifest', () => {
    expect(Object.keys(files).sort()).toEqual([...MODEL_FILES].sort());
    expect(manifest().format).toBe(MODEL_FORMAT);
    expect(MODEL_FORMAT).toBe('tagger-model/1.8');
    expect(READABLE_MODEL_FORMATS).toEqual([
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
  });

  it('round-trips: save → load → predict gives identical probabilities, tags, args and threshold', () => {
    const loaded = decodeModel(files);
    const texts = [...VALIDATION.map((r) => r.text), '', 'unseen words 😀'];
    expect(loaded.predict(texts)).toEqual(model.predict(texts));
    expect(loaded.tags).toEqual(model.tags);
    expect(loaded.args).toEqual(model.args);
    expect(loaded.threshold).toBe(model.threshold);
    expect(encodeModel(loaded)).toEqual(files);
  });

  const cases: [string, Record<string, Uint8Array>, RegExp][] = [
    ['a missing file', { 'tagger-model.json': files['tagger-model.json']! }, /missing file weights\.bin/],
    [
      'invalid JSON',
      { ...files, 'tagger-model.json': new TextEncoder().encode('{"format":') },
      /not valid UTF-8 JSON/,
    ],
    ['another format', withManifest({ format: 'other-thing/1' }), /not a tagger model/],
    [
      'a future version',
      withManifest({ format: 'tagger-model/2' }),
      /unsupported model format "tagger-model\/2" \(this version reads tagger-model\/1, tagger-model\/1\.1, tagger-model\/1\.2, tagger-model\/1\.3, tagger-model\/1\.4, tagger-model\/1\.5, tagger-model\/1\.6, tagger-model\/1\.7, tagger-model\/1\.8\)/,
    ],
    [
      'a future minor version',
      withManifest({ format: 'tagger-model/1.9' }),
      /unsupported model format "tagger-model\/1\.9"/,
    ],
    [
      'truncated weights',
      { ...files, 'weights.bin': files['weights.bin']!.slice(0, 100) },
      /^model\/artifact: weights\.bin is 100 bytes, but tagger-model\.json says \d+: not this model's weights/,
    ],
    [
      'truncated weights of a model saved before manifests stated their size',
      { ...withManifest({ weights_bytes: undefined }), 'weights.bin': files['weights.bin']!.slice(0, 100) },
      /has 100 bytes, expected/,
    ],
    [
      'a size that is not one',
      withManifest({ weights_bytes: -1 }),
      /weights_bytes must be a whole number of bytes, got -1/,
    ],
    [
      'corrupt weights',
      { ...files, 'weights.bin': files['weights.bin']!.map((b, i) => (i === 10 ? b ^ 1 : b)) },
      /checksum/,
    ],
    ['bad tags', withManifest({ tags: ['a', 'a'] }), /tags must be distinct strings/],
    ['bad args', withManifest({ args: { analyzer: 'bytes' } }), /invalid args .*"analyzer"/],
    [
      'bad threshold',
      withManifest({ threshold: 2 }),
      /threshold must be null or a number in \[0, 1\], got 2/,
    ],
    ['size mismatch', withManifest({ n_features: 3 }), /n_features is 3 but the vocabulary has/],
    ['a vocabulary with holes', withManifest({ vocabulary: [1, 2] }), /vocabulary must be an array/],
  ];

  it.each(cases)('rejects %s with a clear ModelFormatError', (_name, broken, message) => {
    expect(() => decodeModel(broken)).toThrow(ModelFormatError);
    expect(() => decodeModel(broken)).toThrow(message);
  });

  it("states weights.bin's size as the manifest's first key, read without parsing the rest", () => {
    expect(new TextDecoder().decode(files['tagger-model.json']!).startsWith('{"weights_bytes":')).toBe(true);
    expect(statedWeightsBytes(files['tagger-model.json']!)).toBe(files['weights.bin']!.length);
    // A manifest saved before it (no size first) states none: the loader reads the file, then checks.
    expect(statedWeightsBytes(withManifest({ weights_bytes: undefined })['tagger-model.json']!)).toBeNull();
    expect(statedWeightsBytes(new TextEncoder().encode('not json'))).toBeNull();
  });

  it('rejects non-finite weights even with a matching checksum', () => {
    const weights = files['weights.bin']!.slice();
    new DataView(weights.buffer).setFloat64(0, Number.NaN, true);
    const broken = {
      ...withManifest({ weights_crc32: crc32(weights) }),
      'weights.bin': weights,
    };
    expect(() => decodeModel(broken)).toThrow(/non-finite number at value 0/);
  });

  it('scores by the classifier it was trained with (ovr and softmax round-trip)', () => {
    expect(model.args.classifier).toBe('ovr');
    const softmax = trainTagger(
      TRAIN,
      VALIDATION,
      { ...model.args, classifier: 'softmax' },
      { seed: 7 },
    ).model;
    const texts = VALIDATION.map((r) => r.text);
    expect(decodeModel(encodeModel(softmax)).predict(texts)).toEqual(softmax.predict(texts));
    expect(softmax.predict(texts)).not.toEqual(model.predict(texts));
  });

  it('reads a model saved before `classifier` existed as the softmax model it was', () => {
    const softmax = trainTagger(
      TRAIN,
      VALIDATION,
      { ...model.args, classifier: 'softmax' },
      { seed: 7 },
    ).model;
    const saved = encodeModel(softmax);
    const old = JSON.parse(new TextDecoder().decode(saved['tagger-model.json'])) as {
      args: Record<string, unknown>;
    };
    delete old.args.classifier;
    delete old.args.average;
    const legacy = { ...saved, 'tagger-model.json': new TextEncoder().encode(JSON.stringify(old)) };
    const loaded = decodeModel(legacy);
    expect(loaded.args.classifier).toBe('softmax');
    const texts = VALIDATION.map((r) => r.text);
    expect(loaded.predict(texts)).toEqual(softmax.predict(texts));
  });

  it('reads a tagger-model/1 artifact (no sublinear_tf arg) with raw term counts, even if the default changes', () => {
    const old = manifest();
    const args = { ...(old.args as Record<string, unknown>) };
    delete args.sublinear_tf;
    const v1 = {
      ...files,
      'tagger-model.json': new TextEncoder().encode(
        JSON.stringify({ ...old, format: 'tagger-model/1', args }),
      ),
    };
    const loaded = decodeModel(v1);
    expect(loaded.args.sublinear_tf).toBe(false);
    const texts = [...VALIDATION.map((r) => r.text), 'image image image segmentation'];
    expect(loaded.predict(texts)).toEqual(model.predict(texts));
  });

  it('round-trips a seed-ensemble model (one averaged weight matrix, ensemble recorded in args)', () => {
    const args = { ...model.args, ensemble: 3 };
    const { model: ensemble } = trainTagger(TRAIN, VALIDATION, args, { seed: 7 });
    const saved = encodeModel(ensemble);
    // Same layout and size as a single model: idf[V] + weights[V*K] + bias[K].
    expect(saved['weights.bin']!.byteLength).toBe(files['weights.bin']!.byteLength);
    const loaded = decodeModel(saved);
    expect(loaded.args.ensemble).toBe(3);
    const texts = [...VALIDATION.map((r) => r.text), '', 'unseen words'];
    expect(loaded.predict(texts)).toEqual(ensemble.predict(texts));
  });

  it('reads a model saved before `ensemble` existed as a single model, even if the default changes', () => {
    const args = { ...(manifest().args as Record<string, unknown>) };
    delete args.ensemble;
    const loaded = decodeModel(withManifest({ args }));
    expect(loaded.args.ensemble).toBe(1);
    expect(loaded.predict(['text'])).toEqual(model.predict(['text']));
  });

  it('reads a model saved before `refit` existed as not refitted (its /args must not claim a refit)', () => {
    expect(model.args.refit).toBe(true);
    const args = { ...(manifest().args as Record<string, unknown>) };
    delete args.refit;
    const loaded = decodeModel(withManifest({ args }));
    expect(loaded.args.refit).toBe(false);
    expect(loaded.predict(['text'])).toEqual(model.predict(['text']));
  });

  it.each([
    ['hinge', { loss: 'hinge' as const }],
    [
      'modified_huber with balanced class weights',
      { loss: 'modified_huber' as const, class_weight: 'balanced' as const, oversample: false },
    ],
    [
      'word 1..2 with min_df 2',
      { analyzer: 'word' as const, ngram_min_range: 1, ngram_max_range: 2, min_df: 2 },
    ],
  ])('round-trips a %s model (probabilities by its loss)', (_name, patch) => {
    const { model: other } = trainTagger(TRAIN, VALIDATION, { ...model.args, ...patch }, { seed: 7 });
    const saved = encodeModel(other);
    expect(manifestOf(saved).format).toBe(MODEL_FORMAT);
    const loaded = decodeModel(saved);
    expect(loaded.args).toEqual(other.args);
    const texts = [...VALIDATION.map((r) => r.text), '', 'unseen words'];
    expect(loaded.predict(texts)).toEqual(other.predict(texts));
    expect(other.predict(texts)).not.toEqual(model.predict(texts));
  });

  it('reads a single-label model saved as 1.2 unchanged', () => {
    const loaded = decodeModel(withManifest({ format: 'tagger-model/1.2' }));
    const texts = VALIDATION.map((r) => r.text);
    expect(loaded.predict(texts)).toEqual(model.predict(texts));
    expect(loaded.tagThresholds).toBeNull();
  });

  describe('multi-label models', () => {
    const multiRows = (rows: typeof TRAIN) =>
      rows.map((row, i) => {
        const tags = i % 3 === 0 ? [row.tag, 'extra'] : [row.tag];
        return { text: row.text, tag: tags.join('|'), tags };
      });
    const multi = trainTagger(
      multiRows(TRAIN),
      multiRows(VALIDATION),
      { ...model.args, multi_label: true, threshold: 'tuned' },
      { seed: 7 },
    ).model;
    const saved = encodeModel(multi);

    it('round-trip with one threshold per tag and independent probabilities', () => {
      const m = manifestOf(saved);
      expect(m.format).toBe(MODEL_FORMAT);
      expect(m.tag_thresholds).toEqual(multi.tagThresholds);
      expect((m.tag_thresholds as number[]).length).toBe(multi.tags.length);
      const loaded = decodeModel(saved);
      const texts = [...VALIDATION.map((r) => r.text), ''];
      expect(loaded.predict(texts)).toEqual(multi.predict(texts));
      expect(loaded.tagThresholds).toEqual(multi.tagThresholds);
      expect(encodeModel(loaded)).toEqual(saved);
    });

    it.each<[string, Record<string, unknown>, RegExp]>([
      ['without tag_thresholds', { tag_thresholds: undefined }, /multi-label model needs tag_thresholds/],
      ['with a threshold too few', { tag_thresholds: [0.5] }, /one number in \[0, 1\] per tag/],
      ['with a threshold above 1', { tag_thresholds: multi.tags.map(() => 1.5) }, /per tag/],
      ['saved as 1.2', { format: 'tagger-model/1.2' }, /multi-label model needs tag_thresholds/],
      ['with a single threshold too', { threshold: 0.3 }, /no single threshold/],
    ])('rejects a multi-label manifest %s', (_name, patch, message) => {
      expect(() => decodeModel(patchManifest(saved, patch))).toThrow(message);
    });

    it('rejects tag_thresholds on a single-label model', () => {
      expect(() => decodeModel(withManifest({ tag_thresholds: model.tags.map(() => 0.5) }))).toThrow(
        /tag_thresholds belong to multi-label models/,
      );
    });
  });

  it('reads a model saved before 1.2 as log loss, unweighted, min_df 1, n-grams from 2, even if the defaults change', () => {
    const args = { ...(manifest().args as Record<string, unknown>) };
    for (const key of ['loss', 'class_weight', 'min_df', 'ngram_min_range']) delete args[key];
    const loaded = decodeModel(withManifest({ format: 'tagger-model/1.1', args }));
    expect(loaded.args).toMatchObject({
      loss: 'log_loss',
      class_weight: null,
      min_df: 1,
      ngram_min_range: 2,
    });
    const texts = VALIDATION.map((r) => r.text);
    expect(loaded.predict(texts)).toEqual(model.predict(texts));
  });

  describe('char_wb+word and sublinear_tf models', () => {
    const union = trainTagger(
      TRAIN,
      VALIDATION,
      { ...model.args, analyzer: 'char_wb+word', sublinear_tf: true },
      { seed: 7 },
    ).model;
    const saved = encodeModel(union);
    const unionManifest = () => manifestOf(saved);
    const patched = (patch: Record<string, unknown>) => patchManifest(saved, patch);

    it('round-trip with the blocks recorded in the manifest', () => {
      const m = unionManifest();
      const blocks = m.blocks as { analyzer: string; ngram_range: number[]; n_features: number }[];
      expect(blocks.map((b) => [b.analyzer, b.ngram_range])).toEqual([
        ['char_wb', [2, 3]],
        ['word', [1, 2]],
      ]);
      expect(blocks[0]!.n_features + blocks[1]!.n_features).toBe(m.n_features);
      expect(m.block_weight).toBe(Math.SQRT1_2);
      const loaded = decodeModel(saved);
      const texts = [...VALIDATION.map((r) => r.text), '', 'unseen words 😀'];
      expect(loaded.predict(texts)).toEqual(union.predict(texts));
      expect(loaded.args).toEqual(union.args);
      expect(encodeModel(loaded)).toEqual(saved);
      // The union's word features change predictions: it is not the char_wb model under another name.
      expect(union.predict(texts)).not.toEqual(model.predict(texts));
    });

    it.each([
      ['missing blocks', { blocks: undefined }, /char_wb\+word needs "blocks"/],
      [
        'blocks in the wrong order',
        { blocks: [...((unionManifest().blocks as unknown[]) ?? [])].reverse() },
        /char_wb\+word needs "blocks"/,
      ],
      [
        'block sizes that do not add up',
        {
          blocks: (unionManifest().blocks as { n_features: number }[]).map((b) => ({
            ...b,
            n_features: b.n_features + 1,
          })),
        },
        /blocks hold \d+ features but the vocabulary has/,
      ],
      ['a bad block weight', { block_weight: 0 }, /block_weight must be a number in \(0, 1\]/],
      ['the old format', { format: 'tagger-model/1' }, /char_wb\+word needs "blocks"/],
    ])('rejects %s with a clear ModelFormatError', (_name, patch, message) => {
      expect(() => decodeModel(patched(patch))).toThrow(ModelFormatError);
      expect(() => decodeModel(patched(patch))).toThrow(message);
    });
  });

  it('computes the standard CRC-32', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it('refuses to encode a model it did not create', () => {
    const fake: TagModel = {
      tags: ['other'],
      args: model.args,
      threshold: null,
      tagThresholds: null,
      predict: () => [],
      explain: () => model.explain('x'),
    };
    expect(() => encodeModel(fake)).toThrow(ModelInputError);
  });
});

describe('RUN_ARTIFACTS', () => {
  it('pins the run artifact layout shared by training and serving, exported from the model index', async () => {
    const index = await import('../../src/model/index.js');
    expect(index.RUN_ARTIFACTS).toEqual({
      args: 'args.json',
      performance: 'performance.json',
      modelDir: 'model',
      confusion: 'confusion_matrix.json',
      mistakes: 'test_mistakes.json',
      behavioural: 'behavioural.json',
      slices: 'slices.json',
      labelIssues: 'label_issues.json',
      referenceProfile: 'reference_profile.json',
      cascadeCurve: 'cascade_curve.json',
      modelChoice: 'model_choice.json',
    });
  });
});
