/**
 * The `fasttext` family beyond the classifier contract: its features (words, the end-of-text word, word
 * and character n-grams in shared buckets), the Huffman tree of the hierarchical softmax, training that
 * learns and is reproducible, a new row order every epoch, memory that grows with the data rather than the
 * buckets, the refit that continues the validated model, and the saved format's checks.
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../../../src/model/args.js';
import { decodeModel, encodeModel, MODEL_FORMAT } from '../../../../src/model/artifact.js';
import {
  buildDictionary,
  END_OF_TEXT,
  FastTextFeatures,
  hashString,
  tokensOf,
} from '../../../../src/model/classifiers/fasttext/fasttext-features.js';
import type { FastTextTagModel } from '../../../../src/model/classifiers/fasttext/fasttext-model.js';
import { huffmanTree } from '../../../../src/model/classifiers/fasttext/fasttext-tree.js';
import { refitEpochs } from '../../../../src/model/classifiers/fasttext/train-fasttext.js';
import { ModelFormatError } from '../../../../src/model/errors.js';
import type { LabelledText } from '../../../../src/model/tag-model.js';
import { trainTagger } from '../../../../src/model/tagger.js';
import { TRAIN, VALIDATION } from '../../fixtures.js';

const FAST = { classifier: 'fasttext', min_freq: 2, ft_epochs: 30, ft_dim: 16 } as const;

describe('fasttext features', () => {
  const features = new FastTextFeatures(['image', 'model', END_OF_TEXT], {
    wordNgrams: 2,
    minn: 3,
    maxn: 4,
    buckets: 1000,
  });

  it('end every text with the end-of-text word, which is in every dictionary', () => {
    expect(tokensOf('image model')).toEqual(['image', 'model', END_OF_TEXT]);
    expect(tokensOf('')).toEqual([END_OF_TEXT]);
    expect(buildDictionary(['a b', 'b'], 1)).toEqual([END_OF_TEXT, 'b', 'a']);
    expect(buildDictionary(['a b', 'b'], 2)).toEqual([END_OF_TEXT, 'b']);
  });

  it('give known words their own rows, and word and character n-grams rows in the buckets', () => {
    const n = features.rowsOf('image unknownword');
    const rows = Array.from(features.rowIndices.subarray(0, n));
    expect(rows).toContain(0); // image
    expect(rows).toContain(2); // the end-of-text word
    expect(rows).not.toContain(1); // model is not in the text
    const buckets = rows.filter((r) => r >= 3);
    expect(buckets.every((r) => r < 3 + 1000)).toBe(true);
    // <image> and <unknownword> give 3- and 4-grams; two bigrams (image unknownword, unknownword </s>).
    const subwords = (word: string) => `<${word}>`.length - 2 + (`<${word}>`.length - 3);
    expect(buckets.length).toBe(subwords('image') + subwords('unknownword') + 2);
    // The same text gives the same rows, and a bucket row names the n-gram that hashed there.
    expect(features.rowsOf('image unknownword')).toBe(n);
    const bigram =
      3 + (((Math.imul(hashString('image'), 116049371) + hashString('unknownword')) >>> 0) % 1000);
    expect(rows).toContain(bigram);
    expect(features.nameOf(bigram, 'image unknownword')).toBe('image unknownword');
    expect(features.nameOf(0, 'image')).toBe('image');
  });
});

describe('the Huffman tree of a hierarchical softmax', () => {
  it('gives every tag a distinct, prefix-free path, shorter for frequent tags', () => {
    const counts = [500, 3, 40, 40, 1, 200];
    const tree = huffmanTree(counts);
    const words = tree.codes.map((code) => Array.from(code).join(''));
    expect(new Set(words).size).toBe(counts.length);
    for (const a of words) for (const b of words) if (a !== b) expect(b.startsWith(a)).toBe(false);
    for (const path of tree.paths)
      for (const node of path) expect(node >= 0 && node < counts.length - 1).toBe(true);
    expect(tree.paths[0]!.length).toBeLessThan(tree.paths[4]!.length);
    expect(huffmanTree([7]).paths).toEqual([new Int32Array(0)]);
  });
});

describe('fasttext training', () => {
  for (const loss of ['softmax', 'hs'] as const) {
    it(`learns the clear topics with ${loss}, reproducibly for a seed`, () => {
      const args = parseTrainingArgs({ ...FAST, ft_loss: loss });
      const { model } = trainTagger(TRAIN, VALIDATION, args, { seed: 3 });
      const [nlp, cv, ops] = model.predict([
        'language model for text',
        'images with yolo',
        'kubernetes serving',
      ]);
      expect([nlp!.predicted_tag, cv!.predicted_tag, ops!.predicted_tag]).toEqual([
        'natural-language-processing',
        'computer-vision',
        'mlops',
      ]);
      const again = trainTagger(TRAIN, VALIDATION, args, { seed: 3 }).model;
      expect(encodeModel(again)).toEqual(encodeModel(model));
      expect(encodeModel(trainTagger(TRAIN, VALIDATION, args, { seed: 4 }).model)).not.toEqual(
        encodeModel(model),
      );
    });
  }

  it('keeps only the input rows the training rows use, whatever the buckets', () => {
    const sizes = [1 << 10, 1 << 22].map((buckets) => {
      const { model } = trainTagger(TRAIN, [], parseTrainingArgs({ ...FAST, ft_buckets: buckets }), {
        seed: 1,
      });
      return (model as FastTextTagModel).parts.input.length;
    });
    expect(sizes[1]).toBeLessThan(30_000);
    expect(sizes[1]).toBeGreaterThanOrEqual(sizes[0]!);
  });

  it('visits the rows in a new order every epoch, so rows sorted by tag do not favour the first tag', () => {
    // The learning rate falls from ft_lr to 0, so rows read in file order weigh most at the start: sorted
    // by tag, one epoch in that order left P(a) about 0.09 above P(b) for a text of only shared words.
    const sorted: LabelledText[] = ['alpha', 'beta'].flatMap((word, t) =>
      Array.from({ length: 60 }, (_, i) => ({
        text: `${word} shared common words ${i % 7}`,
        tag: t === 0 ? 'a' : 'b',
      })),
    );
    const validation = [
      { text: 'alpha shared', tag: 'a' },
      { text: 'beta shared', tag: 'b' },
    ];
    const args = parseTrainingArgs({ classifier: 'fasttext', ft_epochs: 1, refit: false, min_freq: 1 });
    for (const seed of [1, 2, 3, 4, 5]) {
      const { model } = trainTagger(sorted, validation, args, { seed });
      const p = model.predict(['shared common words'])[0]!.probabilities;
      expect(Math.abs(p.a! - p.b!)).toBeLessThan(0.05);
    }
  });

  it('refits by continuing the validated model on train + validation for a fifth of the epochs', () => {
    const epochs: string[] = [];
    const args = parseTrainingArgs({ ...FAST, refit: true });
    const refitted = trainTagger(TRAIN, VALIDATION, args, {
      seed: 2,
      onEpoch: (r) => epochs.push(`fit ${r.epoch}/${r.epochs}`),
      onRefitEpoch: (r) => epochs.push(`refit ${r.epoch}/${r.epochs}`),
    });
    expect(epochs).toEqual([
      ...Array.from({ length: 30 }, (_, i) => `fit ${i + 1}/30`),
      ...Array.from({ length: refitEpochs(args) }, (_, i) => `refit ${i + 1}/6`),
    ]);
    const validated = trainTagger(TRAIN, VALIDATION, parseTrainingArgs({ ...FAST, refit: false }), {
      seed: 2,
    });
    // The validation figures are the validated fit's either way; only the refitted model saw the validation rows.
    expect(refitted.validationF1).toBe(validated.validationF1);
    expect(refitted.history).toEqual(validated.history);
    const words = (m: typeof refitted.model) =>
      (m as FastTextTagModel).parts.rowOf.filter((r) => r >= 0).length;
    expect(words(refitted.model)).toBeGreaterThan(words(validated.model));
  });

  it('learns several tags per text one-vs-all, with a threshold per tag', () => {
    const rows: LabelledText[] = TRAIN.map((r, i) =>
      i % 3 === 0 && r.tag !== 'mlops'
        ? { ...r, tag: `${r.tag}|mlops`, tags: [r.tag, 'mlops'] }
        : { ...r, tags: [r.tag] },
    );
    const { model } = trainTagger(
      rows,
      [],
      parseTrainingArgs({ ...FAST, multi_label: true, threshold: 'argmax' }),
      {
        seed: 5,
      },
    );
    expect((model as FastTextTagModel).parts.loss).toBe('ova');
    expect(model.tagThresholds).toHaveLength(model.tags.length);
  });
});

describe('a saved fasttext model', () => {
  const { model } = trainTagger(TRAIN, VALIDATION, parseTrainingArgs({ ...FAST, ft_loss: 'hs' }), {
    seed: 9,
  });
  const files = encodeModel(model);
  const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));
  const edited = (change: (m: Record<string, unknown>) => void) => {
    const copy = structuredClone(manifest);
    change(copy);
    return { ...files, 'tagger-model.json': new TextEncoder().encode(JSON.stringify(copy)) };
  };

  it('is written in the current format (fasttext since 1.6) with its dictionary, settings and tree counts', () => {
    expect(manifest.format).toBe(MODEL_FORMAT);
    expect(manifest.fasttext).toMatchObject({ dim: 16, output: 'hs', word_ngrams: 2, buckets: 1 << 20 });
    expect(manifest.fasttext.tag_counts).toHaveLength(model.tags.length);
    expect(decodeModel(files).predict(['images'])).toEqual(model.predict(['images']));
  });

  it('is refused when its settings, rows or format do not fit', () => {
    expect(() => decodeModel(edited((m) => ((m.fasttext as { dim: number }).dim = 8)))).toThrow(
      /fasttext.dim is 8/,
    );
    expect(() => decodeModel(edited((m) => ((m.fasttext as { buckets: number }).buckets = 10)))).toThrow(
      /feature settings/,
    );
    expect(() => decodeModel(edited((m) => ((m.fasttext as { rows: number }).rows += 1)))).toThrow(
      /expected/,
    );
    expect(() => decodeModel(edited((m) => (m.format = 'tagger-model/1.5')))).toThrow(
      /needs format tagger-model\/1.6/,
    );
    expect(() => decodeModel(edited((m) => delete m.fasttext))).toThrow(ModelFormatError);
    expect(() =>
      decodeModel(edited((m) => ((m.fasttext as { words: string[] }).words[0] = 'two words'))),
    ).toThrow(/without spaces/);
  });

  it('refuses minn above maxn and an encoder before training', () => {
    expect(() => parseTrainingArgs({ classifier: 'fasttext', ft_minn: 5, ft_maxn: 4 })).toThrow(
      /"ft_minn" \(5\)/,
    );
    expect(() => parseTrainingArgs({ classifier: 'fasttext', encoder: 'minilm' })).toThrow(
      /learns its own embeddings/,
    );
  });
});
