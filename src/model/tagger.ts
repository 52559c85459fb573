/**
 * The tagger: trains a model of any classifier — the family its classifier belongs to trains it
 * (classifiers/families.ts) — and binds an encoder model to embeddings computed beforehand. The shapes
 * every model shares are tag-model.ts's.
 */
import { isCascade } from './cascade/cascade-model.js';
import { EMBEDDING_CLASSIFIERS, familyOf } from './classifiers/families.js';
import { ModelInputError } from './errors.js';
import type { LabelledText, TagModel, TrainedTagger, TrainOptions } from './tag-model.js';
import { type EmbeddingLookup, embeddingsOf } from './text/embeddings.js';
import type { TrainingArgs } from './training-args.js';

// The shapes moved to a leaf module so every family can share them; re-exported for the callers that import them here.
export {
  type ClassesReport,
  type EpochReport,
  type LabelledText,
  type MemberReport,
  type Prediction,
  type TagModel,
  type ThresholdChoice,
  type TrainEncoder,
  type TrainedTagger,
  type TrainOptions,
  tagSetKey,
  tagsOf,
} from './tag-model.js';

/**
 * Trains a tagger. A first fit on `train` is scored on `validation`: its validation loss is the history
 * and its validation predictions choose the threshold (`args.threshold`). With `args.refit` (and a
 * non-empty validation split) the returned model is then fitted again, with the same arguments and seed, on
 * train + validation, and keeps that threshold; without it the first fit is the model. `args.subset` is not
 * applied here: the caller that loads the data applies it.
 * @example const { model } = trainTagger(train, val, DEFAULT_TRAINING_ARGS, { seed: 42 });
 */
export function trainTagger(
  train: LabelledText[],
  validation: LabelledText[],
  args: TrainingArgs,
  options: TrainOptions,
): TrainedTagger {
  if (train.length === 0) {
    throw new ModelInputError(
      'model/tagger: the training split is empty; provide at least one labelled text',
    );
  }
  if ((args.encoder !== null) !== (options.encoder !== undefined)) {
    throw new ModelInputError(
      args.encoder === null
        ? 'model/tagger: embeddings were given, but the args name no encoder'
        : `model/tagger: the args name the encoder ${args.encoder}, but no embeddings were given; compute them with src/encoder first`,
    );
  }
  if (args.cascade) {
    throw new ModelInputError(
      "model/tagger: a cascade (args.cascade) is two models and a threshold chosen from their out-of-fold predictions; train it with src/train's trainCascade (tagger train --cascade), or train a stage with cascade/stages.ts's args",
    );
  }
  const family = familyOf(args.classifier);
  // parseTrainingArgs refuses an encoder with a family that takes none; args built by hand are checked here as well.
  if (args.encoder !== null && !family.takesEmbeddings) {
    throw new ModelInputError(
      `model/tagger: the encoder needs classifier ${EMBEDDING_CLASSIFIERS.join(' or ')}; ${args.classifier} does not take embeddings`,
    );
  }
  return family.train(train, validation, args, options);
}

/**
 * A model whose predictions take each text's embedding from `lookup` (an encoder model scored where the
 * embeddings were computed beforehand: evaluation, behavioural tests); a TF-IDF model is returned as it is.
 * A cascade's lookup needs only the embeddings of the texts it routes.
 */
export function bindEmbeddings(model: TagModel, lookup: EmbeddingLookup): TagModel {
  const { encoder } = model;
  if (!encoder) return model;
  return {
    tags: model.tags,
    args: model.args,
    threshold: model.threshold,
    tagThresholds: model.tagThresholds,
    encoder,
    // A cascade looks up only the texts its fast model routes (one pass of it).
    predict: (texts, _embeddings, options) =>
      isCascade(model)
        ? model.predictEmbedding(
            texts,
            (routed) =>
              embeddingsOf(
                routed.map((i) => texts[i]!),
                lookup,
              ),
            options,
          )
        : model.predict(texts, embeddingsOf(texts, lookup), options),
    // A cascade explains a text it does not route without its embedding (its fast model's explanation).
    explain: (text, top) =>
      model.explain(text, top, isCascade(model) ? lookup.get(text) : embeddingsOf([text], lookup)[0]),
  };
}
