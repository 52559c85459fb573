/**
 * The embedding block of an encoder model, with synthetic embeddings (src/model never runs an encoder):
 * training needs them, they carry signal the TF-IDF block lacks, prediction and explanations take them,
 * the artifact (format 1.5) records the encoder and loads only where embeddings will be given.
 */
import { describe, expect, it } from 'vitest';
import {
  argsForEncoder,
  DEFAULT_TRAINING_ARGS,
  ENCODER_DEFAULT_ARGS,
  parseTrainingArgs,
} from '../../src/model/args.js';
import { decodeModel, encodeModel, MODEL_FORMAT, READABLE_MODEL_FORMATS } from '../../src/model/artifact.js';
import { ModelFormatError, ModelInputError } from '../../src/model/errors.js';
import { behaviourTexts, runBehaviourSuite } from '../../src/model/evaluation/behaviour.js';
import { DEFAULT_BEHAVIOUR_SUITE } from '../../src/model/evaluation/behaviour-suite.js';
import { evaluate } from '../../src/model/evaluation/evaluate.js';
import { isVoteExplanation } from '../../src/model/explain.js';
import { createRng } from '../../src/model/rng.js';
import { bindEmbeddings, type LabelledText, trainTagger } from '../../src/model/tagger.js';
import {
  appendEmbeddingBlock,
  type EncoderSpec,
  embeddingScale,
  parseEncoderSpec,
} from '../../src/model/text/embeddings.js';
import { linearExplanation } from './fixtures.js';

const DIM = 8;
const TAGS = ['alpha', 'beta', 'gamma'];
const SPEC: EncoderSpec = {
  name: 'synthetic',
  source: 'local:/nowhere',
  model_sha256: 'a'.repeat(64),
  tokenizer_sha256: 'b'.repeat(64),
  pooling: 'mean',
  max_tokens: 128,
  dim: DIM,
};

/** Texts whose words say nothing about the tag (shared filler), and embeddings that do. */
function corpus(n: number, seed: number): { rows: LabelledText[]; lookup: Map<string, Float32Array> } {
  const rng = createRng(seed);
  const words = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit'];
  const rows: LabelledText[] = [];
  const lookup = new Map<string, Float32Array>();
  for (let i = 0; i < n; i++) {
    const tag = TAGS[i % TAGS.length]!;
    const filler = Array.from({ length: 6 }, () => words[Math.floor(rng() * words.length)]).join(' ');
    const text = `${filler} ${Math.floor(rng() * 1e9).toString(36)}`;
    const v = new Float32Array(DIM).map(() => (rng() - 0.5) * 0.4);
    v[TAGS.indexOf(tag)]! += 2;
    rows.push({ text, tag });
    lookup.set(text, v);
  }
  return { rows, lookup };
}

const train = corpus(90, 1);
const validation = corpus(30, 2);
const test = corpus(60, 3);
const lookup = new Map([...train.lookup, ...validation.lookup, ...test.lookup]);
const texts = test.rows.map((r) => r.text);
const embeddings = texts.map((t) => lookup.get(t)!);

/**
 * The classifiers that take embeddings: SGD (the block is one more input of its linear model) and the
 * member classifiers that read it (linear_svm, logistic_regression; in a vote, naive Bayes beside them
 * reads the TF-IDF block alone). Each configuration, the format that let its family take embeddings.
 */
const CONFIGURATIONS = [
  { name: 'sgd ovr', given: { num_epochs: 20 }, since: 'tagger-model/1.5' },
  { name: 'linear_svm', given: { classifier: 'linear_svm' }, since: 'tagger-model/1.8' },
  {
    name: 'soft_vote of a calibrated linear_svm and multinomial_nb',
    given: {
      classifier: 'soft_vote',
      calibration_data: 'validation',
      members: [{ classifier: 'linear_svm', calibration: 'sigmoid' }, { classifier: 'multinomial_nb' }],
    },
    since: 'tagger-model/1.8',
  },
] as const;

