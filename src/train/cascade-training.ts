/**
 * Training a cascade run (issue 33; the model is src/model/cascade/): both stages — the fast TF-IDF model
 * and the encoder model — are fitted on the same split, and τ is chosen from their out-of-fold
 * predictions on the rows the served model learns from (train + validation with `refit`, else train):
 * k-fold cross-validation as `label-issues` runs it (crossValidationFolds, one fit per fold on the other
 * folds' rows), every row predicted by a fast model and an encoder model that never saw it. The curve of
 * share routed against CV f1 and the rule's choice are returned beside the model: the run logs them
 * (`cascade_curve.json`), the model keeps only τ and the reason.
 */
import {
  bindEmbeddings,
  type CascadeChoice,
  type CascadeCurve,
  CascadeTagModel,
  cascadeCurve,
  chooseThreshold,
  encoderStageArgs,
  evaluate,
  fastStageArgs,
  type LabelledText,
  normalizeTag,
  normalizeTagSet,
  routingConfidence,
  ruleOf,
  type TrainedTagger,
  type TrainingArgs,
  type TrainOptions,
  tagsOf,
  trainTagger,
} from '../model/index.js';
import { crossValidationFolds, DEFAULT_FOLDS } from './cross-validate.js';
import { DataError } from './data.js';

export interface TrainedCascade extends TrainedTagger {
  model: CascadeTagModel;
  /** The curve τ was chosen from, and the choice (rule, point, reason). */
  curve: CascadeCurve;
  choice: CascadeChoice;
}

export interface CascadeTrainOptions extends TrainOptions {
  /** Folds of the out-of-fold predictions (default 5). */
  folds?: number;
  /** A fold's two models are fitted and its rows predicted (1-based), for a progress line. */
  onCascadeFold?: (done: number, folds: number) => void;
}

/**
 * Trains a cascade: out-of-fold predictions of both stages on the rows the final model learns from, the
 * curve and τ, then both stages on `train` / `validation` as any model is trained. Needs `options.encoder`
 * (the embeddings of every text).
 */
export function trainCascade(
  train: readonly LabelledText[],
  validation: readonly LabelledText[],
  args: TrainingArgs,
  options: CascadeTrainOptions,
): TrainedCascade {
  const { encoder } = options;
  if (!args.cascade) throw new RangeError('train/cascade: the args do not ask for a cascade');
  if (encoder === undefined) {
    throw new DataError(
      `data: a cascade needs the embeddings of the encoder ${args.encoder}; compute them first (tagger train --encoder does)`,
    );
  }
  const fastArgs = fastStageArgs(args);
  const encoderArgs = encoderStageArgs(args);
  const rows = args.refit && validation.length > 0 ? [...train, ...validation] : [...train];
  const folds = options.folds ?? DEFAULT_FOLDS;
  let parts: ReturnType<typeof crossValidationFolds>;
  try {
    parts = crossValidationFolds(rows, folds, options.seed, { validated: false });
  } catch (error) {
    if (!(error instanceof DataError)) throw error;
    throw new DataError(
      `data: a cascade chooses its threshold from out-of-fold predictions (${folds}-fold cross-validation of the training rows), and ${error.message.replace(/^data: /, '')}`,
    );
  }
  const confidence: number[] = [];
  const fastAnswers: string[][] = [];
  const encoderAnswers: string[][] = [];
  const truth: string[][] = [];
  for (const [done, fold] of parts.entries()) {
    const fitRows = [...fold.train, ...fold.validation];
    const fast = trainTagger(fitRows, [], fastArgs, { seed: options.seed, ...parallelOf(options) });
    const encoderModel = bindEmbeddings(
      trainTagger(fitRows, [], encoderArgs, { seed: options.seed, encoder, ...parallelOf(options) }).model,
      encoder.embeddings,
    );
    const texts = fold.test.map((row) => row.text);
    const classes = new Set(fast.model.tags);
    const fastPredictions = fast.model.predict(texts, undefined, {
      probabilities: args.multi_label ? 'all' : 1,
    });
    const encoderPredictions = encoderModel.predict(texts, undefined, { probabilities: 1 });
    fold.test.forEach((row, i) => {
      confidence.push(routingConfidence(fast.model, fastPredictions[i]!));
      fastAnswers.push(fastPredictions[i]!.predicted_tags);
      encoderAnswers.push(encoderPredictions[i]!.predicted_tags);
      truth.push(args.multi_label ? normalizeTagSet(tagsOf(row), classes) : [normalizeTag(row.tag, classes)]);
    });
    options.onCascadeFold?.(done + 1, folds);
  }
  const answers = {
    confidence,
    fast: fastAnswers,
    encoder: encoderAnswers,
    truth,
    multiLabel: args.multi_label,
  };
  const curve = cascadeCurve(answers);
  const choice = chooseThreshold(curve, ruleOf(args), answers);

  // The stages themselves, as a run of each would train them (the encoder stage reports its epochs),
  // each refitted here whatever the caller defers (a cascade is trained whole); their validated fits
  // first score the cascade itself on the validation rows, which they never saw, and the encoder
  // stage's predictions of those rows are kept: the label issues' held-out probabilities.
  const cascadeChoice = {
    rule: choice.rule,
    reason: choice.reason,
    cv: {
      routed: choice.point.routed,
      f1: choice.point.f1,
      fast_f1: curve.fast_f1,
      encoder_f1: curve.encoder_f1,
      rows: curve.rows,
    },
  };
  let fastValidated: TrainedTagger | null = trainTagger([...train], [...validation], fastArgs, {
    seed: options.seed,
    ...parallelOf(options),
    deferRefit: true,
  });
  let encoderValidated: TrainedTagger | null = trainTagger([...train], [...validation], encoderArgs, {
    ...options,
    deferRefit: true,
  });
  const validationProbabilities = encoderValidated.validationProbabilities;
  const validationF1 =
    validation.length === 0
      ? Number.NaN
      : evaluate(
          bindEmbeddings(
            new CascadeTagModel({
              args,
              fast: fastValidated.model,
              encoder: encoderValidated.model,
              threshold: choice.point.threshold,
              choice: cascadeChoice,
              curve,
            }),
            encoder.embeddings,
          ),
          [...validation],
        ).overall.f1;
  const refitFast = fastValidated.refit;
  const refitEncoder = encoderValidated.refit;
  // Each validated fit is let go before its refit starts (see TrainedTagger.refit).
  let fast: TrainedTagger;
  if (refitFast === undefined) fast = fastValidated;
  else {
    fastValidated = null;
    fast = refitFast();
  }
  let encoderStage: TrainedTagger;
  if (refitEncoder === undefined) encoderStage = encoderValidated;
  else {
    encoderValidated = null;
    encoderStage = refitEncoder();
  }
  const model = new CascadeTagModel({
    args,
    fast: fast.model,
    encoder: encoderStage.model,
    threshold: choice.point.threshold,
    choice: cascadeChoice,
    curve,
  });
  return {
    model,
    history: encoderStage.history,
    threshold: encoderStage.threshold,
    tagThresholds: encoderStage.tagThresholds,
    // The cascade's own, of its stages' validated fits routed by τ.
    validationF1,
    ...(validationProbabilities === undefined ? {} : { validationProbabilities }),
    curve,
    choice,
  };
}

/** The options every stage's fit shares: the threads, and the tags when the caller fixed them. */
const parallelOf = (options: TrainOptions): Pick<TrainOptions, 'parallel' | 'tags'> => ({
  ...(options.parallel ? { parallel: options.parallel } : {}),
  ...(options.tags ? { tags: options.tags } : {}),
});
