/**
 * Where an encoder's files are: `--encoder` takes the name `minilm` (the folder `npm run setup:encoder`
 * fills), a local directory (an ONNX file + tokenizer.json), or a Hugging Face model id, resolved with
 * @huggingface/hub's own cache (the standard `~/.cache/huggingface/hub` layout, shared with Python's
 * huggingface_hub): a cached snapshot is used without the network, otherwise the files are downloaded into
 * that cache. Unreachable hub, unknown id: one line saying what to do instead.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { EncoderError } from './errors.js';

/** The name of the default encoder, installed by `npm run setup:encoder`. */
export const DEFAULT_ENCODER = 'minilm';
/** Token limit when the encoder's folder does not state one (sentence-transformers' max_seq_length). */
export const DEFAULT_MAX_TOKENS = 256;
/** ONNX files looked for in a directory or a hub repository, in order. */
export const ONNX_CANDIDATES = Object.freeze([
  'model.onnx',
  'onnx/model_quantized.onnx',
  'onnx/model.onnx',
]) as readonly string[];
const TOKENIZER = 'tokenizer.json';

export interface EncoderFiles {
  /** What the user named: `minilm`, a directory, or a hub id. */
  name: string;
  /** Where the files came from: `local:<dir>`, or `hf:<id>@<commit>`. */
  source: string;
  model: string;
  tokenizer: string;
  /** The folder's own token limit (sentence_bert_config.json's max_seq_length), else DEFAULT_MAX_TOKENS. */
  maxTokens: number;
}

/** The folder of installed encoders: $TAGGER_ENCODERS_DIR, else `encoders/` in the repository. */
export function encodersDir(): string {
  return process.env.TAGGER_ENCODERS_DIR ?? resolve(import.meta.dirname, '..', '..', 'encoders');
}

const HUB_ID = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;

function maxTokensOf(dir: string): number {
  const config = join(dir, 'sentence_bert_config.json');
  if (!existsSync(config)) return DEFAULT_MAX_TOKENS;
  try {
    const value = (JSON.parse(readFileSync(config, 'utf8')) as { max_seq_length?: unknown }).max_seq_length;
    return typeof value === 'number' && Number.isInteger(value) && value >= 8 ? value : DEFAULT_MAX_TOKENS;
  } catch {
    return DEFAULT_MAX_TOKENS;
  }
}

function fromDirectory(name: string, dir: string, source: string): EncoderFiles {
  const model = ONNX_CANDIDATES.map((file) => join(dir, file)).find((path) => existsSync(path));
  const onnx = readdirSync(dir).filter((file) => file.endsWith('.onnx'));
  const found = model ?? (onnx.length === 1 ? join(dir, onnx[0]!) : undefined);
  if (found === undefined) {
    throw new EncoderError(
      `encoder ${name}: ${dir} has no ONNX model (looked for ${ONNX_CANDIDATES.join(', ')}${onnx.length > 1 ? `; several .onnx files: ${onnx.join(', ')}` : ''})`,
    );
  }
  const tokenizer = join(dir, TOKENIZER);
  if (!existsSync(tokenizer)) throw new EncoderError(`encoder ${name}: ${dir} has no ${TOKENIZER}`);
  return { name, source, model: found, tokenizer, maxTokens: maxTokensOf(dir) };
}

/**
 * The files of the encoder `name`. Local first: `minilm`, then an existing directory; a name shaped like
 * `org/model` that is no directory is a hub id.
 * @example await resolveEncoder('minilm') // { model: '…/encoders/minilm/model.onnx', … }
 */
export async function resolveEncoder(name: string): Promise<EncoderFiles> {
  if (name === DEFAULT_ENCODER) {
    const dir = join(encodersDir(), DEFAULT_ENCODER);
    if (!existsSync(join(dir, 'model.onnx')) || !existsSync(join(dir, TOKENIZER))) {
      throw new EncoderError(
        `encoder ${name} is not installed (no model.onnx and ${TOKENIZER} in ${dir}); run npm run setup:encoder`,
      );
    }
    return fromDirectory(name, dir, `local:${dir}`);
  }
  const dir = resolve(name);
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) {
      throw new EncoderError(
        `encoder ${name}: ${dir} is a file; give the directory holding the ONNX model and ${TOKENIZER}`,
      );
    }
    return fromDirectory(name, dir, `local:${dir}`);
  }
  if (!HUB_ID.test(name)) {
    throw new EncoderError(
      `encoder ${name}: no such directory, and not a Hugging Face model id (org/name); use ${DEFAULT_ENCODER} (npm run setup:encoder) or a directory with an ONNX model and ${TOKENIZER}`,
    );
  }
  return fromHub(name);
}

