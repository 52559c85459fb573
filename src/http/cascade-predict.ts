/**
 * How a cascade run answers a predict request (issue 33): its fast model answers every text at once, and
 * only the texts it is unsure of (below τ) wait for the encoder — their embeddings from the encoder's
 * dynamic batcher, then the encoder model's answers. A request none of whose texts is routed answers
 * synchronously, as a TF-IDF run does, whatever the encoder is doing.
 *
 * When the encoder cannot take the routed texts — its queue is full (QueueFullError), they are more work
 * than one request may ask (RequestTooLargeError), its thread failed (EncoderUnavailableError), or it
 * could not be opened again for a request on a replaced model (EncoderLoadError) — `degrade` (the default)
 * answers them with the fast model's answers, marked `fast_degraded`: the fast model already answered
 * them, and a marked answer serves a caller better than a 503 for the whole request. `shed` refuses the
 * request as an encoder run's is (503 + Retry-After; 413 for a request over the work limit). A cascade
 * served without its encoder (`--allow-degraded`, ServedModel.degraded) answers every routed text
 * `fast_degraded`. Any other failure is a failure.
 */
import type { FastifyRequest } from 'fastify';
import {
  type CascadeTagModel,
  type Explanation,
  isCascade,
  type Prediction,
  type PredictOptions,
  type TagModel,
} from '../model/index.js';
import {
  type EncoderLease,
  EncoderLoadError,
  EncoderUnavailableError,
  QueueFullError,
  RequestTooLargeError,
} from '../served-models/index.js';
import type { CascadeDegradation } from './cascade-metrics.js';
import { EXPLAIN_TOP } from './explanation-schemas.js';
import { cascadeMetricsOf, timeInference, traceEncoder } from './observability.js';
import type { CascadeOverload } from './options.js';
import type { PredictionItem } from './schemas.js';

/**
 * A model's answers to a request's texts, before they become response items (responses.ts); a cascade's
 * predictions carry the `stage` that answered, which the items and the records show.
 */
export interface Answers {
  predictions: readonly Prediction[];
  /** The explanation of text `i` by the model that answered it (`explain: true`). */
  explain(i: number): Explanation;
}

export interface CascadeRequest {
  model: CascadeTagModel;
  /** The encoder's batcher; absent when the cascade is served without it (`--allow-degraded`). */
  embedder: EncoderLease | undefined;
  texts: readonly string[];
  asked: PredictOptions;
  overload: CascadeOverload;
  /** Turns the answers into the response items (timed as inference, counted, recorded). */
  respond(answer: () => Answers): PredictionItem[];
}

/** Why the encoder could not take a request's routed texts, or null for a failure that is not load. */
function degradationOf(error: unknown): CascadeDegradation | null {
  if (error instanceof QueueFullError) return 'queue_full';
  if (error instanceof RequestTooLargeError) return 'request_too_large';
  if (error instanceof EncoderUnavailableError || error instanceof EncoderLoadError) return 'encoder_failed';
  return null;
}

const seconds = (from: bigint): number => Number(process.hrtime.bigint() - from) / 1e9;

export function predictCascade(
  request: FastifyRequest,
  cascade: CascadeRequest,
): PredictionItem[] | Promise<PredictionItem[]> {
  const { model, embedder, texts, asked, respond } = cascade;
  const metrics = cascadeMetricsOf(request);
  const fastStarted = process.hrtime.bigint();
  const fast = timeInference(request, () => model.predictFast(texts, asked));
  metrics?.observeStage('fast', seconds(fastStarted));
  const { predictions, routed } = fast;
  const explainFast = (i: number) => model.explainStage('fast', texts[i]!, EXPLAIN_TOP);
  /** The fast answers for every text, the routed ones marked as answered without the encoder. */
  const degraded = (why: CascadeDegradation): PredictionItem[] => {
    // Marked on the prediction, so the records keep it too (src/monitoring reads `stage`).
    for (const i of routed) predictions[i] = { ...predictions[i]!, stage: 'fast_degraded' };
    metrics?.recordDegraded(why);
    metrics?.recordTexts(texts.length - routed.length, 0, routed.length);
    return respond(() => ({ predictions, explain: explainFast }));
  };

  if (routed.length === 0) {
    metrics?.recordTexts(texts.length, 0, 0);
    return respond(() => ({ predictions, explain: explainFast }));
  }
  if (embedder === undefined) return degraded('encoder_missing');

  const routedTexts = routed.map((i) => texts[i]!);
  const encoderStarted = process.hrtime.bigint();
  return traceEncoder(request, embedder.embed(routedTexts)).then(
    (embeddings) => {
      const embeddingOf = new Map<number, Float32Array>();
      const items = respond(() => {
        const answers = model.predictRouted(routedTexts, embeddings, asked);
        routed.forEach((i, at) => {
          predictions[i] = answers[at]!;
          embeddingOf.set(i, embeddings[at]!);
        });
        return {
          predictions,
          explain: (i) => {
            const embedding = embeddingOf.get(i);
            return embedding === undefined
              ? explainFast(i)
              : model.explainStage('encoder', texts[i]!, EXPLAIN_TOP, embedding);
          },
        };
      });
      metrics?.observeStage('encoder', seconds(encoderStarted));
      metrics?.recordTexts(texts.length - routed.length, routed.length, 0);
      return items;
    },
    (error: unknown) => {
      const why = degradationOf(error);
      if (why === null || cascade.overload === 'shed') throw error;
      if (why === 'encoder_failed') {
        request.log.warn({ err: error }, "encoder failed; a cascade's unsure texts get its fast answers");
      }
      return degraded(why);
    },
  );
}

/**
 * The explanations of texts by the model that answers them, for routes that explain what they did not
 * predict just now (GET /review): an encoder run's need every text's embedding, a cascade's only those of
 * the texts its encoder model answers (a cascade served without its encoder explains every text by its
 * fast model, which answered them all), a TF-IDF run's none. Rejects as the encoder does when it cannot
 * take the texts (QueueFullError: 503).
 */
export async function explainerFor(
  served: { model: TagModel; embedder?: EncoderLease | undefined },
  texts: readonly string[],
): Promise<(i: number) => Explanation> {
  const { model, embedder } = served;
  if (isCascade(model)) {
    const { routed } = model.predictFast(texts, { probabilities: 1 });
    if (embedder === undefined || routed.length === 0) {
      return (i) => model.explainStage('fast', texts[i]!, EXPLAIN_TOP);
    }
    const vectors = await embedder.embed(routed.map((i) => texts[i]!));
    const embeddingOf = new Map(routed.map((i, at) => [i, vectors[at]!]));
    return (i) => {
      const embedding = embeddingOf.get(i);
      return embedding === undefined
        ? model.explainStage('fast', texts[i]!, EXPLAIN_TOP)
        : model.explainStage('encoder', texts[i]!, EXPLAIN_TOP, embedding);
    };
  }
  const embeddings = embedder !== undefined && texts.length > 0 ? await embedder.embed(texts) : undefined;
  return (i) => model.explain(texts[i]!, EXPLAIN_TOP, embeddings?.[i]);
}
