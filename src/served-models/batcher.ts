/**
 * Dynamic batching of encoder calls, as Triton's dynamic batcher and Text Embeddings Inference do it:
 * the texts of concurrent requests wait in one queue and go to the encoder together, in batches of at
 * most `maxBatch` texts and `maxBatchTokens` estimated tokens. While the encoder works, new texts queue;
 * when it is done, the next batch leaves at once with whatever waited. When the encoder is idle, the first
 * queued text waits at most `maxWaitMs` for company before its batch leaves (0: at once). Within a batch
 * the encoder sorts texts by token count and pads them in groups (length-aware; src/encoder), so mixing
 * requests costs no padding of short texts to long ones.
 *
 * Work, not texts: a text's cost is its estimated tokens (`cost`, token-estimate.ts), since a 256-token
 * text costs ~10 times a 30-token one. The queue is bounded in texts (`maxQueue`) and in tokens
 * (`maxQueueTokens`), each call counted at its true cost: a call is taken when what waits plus the call
 * stays within both bounds, and refused at once with QueueFullError (HTTP 503 + Retry-After) otherwise,
 * nothing of it queued — so no more than the bounds ever wait, and the wait they stand for holds. A call
 * larger than a bound cannot fit beside anything: it is taken only when nothing waits, and then waits
 * alone (every other call is refused until what is left of it fits the bounds again). A call over
 * `maxRequestTokens` is refused with RequestTooLargeError (HTTP 413) whatever the queue holds.
 *
 * Fair shares: a large call must not make the others wait for all of it (before: one request of 300 long
 * CJK texts held the encoder for minutes, and a one-text request behind it waited with it). So each batch
 * takes texts from the waiting calls in turn — one from each, oldest first, round after round: a short
 * request admitted while a large one is under way leaves with the next batch. One batch is at the
 * encoder at a time: its single thread pool is busy anyway, and holding texts back until it is free is
 * what lets them batch together. (Until issue 42 a waiting call counted for at most a quarter of each
 * bound in the admission check, so four calls at the request cap were all taken — 32 times the token
 * bound, 153 s of work — and the one-text requests behind them were refused for all of it.)
 */

export interface BatcherOptions {
  /** Most texts per batch (≥ 1). */
  maxBatch: number;
  /** How long the first text queued while the encoder is idle waits for the batch to fill (ms, ≥ 0). */
  maxWaitMs: number;
  /** Most texts waiting; a call that would exceed it is refused (0: no bound). */
  maxQueue: number;
  /** Most estimated tokens waiting; a call that would exceed it is refused (0: no bound). */
  maxQueueTokens?: number;
  /** Most estimated tokens of one call; a larger call is refused whatever the queue holds (0: no bound). */
  maxRequestTokens?: number;
  /** Most estimated tokens per batch (a batch always takes at least one text; 0: no bound). */
  maxBatchTokens?: number;
  /** A text's estimated cost in tokens (default 1: every text alike). */
  cost?: (text: string) => number;
  /**
   * Texts leave in the order their calls came, each call's before the next one's, instead of in fair
   * shares: for one job's own batches (batch tagging), whose first batch is the one its output waits for.
   */
  inOrder?: boolean;
}

/** What the batcher reports, for metrics (all optional). */
export interface BatcherObserver {
  /** Texts waiting now (after every change). */
  queued?(texts: number): void;
  /** A batch finished (or failed): its size and how long the encoder took. */
  batch?(texts: number, seconds: number): void;
  /** A call was refused because the queue was full (or the call alone too large). */
  shed?(texts: number): void;
}

/** What a call may say beside its texts. */
export interface SubmitOptions {
  /**
   * Stops the call: it rejects with the signal's reason and its texts not yet sent leave the queue (a
   * batch already at the encoder finishes; its answers for the call are dropped).
   */
  signal?: AbortSignal;
  /** Told once, when the call's first text leaves for the encoder (the end of its wait in the queue). */
  onStart?: () => void;
}

/** The queue is full: the call was refused and nothing of it was queued. */
export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
  constructor(
    readonly texts: number,
    readonly queued: number,
    readonly maxQueue: number,
    /** Set when the token bound refused it: estimated tokens waiting, the bound, the call's. */
    tokens?: { queued: number; max: number; call: number },
  ) {
    super(
      tokens === undefined
        ? `the encoder is at capacity (${queued} texts waiting, at most ${maxQueue}; this request has ${texts}); retry later`
        : `the encoder is at capacity (~${tokens.queued} tokens of work waiting, at most ${tokens.max}; this request has ~${tokens.call}); retry later`,
    );
  }
}

