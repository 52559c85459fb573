/**
 * src/encoder with the real default encoder (all-MiniLM-L6-v2 int8 ONNX + its tokenizer.json, installed by
 * `npm run setup:encoder`; skipped with the reason when missing, a failure under CI): identity, batching,
 * truncation, resolution (local, the name, a hub id from a cache laid out as @huggingface/hub lays it), and
 * one clear line for each kind of bad input.
 */
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_PASS_TOKENS,
  EncoderError,
  openEncoder,
  resolveEncoder,
  SentenceEncoder,
} from '../../src/encoder/index.js';
import { minilmDir } from '../support/components.js';

const MODEL_SHA256 = '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6';
const TOKENIZER_SHA256 = 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037';
const dir = minilmDir();
const scratch = mkdtempSync(join(tmpdir(), 'tagger-encoder-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const texts = [
  'Transfer learning with transformers for text classification.',
  'YOLO object detection on drone images',
  'Kubernetes deployment of a model server with canary releases and drift monitoring',
  'GANs',
  'Graph neural networks for molecules: message passing, pooling and readout functions compared',
];

/** A folder with the default encoder's files, `patch` applied (name → contents, or a path to copy). */
function encoderFolder(name: string, patch: Record<string, string | Uint8Array | null> = {}): string {
  const folder = join(scratch, name);
  mkdirSync(folder, { recursive: true });
  for (const file of ['model.onnx', 'tokenizer.json']) {
    if (file in patch) {
      const value = patch[file];
      if (value !== null && value !== undefined) writeFileSync(join(folder, file), value);
    } else copyFileSync(join(dir!, file), join(folder, file));
  }
  return folder;
}

/** The EncoderError message of a promise, checked to be one line. */
async function oneLine(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EncoderError);
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

const cosine = (a: Float32Array, b: Float32Array): number => {
  let d = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
  }
  return d / Math.sqrt(na * nb);
};

