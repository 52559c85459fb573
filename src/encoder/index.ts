/**
 * Public surface of src/encoder: sentence encoders (a tokenizer + an ONNX transformer) that turn texts into
 * embeddings. It does I/O (model files, the hub cache) and imports nothing else of Tagger; the code that
 * uses it loads it with a dynamic `import()`, so runs without an encoder never load onnxruntime-node.
 */
export {
  CHARS_PER_TOKEN_BOUND,
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

import { type EncoderOptions, SentenceEncoder } from './encoder.js';
import { resolveEncoder } from './resolve.js';

/**
 * Resolves `name` (see resolveEncoder) and loads it.
 * @example const encoder = await openEncoder('minilm'); const [v] = await encoder.embed(['GANs for art']);
 */
export async function openEncoder(name: string, options: EncoderOptions = {}): Promise<SentenceEncoder> {
  return SentenceEncoder.load(await resolveEncoder(name), options);
}
