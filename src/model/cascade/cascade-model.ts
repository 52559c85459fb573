/**
 * A cascade run's model: a fast TF-IDF model answers every text, and the encoder model answers the ones
 * the fast one is unsure of (routing.ts). It is a TagModel like the others — given every text's embedding
 * (evaluation, behavioural tests: `bindEmbeddings`) it routes and answers on its own — and it also lets a
 * caller that computes embeddings itself ask only for the routed texts' (serving, batch tagging):
 * `predictFast` answers every text and says which are routed, `predictRouted` answers those with their
 * embeddings. Every prediction says which stage answered it (`stage`).
 */

import { ModelInputError } from '../errors.js';
import type { Explanation } from '../explain.js';
import { limitProbabilities, type Prediction, type PredictOptions } from '../prediction.js';
import type { TagModel } from '../tag-model.js';
import type { EncoderSpec } from '../text/embeddings.js';
import type { TrainingArgs } from '../training-args.js';
import { isRouted, routingConfidence } from './routing.js';
import type { CascadeStage } from './stages.js';
import type { CascadeCurve, CascadeRule } from './threshold-curve.js';

/** How τ was chosen, as the model keeps it (the run's curve artifact holds the whole curve). */
export interface CascadeChoiceRecord {
  rule: CascadeRule;
  reason: string;
  /** The chosen point's share routed and CV f1, and both models' CV f1 alone. */
  cv: { routed: number; f1: number; fast_f1: number; encoder_f1: number; rows: number };
}

export interface CascadeParts {
  /** The run's args (`cascade` true; the encoder stage's args plus the cascade's keys). */
  args: TrainingArgs;
  fast: TagModel;
  encoder: TagModel;
  /** τ: a text whose fast confidence is below it goes to the encoder model. */
  threshold: number;
  choice: CascadeChoiceRecord;
  /** The curve τ was chosen from; kept while training (the run logs it), not saved in the model. */
  curve?: CascadeCurve;
}

/** The fast stage's answers for every text, and which of them go to the encoder model. */
export interface FastAnswers {
  predictions: Prediction[];
  /** Indices (ascending) of the texts the fast model is unsure of. */
  routed: number[];
}

export const isCascade = (model: TagModel): model is CascadeTagModel => model instanceof CascadeTagModel;

/**
 * The texts (indices) whose embeddings a model needs to answer `texts`: every one for an encoder model,
 * the routed ones for a cascade, none for a TF-IDF model. With `spreadEmbeddings`, a caller that computes
 * embeddings (batch tagging, `tagger predict`) asks the encoder for only those.
 */
export function textsNeedingEmbeddings(model: TagModel, texts: readonly string[]): number[] {
  if (isCascade(model)) return model.predictFast(texts, { probabilities: 1 }).routed;
  return model.encoder ? texts.map((_, i) => i) : [];
}

/**
 * One embedding per text from the vectors of the texts `needed` (in that order): the others get a shared
 * zero vector, which a cascade never reads (only its routed texts' are).
 */
export function spreadEmbeddings(
  count: number,
  needed: readonly number[],
  vectors: readonly Float32Array[],
  dim: number,
): Float32Array[] {
  if (needed.length === count) return [...vectors];
  const unread = new Float32Array(dim);
  const out: Float32Array[] = Array.from({ length: count }, () => unread);
  needed.forEach((i, at) => {
    out[i] = vectors[at]!;
  });
  return out;
}

export class CascadeTagModel implements TagModel {
  readonly tags: readonly string[];
  readonly args: TrainingArgs;
  /** The encoder stage's (the model that answers the hardest texts). */
  readonly threshold: number | null;
  readonly tagThresholds: readonly number[] | null;
  readonly encoder: EncoderSpec;
  readonly fast: TagModel;
  readonly encoderModel: TagModel;
  /** τ */
  readonly routingThreshold: number;
  readonly choice: CascadeChoiceRecord;
  readonly curve: CascadeCurve | undefined;