describe.each(CONFIGURATIONS)(
  'encoder models of $name (embeddings as an input block)',
  ({ given, since }) => {
    const args = parseTrainingArgs({ encoder: 'synthetic', min_freq: 1, ...given });
    const trained = trainTagger(train.rows, validation.rows, args, {
      seed: 7,
      encoder: { spec: SPEC, embeddings: lookup },
    });
    const model = trained.model;

    it('need embeddings to train, and refuse them without an encoder arg', () => {
      expect(() => trainTagger(train.rows, validation.rows, args, { seed: 7 })).toThrow(
        /name the encoder synthetic, but no embeddings were given/,
      );
      expect(() =>
        trainTagger(train.rows, validation.rows, DEFAULT_TRAINING_ARGS, {
          seed: 7,
          encoder: { spec: SPEC, embeddings: lookup },
        }),
      ).toThrow(/args name no encoder/);
      const missing = new Map(lookup);
      missing.delete(train.rows[3]!.text);
      expect(() =>
        trainTagger(train.rows, validation.rows, args, {
          seed: 7,
          encoder: { spec: SPEC, embeddings: missing },
        }),
      ).toThrow(ModelInputError);
    });

    it('learn from the embeddings what the words do not say', () => {
      const encoded = evaluate(bindEmbeddings(model, lookup), test.rows).overall.f1;
      const tfidfOnly = trainTagger(train.rows, validation.rows, { ...args, encoder: null }, { seed: 7 });
      const words = evaluate(tfidfOnly.model, test.rows).overall.f1;
      expect(encoded).toBeGreaterThan(0.95);
      expect(words).toBeLessThan(0.6);
      expect(model.encoder).toEqual(SPEC);
    });

    it('predict with one embedding per text, and say so when they are missing or misshapen', () => {
      expect(() => model.predict(texts)).toThrow(/needs one sentence embedding .* per text; got none/);
      expect(() => model.predict(texts, embeddings.slice(1))).toThrow(ModelInputError);
      expect(() => model.predict([texts[0]!], [new Float32Array(DIM + 1)])).toThrow(/has 9 values/);
      const predictions = model.predict(texts, embeddings);
      expect(bindEmbeddings(model, lookup).predict(texts)).toEqual(predictions);
    });

    it('explain with the embedding block as one term, so the parts still add up to the score', () => {
      const explained = model.explain(texts[0]!, 3, embeddings[0]);
      expect(explained.tag).toBe(model.predict([texts[0]!], [embeddings[0]!])[0]!.predicted_tag);
      // A vote explains each member's score; the members that read embeddings have the encoder term.
      const parts = isVoteExplanation(explained) ? explained.vote.members : [linearExplanation(explained)];
      for (const e of parts) {
        const reads = !('classifier' in e) || e.classifier !== 'multinomial_nb';
        expect(e.encoder === undefined).toBe(!reads);
        const sum =
          e.bias + e.contributions.reduce((a, c) => a + c.contribution, 0) + e.rest + (e.encoder ?? 0);
        expect(sum).toBeCloseTo(e.score, 10);
      }
    });

    it('save in the current format (1.5 added the encoder spec), and load only where embeddings will be given', () => {
      const files = encodeModel(model);
      const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));
      expect(manifest.format).toBe(MODEL_FORMAT);
      expect(manifest.encoder).toEqual(SPEC);
      expect(() => decodeModel(files)).toThrow(
        /takes sentence embeddings from the encoder synthetic .* this reader does not compute them/,
      );
      const loaded = decodeModel(files, { withEncoder: true });
      expect(loaded.encoder).toEqual(SPEC);
      expect(loaded.predict(texts, embeddings)).toEqual(model.predict(texts, embeddings));
      expect(encodeModel(loaded)).toEqual(files);
    });

    it('refuse a saved encoder model whose spec is broken or whose weights lack the block', () => {
      const files = encodeModel(model);
      const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));
      const patched = (patch: Record<string, unknown>) => ({
        ...files,
        'tagger-model.json': new TextEncoder().encode(JSON.stringify({ ...manifest, ...patch })),
      });
      expect(() =>
        decodeModel(patched({ encoder: { ...SPEC, model_sha256: 'xyz' } }), { withEncoder: true }),
      ).toThrow(/model_sha256 as 64 hex digits/);
      expect(() => decodeModel(patched({ encoder: undefined }), { withEncoder: true })).toThrow(
        ModelFormatError,
      );
      expect(() =>
        decodeModel(patched({ encoder: { ...SPEC, dim: DIM + 1 } }), { withEncoder: true }),
      ).toThrow(/bytes, expected|needs "weights"/);
      const before = READABLE_MODEL_FORMATS[READABLE_MODEL_FORMATS.indexOf(since) - 1]!;
      expect(() => decodeModel(patched({ format: before }), { withEncoder: true })).toThrow(
        new RegExp(
          `an encoder model of classifier ${args.classifier} needs format ${since.replace('.', '\\.')} or later`,
        ),
      );
    });

    it('multi-label too', () => {
      const multi = trainTagger(
        train.rows.map((r) => ({ ...r, tags: [r.tag] })),
        validation.rows.map((r) => ({ ...r, tags: [r.tag] })),
        { ...args, multi_label: true, threshold: 'tuned' },
        { seed: 7, encoder: { spec: SPEC, embeddings: lookup } },
      ).model;
      const loaded = decodeModel(encodeModel(multi), { withEncoder: true });
      expect(loaded.predict(texts, embeddings)).toEqual(multi.predict(texts, embeddings));
      const right = loaded
        .predict(texts, embeddings)
        .filter((p, i) => p.predicted_tags.includes(test.rows[i]!.tag)).length;
      expect(right / texts.length).toBeGreaterThan(0.9);
    });

    it.runIf(since === 'tagger-model/1.5')(
      'TF-IDF models of format 1.3 (before the encoder args) still load',
      () => {
        const plain = trainTagger(train.rows, validation.rows, { ...args, encoder: null }, { seed: 7 }).model;
        const files = encodeModel(plain);
        const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));
        const { encoder: _e, encoder_weight: _w, encoder_normalize: _n, ...oldArgs } = manifest.args;
        const old = {
          ...files,
          'tagger-model.json': new TextEncoder().encode(
            JSON.stringify({ ...manifest, format: 'tagger-model/1.3', args: oldArgs }),
          ),
        };
        const loaded = decodeModel(old);
        expect(loaded.args.encoder).toBeNull();
        expect(loaded.predict(texts)).toEqual(plain.predict(texts));
      },
    );
  },
);

