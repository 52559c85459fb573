/**
 * Public surface of src/encoder: sentence encoders (a tokenizer + an ONNX transformer) that turn texts into
 * embeddings. It does I/O (model files, the hub cache) and imports nothing else of Tagger; the code that
 * uses it loads it with a dynamic `import()`, so runs without an encoder never load onnxruntime-node.
 */
export {
  CHARS_PER_TOKEN_BOUND,
  DEFAULT_PASS_TOKENS,
  type EmbedOptions,
  type EncoderIdentity,
  type EncoderOptions,
  SentenceEncoder,
} from './encoder.js';
export { EncoderError } from './errors.js';
export {
  DEFAULT_ENCODER,
  DEFAULT_MAX_TOKENS,
  type EncoderFiles,
  encodersDir,
  ONNX_CANDIDATES,
  resolveEncoder,
} from './resolve.js';

import { type EncoderIdentity, type EncoderOptions, SentenceEncoder } from './encoder.js';
import { EncoderError } from './errors.js';
import { resolveEncoder } from './resolve.js';

/**
 * Resolves `name` (see resolveEncoder) and loads it.
 * @example const encoder = await openEncoder('minilm'); const [v] = await encoder.embed(['GANs for art']);
 */
export async function openEncoder(name: string, options: EncoderOptions = {}): Promise<SentenceEncoder> {
  return SentenceEncoder.load(await resolveEncoder(name), options);
}

/**
 * The encoder a trained model was trained with (its manifest's spec): resolved by the name it was given
 * (`minilm` → this machine's `npm run setup:encoder` folder; a directory; a hub id), loaded with the
 * model's token limit, and refused unless both files have the model's sha256 digests and the embeddings
 * its size. Every refusal is one EncoderError line naming the encoder and what is missing or different.
 * What serving an encoder run needs beside the run's artifacts.
 */
export async function openEncoderFor(
  spec: Pick<EncoderIdentity, 'name' | 'model_sha256' | 'tokenizer_sha256' | 'max_tokens' | 'dim'>,
  options: Pick<EncoderOptions, 'threads'> = {},
): Promise<SentenceEncoder> {
  const context = `this model needs the encoder ${spec.name} (model.onnx sha256 ${spec.model_sha256}, tokenizer.json sha256 ${spec.tokenizer_sha256})`;
  let encoder: SentenceEncoder;
  try {
    encoder = await SentenceEncoder.load(await resolveEncoder(spec.name), {
      ...options,
      maxTokens: spec.max_tokens,
      expect: { model_sha256: spec.model_sha256, tokenizer_sha256: spec.tokenizer_sha256 },
    });
  } catch (error) {
    if (error instanceof EncoderError) throw new EncoderError(`${context}: ${error.message}`);
    throw error;
  }
  if (encoder.identity.dim !== spec.dim) {
    await encoder.close();
    throw new EncoderError(
      `${context}: it gives ${encoder.identity.dim}-dimensional embeddings, the model takes ${spec.dim}`,
    );
  }
  return encoder;
}
