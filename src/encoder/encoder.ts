/**
 * A sentence encoder: a real tokenizer (@huggingface/tokenizers, reading tokenizer.json offline) and an
 * ONNX transformer run by onnxruntime-node, mean-pooled over the attention mask. One embedding per text,
 * not normalised (the model decides; see src/model's `encoder_normalize`).
 *
 * Truncation (the documented rule): a text is first cut to its first `maxTokens × 64` characters (a bound
 * on the tokenizer's work for huge inputs), then tokenized with the tokenizer's special tokens, and when
 * longer than `maxTokens` keeps its leading word pieces: the first `maxTokens − (special tokens)` pieces
 * between `[CLS]` and `[SEP]` — sentence-transformers' rule for this model. TF-IDF features always see the
 * whole text.
 *
 * Batches are length-aware: texts are sorted by token count and cut into batches of at most `maxBatch`
 * texts and `maxBatchTokens` padded tokens (DEFAULT_PASS_TOKENS), so a batch pads to a length close to each of its texts'
 * (padding every text to the longest of a random batch was measured slower per text than single texts).
 * `session.run` returns a promise in onnxruntime-node, but runs the forward pass synchronously on the
 * calling thread (from a `setImmediate`): on a server's main thread it would block the event loop for the
 * whole pass. Serving therefore runs the encoder in a worker thread (./thread.ts).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EncoderError } from './errors.js';
import type { EncoderFiles } from './resolve.js';

type Ort = typeof import('onnxruntime-node');
type TokenizerClass = typeof import('@huggingface/tokenizers').Tokenizer;
type Session = import('onnxruntime-node').InferenceSession;

/** What identifies an encoder's outputs: a run records it, and loading a run's model checks it. */
export interface EncoderIdentity {
  /** The name it was given (`minilm`, a directory, a hub id). */
  name: string;
  /** Where its files came from (`local:<dir>`, `hf:<id>@<commit>`). */
  source: string;
  model_sha256: string;
  tokenizer_sha256: string;
  pooling: 'mean';
  /** Token limit, special tokens included (the truncation rule above). */
  max_tokens: number;
  /** Embedding size. */
  dim: number;
}

export interface EncoderOptions {
  /** ONNX Runtime intra-op threads (default 1: training and CV parallelise elsewhere). */
  threads?: number;
  /** Override the folder's token limit (a run's model carries the one it was trained with). */
  maxTokens?: number;
  /** Digests the files must have (a trained model's); a difference is refused before anything runs. */
  expect?: Pick<EncoderIdentity, 'model_sha256' | 'tokenizer_sha256'>;
}

export interface EmbedOptions {
  /** Most texts per forward pass (default 32). */
  maxBatch?: number;
  /** Most padded tokens per forward pass, texts × the batch's longest (default DEFAULT_PASS_TOKENS). */
  maxBatchTokens?: number;
  /** Called after each batch with the texts done so far. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Most padded tokens per forward pass by default: two texts at the 256-token limit, ~8 of the data's
 * texts. Measured side by side against 4,096 (2026-11-28, 2 intra-op threads, interleaved rounds): less
 * CPU per text — 9.8–10.2 ms against 11.1–12.1 ms for holdout texts, 90–93 ms against 149–153 ms for
 * texts at the token limit (the passes' tensors stay in cache) — and a served encoder run's peak RSS
 * 90–120 MB lower under batches of long texts (the attention's B × heads × S² scores are a quarter).
 */
export const DEFAULT_PASS_TOKENS = 512;

/** How many characters per allowed token a text is cut to before tokenizing (see the truncation rule). */
export const CHARS_PER_TOKEN_BOUND = 64;

/** Run options of the vocabulary probe, whose refusal is expected: ONNX Runtime would log it as an error. */
const QUIET = { logSeverityLevel: 4 } as const;

const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');
const firstLine = (error: unknown): string => String((error as Error)?.message ?? error).split('\n')[0]!;

export class SentenceEncoder {
  private constructor(
    readonly identity: EncoderIdentity,
    private readonly ort: Ort,
    private readonly session: Session,
    private readonly tokenizer: InstanceType<TokenizerClass>,
    /** Special tokens the tokenizer puts before and after a text's pieces ([CLS] … [SEP]: 1 and 1). */
    private readonly specials: { head: number; tail: number },
  ) {}

