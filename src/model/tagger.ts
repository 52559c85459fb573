/**
 * The tagger: preprocessing + TF-IDF + a linear classifier (one-vs-rest or softmax log-loss SGD), trained
 * with oversampling and an optional probability threshold below which a prediction falls back to `other`;
 * or, with `multi_label`, one-vs-rest binary problems whose tags each pass their own probability threshold.
 */
import { isSgdClassifier, type TrainingArgs } from './args.js';
import { addLinearScores } from './classifiers/linear-scores.js';
import { trainVoteTagger } from './classifiers/members/train-members.js';
import {
  argmax,
  averageLinearModels,
  balancedClassWeights,
  balancedLabelWeights,
  type LabelledMatrix,
  type LinearModel,
  probabilitiesInPlace,
  rowScores,
  trainOvrSgd,
  trainSoftmaxSgd,
} from './classifiers/sgd/sgd-solver.js';
import { chooseTagThresholds, chooseThreshold, f1WithThreshold } from './classifiers/thresholds.js';
import { labelArrays, oversampledOrder } from './classifiers/training-rows.js';
import { ModelInputError } from './errors.js';
import { multiLabelMetrics } from './evaluation/metrics.js';
import { explainLinear, type LinearTagExplanation } from './explain.js';
import { multiLabelModelTags, OTHER_TAG, tagsOverThresholds } from './labels.js';
import { createRng, randomInt } from './rng.js';
import {
  type EpochReport,
  type LabelledText,
  type Prediction,
  type TagModel,
  type TrainEncoder,
  type TrainedTagger,
  type TrainOptions,
  tagsOf,
} from './tag-model.js';
import {
  appendEmbeddingBlock,
  checkEmbeddings,
  type EmbeddingBlock,
  type EmbeddingLookup,
  type EncoderSpec,
  embeddingScale,
  embeddingsOf,
} from './text/embeddings.js';
import { fitVectorizer, type TaggerVectorizer } from './text/features.js';
import { cleanText } from './text/preprocess.js';

export { chooseTagThresholds, chooseThreshold } from './classifiers/thresholds.js';
// Moved to leaf modules so every trainer can share them; re-exported for the callers that import them here.
export {
  type EpochReport,
  type LabelledText,
  type MemberReport,
  type Prediction,
  type TagModel,
  type TrainEncoder,
  type TrainedTagger,
  type TrainOptions,
  tagSetKey,
  tagsOf,
} from './tag-model.js';

/**
 * The training seeds of a seed ensemble's members: `seed` itself first (so `ensemble: 1` is the single
 * model trained with `seed`), then `count - 1` distinct seeds drawn from an RNG seeded with `seed` mixed
 * with a constant (not seed + 1, seed + 2 …, which would share members between nearby training seeds).
 * @example ensembleSeeds(42, 1) // [42]
 */
export function ensembleSeeds(seed: number, count: number): number[] {
  const seeds = [seed];
  const rng = createRng(((seed >>> 0) ^ 0x5eed5eed) >>> 0);
  while (seeds.length < count) {
    const next = randomInt(rng, 0x7fffffff);
    if (!seeds.includes(next)) seeds.push(next);
  }
  return seeds;
}

/** The TagModel implementation; artifact.ts reads its parts. */
export class LinearTagModel implements TagModel {
  readonly tags: readonly string[];
  readonly args: TrainingArgs;
  readonly threshold: number | null;
  readonly tagThresholds: readonly number[] | null;
  readonly vectorizer: TaggerVectorizer;
  readonly linear: LinearModel;
  readonly encoder: EncoderSpec | null;
  // Scratch scores for predict(); overwritten by every call (JS is single-threaded).
  private readonly scores: Float64Array;

