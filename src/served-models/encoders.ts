/**
 * The sentence encoders of the encoder runs being served: each in its own worker thread
 * (src/encoder/thread.ts) behind a dynamic batcher (./batcher.ts), opened when the first model that needs
 * it loads and closed when the last one is dropped. Models that name the same encoder — same digests of
 * model.onnx and tokenizer.json, same token limit — share one thread and one queue, so a hot reload from
 * one encoder run to another keeps the encoder loaded (nothing to load, nothing to warm up), and the
 * best run and the cached models of other runs never hold two copies.
 *
 * A model holds its encoder through an EncoderLease, kept by its Predictor (predictor.ts); `release()` is
 * called when the model leaves the served runs (a swap, a run that left the experiment, an eviction from
 * the model cache). When the last lease is released the encoder's queue is drained (the requests already
 * queued are answered) and its thread closed. A request on a model whose lease was released (it started
 * on the previous snapshot) is answered all the same: its Predictor borrows a lease for that one call,
 * opening the encoder again if it was closed, and releases it when the call ends.
 *
 * src/encoder is loaded with `import()` on the first acquire, and it loads ONNX Runtime in the worker
 * thread only: a process serving TF-IDF runs never loads either, and one serving an encoder run keeps
 * ONNX Runtime out of its main thread.
 */
import type { EncoderThread } from '../encoder/thread.js';
import type { EncoderSpec } from '../model/index.js';
import { type BatcherObserver, DynamicBatcher, type SubmitOptions } from './batcher.js';
import { estimateTokens } from './token-estimate.js';

/**
 * Estimated tokens per batch: one padded pass of src/encoder's (DEFAULT_PASS_TOKENS, two texts at the
 * limit), so a text that is taken waits for at most the batch at the encoder and its own — 0.4–0.6 s
 * each with one thread. 1,024 until issue 42: the same CPU per text (measured side by side, 48 texts at
 * the limit in batches of 2 and of 4, one thread: 83–90 ms a text either way), but a one-text request
 * behind long ones waited up to 1.8 s instead of 0.6 s (bench/encoder.ts --overload).
 */
export const BATCH_TOKENS = 512;

/** How the encoders of served runs are run (src/server/settings.ts: TAGGER_ENCODER_*). */
export interface EncoderSettings {
  /** ONNX Runtime intra-op threads per encoder. */
  threads: number;
  /** Most texts per batch sent to the encoder. */
  maxBatch: number;
  /** How long a text queued while the encoder is idle waits for the batch to fill (ms). */
  maxWaitMs: number;
  /** Most texts waiting per encoder before requests are shed with 503 (0: no bound). */
  maxQueue: number;
  /** Most estimated tokens waiting per encoder before requests are shed with 503 (0: no bound). */
  maxQueueTokens?: number;
  /** Most estimated tokens of one request; more is refused with 413 (0: no bound). */
  maxRequestTokens?: number;
  /**
   * Texts leave in the order their calls came instead of in fair shares (one job's own batches: `tagger
   * predict --input`, whose output waits for its first batch; BatcherOptions.inOrder).
   */
  inOrder?: boolean;
  /**
   * Linux nice value of the encoder threads (0–19): above 0 the event loop, which answers
   * probes, /metrics and TF-IDF requests, gets the CPU first when the encoder is saturated.
   */
  nice: number;
}

/** Defaults for a process that serves requests (threads: one; src/server computes the real default). */
export const DEFAULT_ENCODER_SETTINGS: Readonly<EncoderSettings> = Object.freeze({
  threads: 1,
  maxBatch: 32,
  // Texts that arrive while the encoder works batch anyway; waiting when it is idle only adds latency
  // unless requests come in bursts (Triton's and TEI's default too).
  maxWaitMs: 0,
  // 256 short texts, whose tokens the token bound below weighs (a long text costs ~10 short ones).
  maxQueue: 256,
  // ~4–8 s of one core's work at 0.5–1 ms a token (measured, docs/serving.md): beyond it a caller is
  // better told to retry.
  maxQueueTokens: 8_192,
  // ~30–60 s of one core's work: 1,000 texts of ~60 tokens; a request of 300 long CJK texts (~77,000
  // tokens, 110 s) is refused instead of holding the encoder for minutes.
  maxRequestTokens: 65_536,
  // Measured: no better /health/live p99 at 10 than at 0, and less encoder CPU when the host is shared.
  nice: 0,
});