describe('the embedding block', () => {
  it('is stacked after the TF-IDF columns, normalised and weighted', () => {
    const x = {
      nRows: 2,
      nCols: 3,
      indptr: Int32Array.from([0, 1, 1]),
      indices: Int32Array.from([2]),
      data: Float64Array.from([0.5]),
    };
    const out = appendEmbeddingBlock(x, [Float32Array.from([3, 4]), Float32Array.from([0, 0])], 2, {
      weight: 0.5,
      normalize: true,
    });
    expect(out.nCols).toBe(5);
    expect([...out.indptr]).toEqual([0, 3, 5]);
    expect([...out.indices]).toEqual([2, 3, 4, 3, 4]);
    [0.5, 0.3, 0.4, 0, 0].forEach((v, i) => {
      expect(out.data[i]).toBeCloseTo(v, 12);
    });
    expect(embeddingScale(Float32Array.from([3, 4]), { weight: 2, normalize: false })).toBe(2);
  });

  it('spec parsing names what is wrong', () => {
    expect(parseEncoderSpec(SPEC)).toEqual(SPEC);
    expect(() => parseEncoderSpec({ ...SPEC, pooling: 'cls' })).toThrow(/pooling must be "mean"/);
    expect(() => parseEncoderSpec({ ...SPEC, dim: 0 })).toThrow(/dim as a positive integer/);
    expect(() => parseEncoderSpec(null)).toThrow(/must be an object/);
  });
});