  constructor(
    tags: readonly string[],
    args: TrainingArgs,
    threshold: number | null,
    vectorizer: TaggerVectorizer,
    linear: LinearModel,
    tagThresholds: readonly number[] | null = null,
    encoder: EncoderSpec | null = null,
  ) {
    if (args.multi_label !== (tagThresholds !== null)) {
      throw new ModelInputError(
        'model/tagger: a multi-label model needs one threshold per tag, and a single-label model none',
      );
    }
    this.tags = Object.freeze([...tags]);
    this.args = Object.freeze({ ...args });
    this.threshold = threshold;
    this.tagThresholds = tagThresholds === null ? null : Object.freeze([...tagThresholds]);
    this.vectorizer = vectorizer;
    this.linear = linear;
    if ((args.encoder !== null) !== (encoder !== null)) {
      throw new ModelInputError(
        'model/tagger: an encoder model needs its encoder spec, and a TF-IDF model none',
      );
    }
    const expected = vectorizer.size + (encoder?.dim ?? 0);
    if (linear.nFeatures !== expected) {
      throw new ModelInputError(
        `model/tagger: the linear model has ${linear.nFeatures} features, the features give ${expected}`,
      );
    }
    this.encoder = encoder === null ? null : Object.freeze({ ...encoder });
    this.scores = new Float64Array(linear.nClasses);
  }

  /** The embedding block's settings (an encoder model's). */
  get embeddingBlock(): EmbeddingBlock {
    return { weight: this.args.encoder_weight, normalize: this.args.encoder_normalize };
  }

  /** Linear scores of one text (and its embedding, for an encoder model) into `this.scores`. */
  private score(text: string, embedding?: Float32Array): Float64Array {
    const scores = this.scores;
    const K = scores.length;
    const w = this.linear.weights;
    scores.set(this.linear.bias);
    const clean = cleanText(String(text), { lower: this.args.lower, stem: this.args.stem });
    const n = this.vectorizer.vectorize(clean);
    const indices = this.vectorizer.vectorIndices;
    const values = this.vectorizer.vectorValues;
    addLinearScores(w, K, indices, values, 0, n, scores);
    if (embedding !== undefined) {
      const offset = this.vectorizer.size;
      const scale = embeddingScale(embedding, this.embeddingBlock);
      for (let d = 0; d < embedding.length; d++) {
        const base = (offset + d) * K;
        const v = embedding[d]! * scale;
        for (let k = 0; k < K; k++) scores[k]! += w[base + k]! * v;
      }
    }
    return scores;
  }

  explain(text: string, top = 10, embedding?: Float32Array): LinearTagExplanation {
    const block =
      this.encoder === null ? undefined : checkEmbeddings([text], embedding && [embedding], this.encoder)[0];
    return explainLinear(this, text, top, block);
  }

  predict(texts: readonly string[], embeddings?: readonly Float32Array[]): Prediction[] {
    const thresholds = this.tagThresholds;
    const blocks = this.encoder === null ? undefined : checkEmbeddings(texts, embeddings, this.encoder);
    return texts.map((text, i) => {
      const p = this.score(text, blocks?.[i]);
      const best = argmax(p);
      probabilitiesInPlace(p, this.linear.link);
      const probabilities: Record<string, number> = {};
      for (let k = 0; k < p.length; k++) probabilities[this.tags[k]!] = p[k]!;
      if (thresholds !== null) {
        const predicted_tags = tagsOverThresholds(this.tags, thresholds, p);
        return { predicted_tag: predicted_tags[0] ?? OTHER_TAG, predicted_tags, probabilities };
      }
      const fallback = this.threshold !== null && p[best]! < this.threshold;
      const predicted_tag = fallback ? OTHER_TAG : this.tags[best]!;
      return { predicted_tag, predicted_tags: [predicted_tag], probabilities };
    });
  }
}

/** What one fit of features + linear classifier produces (see `fitTagger`). */
interface FittedTagger {
  tags: string[];
  vectorizer: TaggerVectorizer;
  linear: LinearModel;
  /** The validation rows as features and labels of this fit's vocabulary and tags. */
  valData: LabelledMatrix;
  history: EpochReport[];
}

/**
 * One fit: tags from `train`'s counts (`min_freq`, `accepted_tags`), a vectorizer fitted on `train`, and
 * `args.ensemble` seeded SGD members averaged into one linear model. Epoch losses go to `onEpoch`.
 */
