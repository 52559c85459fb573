/**
 * A sentence encoder in a worker thread: what serving (and batch tagging) runs, so that the encoder never
 * runs on the event loop. onnxruntime-node's `session.run` returns a promise, but it runs the forward pass
 * synchronously on the calling thread (the binding calls the native `run` from a `setImmediate`): on the
 * main thread every forward pass would block the HTTP server for its whole duration. Here the thread that
 * blocks is this worker's; tokenizing and pooling happen there too. The main thread posts texts and gets
 * back one `Float32Array` per text (one transferred buffer per call, not copied).
 *
 * The worker loads the encoder with `openEncoderFor` (digests, token limit and size verified); a refusal
 * is an EncoderError with the same one line. Calls are answered in the order they were made, one at a
 * time. A worker that dies (a native crash, an out-of-memory kill of the thread) fails the calls under way
 * with EncoderThreadError and marks the thread `dead`; whoever owns it opens a new one.
 */
import { Worker } from 'node:worker_threads';
import type { EmbedOptions, EncoderIdentity } from './encoder.js';
import { EncoderError } from './errors.js';

/** What a trained model's manifest says about its encoder: what the thread loads and checks. */
export type EncoderThreadSpec = Pick<
  EncoderIdentity,
  'name' | 'model_sha256' | 'tokenizer_sha256' | 'max_tokens' | 'dim'
>;

export interface EncoderThreadOptions {
  /** ONNX Runtime intra-op threads of the session (the worker thread itself is one of them). */
  threads: number;
  /** Forward passes: most texts and most padded tokens each (SentenceEncoder.embed's length-aware batches). */
  forward?: Pick<EmbedOptions, 'maxBatch' | 'maxBatchTokens'>;
  /**
   * Linux nice value of the encoder's threads (this worker thread and the ONNX Runtime threads it
   * starts), 0–19: above 0, the event loop gets the CPU first when both want it. Default 0.
   */
  nice?: number;
}

/** The thread ended while calls were under way, or a call came after it ended. */
export class EncoderThreadError extends Error {
  override readonly name = 'EncoderThreadError';
}

/** @internal messages of the worker protocol */
export type ToEncoderWorker = { kind: 'embed'; id: number; texts: string[] } | { kind: 'close' };
/** @internal */
export type FromEncoderWorker =
  | { kind: 'ready'; identity: EncoderIdentity }
  | { kind: 'refused'; message: string; encoderError: boolean }
  | { kind: 'embedded'; id: number; vectors: Float32Array<ArrayBuffer> }
  | { kind: 'failed'; id: number; message: string }
  | { kind: 'closed' };

/** @internal marks the worker's data, so the worker module only acts when started as this worker */
export const ENCODER_WORKER_MARK = 'tagger-encoder-thread';

/** How long `close()` waits for the worker to release its session before terminating it. */
const CLOSE_TIMEOUT_MS = 5_000;

interface Call {
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: Error) => void;
  count: number;
}

export class EncoderThread {
  private readonly calls = new Map<number, Call>();
  private nextId = 0;
  private ended = false;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly worker: Worker,
    readonly identity: EncoderIdentity,
  ) {
    worker.on('message', (message: FromEncoderWorker) => this.receive(message));
    worker.on('error', (error) => this.end(`the encoder thread failed: ${error.message}`));
    worker.on('exit', (code) => this.end(`the encoder thread exited (code ${code})`));
  }

  /**
   * Starts a worker thread and loads the encoder `spec` names in it. Rejects with an EncoderError (one
   * line) when the encoder is missing, different or broken; the thread is gone by then.
   * @example const thread = await EncoderThread.open(model.encoder, { threads: 2 }); await thread.embed(['GANs']);
   */
  static open(spec: EncoderThreadSpec, options: EncoderThreadOptions): Promise<EncoderThread> {
    // Started from the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
    const fromSource = import.meta.url.endsWith('.ts');
    const worker = new Worker(new URL(`./thread-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
      workerData: {
        mark: ENCODER_WORKER_MARK,
        spec: {
          name: spec.name,
          model_sha256: spec.model_sha256,
          tokenizer_sha256: spec.tokenizer_sha256,
          max_tokens: spec.max_tokens,
          dim: spec.dim,
        },
        options,
      },
      ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
    });
    // The thread never keeps the process alive on its own: the server's lifetime is its listener's.
    worker.unref();
    return new Promise<EncoderThread>((resolve, reject) => {
      const settle = (outcome: () => void): void => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        outcome();
      };
      const onMessage = (message: FromEncoderWorker): void => {
        if (message.kind === 'ready') settle(() => resolve(new EncoderThread(worker, message.identity)));
        else if (message.kind === 'refused') {
          settle(() =>
            reject(
              message.encoderError
                ? new EncoderError(message.message)
                : new EncoderError(`encoder ${spec.name}: ${message.message}`),
            ),
          );
          void worker.terminate();
        }
      };
      const onError = (error: Error): void =>
        settle(() =>
          reject(new EncoderError(`encoder ${spec.name}: the encoder thread failed: ${error.message}`)),
        );
      const onExit = (code: number): void =>
        settle(() =>
          reject(
            new EncoderError(`encoder ${spec.name}: the encoder thread exited (code ${code}) while loading`),
          ),
        );
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }

  /** False once the thread has ended (crashed, or closed): calls then fail with EncoderThreadError. */
  get alive(): boolean {
    return !this.ended;
  }

  /** Calls under way (posted, not answered). */
  get pending(): number {
    return this.calls.size;
  }

  /** One embedding per text, in order (length-aware forward passes inside; see SentenceEncoder.embed). */
  embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (this.ended || this.closing) {
      return Promise.reject(
        new EncoderThreadError(`encoder ${this.identity.name}: the encoder thread has ended`),
      );
    }
    if (texts.length === 0) return Promise.resolve([]);
    const id = this.nextId++;
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.calls.set(id, { resolve, reject, count: texts.length });
      this.worker.postMessage({ kind: 'embed', id, texts: [...texts] } satisfies ToEncoderWorker);
    });
  }

  /** Releases the session and ends the thread, after the calls under way are answered. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.ended) return;
      const closed = new Promise<void>((resolve) => {
        const done = (): void => resolve();
        this.worker.once('exit', done);
        this.worker.on('message', (message: FromEncoderWorker) => {
          if (message.kind === 'closed') done();
        });
      });
      this.worker.postMessage({ kind: 'close' } satisfies ToEncoderWorker);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        closed,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
      await this.worker.terminate();
    })();
    return this.closing;
  }

  private receive(message: FromEncoderWorker): void {
    if (message.kind !== 'embedded' && message.kind !== 'failed') return;
    const call = this.calls.get(message.id);
    if (call === undefined) return;
    this.calls.delete(message.id);
    if (message.kind === 'failed') {
      call.reject(new EncoderThreadError(message.message));
      return;
    }
    const dim = message.vectors.length / call.count;
    const vectors: Float32Array[] = new Array(call.count);
    for (let i = 0; i < call.count; i++) vectors[i] = message.vectors.subarray(i * dim, (i + 1) * dim);
    call.resolve(vectors);
  }

  private end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    const error = new EncoderThreadError(`encoder ${this.identity.name}: ${reason}`);
    for (const call of this.calls.values()) call.reject(error);
    this.calls.clear();
  }
}