  /**
   * Loads and checks an encoder: digests (against `expect`), the tokenizer, the ONNX model, and that the
   * two belong together (the model accepts the tokenizer's last id and refuses the next one).
   */
  static async load(files: EncoderFiles, options: EncoderOptions = {}): Promise<SentenceEncoder> {
    const what = `encoder ${files.name}`;
    for (const path of [files.model, files.tokenizer]) {
      if (!existsSync(path)) throw new EncoderError(`${what}: ${path} is missing`);
    }
    const modelSha = sha256File(files.model);
    const tokenizerSha = sha256File(files.tokenizer);
    if (options.expect && options.expect.model_sha256 !== modelSha) {
      throw new EncoderError(
        `${what}: ${files.model} has sha256 ${modelSha}, but the model was trained with ${options.expect.model_sha256}; install the encoder the run used`,
      );
    }
    if (options.expect && options.expect.tokenizer_sha256 !== tokenizerSha) {
      throw new EncoderError(
        `${what}: ${files.tokenizer} has sha256 ${tokenizerSha}, but the model was trained with ${options.expect.tokenizer_sha256}; install the tokenizer the run used`,
      );
    }
    const [{ Tokenizer }, ortModule] = await Promise.all([
      import('@huggingface/tokenizers'),
      import('onnxruntime-node'),
    ]);
    const ort = ((ortModule as { default?: Ort }).default ?? ortModule) as Ort;
    let tokenizer: InstanceType<TokenizerClass>;
    try {
      const json: unknown = JSON.parse(readFileSync(files.tokenizer, 'utf8'));
      const configPath = join(dirname(files.tokenizer), 'tokenizer_config.json');
      const config: unknown = existsSync(configPath) ? JSON.parse(readFileSync(configPath, 'utf8')) : {};
      tokenizer = new Tokenizer(json as object, config as object);
      tokenizer.encode('probe');
    } catch (error) {
      throw new EncoderError(
        `${what}: ${files.tokenizer} is not a usable tokenizer.json (${firstLine(error)})`,
      );
    }
    let session: Session;
    try {
      session = await ort.InferenceSession.create(files.model, {
        intraOpNumThreads: options.threads ?? 1,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
        // Without ONNX Runtime's arena each forward pass frees what it allocated: ~145 MB less resident
        // memory after batches of long texts, at the same speed in batches (+2 % for single texts).
        enableCpuMemArena: false,
        // Nor memory patterns: with them ONNX Runtime plans each input shape's intermediate tensors as one
        // block allocated per pass, and every batch of new shape adds a plan. Measured side by side
        // (bench/encoder-memory.ts, 2026-11-28): 60–79 MB lower peak and 26–49 MB less resident after
        // batches of long texts, at the same CPU per text.
        enableMemPattern: false,
        // The intra-op threads wait without spinning: a spinning pool burns the CPU that the event loop
        // (and everything else of a serving process) needs, and with the cores shared it was measured
        // slower too (2 threads under load: 34–57 texts/s against 23–36 spinning).
        extra: { session: { intra_op: { allow_spinning: '0' } } },
      });
    } catch (error) {
      throw new EncoderError(`${what}: ${files.model} is not a loadable ONNX model (${firstLine(error)})`);
    }
    if (!session.inputNames.includes('input_ids') || !session.inputNames.includes('attention_mask')) {
      throw new EncoderError(
        `${what}: ${files.model} takes ${session.inputNames.join(', ')}, not a transformer encoder's input_ids and attention_mask`,
      );
    }
    const empty = tokenizer.encode('').ids;
    const one = tokenizer.encode('a').ids;
    let head = 0;
    while (head < empty.length && empty[head] === one[head]) head++;
    const specials = { head, tail: empty.length - head };
    const maxTokens = options.maxTokens ?? files.maxTokens;
    if (!Number.isInteger(maxTokens) || maxTokens < specials.head + specials.tail + 1) {
      throw new EncoderError(
        `${what}: max tokens must be an integer above the special tokens, got ${maxTokens}`,
      );
    }
    const identity: EncoderIdentity = {
      name: files.name,
      source: files.source,
      model_sha256: modelSha,
      tokenizer_sha256: tokenizerSha,
      pooling: 'mean',
      max_tokens: maxTokens,
      dim: 0,
    };
    const encoder = new SentenceEncoder(identity, ort, session, tokenizer, specials);
    identity.dim = await encoder.checkVocabulary(what, files);
    return encoder;
  }

