/**
 * The worker of `thread.ts`: loads the encoder once, then embeds the texts of each call in order and
 * posts the vectors back as one transferred buffer (texts × dim values).
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { SentenceEncoder } from './encoder.js';
import { EncoderError } from './errors.js';
import { openEncoderFor } from './index.js';
import {
  ENCODER_WORKER_MARK,
  type EncoderThreadOptions,
  type EncoderThreadSpec,
  type FromEncoderWorker,
  type ToEncoderWorker,
} from './thread.js';

const data = workerData as {
  mark?: string;
  spec: EncoderThreadSpec;
  options: EncoderThreadOptions;
} | null;

const firstLine = (error: unknown): string => String((error as Error)?.message ?? error).split('\n')[0]!;

/**
 * Gives this thread (and the ONNX Runtime threads it starts afterwards, which inherit it) a nice value:
 * on Linux a thread id given to setpriority(2) sets that thread only. Elsewhere, or when refused, nothing
 * changes.
 */
function lowerPriority(nice: number): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice);
  } catch {
    // Not Linux, or not allowed: the encoder runs at the process's priority.
  }
}

async function serve(
  port: NonNullable<typeof parentPort>,
  spec: EncoderThreadSpec,
  options: EncoderThreadOptions,
) {
  const post = (message: FromEncoderWorker, transfer: ArrayBuffer[] = []): void =>
    port.postMessage(message, transfer);
  if (options.nice) lowerPriority(options.nice);
  let encoder: SentenceEncoder;
  try {
    encoder = await openEncoderFor(spec, { threads: options.threads });
  } catch (error) {
    post({ kind: 'refused', message: firstLine(error), encoderError: error instanceof EncoderError });
    return;
  }
  post({ kind: 'ready', identity: { ...encoder.identity } });
  // One call at a time, in arrival order (a forward pass blocks this thread anyway).
  let chain = Promise.resolve();
  port.on('message', (message: ToEncoderWorker) => {
    chain = chain.then(async () => {
      if (message.kind === 'close') {
        await encoder.close().catch(() => undefined);
        post({ kind: 'closed' });
        port.close();
        return;
      }
      try {
        const vectors = await encoder.embed(message.texts, options.forward ?? {});
        const dim = encoder.identity.dim;
        const packed = new Float32Array(message.texts.length * dim);
        vectors.forEach((v, i) => {
          packed.set(v, i * dim);
        });
        post({ kind: 'embedded', id: message.id, vectors: packed }, [packed.buffer]);
      } catch (error) {
        post({ kind: 'failed', id: message.id, message: firstLine(error) });
      }
    });
  });
}

if (!isMainThread && parentPort && data?.mark === ENCODER_WORKER_MARK) {
  void serve(parentPort, data.spec, data.options);
}