/** One call is more work than the encoder takes from a single request: refused, whatever the queue. */
export class RequestTooLargeError extends Error {
  override readonly name = 'RequestTooLargeError';
  constructor(
    readonly tokens: number,
    readonly maxTokens: number,
    readonly texts: number,
  ) {
    super(
      `this request is ~${tokens} tokens of encoder work (${texts} texts), more than the ${maxTokens} one request may take (TAGGER_ENCODER_MAX_REQUEST_TOKENS); send fewer or shorter texts per request`,
    );
  }
}

interface Call {
  texts: readonly string[];
  /** Estimated tokens per text. */
  costs: readonly number[];
  results: Float32Array[];
  /** Index of the next text to send. */
  next: number;
  /** Texts not answered yet. */
  remaining: number;
  /** Estimated tokens of the texts not sent yet. */
  waitingTokens: number;
  failed: boolean;
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: unknown) => void;
  onStart: (() => void) | undefined;
}

/** One text of a batch: whose, and where in its call (a batch's texts interleave calls). */
interface Slot {
  call: Call;
  position: number;
}

export class DynamicBatcher {
  private readonly calls: Call[] = [];
  private queuedTexts = 0;
  private queuedTokens = 0;
  private running = false;
  /** The calls with texts in the batch at the encoder. */
  private inFlight = new Set<Call>();
  private timer: NodeJS.Timeout | undefined;
  private idleWaiters: (() => void)[] = [];
  private readonly cost: (text: string) => number;

