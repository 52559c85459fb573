/**
 * Training of the SGD classifiers' model (sgd-model.ts): tags from the training rows' counts (`min_freq`,
 * `accepted_tags`), a vectorizer fitted on them (and the embedding block of an encoder model), seeded
 * oversampling and class weights, `ensemble` seeded SGD fits averaged into one linear model
 * (sgd-solver.ts; `ovr`'s classes on the training's threads, ovr-sgd.ts), a validated fit whose validation predictions choose the threshold(s), then the refit
 * on train + validation.
 */
import { multiLabelMetrics } from '../../evaluation/metrics.js';
import { multiLabelModelTags } from '../../labels.js';
import { sharedCopy, spreads } from '../../parallel.js';
import { createRng, randomInt } from '../../rng.js';
import {
  type EpochReport,
  type LabelledText,
  type ThresholdChoice,
  type TrainedTagger,
  type TrainOptions,
  tagsOf,
} from '../../tag-model.js';
import {
  appendEmbeddingBlock,
  checkEmbeddings,
  type EmbeddingBlock,
  embeddingsOf,
} from '../../text/embeddings.js';
import { fitVectorizer, type TaggerVectorizer } from '../../text/features.js';
import { cleanText } from '../../text/preprocess.js';
import type { TrainingArgs } from '../../training-args.js';
import { argmax, probabilitiesInPlace } from '../links.js';
import { chooseTagThresholds, chooseThreshold, f1WithThreshold } from '../thresholds.js';
import {
  balancedClassWeights,
  balancedLabelWeights,
  labelArrays,
  oversampledOrder,
  oversampling,
} from '../training-rows.js';
import { trainOvrSgd } from './ovr-sgd.js';
import { SgdTagModel } from './sgd-model.js';
import {
  averageLinearModels,
  type LabelledMatrix,
  type LinearModel,
  rowScores,
  trainSoftmaxSgd,
} from './sgd-solver.js';

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
  options: Pick<TrainOptions, 'encoder' | 'parallel'>,
  fixedTags?: readonly string[],
): FittedTagger {
  const { encoder, parallel } = options;
  // A single-label row's tag list is its one tag, so one rule counts both kinds of rows.
  const tags = fixedTags
    ? [...fixedTags]
    : multiLabelModelTags(train.map(tagsOf), args.min_freq, args.accepted_tags);
  const clean = (rows: LabelledText[]): string[] => rows.map((r) => cleanText(r.text, args));
  const trainTexts = clean(train);
  const vectorizer = fitVectorizer(trainTexts, args);
  const block: EmbeddingBlock = { weight: args.encoder_weight, normalize: args.encoder_normalize };
  // In shared memory when ovr's classes are trained on threads (ovr-sgd.ts), so no thread copies the rows.
  const shared = args.classifier === 'ovr' && spreads(parallel);
  const features = (rows: LabelledText[], texts: string[]) => {
    if (encoder === undefined) return vectorizer.transform(texts, shared);
    const x = vectorizer.transform(texts);
    const embeddings = embeddingsOf(
      rows.map((r) => r.text),
      encoder.embeddings,
    );
    const checked = checkEmbeddings(texts, embeddings, encoder.spec);
    return appendEmbeddingBlock(x, checked, encoder.spec.dim, block, shared);
  };
  const labelled = (rows: LabelledText[], texts: string[]): LabelledMatrix => {
    const { y, labels } = labelArrays(rows, tags, args.multi_label);
    return {
      x: features(rows, texts),
      y: sharedCopy(y, shared),
      ...(labels === undefined ? {} : { labels: sharedCopy(labels, shared) }),
    };
  };
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
    // Balanced class weights are counted over the rows visited, so they go with repeated rows only.
    const { order, sampleWeight } = !args.oversample
      ? { order: Int32Array.from(trainData.y.keys()), sampleWeight: null }
      : args.class_weight === 'balanced'
        ? { order: oversampledOrder(trainData.y, tags.length, rng), sampleWeight: null }
        : oversampling(trainData.y, tags.length, rng);
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
        sampleWeight,
        rng,
        parallel,
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
 * Trains an SGD model as trainTagger describes: a first fit on `train` scored on `validation` (its
 * per-epoch validation loss is the history, its validation predictions choose the threshold), then with
 * `args.refit` (and a non-empty validation split) the same fit on train + validation, keeping that threshold.
 */
export function trainSgdTagger(
  train: LabelledText[],
  validation: LabelledText[],
  args: TrainingArgs,
  options: TrainOptions,
): TrainedTagger {
  const first = fitTagger(train, validation, args, options.seed, options.onEpoch, options, options.tags);
  if (args.multi_label) return finishMultiLabel(first, train, validation, args, options);
  const { tags, linear, valData } = first;
  const top = new Float64Array(validation.length);
  const predicted: string[] = [];
  const probabilities = validation.map((_, r) => {
    const p = new Float64Array(tags.length);
    rowScores(linear, valData.x, r, p);
    const best = argmax(p);
    probabilitiesInPlace(p, linear.link);
    top[r] = p[best]!;
    predicted.push(tags[best]!);
    return p;
  });
  const yVal = Array.from(valData.y, (k) => tags[k]!);
  let threshold = chooseThreshold(args.threshold, top, predicted, yVal);
  const validationF1 =
    validation.length === 0 ? Number.NaN : f1WithThreshold(top, predicted, yVal, threshold);
  const spec = options.encoder?.spec ?? null;
  let modelArgs = args;
  const finish = (fit: FittedTagger): TrainedTagger => ({
    model: new SgdTagModel(fit.tags, modelArgs, threshold, fit.vectorizer, fit.linear, null, spec),
    history: first.history,
    threshold,
    validationF1,
    tagThresholds: null,
  });
  const all = [...train, ...validation];
  const refit = (chosen?: ThresholdChoice): TrainedTagger => {
    if (chosen !== undefined) {
      threshold = chosen.threshold;
      modelArgs = { ...args, threshold: chosen.mode };
    }
    return finish(fitTagger(all, [], args, options.seed, options.onRefitEpoch, options, options.tags));
  };
  return deferrable(first, validation, args, options, probabilities, finish, refit);
}

/**
 * The validated fit as it is (no refit asked, or no validation rows), the refit at once, or (with
 * `options.deferRefit`) the validated fit with its validation probabilities and the refit to call later.
 */
function deferrable(
  first: FittedTagger,
  validation: readonly LabelledText[],
  args: TrainingArgs,
  options: TrainOptions,
  probabilities: readonly Float64Array[],
  finish: (fit: FittedTagger) => TrainedTagger,
  refit: (threshold?: ThresholdChoice) => TrainedTagger,
): TrainedTagger {
  if (!args.refit || validation.length === 0) {
    return options.deferRefit ? { ...finish(first), validationProbabilities: probabilities } : finish(first);
  }
  if (options.deferRefit) return { ...finish(first), validationProbabilities: probabilities, refit };
  return refit();
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
  const finish = (fit: FittedTagger): TrainedTagger => ({
    model: new SgdTagModel(
      fit.tags,
      args,
      null,
      fit.vectorizer,
      fit.linear,
      tagThresholds,
      options.encoder?.spec ?? null,
    ),
    history: first.history,
    threshold: null,
    validationF1,
    tagThresholds,
  });
  // The refit keeps the validated fit's tags: counted over more rows, min_freq could keep a tag whose
  // threshold was never chosen, and `other` would change meaning under its tuned threshold.
  const all = [...train, ...validation];
  const refit = (): TrainedTagger =>
    finish(fitTagger(all, [], args, options.seed, options.onRefitEpoch, options, tags));
  return deferrable(first, validation, args, options, probabilities, finish, refit);
}
