/**
 * The worker of `thread.ts`: loads the encoder once, then embeds the texts of each call in order and
 * posts the vectors back as one transferred buffer (texts × dim values).
 */
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

async function serve(
  port: NonNullable<typeof parentPort>,
  spec: EncoderThreadSpec,
  options: EncoderThreadOptions,
) {
  const post = (message: FromEncoderWorker, transfer: ArrayBuffer[] = []): void =>
    port.postMessage(message, transfer);
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