function fitTagger(
  train: LabelledText[],
  validation: LabelledText[],
  args: TrainingArgs,
  seed: number,
  onEpoch: ((r: EpochReport) => void) | undefined,
  encoder: TrainEncoder | undefined,
  fixedTags?: readonly string[],
): FittedTagger {
  // A single-label row's tag list is its one tag, so one rule counts both kinds of rows.
  const tags = fixedTags
    ? [...fixedTags]
    : multiLabelModelTags(train.map(tagsOf), args.min_freq, args.accepted_tags);
  const clean = (rows: LabelledText[]): string[] =>
    rows.map((r) => cleanText(r.text, { lower: args.lower, stem: args.stem }));
  const trainTexts = clean(train);
  const vectorizer = fitVectorizer(trainTexts, args);
  const block: EmbeddingBlock = { weight: args.encoder_weight, normalize: args.encoder_normalize };
  const features = (rows: LabelledText[], texts: string[]) => {
    const x = vectorizer.transform(texts);
    if (encoder === undefined) return x;
    const embeddings = embeddingsOf(
      rows.map((r) => r.text),
      encoder.embeddings,
    );
    return appendEmbeddingBlock(x, checkEmbeddings(texts, embeddings, encoder.spec), encoder.spec.dim, block);
  };
  const labelled = (rows: LabelledText[], texts: string[]): LabelledMatrix => ({
    x: features(rows, texts),
    ...labelArrays(rows, tags, args.multi_label),
  });
  const trainData = labelled(train, trainTexts);
  const valData = labelled(validation, clean(validation));
  const trainLinear = args.classifier === 'ovr' ? trainOvrSgd : trainSoftmaxSgd;
  const seeds = ensembleSeeds(seed, args.ensemble);
  const members: LinearModel[] = [];
  // Per-epoch losses of the members trained so far; the last member reports their means (see EpochReport).
  const trainLosses = new Float64Array(args.num_epochs);
  const valLosses = new Float64Array(args.num_epochs);
  const history: EpochReport[] = [];
  seeds.forEach((memberSeed, m) => {
    const rng = createRng(memberSeed);
    const order = args.oversample
      ? oversampledOrder(trainData.y, tags.length, rng)
      : Int32Array.from(trainData.y.keys());
    const last = m === seeds.length - 1;
    // Counted over the samples the SGD visits, as sklearn counts the rows given to fit (see args.ts).
    const classWeight =
      args.class_weight !== 'balanced'
        ? null
        : trainData.labels
          ? balancedLabelWeights(trainData.labels, order, tags.length)
          : balancedClassWeights(
              Int32Array.from(order, (i) => trainData.y[i]!),
              tags.length,
            );
    const member = trainLinear(
      trainData,
      order,
      tags.length,
      {
        alpha: args.alpha,
        learningRate: args.learning_rate,
        powerT: args.power_t,
        schedule: args.lr_schedule,
        epochs: args.num_epochs,
        shuffle: args.shuffle,
        average: args.average,
        loss: args.loss,
        classWeight,
        rng,
        onEpoch: (epoch, trainLoss, valLoss) => {
          trainLosses[epoch - 1]! += trainLoss;
          valLosses[epoch - 1]! += valLoss;
          if (!last) return;
          const report = {
            epoch,
            epochs: args.num_epochs,
            trainLoss: seeds.length === 1 ? trainLoss : trainLosses[epoch - 1]! / seeds.length,
            valLoss: seeds.length === 1 ? valLoss : valLosses[epoch - 1]! / seeds.length,
          };
          history.push(report);
          onEpoch?.(report);
        },
      },
      valData,
    );
    members.push(member);
  });
  return { tags, vectorizer, linear: averageLinearModels(members), valData, history };
}

