/** Model artifact: round trip, and a clear ModelFormatError for each kind of broken input. */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../src/model/args.js';
import { crc32, decodeModel, encodeModel, MODEL_FILES, MODEL_FORMAT } from '../../src/model/artifact.js';
import { ModelFormatError, ModelInputError } from '../../src/model/errors.js';
import { type TagModel, trainTagger } from '../../src/model/tagger.js';
import { TRAIN, VALIDATION } from './fixtures.js';

const { model } = trainTagger(
  TRAIN,
  VALIDATION,
  parseTrainingArgs({ min_freq: 2, num_epochs: 5, ngram_max_range: 3, threshold: 'tuned' }),
  { seed: 7 },
);
const files = encodeModel(model);
const manifest = () =>
  JSON.parse(new TextDecoder().decode(files['tagger-model.json'])) as Record<string, unknown>;
const withManifest = (patch: Record<string, unknown>) => ({
  ...files,
  'tagger-model.json': new TextEncoder().encode(JSON.stringify({ ...manifest(), ...patch })),
});

describe('model artifact', () => {
  it('produces exactly MODEL_FILES with a versioned manifest', () => {
    expect(Object.keys(files).sort()).toEqual([...MODEL_FILES].sort());
    expect(manifest().format).toBe(MODEL_FORMAT);
    expect(MODEL_FORMAT).toBe('tagger-model/1');
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
      /unsupported model format "tagger-model\/2"/,
    ],
    [
      'truncated weights',
      { ...files, 'weights.bin': files['weights.bin']!.slice(0, 100) },
      /has 100 bytes, expected/,
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

  it('rejects non-finite weights even with a matching checksum', () => {
    const weights = files['weights.bin']!.slice();
    new DataView(weights.buffer).setFloat64(0, Number.NaN, true);
    const broken = {
      ...withManifest({ weights_crc32: crc32(weights) }),
      'weights.bin': weights,
    };
    expect(() => decodeModel(broken)).toThrow(/non-finite number at value 0/);
  });

  it('computes the standard CRC-32', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it('refuses to encode a model it did not create', () => {
    const fake: TagModel = { tags: ['other'], args: model.args, threshold: null, predict: () => [] };
    expect(() => encodeModel(fake)).toThrow(ModelInputError);
  });
});
