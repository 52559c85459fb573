/**
 * The Predictor (issue 41): a served run's one way of answering texts — texts (+ options) → predictions
 * and explanations — whatever kind of model the run holds. It owns what used to be arranged by hand by
 * every caller (the HTTP layer, batch tagging, `tagger predict`, `tagger evaluate`): holding the encoder's
 * lease, embedding only the texts the model needs, and routing a cascade. `predictorFor` picks one of
 * three small implementations when a run is loaded:
 *
 *   - plain: a TF-IDF model, answered on the calling thread;
 *   - encoder: every text embedded (the encoder's thread, batched with other calls' texts), then answered;
 *   - cascade: the fast model answers every text, only the texts it is unsure of wait for the encoder,
 *     and when the encoder cannot take them (its queue full, the call over its work limit, its thread
 *     failed, or no encoder on this machine) they get the fast model's answer marked `fast_degraded`,
 *     unless the caller asks to `shed` (then the encoder's error is the call's).
 *
 * Callers never ask which kind they hold. What they want to know of a call (the model's time, the wait
 * for the embeddings, a cascade's stages) they pass in as a `PredictionObserver`, so nothing here imports
 * the layers above (metrics, tracing). Predictions are exactly those of the model's own methods: the
 * same calls with the same arguments as before the Predictor existed.
 */
import {
  bindEmbeddings,
  type CascadeTagModel,
  type EncoderSpec,
  type Explanation,
  isCascade,
  type Prediction,
  type PredictOptions,
  type TagModel,
} from '../model/index.js';
import { QueueFullError, RequestTooLargeError } from './batcher.js';
import {
  type EmbedCall,
  type EncoderLease,
  EncoderLoadError,
  type EncoderProvider,
  EncoderUnavailableError,
} from './encoders.js';

/**
 * Why a call's unsure texts got a cascade's fast answers: the encoder's queue was full, the texts were more
 * work than one call may ask, its thread failed, or the cascade is served without its encoder
 * (`--allow-degraded`).
 */
export type CascadeDegradation = 'queue_full' | 'request_too_large' | 'encoder_failed' | 'encoder_missing';

/**
 * What a cascade answers for a text its fast model is unsure of when the encoder cannot take it: the fast
 * model's answer marked `fast_degraded` (`degrade`), or the encoder's refusal (`shed`).
 */
export type CascadeOverload = 'degrade' | 'shed';

/** What a caller learns of one call, as it happens (all optional). */
export interface PredictionObserver {
  /** The model's own work on the calling thread, in nanoseconds (once per model call). */
  model?(ns: bigint): void;
  /**
   * The wait for the texts' embeddings: in the encoder's queue, then at the encoder (nanoseconds). Told
   * once per call that needed embeddings, also when the wait failed.
   */
  embeddings?(queueNs: bigint, encoderNs: bigint): void;
  /** A cascade's stage took `seconds` for this call (`encoder`: the wait plus the encoder model). */
  cascadeStage?(stage: 'fast' | 'encoder', seconds: number): void;
  /** A cascade's texts by the stage that answered them. */
  cascadeTexts?(fast: number, encoder: number, degraded: number): void;
  /** A cascade answered the call's unsure texts with its fast model, and why (`error`: the encoder's). */
  cascadeDegraded?(why: CascadeDegradation, error: unknown): void;
}

/** What a call asks beyond its texts (all optional). */
export interface PredictionRequest {
  /** Whose probabilities each prediction lists (PredictOptions): every tag's (default), or the n most probable. */
  probabilities?: 'all' | number;
  /** A cascade's unsure texts when the encoder cannot take them (default `degrade`). */
  overload?: CascadeOverload;
  /**
   * Stops waiting for embeddings: the call rejects with the signal's reason, its texts still queued for
   * the encoder are dropped, and a lease it borrowed is released.
   */
  signal?: AbortSignal | undefined;
  observer?: PredictionObserver | undefined;
}

/** A call's answers: one prediction per text, in order, and each one's explanation on demand. */
export interface Answers {
  readonly predictions: readonly Prediction[];
  /** Why text `i` got its answer, by the model that answered it (its `top` strongest features). */
  explain(i: number, top: number): Explanation;
}

export interface Predictor {
  /** The served model (its tags, args, thresholds): for what callers show, never to predict with. */
  readonly model: TagModel;
  /** The sentence encoder the model reads (its token limit: `max_tokens`); null for a TF-IDF model. */
  readonly encoder: EncoderSpec | null;
  /** A cascade's routed share and rows as chosen out of fold (for live routing figures); else null. */
  readonly routing: { readonly routed: number; readonly rows: number } | null;
  /** Whether it holds an encoder's lease (released by `release()`). */
  readonly holdsEncoder: boolean;
  /** One prediction per text, in order (see the module comment for each kind). */
  predict(texts: readonly string[], request?: PredictionRequest): Promise<Answers>;
  /**
   * A model that answers these texts synchronously (scoring and behavioural tests): the embeddings it
   * needs for them (each distinct text once; a cascade's only for the texts it routes) computed first.
   * Other texts cannot be answered by it. Rejects as the encoder does; a cascade without its encoder
   * rejects with EncoderLoadError.
   */
  prepare(texts: Iterable<string>): Promise<TagModel>;
  /** The model left the served runs: its encoder lease goes (idempotent); later calls borrow one. */
  release(): void;
}