/** What the pool reports, for metrics and logs (all optional). */
export interface EncoderObserver extends BatcherObserver {
  /** An encoder was opened (its thread loaded it) in `seconds`. */
  opened?(spec: EncoderSpec, seconds: number): void;
  /** An encoder's thread was closed (no model needs it any more). */
  closed?(spec: EncoderSpec): void;
}

/** What one embed call may say beside its texts: a signal that stops it, and when its first text leaves. */
export type EmbedCall = SubmitOptions;

/** An encoder model's way to its embeddings, computed off the event loop. */
export interface Embedder {
  /** One embedding per text, in order. Rejects with QueueFullError when the encoder's queue is full. */
  embed(texts: readonly string[], call?: EmbedCall): Promise<Float32Array[]>;
}

/**
 * A model's hold on a pooled encoder (the Predictor holds it: predictor.ts). After `release()` it embeds
 * nothing more: a call that started before borrows a lease of its own (the Predictor does).
 */
export interface EncoderLease extends Embedder {
  readonly spec: EncoderSpec;
  /** The model no longer needs the encoder (idempotent); the last release closes it once drained. */
  release(): void;
}

/** Opens the encoders of encoder models as they load (what loadServedModel is given). */
export interface EncoderProvider {
  acquire(spec: EncoderSpec): Promise<EncoderLease>;
}

/**
 * The encoder a model needs cannot be opened on this machine: missing, different (digests) or broken
 * files, or a thread that could not start. `publicReason` says so without the server's paths.
 */
export class EncoderLoadError extends Error {
  override readonly name = 'EncoderLoadError';
  readonly publicReason: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    // Absolute paths of this machine become their last part: `…/encoders/minilm/model.onnx` → `model.onnx`.
    const shown = message.replace(/(?:[A-Za-z]:)?(?:[/\\][^\s/\\:;,()'"]+)+[/\\]([^\s/\\:;,()'"]+)/g, '$1');
    this.publicReason = `its sentence encoder cannot be used on this server: ${shown}`;
  }
}

/** An encoder failed while answering (its thread ended); the call may be retried (HTTP 503). */
export class EncoderUnavailableError extends Error {
  override readonly name = 'EncoderUnavailableError';
}

/** How long an encoder no model holds stays open (EncoderPool's `lingerMs`). */
export const DEFAULT_LINGER_MS = 2_000;

/** What makes two specs the same encoder: the same files and the same token limit. */
const keyOf = (spec: EncoderSpec): string =>
  `${spec.model_sha256}:${spec.tokenizer_sha256}:${spec.max_tokens}`;

interface Entry {
  readonly key: string;
  readonly spec: EncoderSpec;
  refs: number;
  /** Set while no model holds it: it closes when this fires, unless acquired again first. */
  linger: NodeJS.Timeout | undefined;
  /** The thread (reopened when it died); rejects when it could not be opened. */
  thread: Promise<EncoderThread>;
  batcher: DynamicBatcher;
}

export class EncoderPool implements EncoderProvider {
  private readonly entries = new Map<string, Entry>();
  /** Entries closing (drained, then their thread closed); close() waits for them. */
  private readonly closing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    readonly settings: EncoderSettings = DEFAULT_ENCODER_SETTINGS,
    private readonly observer: EncoderObserver = {},
    /**
     * How long an encoder no model holds stays open before it closes (ms): a model released and loaded
     * again soon after (a run's model evicted and asked for again, a request on the previous snapshot)
     * does not reload it.
     */
    private readonly lingerMs = DEFAULT_LINGER_MS,
  ) {}

  /** Encoders open now (threads loaded or loading). */
  get size(): number {
    return this.entries.size;
  }

  /** Texts waiting in every encoder's queue. */
  get queued(): number {
    let total = 0;
    for (const entry of this.entries.values()) total += entry.batcher.queued;
    return total;
  }

  /**
   * A lease on the encoder `spec` names, opened (in its own thread) unless a loaded model already uses
   * it. Rejects with EncoderLoadError (one line) when the encoder cannot be used on this machine.
   */
  async acquire(spec: EncoderSpec): Promise<EncoderLease> {
    if (this.closed) throw new EncoderLoadError(`encoder ${spec.name}: the server is shutting down`);
    const key = keyOf(spec);
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = this.open(key, spec);
      this.entries.set(key, entry);
    }
    entry.refs += 1;
    if (entry.linger !== undefined) {
      clearTimeout(entry.linger);
      entry.linger = undefined;
    }
    try {
      await entry.thread;
    } catch (error) {
      // An encoder that failed to open is forgotten at once: the next acquire tries again.
      entry.refs = Math.max(0, entry.refs - 1);
      if (entry.refs === 0) this.shut(entry);
      throw error instanceof EncoderLoadError
        ? error
        : new EncoderLoadError(String((error as Error)?.message ?? error), { cause: error });
    }
    return this.lease(entry);
  }