/** Hub requests give up after this long, so an unreachable hub is one line, not a hang. */
const HUB_TIMEOUT_MS = 20_000;

/**
 * A hub model's files through @huggingface/hub's cache: the cached snapshot of `refs/main` when there is
 * one (no network), else `downloadFileToCacheDir` (which reuses cached blobs). Loaded only for hub ids.
 */
async function fromHub(id: string): Promise<EncoderFiles> {
  const hub = await import('@huggingface/hub');
  const cacheDir = hub.getHFHubCachePath();
  const storage = join(cacheDir, hub.getRepoFolderName({ name: id, type: 'model' }));
  const refMain = join(storage, 'refs', 'main');
  const cachedCommit = existsSync(refMain) ? readFileSync(refMain, 'utf8').trim() : undefined;
  const timedFetch: typeof fetch = (input, init) =>
    fetch(input, { ...init, signal: AbortSignal.timeout(HUB_TIMEOUT_MS) });
  const download = async (path: string, revision: string | undefined): Promise<string | null> => {
    try {
      return await hub.downloadFileToCacheDir({
        repo: { name: id, type: 'model' },
        path,
        cacheDir,
        fetch: timedFetch,
        ...(revision === undefined ? {} : { revision }),
        ...(process.env.HF_TOKEN ? { accessToken: process.env.HF_TOKEN } : {}),
      });
    } catch (error) {
      // A file the repository does not have: try the next candidate. Anything else: the hub is out of reach.
      if (/404|not found|cannot get path info/i.test(String((error as Error).message))) return null;
      throw new EncoderError(
        `encoder ${id}: not a local directory, not in the Hugging Face cache (${cacheDir}), and the hub could not be reached to fetch it (${(error as Error).message}); pass a directory with an ONNX model and ${TOKENIZER}, or use ${DEFAULT_ENCODER} after npm run setup:encoder`,
      );
    }
  };
  // Offline first: a snapshot already in the cache is read by its commit, which needs no request.
  if (cachedCommit !== undefined) {
    const snapshot = join(storage, 'snapshots', cachedCommit);
    const onnx = ONNX_CANDIDATES.find((file) => existsSync(join(snapshot, file)));
    if (onnx !== undefined && existsSync(join(snapshot, TOKENIZER))) {
      const tokenizer = await download(TOKENIZER, cachedCommit);
      const model = await download(onnx, cachedCommit);
      if (tokenizer !== null && model !== null) {
        return {
          name: id,
          source: `hf:${id}@${cachedCommit}`,
          model,
          tokenizer,
          maxTokens: maxTokensOf(snapshot),
        };
      }
    }
  }
  const tokenizer = await download(TOKENIZER, undefined);
  if (tokenizer === null) throw new EncoderError(`encoder ${id}: the hub repository has no ${TOKENIZER}`);
  let model: string | null = null;
  for (const candidate of ONNX_CANDIDATES) {
    model = await download(candidate, undefined);
    if (model !== null) break;
  }
  if (model === null) {
    throw new EncoderError(
      `encoder ${id}: the hub repository has none of ${ONNX_CANDIDATES.join(', ')} (Tagger runs ONNX encoders)`,
    );
  }
  // downloadFileToCacheDir returns <storage>/snapshots/<commit>/<path>.
  const commit = relative(join(storage, 'snapshots'), tokenizer).split(sep)[0] ?? 'unknown';
  return {
    name: id,
    source: `hf:${id}@${commit}`,
    model,
    tokenizer,
    maxTokens: maxTokensOf(join(storage, 'snapshots', commit)),
  };
}