const now = (): bigint => process.hrtime.bigint();

/** Runs `work`, telling the observer how long the model took. */
function timed<T>(observer: PredictionObserver | undefined, work: () => T): T {
  if (observer?.model === undefined) return work();
  const started = now();
  try {
    return work();
  } finally {
    observer.model(now() - started);
  }
}

/** A TF-IDF model: nothing to wait for. */
class PlainPredictor implements Predictor {
  readonly encoder = null;
  readonly routing = null;
  readonly holdsEncoder = false;
  constructor(readonly model: TagModel) {}

  // Async like the others: a model that throws rejects the call instead of throwing at its caller.
  async predict(texts: readonly string[], request: PredictionRequest = {}): Promise<Answers> {
    const options: PredictOptions = { probabilities: request.probabilities ?? 'all' };
    const predictions = timed(request.observer, () => this.model.predict(texts, undefined, options));
    return { predictions, explain: (i, top) => this.model.explain(texts[i]!, top) };
  }

  async prepare(): Promise<TagModel> {
    return this.model;
  }

  release(): void {}
}

/**
 * The encoder's lease of a model, and a call's way to embeddings through it: the model's own lease while
 * it is served, else (a call that started before the model left the served runs) one borrowed for the
 * call and released however the call ends.
 */
class EncoderHold {
  private released = false;
  constructor(
    private readonly lease: EncoderLease,
    private readonly provider: EncoderProvider | undefined,
  ) {}

  get held(): boolean {
    return !this.released;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.lease.release();
  }

  /** The embeddings of `texts`, in order, the wait told to the observer. */
  async embed(texts: readonly string[], request: PredictionRequest): Promise<Float32Array[]> {
    const { signal, observer } = request;
    signal?.throwIfAborted();
    const submitted = now();
    let started: bigint | undefined;
    const options: EmbedCall = {
      ...(signal === undefined ? {} : { signal }),
      onStart: () => {
        started ??= now();
      },
    };
    let borrowed: EncoderLease | undefined;
    try {
      let lease = this.lease;
      if (this.released) {
        if (this.provider === undefined) {
          throw new EncoderUnavailableError('the sentence encoder was released and cannot be opened again');
        }
        borrowed = await this.provider.acquire(this.lease.spec);
        lease = borrowed;
      }
      return await untilAborted(lease.embed(texts, options), signal);
    } finally {
      borrowed?.release();
      if (observer?.embeddings !== undefined) {
        const ended = now();
        const began = started ?? ended;
        observer.embeddings(began - submitted, ended - began);
      }
    }
  }
}

/** `work`, or the signal's reason as soon as it aborts (the work itself is told by its own signal). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The distinct texts of `texts`, and their embeddings (those `needed` of them), as a lookup. */
async function embeddingLookup(
  hold: EncoderHold,
  distinct: readonly string[],
  needed: readonly number[],
): Promise<Map<string, Float32Array>> {
  const texts = needed.map((i) => distinct[i]!);
  const vectors = await hold.embed(texts, {});
  return new Map(texts.map((text, i) => [text, vectors[i]!]));
}

/** A model that reads every text's embedding. */
class EncoderPredictor implements Predictor {
  readonly routing = null;
  readonly encoder: EncoderSpec;
  constructor(
    readonly model: TagModel,
    private readonly hold: EncoderHold,
  ) {
    this.encoder = model.encoder!;
  }

  get holdsEncoder(): boolean {
    return this.hold.held;
  }

  async predict(texts: readonly string[], request: PredictionRequest = {}): Promise<Answers> {
    const embeddings = texts.length === 0 ? [] : await this.hold.embed(texts, request);
    const options: PredictOptions = { probabilities: request.probabilities ?? 'all' };
    const predictions = timed(request.observer, () => this.model.predict(texts, embeddings, options));
    return { predictions, explain: (i, top) => this.model.explain(texts[i]!, top, embeddings[i]) };
  }

  async prepare(texts: Iterable<string>): Promise<TagModel> {
    const distinct = [...new Set(texts)];
    return bindEmbeddings(
      this.model,
      await embeddingLookup(
        this.hold,
        distinct,
        distinct.map((_, i) => i),
      ),
    );
  }

  release(): void {
    this.hold.release();
  }
}