  /**
   * Closes every encoder, after the texts already queued are answered — or, with `abandon` (a job that
   * was stopped), after only the batch at the encoder: every call still waiting is refused with
   * EncoderUnavailableError.
   */
  async close(options: { abandon?: boolean } = {}): Promise<void> {
    this.closed = true;
    for (const entry of [...this.entries.values()]) {
      entry.refs = 0;
      if (options.abandon)
        entry.batcher.abandon(
          new EncoderUnavailableError('the sentence encoder was closed: the job stopped'),
        );
      this.shut(entry);
    }
    await Promise.all([...this.closing]);
  }

  private open(key: string, spec: EncoderSpec): Entry {
    const entry: Entry = {
      key,
      spec,
      refs: 0,
      linger: undefined,
      thread: this.startThread(spec),
      batcher: undefined as unknown as DynamicBatcher,
    };
    entry.batcher = new DynamicBatcher(
      async (texts) => {
        let thread = await entry.thread;
        if (!thread.alive) {
          // The thread died (its calls failed with it); a new one serves from now on.
          entry.thread = this.startThread(spec);
          thread = await entry.thread;
        }
        try {
          return await thread.embed(texts);
        } catch (error) {
          throw new EncoderUnavailableError(
            `the sentence encoder failed while answering (${(error as Error).message}); retry`,
            { cause: error },
          );
        }
      },
      {
        maxBatch: this.settings.maxBatch,
        maxWaitMs: this.settings.maxWaitMs,
        maxQueue: this.settings.maxQueue,
        maxQueueTokens: this.settings.maxQueueTokens ?? 0,
        maxRequestTokens: this.settings.maxRequestTokens ?? 0,
        maxBatchTokens: BATCH_TOKENS,
        cost: (text) => estimateTokens(text, spec.max_tokens),
        inOrder: this.settings.inOrder ?? false,
      },
      this.observer,
    );
    return entry;
  }

  private startThread(spec: EncoderSpec): Promise<EncoderThread> {
    const started = performance.now();
    const thread = import('../encoder/thread.js')
      .then(({ EncoderThread }) =>
        EncoderThread.open(spec, { threads: this.settings.threads, nice: this.settings.nice }),
      )
      .then(
        (opened) => {
          this.observer.opened?.(spec, (performance.now() - started) / 1000);
          return opened;
        },
        (error: unknown) => {
          throw new EncoderLoadError(String((error as Error)?.message ?? error), { cause: error });
        },
      );
    // A load failure is handled by acquire (or by the batch that reopened it); never unhandled here.
    thread.catch(() => undefined);
    return thread;
  }

  private lease(entry: Entry): EncoderLease {
    let released = false;
    return {
      spec: entry.spec,
      embed: (texts, call) => {
        if (released) {
          return Promise.reject(
            new EncoderUnavailableError(
              `encoder ${entry.spec.name}: this lease was released; acquire another`,
            ),
          );
        }
        return entry.batcher.submit(texts, call);
      },
      release: () => {
        if (released) return;
        released = true;
        this.unref(entry);
      },
    };
  }

  private unref(entry: Entry): void {
    entry.refs = Math.max(0, entry.refs - 1);
    if (entry.refs > 0 || this.entries.get(entry.key) !== entry || entry.linger !== undefined) return;
    if (this.lingerMs === 0 || this.closed) {
      this.shut(entry);
      return;
    }
    entry.linger = setTimeout(() => {
      entry.linger = undefined;
      if (entry.refs === 0) this.shut(entry);
    }, this.lingerMs);
    entry.linger.unref();
  }

  /** Drops the entry from the pool, then closes its thread once its queue is drained. */
  private shut(entry: Entry): void {
    if (entry.linger !== undefined) {
      clearTimeout(entry.linger);
      entry.linger = undefined;
    }
    if (this.entries.get(entry.key) !== entry) return;
    this.entries.delete(entry.key);
    const closing = (async () => {
      await entry.batcher.drain();
      const thread = await entry.thread.catch(() => undefined);
      if (thread === undefined) return;
      await thread.close();
      this.observer.closed?.(entry.spec);
    })().finally(() => this.closing.delete(closing));
    this.closing.add(closing);
  }
}