  constructor(parts: CascadeParts) {
    const { fast, encoder } = parts;
    if (!parts.args.cascade)
      throw new ModelInputError('model/cascade: the args of a cascade need "cascade": true');
    if (!encoder.encoder) throw new ModelInputError('model/cascade: the encoder stage takes no embeddings');
    if (fast.encoder) throw new ModelInputError('model/cascade: the fast stage must not need embeddings');
    if (fast.tags.length !== encoder.tags.length || fast.tags.some((tag, k) => tag !== encoder.tags[k])) {
      throw new ModelInputError(
        `model/cascade: both stages must have the same tags (fast: ${fast.tags.join(', ')}; encoder: ${encoder.tags.join(', ')})`,
      );
    }
    if (
      fast.args.multi_label !== encoder.args.multi_label ||
      fast.args.multi_label !== parts.args.multi_label
    ) {
      throw new ModelInputError('model/cascade: both stages must be single-label, or both multi-label');
    }
    if (!(parts.threshold > 0 && parts.threshold <= 1)) {
      throw new ModelInputError(`model/cascade: τ must be in (0, 1], got ${parts.threshold}`);
    }
    this.tags = encoder.tags;
    this.args = parts.args;
    this.threshold = encoder.threshold;
    this.tagThresholds = encoder.tagThresholds;
    this.encoder = encoder.encoder;
    this.fast = fast;
    this.encoderModel = encoder;
    this.routingThreshold = parts.threshold;
    this.choice = parts.choice;
    this.curve = parts.curve;
  }

  /**
   * The fast model's answer to every text (stage `fast`, probabilities as `options` ask) and the texts
   * it is unsure of.
   */
  predictFast(texts: readonly string[], options: PredictOptions = {}): FastAnswers {
    const multiLabel = this.fast.tagThresholds !== null;
    const asked = options.probabilities ?? 'all';
    // Confidence needs every tag's probability (multi-label) or the top one's (single-label).
    const raw = this.fast.predict(texts, undefined, {
      probabilities: multiLabel || asked === 'all' ? 'all' : Math.max(1, asked),
    });
    const routed: number[] = [];
    const predictions = raw.map((prediction, i): Prediction => {
      if (isRouted(routingConfidence(this.fast, prediction), this.routingThreshold)) routed.push(i);
      const probabilities =
        multiLabel && asked !== 'all'
          ? limitProbabilities(prediction.probabilities, asked, prediction.predicted_tags)
          : prediction.probabilities;
      return { ...prediction, probabilities, stage: 'fast' };
    });
    return { predictions, routed };
  }

  /** The encoder model's answers (stage `encoder`) to routed texts, given their embeddings. */
  predictRouted(
    texts: readonly string[],
    embeddings: readonly Float32Array[],
    options: PredictOptions = {},
  ): Prediction[] {
    return this.encoderModel
      .predict(texts, embeddings, options)
      .map((prediction) => ({ ...prediction, stage: 'encoder' }));
  }

  /**
   * Every text routed as serving routes it; needs one embedding per text (only the routed texts' are
   * read). Without embeddings the routed texts cannot be answered: a ModelInputError.
   */
  predict(
    texts: readonly string[],
    embeddings?: readonly Float32Array[],
    options: PredictOptions = {},
  ): Prediction[] {
    return this.predictEmbedding(
      texts,
      (routed) => {
        if (embeddings === undefined || embeddings.length !== texts.length) {
          throw new ModelInputError(
            `model/cascade: ${routed.length} of the texts go to the encoder model, which needs one embedding per text (${embeddings?.length ?? 0} given for ${texts.length} texts)`,
          );
        }
        return routed.map((i) => embeddings[i]!);
      },
      options,
    );
  }

  /**
   * Every text routed as serving routes it, the routed texts' embeddings asked of `embed` (given their
   * indices, ascending; not called when none is routed): one pass of the fast model.
   */
  predictEmbedding(
    texts: readonly string[],
    embed: (routed: readonly number[]) => readonly Float32Array[],
    options: PredictOptions = {},
  ): Prediction[] {
    const { predictions, routed } = this.predictFast(texts, options);
    if (routed.length === 0) return predictions;
    const answers = this.predictRouted(
      routed.map((i) => texts[i]!),
      embed(routed),
      options,
    );
    routed.forEach((i, at) => {
      predictions[i] = answers[at]!;
    });
    return predictions;
  }

  /** The explanation of the stage that answers the text (the encoder's needs its embedding). */
  explain(text: string, top?: number, embedding?: Float32Array): Explanation {
    const { routed } = this.predictFast([text], { probabilities: 1 });
    return this.explainStage(routed.length > 0 ? 'encoder' : 'fast', text, top, embedding);
  }

  /** The explanation of a given stage's model. */
  explainStage(stage: CascadeStage, text: string, top?: number, embedding?: Float32Array): Explanation {
    if (stage === 'fast') return this.fast.explain(text, top);
    if (embedding === undefined) {
      throw new ModelInputError("model/cascade: explaining the encoder stage needs the text's embedding");
    }
    return this.encoderModel.explain(text, top, embedding);
  }
}
