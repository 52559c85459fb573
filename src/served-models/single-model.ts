/**
 * Single-model mode: one saved model directory (the layout of a run's artifacts: `args.json`,
 * `performance.json`, `model/*`) served without a tracking store.
 */
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { RUN_ARTIFACTS } from '../model/index.js';
import { loadServedModel, type ServedModel } from './artifacts.js';
import type { EncoderProvider } from './encoders.js';
import { StartupError } from './errors.js';

const LAYOUT = `${RUN_ARTIFACTS.args}, ${RUN_ARTIFACTS.performance} and ${RUN_ARTIFACTS.modelDir}/`;

/**
 * Loads a saved model directory (an encoder model with its encoder, opened by `encoders`; a cascade
 * whose encoder cannot be opened served by its fast model alone with `allowDegraded`); throws
 * StartupError naming the directory and the problem.
 * @example const served = await loadModelDirectory('mlruns/1/abc/artifacts');
 */
export async function loadModelDirectory(
  dir: string,
  encoders?: EncoderProvider,
  options: { allowDegraded?: boolean } = {},
): Promise<ServedModel> {
  const root = resolve(dir);
  const isDir = await stat(root).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) {
    throw new StartupError(
      `model directory ${root} does not exist or is not a directory; point --model at a folder holding ${LAYOUT} (a run's artifacts folder is one)`,
    );
  }
  // Paths come from our own constants (RUN_ARTIFACTS, MODEL_FILES), never from a request.
  const file = (path: string): string => join(root, ...path.split('/'));
  const read = Object.assign((path: string): Promise<Uint8Array> => readFile(file(path)), {
    size: (path: string) => stat(file(path)).then((found) => (found.isFile() ? found.size : null)),
  });
  try {
    return await loadServedModel(read, { encoders, allowDegraded: options.allowDegraded });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT'
        ? `${(error as NodeJS.ErrnoException).path ?? 'a file'} is missing`
        : (error as Error).message;
    throw new StartupError(
      `model directory ${root} cannot be served: ${reason}; it must hold ${LAYOUT} as written by \`tagger train\``,
      { cause: error },
    );
  }
}