  /**
   * The model must accept the tokenizer's highest id and refuse the one past it: a tokenizer of another
   * vocabulary would otherwise give silently wrong embeddings. Returns the embedding size.
   */
  private async checkVocabulary(what: string, files: EncoderFiles): Promise<number> {
    const size = this.tokenizer.get_vocab(true).size;
    let dim: number;
    try {
      dim = (await this.forward([[this.tokenizer.encode('').ids[0] ?? 0, size - 1]], QUIET))[0]!.length;
    } catch (error) {
      throw new EncoderError(
        `${what}: ${files.tokenizer} does not match ${files.model}: the model refuses the tokenizer's token id ${size - 1} (${firstLine(error)})`,
      );
    }
    const past = await this.forward([[size]], QUIET).then(
      () => true,
      () => false,
    );
    if (past) {
      throw new EncoderError(
        `${what}: ${files.tokenizer} does not match ${files.model}: the tokenizer has ${size} tokens but the model takes more ids`,
      );
    }
    return dim;
  }

  /** The token ids the encoder sees for a text, truncated by the documented rule. */
  tokenize(text: string): number[] {
    const max = this.identity.max_tokens;
    const ids = this.tokenizer.encode(String(text).slice(0, max * CHARS_PER_TOKEN_BOUND)).ids;
    if (ids.length <= max) return ids;
    const { tail } = this.specials;
    return [...ids.slice(0, max - tail), ...ids.slice(ids.length - tail)];
  }

  /** One mean-pooled embedding per text, in order. Texts are batched by length (see EmbedOptions). */
  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    const maxBatch = options.maxBatch ?? 32;
    const maxBatchTokens = options.maxBatchTokens ?? DEFAULT_PASS_TOKENS;
    const ids = texts.map((text) => this.tokenize(text));
    const order = ids.map((_, i) => i).sort((a, b) => ids[a]!.length - ids[b]!.length || a - b);
    const out: Float32Array[] = new Array(texts.length);
    let done = 0;
    for (let start = 0; start < order.length; ) {
      let end = start + 1;
      // Sorted ascending, so the batch's longest is its last: stop before padding would exceed the budget.
      while (
        end < order.length &&
        end - start < maxBatch &&
        (end - start + 1) * ids[order[end]!]!.length <= maxBatchTokens
      ) {
        end++;
      }
      const batch = order.slice(start, end);
      const vectors = await this.forward(batch.map((i) => ids[i]!));
      batch.forEach((i, b) => {
        out[i] = vectors[b]!;
      });
      done += batch.length;
      options.onProgress?.(done, texts.length);
      start = end;
    }
    return out;
  }

  /** One forward pass over token id rows (padded to the longest), mean-pooled over each row's tokens. */
  private async forward(
    rows: readonly (readonly number[])[],
    runOptions: import('onnxruntime-node').InferenceSession.RunOptions = {},
  ): Promise<Float32Array[]> {
    const { ort, session } = this;
    const B = rows.length;
    const S = Math.max(...rows.map((r) => r.length));
    const inputIds = new BigInt64Array(B * S);
    const mask = new BigInt64Array(B * S);
    rows.forEach((row, b) => {
      for (let t = 0; t < row.length; t++) {
        inputIds[b * S + t] = BigInt(row[t]!);
        mask[b * S + t] = 1n;
      }
    });
    const feeds: Record<string, import('onnxruntime-node').Tensor> = {
      input_ids: new ort.Tensor('int64', inputIds, [B, S]),
      attention_mask: new ort.Tensor('int64', mask, [B, S]),
    };
    if (session.inputNames.includes('token_type_ids')) {
      feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(B * S), [B, S]);
    }
    const result = await session.run(feeds, runOptions);
    const output = result[session.outputNames[0]!]!;
    const dims = output.dims;
    if (dims.length !== 3 || dims[0] !== B || dims[1] !== S) {
      throw new EncoderError(
        `encoder ${this.identity.name}: the model's output ${session.outputNames[0]} has shape [${dims.join(', ')}], not [batch, tokens, hidden] (last_hidden_state)`,
      );
    }
    const H = dims[2]!;
    const data = output.data as Float32Array;
    const vectors = rows.map((row, b) => {
      const v = new Float32Array(H);
      for (let t = 0; t < row.length; t++) {
        const base = (b * S + t) * H;
        for (let h = 0; h < H; h++) v[h]! += data[base + h]!;
      }
      for (let h = 0; h < H; h++) v[h]! /= row.length;
      return v;
    });
    for (const tensor of Object.values(result)) tensor.dispose?.();
    return vectors;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
