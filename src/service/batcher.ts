/**
 * Dynamic batching of encoder calls, as Triton's dynamic batcher and Text Embeddings Inference do it:
 * the texts of concurrent requests wait in one queue and go to the encoder together, in batches of at
 * most `maxBatch` texts. While the encoder works, new texts queue; when it is done, the next batch leaves
 * at once with whatever waited (up to `maxBatch`). When the encoder is idle, the first queued text waits
 * at most `maxWaitMs` for company before its batch leaves (0: at once). Within a batch the encoder sorts
 * texts by token count and pads them in groups (length-aware; src/encoder), so mixing requests costs no
 * padding of short texts to long ones.
 *
 * The queue is bounded: a call whose texts do not fit (more than `maxQueue` texts would wait) is refused
 * at once with QueueFullError (HTTP 503 + Retry-After) instead of growing the queue and every caller's
 * wait. An empty queue always takes a call, so a request larger than `maxQueue` is still served when the
 * server is otherwise idle. One batch is at the encoder at a time: its single thread pool is busy anyway,
 * and holding texts back until it is free is what lets them batch together.
 *
 * Order: calls are served first come, first served; a large call is cut across batches, and its promise
 * resolves when its last text is embedded.
 */

export interface BatcherOptions {
  /** Most texts per batch (≥ 1). */
  maxBatch: number;
  /** How long the first text queued while the encoder is idle waits for the batch to fill (ms, ≥ 0). */
  maxWaitMs: number;
  /** Most texts waiting; a call that would exceed it is refused (0: no bound). */
  maxQueue: number;
}

/** What the batcher reports, for metrics (all optional). */
export interface BatcherObserver {
  /** Texts waiting now (after every change). */
  queued?(texts: number): void;
  /** A batch finished (or failed): its size and how long the encoder took. */
  batch?(texts: number, seconds: number): void;
  /** A call was refused because the queue was full. */
  shed?(texts: number): void;
}

/** The queue is full: the call was refused and nothing of it was queued. */
export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
  constructor(
    readonly texts: number,
    readonly queued: number,
    readonly maxQueue: number,
  ) {
    super(
      `the encoder is at capacity (${queued} texts waiting, at most ${maxQueue}; this request has ${texts}); retry later`,
    );
  }
}

interface Call {
  texts: readonly string[];
  results: Float32Array[];
  /** Index of the next text to send. */
  next: number;
  /** Texts not answered yet. */
  remaining: number;
  failed: boolean;
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: unknown) => void;
}

interface Part {
  call: Call;
  from: number;
  to: number;
}

export class DynamicBatcher {
  private readonly calls: Call[] = [];
  private queuedTexts = 0;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private idleWaiters: (() => void)[] = [];

  constructor(
    /** Embeds one batch; its answer has one vector per text, in order. */
    private readonly run: (texts: string[]) => Promise<Float32Array[]>,
    readonly options: BatcherOptions,
    private readonly observer: BatcherObserver = {},
  ) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) {
      throw new RangeError(`service/batcher: maxBatch must be an integer >= 1, got ${options.maxBatch}`);
    }
    if (!(options.maxWaitMs >= 0)) {
      throw new RangeError(`service/batcher: maxWaitMs must be >= 0, got ${options.maxWaitMs}`);
    }
    if (!Number.isInteger(options.maxQueue) || options.maxQueue < 0) {
      throw new RangeError(`service/batcher: maxQueue must be an integer >= 0, got ${options.maxQueue}`);
    }
  }

  /** Texts waiting (not yet sent to the encoder). */
  get queued(): number {
    return this.queuedTexts;
  }

  /** True while a batch is at the encoder. */
  get busy(): boolean {
    return this.running;
  }

  /**
   * The embeddings of `texts`, in order, once their batches are done. Rejects at once with QueueFullError
   * when the queue cannot take them, and with the encoder's error when one of their batches fails.
   */
  submit(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    const { maxQueue } = this.options;
    if (maxQueue > 0 && this.queuedTexts > 0 && this.queuedTexts + texts.length > maxQueue) {
      this.observer.shed?.(texts.length);
      return Promise.reject(new QueueFullError(texts.length, this.queuedTexts, maxQueue));
    }
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.calls.push({
        texts,
        results: new Array(texts.length),
        next: 0,
        remaining: texts.length,
        failed: false,
        resolve,
        reject,
      });
      this.queuedTexts += texts.length;
      this.observer.queued?.(this.queuedTexts);
      this.schedule();
    });
  }

  /** Resolves when nothing is queued or at the encoder (a closing encoder waits for it). */
  drain(): Promise<void> {
    if (!this.running && this.calls.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.running || this.calls.length === 0) return;
    if (this.queuedTexts >= this.options.maxBatch || this.options.maxWaitMs === 0) {
      this.dispatch();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (!this.running) this.dispatch();
    }, this.options.maxWaitMs);
  }

  private dispatch(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const parts: Part[] = [];
    const texts: string[] = [];
    while (texts.length < this.options.maxBatch && this.calls.length > 0) {
      const call = this.calls[0]!;
      const from = call.next;
      const to = Math.min(call.texts.length, from + this.options.maxBatch - texts.length);
      for (let i = from; i < to; i++) texts.push(call.texts[i]!);
      parts.push({ call, from, to });
      call.next = to;
      if (to === call.texts.length) this.calls.shift();
    }
    if (texts.length === 0) {
      this.settleIdle();
      return;
    }
    this.queuedTexts -= texts.length;
    this.observer.queued?.(this.queuedTexts);
    this.running = true;
    const started = performance.now();
    let promise: Promise<Float32Array[]>;
    try {
      promise = this.run(texts);
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise.then(
      (vectors) => {
        this.observer.batch?.(texts.length, (performance.now() - started) / 1000);
        let at = 0;
        for (const { call, from, to } of parts) {
          for (let i = from; i < to; i++) call.results[i] = vectors[at++]!;
          call.remaining -= to - from;
          if (call.remaining === 0 && !call.failed) call.resolve(call.results);
        }
        this.finish();
      },
      (error: unknown) => {
        this.observer.batch?.(texts.length, (performance.now() - started) / 1000);
        for (const { call } of parts) this.fail(call, error);
        this.finish();
      },
    );
  }

  /** A call one of whose batches failed: rejected once, and its texts still waiting are dropped. */
  private fail(call: Call, error: unknown): void {
    if (call.failed) return;
    call.failed = true;
    call.reject(error);
    const at = this.calls.indexOf(call);
    if (at >= 0) {
      this.calls.splice(at, 1);
      this.queuedTexts -= call.texts.length - call.next;
      this.observer.queued?.(this.queuedTexts);
    }
  }

  private finish(): void {
    this.running = false;
    if (this.calls.length > 0) {
      // Everything queued waited while the encoder worked: it leaves now, without another wait.
      this.dispatch();
      return;
    }
    this.settleIdle();
  }

  private settleIdle(): void {
    if (this.running || this.calls.length > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