describe.skipIf(dir === null)('the default encoder (minilm)', () => {
  it('loads with its pinned digests, 384 dimensions and a 256-token limit', async () => {
    const encoder = await openEncoder('minilm');
    try {
      expect(encoder.identity).toMatchObject({
        name: 'minilm',
        model_sha256: MODEL_SHA256,
        tokenizer_sha256: TOKENIZER_SHA256,
        pooling: 'mean',
        max_tokens: 256,
        dim: 384,
      });
      expect(encoder.identity.source).toBe(`local:${dir}`);
      // BERT WordPiece, lower-cased and accents stripped, between [CLS] and [SEP].
      expect(encoder.tokenize('Café GANs')).toEqual([101, 7668, 25957, 2015, 102]);
    } finally {
      await encoder.close();
    }
  });

  it('embeds in order, the same vectors in length-aware batches as one text at a time', async () => {
    const encoder = await openEncoder(dir!);
    try {
      const single = await encoder.embed(texts, { maxBatch: 1 });
      const batched = await encoder.embed(texts, { maxBatch: 4 });
      const progress: number[] = [];
      await encoder.embed(texts, { maxBatch: 2, onProgress: (done) => progress.push(done) });
      expect(progress).toEqual([2, 4, 5]);
      single.forEach((v, i) => {
        expect(v).toHaveLength(384);
        expect(cosine(v, batched[i]!)).toBeGreaterThan(0.99999);
      });
      // Related texts are closer than unrelated ones (a sanity check of the pooling).
      const [nlp, vision] = await encoder.embed([
        'sentiment analysis with BERT',
        'image segmentation with U-Net',
      ]);
      expect(cosine(single[0]!, nlp!)).toBeGreaterThan(cosine(single[0]!, vision!));
    } finally {
      await encoder.close();
    }
  });

  it('runs passes of at most 512 padded tokens by default: two texts at the 256-token limit each', async () => {
    expect(DEFAULT_PASS_TOKENS).toBe(512);
    const encoder = await openEncoder(dir!);
    try {
      const long = texts.map(
        (text, i) => `${text} ${texts.slice(i + 1).join(' ')} ${'and more words '.repeat(200)}`,
      );
      expect(long.map((text) => encoder.tokenize(text).length)).toEqual([256, 256, 256, 256, 256]);
      const progress: number[] = [];
      const passes = await encoder.embed(long, { onProgress: (done) => progress.push(done) });
      expect(progress).toEqual([2, 4, 5]);
      // Short texts still batch together: the five of `texts` fit one pass.
      const shortProgress: number[] = [];
      await encoder.embed(texts, { onProgress: (done) => shortProgress.push(done) });
      expect(shortProgress).toEqual([5]);
      const single = await encoder.embed(long, { maxBatch: 1 });
      for (const [i, v] of single.entries()) expect(cosine(v, passes[i]!)).toBeGreaterThan(0.99999);
    } finally {
      await encoder.close();
    }
  });

  it('truncates long texts to their first word pieces between [CLS] and [SEP]', async () => {
    const encoder = await openEncoder('minilm', { maxTokens: 16 });
    try {
      const long = `${texts[4]} ${'and more words '.repeat(2_000)}`;
      const ids = encoder.tokenize(long);
      expect(ids).toHaveLength(16);
      const full = encoder.tokenize(texts[4]!);
      expect(ids.slice(0, 15)).toEqual(full.slice(0, 15));
      expect(ids[15]).toBe(102);
      const [a, b] = await encoder.embed([long, texts[4]!]);
      expect(cosine(a!, b!)).toBeGreaterThan(0.99999);
      // A huge text is cut before tokenizing (64 characters per allowed token), so it stays cheap.
      const started = performance.now();
      expect(encoder.tokenize('word '.repeat(1_000_000))).toHaveLength(16);
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      await encoder.close();
    }
  });

  it('resolves a Hugging Face model id from the hub cache without the network', async () => {
    const cache = join(scratch, 'hf-cache');
    const commit = 'c'.repeat(40);
    const snapshot = join(cache, 'models--example--minilm-int8', 'snapshots', commit);
    mkdirSync(join(snapshot, 'onnx'), { recursive: true });
    mkdirSync(join(cache, 'models--example--minilm-int8', 'refs'), { recursive: true });
    writeFileSync(join(cache, 'models--example--minilm-int8', 'refs', 'main'), commit);
    symlinkSync(join(dir!, 'model.onnx'), join(snapshot, 'onnx', 'model_quantized.onnx'));
    symlinkSync(join(dir!, 'tokenizer.json'), join(snapshot, 'tokenizer.json'));
    writeFileSync(join(snapshot, 'sentence_bert_config.json'), '{"max_seq_length": 128}');
    const saved = process.env.HF_HUB_CACHE;
    process.env.HF_HUB_CACHE = cache;
    try {
      const files = await resolveEncoder('example/minilm-int8');
      expect(files.source).toBe(`hf:example/minilm-int8@${commit}`);
      expect(files.maxTokens).toBe(128);
      const encoder = await SentenceEncoder.load(files);
      expect(encoder.identity.model_sha256).toBe(MODEL_SHA256);
      await encoder.close();
    } finally {
      if (saved === undefined) delete process.env.HF_HUB_CACHE;
      else process.env.HF_HUB_CACHE = saved;
    }
  });
});