/** Why the encoder could not take a call's routed texts, or null for a failure that is not load. */
function degradationOf(error: unknown): CascadeDegradation | null {
  if (error instanceof QueueFullError) return 'queue_full';
  if (error instanceof RequestTooLargeError) return 'request_too_large';
  if (error instanceof EncoderUnavailableError || error instanceof EncoderLoadError) return 'encoder_failed';
  return null;
}

const secondsSince = (from: bigint): number => Number(now() - from) / 1e9;

/** A cascade: the fast model first, the encoder only for what it is unsure of (issue 33). */
class CascadePredictor implements Predictor {
  readonly encoder: EncoderSpec;
  readonly routing: { readonly routed: number; readonly rows: number };
  constructor(
    readonly model: CascadeTagModel,
    /** Absent when the cascade is served without its encoder (`--allow-degraded`). */
    private readonly hold: EncoderHold | undefined,
  ) {
    this.encoder = model.encoder;
    this.routing = { routed: model.choice.cv.routed, rows: model.choice.cv.rows };
  }

  get holdsEncoder(): boolean {
    return this.hold?.held ?? false;
  }

  async predict(texts: readonly string[], request: PredictionRequest = {}): Promise<Answers> {
    const { model, hold } = this;
    const { observer } = request;
    const asked: PredictOptions = { probabilities: request.probabilities ?? 'all' };
    const fastStarted = now();
    const { predictions, routed } = timed(observer, () => model.predictFast(texts, asked));
    observer?.cascadeStage?.('fast', secondsSince(fastStarted));
    const explainFast = (i: number, top: number) => model.explainStage('fast', texts[i]!, top);
    /** The fast answers for every text, the routed ones marked as answered without the encoder. */
    const degraded = (why: CascadeDegradation, error: unknown): Answers => {
      // Marked on the prediction, so the records keep it too (src/monitoring reads `stage`).
      for (const i of routed) predictions[i] = { ...predictions[i]!, stage: 'fast_degraded' };
      observer?.cascadeDegraded?.(why, error);
      observer?.cascadeTexts?.(texts.length - routed.length, 0, routed.length);
      return { predictions, explain: explainFast };
    };
    if (routed.length === 0) {
      observer?.cascadeTexts?.(texts.length, 0, 0);
      return { predictions, explain: explainFast };
    }
    if (hold === undefined) return degraded('encoder_missing', undefined);

    const routedTexts = routed.map((i) => texts[i]!);
    const encoderStarted = now();
    let embeddings: Float32Array[];
    try {
      embeddings = await hold.embed(routedTexts, request);
    } catch (error) {
      const why = degradationOf(error);
      if (why === null || request.overload === 'shed') throw error;
      return degraded(why, error);
    }
    const answers = timed(observer, () => model.predictRouted(routedTexts, embeddings, asked));
    const embeddingOf = new Map<number, Float32Array>();
    routed.forEach((i, at) => {
      predictions[i] = answers[at]!;
      embeddingOf.set(i, embeddings[at]!);
    });
    observer?.cascadeStage?.('encoder', secondsSince(encoderStarted));
    observer?.cascadeTexts?.(texts.length - routed.length, routed.length, 0);
    return {
      predictions,
      explain: (i, top) => {
        const embedding = embeddingOf.get(i);
        return embedding === undefined
          ? explainFast(i, top)
          : model.explainStage('encoder', texts[i]!, top, embedding);
      },
    };
  }

  async prepare(texts: Iterable<string>): Promise<TagModel> {
    if (this.hold === undefined) {
      throw new EncoderLoadError(
        `encoder ${this.encoder.name}: this cascade is served without its sentence encoder, which every text it is unsure of needs`,
      );
    }
    const distinct = [...new Set(texts)];
    const { routed } = this.model.predictFast(distinct, { probabilities: 1 });
    return bindEmbeddings(this.model, await embeddingLookup(this.hold, distinct, routed));
  }

  release(): void {
    this.hold?.release();
  }
}

/**
 * The Predictor of a loaded model: `lease` is the encoder an encoder model or a cascade holds (absent:
 * a TF-IDF model, or a cascade served without its encoder), `provider` where a call borrows one after the
 * lease was released. An encoder model without a lease cannot answer: that is a programming error here
 * (loadServedModel refuses such a run first).
 * @example const predictor = predictorFor(model); (await predictor.predict(['a text'])).predictions
 */
export function predictorFor(model: TagModel, lease?: EncoderLease, provider?: EncoderProvider): Predictor {
  const hold = lease === undefined ? undefined : new EncoderHold(lease, provider);
  if (isCascade(model)) return new CascadePredictor(model, hold);
  if (!model.encoder) return new PlainPredictor(model);
  if (hold === undefined) {
    throw new Error(
      `served-models/predictor: an encoder model (${model.encoder.name}) needs its encoder's lease`,
    );
  }
  return new EncoderPredictor(model, hold);
}