describe('encoder args', () => {
  it('validate encoder, encoder_weight and encoder_normalize', () => {
    expect(DEFAULT_TRAINING_ARGS.encoder).toBeNull();
    expect(() => parseTrainingArgs({ encoder: '' })).toThrow(/"encoder" must be null or a non-empty string/);
    expect(() => parseTrainingArgs({ encoder_weight: 0 })).toThrow(/"encoder_weight"/);
    expect(() => parseTrainingArgs({ encoder_normalize: 'yes' })).toThrow(/"encoder_normalize"/);
  });

  it('argsForEncoder applies the CV-chosen configuration to every key the user did not set', () => {
    const given = parseTrainingArgs({ encoder: 'minilm' });
    const chosen = argsForEncoder(given, new Set(['encoder']));
    for (const [key, value] of Object.entries(ENCODER_DEFAULT_ARGS)) {
      expect(chosen[key as keyof typeof chosen]).toEqual(value);
    }
    const mine = argsForEncoder(
      parseTrainingArgs({ encoder: 'minilm', encoder_weight: 7 }),
      new Set(['encoder', 'encoder_weight']),
    );
    expect(mine.encoder_weight).toBe(7);
    expect(argsForEncoder(DEFAULT_TRAINING_ARGS, new Set())).toBe(DEFAULT_TRAINING_ARGS);
  });

  it('default to the SGD model the encoder configuration was measured on (the pre-issue-25 defaults)', () => {
    // The default classifier (soft_vote) takes no embeddings.
    expect(DEFAULT_TRAINING_ARGS.classifier).toBe('soft_vote');
    expect(
      argsForEncoder({ ...DEFAULT_TRAINING_ARGS, encoder: 'minilm' }, new Set(['encoder'])).classifier,
    ).toBe('ovr');
    expect(parseTrainingArgs({ encoder: 'minilm' })).toMatchObject({ classifier: 'ovr', oversample: true });
    // What the user set stays: softmax is SGD too.
    expect(parseTrainingArgs({ encoder: 'minilm', classifier: 'softmax' }).classifier).toBe('softmax');
  });

  it('refuse an encoder with a classifier that reads no embeddings', () => {
    for (const classifier of ['nb_lr', 'nb_svm', 'multinomial_nb', 'complement_nb']) {
      expect(() => parseTrainingArgs({ encoder: 'minilm', classifier })).toThrow(
        /"encoder" needs a classifier that reads embeddings — linear_svm, logistic_regression .* reads the TF-IDF features only/,
      );
    }
    const naiveBayesOnly = [{ classifier: 'multinomial_nb' }, { classifier: 'nb_lr' }];
    expect(() =>
      parseTrainingArgs({ encoder: 'minilm', classifier: 'soft_vote', members: naiveBayesOnly }),
    ).toThrow(/multinomial_nb, nb_lr read the TF-IDF features only/);
    for (const classifier of ['linear_svm', 'logistic_regression', 'soft_vote'])
      expect(parseTrainingArgs({ encoder: 'minilm', classifier }).classifier).toBe(classifier);
    expect(() => parseTrainingArgs({ encoder: 'minilm', classifier: 'fasttext' })).toThrow(
      /fasttext.*learns its own embeddings of the words/,
    );
  });
});

describe('behaviourTexts', () => {
  it('lists every text the default suite predicts', () => {
    const all = behaviourTexts(DEFAULT_BEHAVIOUR_SUITE);
    const asked = new Set<string>();
    const recorder = {
      tags: ['other'],
      predict: (batch: readonly string[]) => {
        for (const t of batch) asked.add(t);
        return batch.map(() => ({ predicted_tag: 'other', probabilities: { other: 1 } }));
      },
    };
    // Every case with a tag the recorder knows runs; cases naming others are skipped, their texts still listed.
    const everyTag = { ...recorder, tags: [...new Set(DEFAULT_BEHAVIOUR_SUITE.cases.flatMap(tagsIn))] };
    runBehaviourSuite(everyTag, DEFAULT_BEHAVIOUR_SUITE);
    expect(asked.size).toBeGreaterThan(0);
    expect(all.length).toBeGreaterThan(DEFAULT_BEHAVIOUR_SUITE.cases.length);
    for (const text of asked) expect(all).toContain(text);
  });
});

function tagsIn(c: (typeof DEFAULT_BEHAVIOUR_SUITE.cases)[number]): string[] {
  if (c.kind === 'mft') return [c.expected];
  if (c.kind === 'dir') return [c.tag];
  return c.expected === undefined ? ['other'] : [c.expected];
}