  constructor(
    /** Embeds one batch; its answer has one vector per text, in order. */
    private readonly run: (texts: string[]) => Promise<Float32Array[]>,
    readonly options: BatcherOptions,
    private readonly observer: BatcherObserver = {},
  ) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) {
      throw new RangeError(
        `served-models/batcher: maxBatch must be an integer >= 1, got ${options.maxBatch}`,
      );
    }
    if (!(options.maxWaitMs >= 0)) {
      throw new RangeError(`served-models/batcher: maxWaitMs must be >= 0, got ${options.maxWaitMs}`);
    }
    for (const name of ['maxQueue', 'maxQueueTokens', 'maxRequestTokens', 'maxBatchTokens'] as const) {
      const value = options[name] ?? 0;
      if (!Number.isInteger(value) || value < 0) {
        throw new RangeError(`served-models/batcher: ${name} must be an integer >= 0, got ${value}`);
      }
    }
    this.cost = options.cost ?? (() => 1);
  }

  /** Texts waiting (not yet sent to the encoder). */
  get queued(): number {
    return this.queuedTexts;
  }

  /** Estimated tokens waiting (not yet sent to the encoder). */
  get queuedWork(): number {
    return this.queuedTokens;
  }

  /** True while a batch is at the encoder. */
  get busy(): boolean {
    return this.running;
  }

  /**
   * The embeddings of `texts`, in order, once their batches are done. Rejects at once with
   * RequestTooLargeError when the call alone is more work than one may be, with QueueFullError when the
   * queue cannot take it, and with the encoder's error when one of its batches fails.
   */
  submit(texts: readonly string[], options: SubmitOptions = {}): Promise<Float32Array[]> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (texts.length === 0) return Promise.resolve([]);
    const { maxQueue, maxQueueTokens = 0, maxRequestTokens = 0 } = this.options;
    const costs = texts.map(this.cost);
    const tokens = costs.reduce((sum, cost) => sum + cost, 0);
    if (maxRequestTokens > 0 && tokens > maxRequestTokens) {
      this.observer.shed?.(texts.length);
      return Promise.reject(new RequestTooLargeError(tokens, maxRequestTokens, texts.length));
    }
    // Nothing waiting (a batch may be at the encoder): any call is taken, however large; it waits alone.
    if (this.calls.length > 0) {
      if (maxQueue > 0 && this.queuedTexts + texts.length > maxQueue) {
        this.observer.shed?.(texts.length);
        return Promise.reject(new QueueFullError(texts.length, this.queuedTexts, maxQueue));
      }
      if (maxQueueTokens > 0 && this.queuedTokens + tokens > maxQueueTokens) {
        this.observer.shed?.(texts.length);
        return Promise.reject(
          new QueueFullError(texts.length, this.queuedTexts, maxQueue, {
            queued: this.queuedTokens,
            max: maxQueueTokens,
            call: tokens,
          }),
        );
      }
    }
    return new Promise<Float32Array[]>((resolve, reject) => {
      const call: Call = {
        texts,
        costs,
        results: new Array(texts.length),
        next: 0,
        remaining: texts.length,
        waitingTokens: tokens,
        failed: false,
        resolve,
        reject,
        onStart: options.onStart,
      };
      this.calls.push(call);
      if (signal !== undefined) {
        const stop = () => this.fail(call, signal.reason);
        signal.addEventListener('abort', stop, { once: true });
        const done = () => signal.removeEventListener('abort', stop);
        call.resolve = (vectors) => {
          done();
          resolve(vectors);
        };
        call.reject = (error) => {
          done();
          reject(error);
        };
      }
      this.queuedTexts += texts.length;
      this.queuedTokens += tokens;
      this.observer.queued?.(this.queuedTexts);
      this.schedule();
    });
  }

  /**
   * Refuses every call not yet answered with `error` and drops their waiting texts (a stopped job's
   * encoder closes after the batch at the encoder, not after all that was queued). Later calls are taken
   * as before.
   */
  abandon(error: unknown): void {
    for (const call of [...this.calls]) this.fail(call, error);
    for (const call of this.inFlight) this.fail(call, error);
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

  /**
   * The next batch: one text from each waiting call in turn, oldest call first, round after round (or,
   * `inOrder`, the oldest call's texts first), until the batch is full in texts or tokens (at least one
   * text).
   */
  private takeBatch(): { texts: string[]; slots: Slot[]; tokens: number } {
    const { maxBatch, maxBatchTokens = 0 } = this.options;
    const texts: string[] = [];
    const slots: Slot[] = [];
    let tokens = 0;
    let full = false;
    // In order: one call's texts until it has none left; fair: one text of each call, round after round.
    const perRound = this.options.inOrder ? Number.POSITIVE_INFINITY : 1;
    while (!full && texts.length < maxBatch) {
      let took = false;
      for (const call of this.calls) {
        for (let taken = 0; taken < perRound && !full && texts.length < maxBatch; taken++) {
          if (call.next >= call.texts.length) break;
          const cost = call.costs[call.next]!;
          if (texts.length > 0 && maxBatchTokens > 0 && tokens + cost > maxBatchTokens) {
            full = true;
            break;
          }
          if (call.next === 0) call.onStart?.();
          slots.push({ call, position: call.next });
          texts.push(call.texts[call.next]!);
          call.waitingTokens -= cost;
          call.next += 1;
          tokens += cost;
          took = true;
        }
        if (full || texts.length >= maxBatch) break;
      }
      if (!took) break;
    }
    // Calls whose every text is sent leave the queue (they are answered when their batches are).
    for (let i = this.calls.length - 1; i >= 0; i--) {
      if (this.calls[i]!.next >= this.calls[i]!.texts.length) this.calls.splice(i, 1);
    }
    return { texts, slots, tokens };
  }

  private dispatch(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const { texts, slots, tokens } = this.takeBatch();
    if (texts.length === 0) {
      this.settleIdle();
      return;
    }
    this.queuedTexts -= texts.length;
    this.queuedTokens -= tokens;
    this.observer.queued?.(this.queuedTexts);
    this.running = true;
    this.inFlight = new Set(slots.map((slot) => slot.call));
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
        slots.forEach(({ call, position }, at) => {
          call.results[position] = vectors[at]!;
          call.remaining -= 1;
          if (call.remaining === 0 && !call.failed) call.resolve(call.results);
        });
        this.finish();
      },
      (error: unknown) => {
        this.observer.batch?.(texts.length, (performance.now() - started) / 1000);
        for (const { call } of slots) this.fail(call, error);
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
      this.queuedTokens -= call.waitingTokens;
      this.observer.queued?.(this.queuedTexts);
    }
  }

  private finish(): void {
    this.running = false;
    this.inFlight = new Set();
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