describe.skipIf(dir === null)('bad encoder input: one clear line before anything runs', () => {
  it('a missing directory, and a name that is neither a directory nor a hub id', async () => {
    expect(await oneLine(openEncoder(join(scratch, 'nope', 'x', 'y')))).toMatch(
      /no such directory, and not a Hugging Face model id/,
    );
    expect(await oneLine(openEncoder(join(dir!, 'model.onnx')))).toMatch(/is a file; give the directory/);
  });

  it('minilm not installed says how to install it', async () => {
    const saved = process.env.TAGGER_ENCODERS_DIR;
    process.env.TAGGER_ENCODERS_DIR = join(scratch, 'empty');
    try {
      expect(await oneLine(openEncoder('minilm'))).toMatch(
        /minilm is not installed .*run npm run setup:encoder/,
      );
    } finally {
      if (saved === undefined) delete process.env.TAGGER_ENCODERS_DIR;
      else process.env.TAGGER_ENCODERS_DIR = saved;
    }
  });

  it('a missing or corrupt model file', async () => {
    expect(await oneLine(openEncoder(encoderFolder('no-model', { 'model.onnx': null })))).toMatch(
      /has no ONNX model \(looked for model\.onnx/,
    );
    const corrupt = readFileSync(join(dir!, 'model.onnx')).subarray(0, 100_000);
    expect(await oneLine(openEncoder(encoderFolder('corrupt-model', { 'model.onnx': corrupt })))).toMatch(
      /model\.onnx is not a loadable ONNX model/,
    );
  });

  it('a missing or corrupt tokenizer', async () => {
    expect(await oneLine(openEncoder(encoderFolder('no-tokenizer', { 'tokenizer.json': null })))).toMatch(
      /has no tokenizer\.json/,
    );
    expect(
      await oneLine(openEncoder(encoderFolder('corrupt-tokenizer', { 'tokenizer.json': '{"model": {' }))),
    ).toMatch(/tokenizer\.json is not a usable tokenizer\.json/);
  });

  it('a tokenizer that does not match the model (a larger or a smaller vocabulary)', async () => {
    const json = JSON.parse(readFileSync(join(dir!, 'tokenizer.json'), 'utf8'));
    const vocab = json.model.vocab as Record<string, number>;
    const larger = {
      ...json,
      model: { ...json.model, vocab: { ...vocab, zzzextra1: 30522, zzzextra2: 30523 } },
    };
    expect(
      await oneLine(openEncoder(encoderFolder('larger-vocab', { 'tokenizer.json': JSON.stringify(larger) }))),
    ).toMatch(
      /tokenizer\.json does not match .*model\.onnx: the model refuses the tokenizer's token id 30523/,
    );
    const kept = Object.fromEntries(Object.entries(vocab).filter(([, id]) => id < 29_000));
    const smaller = { ...json, model: { ...json.model, vocab: kept } };
    expect(
      await oneLine(
        openEncoder(encoderFolder('smaller-vocab', { 'tokenizer.json': JSON.stringify(smaller) })),
      ),
    ).toMatch(/does not match .*: the tokenizer has 29000 tokens but the model takes more ids/);
  });

  it('a digest that differs from the one a model was trained with', async () => {
    const expect1 = { model_sha256: 'f'.repeat(64), tokenizer_sha256: TOKENIZER_SHA256 };
    expect(await oneLine(openEncoder('minilm', { expect: expect1 }))).toMatch(
      new RegExp(`model\\.onnx has sha256 ${MODEL_SHA256}, but the model was trained with f{64}`),
    );
    const expect2 = { model_sha256: MODEL_SHA256, tokenizer_sha256: '0'.repeat(64) };
    expect(await oneLine(openEncoder('minilm', { expect: expect2 }))).toMatch(
      /tokenizer\.json has sha256 be50c362.*, but the model was trained with 0{64}/,
    );
  });

  it('an unknown Hugging Face model id without the hub', async () => {
    const saved = { cache: process.env.HF_HUB_CACHE, endpoint: process.env.HF_ENDPOINT };
    process.env.HF_HUB_CACHE = join(scratch, 'empty-hf-cache');
    try {
      const message = await oneLine(openEncoder('no-such-org/no-such-model-xyz'));
      expect(message).toMatch(
        /encoder no-such-org\/no-such-model-xyz: not a local directory, not in the Hugging Face cache .*the hub could not be reached|hub repository has no tokenizer\.json/,
      );
    } finally {
      if (saved.cache === undefined) delete process.env.HF_HUB_CACHE;
      else process.env.HF_HUB_CACHE = saved.cache;
    }
  }, 60_000);
});