/**
 * Trains a tagger. A first fit on `train` is scored on `validation`: its per-epoch validation loss is the
 * history and its validation predictions choose the threshold (`args.threshold`). With `args.refit` (and a
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
  // The dual coordinate descent, naive Bayes and soft-vote classifiers have their own trainer.
  if ((args.encoder !== null) !== (options.encoder !== undefined)) {
    throw new ModelInputError(
      args.encoder === null
        ? 'model/tagger: embeddings were given, but the args name no encoder'
        : `model/tagger: the args name the encoder ${args.encoder}, but no embeddings were given; compute them with src/encoder first`,
    );
  }
  if (!isSgdClassifier(args.classifier)) {
    // parseTrainingArgs refuses an encoder with these; args built by hand are checked here as well.
    if (args.encoder !== null) {
      throw new ModelInputError(
        `model/tagger: the encoder needs classifier ovr or softmax (SGD); ${args.classifier} does not take embeddings`,
      );
    }
    return trainVoteTagger(train, validation, args, options);
  }
  const first = fitTagger(train, validation, args, options.seed, options.onEpoch, options.encoder);
  if (args.multi_label) return finishMultiLabel(first, train, validation, args, options);
  const { tags, linear, valData } = first;
  const p = new Float64Array(tags.length);
  const top = new Float64Array(validation.length);
  const predicted: string[] = [];
  for (let r = 0; r < validation.length; r++) {
    rowScores(linear, valData.x, r, p);
    const best = argmax(p);
    probabilitiesInPlace(p, linear.link);
    top[r] = p[best]!;
    predicted.push(tags[best]!);
  }
  const yVal = Array.from(valData.y, (k) => tags[k]!);
  const threshold = chooseThreshold(args.threshold, top, predicted, yVal);
  const validationF1 =
    validation.length === 0 ? Number.NaN : f1WithThreshold(top, predicted, yVal, threshold);
  const final =
    args.refit && validation.length > 0
      ? fitTagger([...train, ...validation], [], args, options.seed, options.onRefitEpoch, options.encoder)
      : first;
  const spec = options.encoder?.spec ?? null;
  return {
    model: new LinearTagModel(final.tags, args, threshold, final.vectorizer, final.linear, null, spec),
    history: first.history,
    threshold,
    validationF1,
    tagThresholds: null,
  };
}

/** trainTagger's multi-label second half: per-tag thresholds on the validation split, then the refit. */
function finishMultiLabel(
  first: FittedTagger,
  train: LabelledText[],
  validation: LabelledText[],
  args: TrainingArgs,
  options: TrainOptions,
): TrainedTagger {
  const { tags, linear, valData } = first;
  const K = tags.length;
  const probabilities = validation.map((_, r) => {
    const p = new Float64Array(K);
    rowScores(linear, valData.x, r, p);
    probabilitiesInPlace(p, linear.link);
    return p;
  });
  const labels = valData.labels!;
  const tagThresholds = chooseTagThresholds(args.threshold, probabilities, labels, K);
  const setsOf = (pick: (r: number, k: number) => boolean): string[][] =>
    probabilities.map((_, r) => tags.filter((_, k) => pick(r, k)));
  const validationF1 =
    validation.length === 0
      ? Number.NaN
      : multiLabelMetrics(
          setsOf((r, k) => labels[r * K + k] === 1),
          setsOf((r, k) => probabilities[r]![k]! >= tagThresholds[k]!),
        ).averages.weighted.f1;
  // The refit keeps the validated fit's tags: counted over more rows, min_freq could keep a tag whose
  // threshold was never chosen, and `other` would change meaning under its tuned threshold.
  const final =
    args.refit && validation.length > 0
      ? fitTagger(
          [...train, ...validation],
          [],
          args,
          options.seed,
          options.onRefitEpoch,
          options.encoder,
          tags,
        )
      : first;
  return {
    model: new LinearTagModel(
      final.tags,
      args,
      null,
      final.vectorizer,
      final.linear,
      tagThresholds,
      options.encoder?.spec ?? null,
    ),
    history: first.history,
    threshold: null,
    validationF1,
    tagThresholds,
  };
}

/**
 * A model whose predictions take each text's embedding from `lookup` (an encoder model scored where the
 * embeddings were computed beforehand: evaluation, behavioural tests); a TF-IDF model is returned as it is.
 */
export function bindEmbeddings(model: TagModel, lookup: EmbeddingLookup): TagModel {
  if (!model.encoder) return model;
  return {
    tags: model.tags,
    args: model.args,
    threshold: model.threshold,
    tagThresholds: model.tagThresholds,
    encoder: model.encoder,
    predict: (texts) => model.predict(texts, embeddingsOf(texts, lookup)),
    explain: (text, top) => model.explain(text, top, embeddingsOf([text], lookup)[0]),
  };
}
