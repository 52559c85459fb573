/**
 * Training of the `fasttext` model in `trainTagger`'s flow: tags from the training rows (`min_freq`,
 * `accepted_tags`), a dictionary of the words, the features of every row computed once, only the input rows
 * those features use allocated (so memory grows with the data, not with `ft_buckets`), then `ft_epochs`
 * passes of SGD over the training rows (fasttext-sgd.ts), each in a new seeded order, with the learning
 * rate decreasing linearly to 0: the validated fit, whose validation predictions choose the threshold(s).
 *
 * The refit (`refit`) continues that model on train + validation instead of training a second one from
 * scratch: `refitEpochs(args)` more passes (a fifth of `ft_epochs`) over every row, the learning rate
 * starting at a fifth of `ft_lr` and decreasing to 0 — so the served model learns from the validation rows
 * at a quarter of the cost of a second training (rule fixed when the kind was built; what was measured
 * since is in docs/model-decisions.md, "`fasttext`: a new row order every epoch"). The dictionary and the
 * input rows cover the validation rows from the start; the validated fit never trains the rows only they
 * use, and its predictions leave them out like unknown words.
 */
import { multiLabelMetrics } from '../../evaluation/metrics.js';
import { multiLabelModelTags } from '../../labels.js';
import { float32Array, float64Array, type ParallelRunner, sharedCopy, spreads } from '../../parallel.js';
import { createRng, shuffleInPlace } from '../../rng.js';
import {
  type EpochReport,
  type LabelledText,
  type ThresholdChoice,
  type TrainedTagger,
  type TrainOptions,
  tagsOf,
} from '../../tag-model.js';
import { cleanText } from '../../text/preprocess.js';
import type { TrainingArgs } from '../../training-args.js';
import { chooseTagThresholds, chooseThreshold, f1WithThreshold } from '../thresholds.js';
import {
  balancedClassWeights,
  balancedLabelWeights,
  labelArrays,
  oversampledOrder,
} from '../training-rows.js';
import { buildDictionary, FastTextFeatures, tokensOf } from './fasttext-features.js';
import { type FastTextOutput, type FastTextParts, FastTextTagModel } from './fasttext-model.js';
import type { FastTextLossArg } from './fasttext-params.js';
import {
  type FastTextExamples,
  type FastTextMatrices,
  type FastTextShardWork,
  sgdScratch,
  trainExamples,
} from './fasttext-sgd.js';
import { huffmanTree } from './fasttext-tree.js';

/** `ft_loss: auto` takes the softmax up to this many tags and the hierarchical softmax above. */
export const AUTO_HS_ABOVE_TAGS = 100;
/** The refit's passes and starting learning rate, as shares of `ft_epochs` and `ft_lr`. */
const REFIT_EPOCH_SHARE = 0.2;
const REFIT_LR_SHARE = 0.2;
/** The validation loss each epoch reports is taken on at most this many validation rows (a cheap curve). */
const VALIDATION_LOSS_ROWS = 2000;

/** The output layer a training uses: one-vs-all for multi-label, else the loss the args name (auto: by tag count). */
export function outputOf(args: Pick<TrainingArgs, 'multi_label' | 'ft_loss'>, tags: number): FastTextOutput {
  if (args.multi_label) return 'ova';
  const loss: FastTextLossArg = args.ft_loss;
  if (loss === 'auto') return tags > AUTO_HS_ABOVE_TAGS ? 'hs' : 'softmax';
  return loss;
}

/** The passes of a refit over train + validation (fasttext-family.ts's progress counts them). */
export const refitEpochs = (args: Pick<TrainingArgs, 'ft_epochs'>): number =>
  Math.max(1, Math.round(args.ft_epochs * REFIT_EPOCH_SHARE));

/** The training and validation rows as the SGD sees them, and the matrices it trains. */
interface Prepared {
  tags: string[];
  features: FastTextFeatures;
  examples: FastTextExamples;
  /** Rows [0, trainRows) of `examples` are the training rows, the rest the validation rows. */
  trainRows: number;
  /** Every feature row → its input row; `trainRowOf` only for the rows the training rows use. */
  rowOf: Int32Array;
  trainRowOf: Int32Array;
  matrices: FastTextMatrices;
  tagCounts: number[] | null;
}

function prepare(
  train: readonly LabelledText[],
  validation: readonly LabelledText[],
  args: TrainingArgs,
  rng: () => number,
  shared: boolean,
  fixedTags: readonly string[] | undefined,
): Prepared {
  const tags = fixedTags
    ? [...fixedTags]
    : multiLabelModelTags(train.map(tagsOf), args.min_freq, args.accepted_tags);
  const K = tags.length;
  const rows = [...train, ...validation];
  const texts = rows.map((r) => cleanText(r.text, args));
  const features = new FastTextFeatures(buildDictionary(texts, args.ft_min_count), {
    wordNgrams: args.ft_word_ngrams,
    minn: args.ft_minn,
    maxn: args.ft_maxn,
    buckets: args.ft_buckets,
  });
  // Every row's input rows, renumbered densely in order of first use (the training rows' first): the
  // matrix holds those only.
  const rowOf = new Int32Array(features.inputRows).fill(-1);
  let used = 0;
  let trainUsed = 0;
  const indptr = new Int32Array(rows.length + 1);
  const chunks: Int32Array[] = [];
  const tokens = new Int32Array(rows.length);
  texts.forEach((text, r) => {
    if (r === train.length) trainUsed = used;
    const n = features.rowsOf(text);
    const ids = features.rowIndices.slice(0, n);
    for (let i = 0; i < n; i++) {
      const row = ids[i]!;
      if (rowOf[row] === -1) rowOf[row] = used++;
      ids[i] = rowOf[row]!;
    }
    chunks.push(ids);
    indptr[r + 1] = indptr[r]! + n;
    tokens[r] = tokensOf(text).length;
  });
  if (validation.length === 0) trainUsed = used;
  const ids = new Int32Array(indptr[rows.length]!);
  chunks.forEach((chunk, r) => {
    ids.set(chunk, indptr[r]!);
  });
  const trainRowOf = rowOf.map((row) => (row < trainUsed ? row : -1));
  const { y, labels } = labelArrays(rows, tags, args.multi_label);
  const dim = args.ft_dim;
  const loss = outputOf(args, K);
  const counts = new Float64Array(K);
  for (let r = 0; r < train.length; r++) counts[y[r]!]!++;
  // fastText's initialisation: input rows uniform in ±1/dim, the output layer zero.
  // In shared memory when threads train it together (Hogwild!: they update the same rows without locks).
  const input = float32Array(used * dim, shared);
  for (let i = 0; i < input.length; i++) input[i] = (rng() * 2 - 1) / dim;
  const examples: FastTextExamples = {
    indptr: sharedCopy(indptr, shared),
    ids: sharedCopy(ids, shared),
    tokens: sharedCopy(tokens, shared),
    y: sharedCopy(y, shared),
    labels: labels === undefined ? null : sharedCopy(labels, shared),
    nClasses: K,
  };
  return {
    tags,
    features,
    examples,
    trainRows: train.length,
    rowOf,
    trainRowOf,
    matrices: {
      dim,
      input,
      output: float32Array((loss === 'hs' ? K - 1 : K) * dim, shared),
      loss,
      tree: loss === 'hs' ? huffmanTree(counts) : null,
    },
    tagCounts: loss === 'hs' ? [...counts] : null,
  };
}

/** The model over the prepared matrices, reading the input rows through `rowOf`. */
function modelOf(
  p: Prepared,
  args: TrainingArgs,
  rowOf: Int32Array,
  threshold: number | null,
  tagThresholds: number[] | null,
) {
  const { dim, input, output, loss, tree } = p.matrices;
  const parts: FastTextParts = {
    features: p.features,
    dim,
    input,
    rowOf,
    output,
    loss,
    tree,
    tagCounts: p.tagCounts,
  };
  return new FastTextTagModel(p.tags, args, threshold, parts, tagThresholds);
}

/**
 * `epochs` passes of SGD over the rows [from, to) of the examples (oversampled when the args say so), the
 * learning rate going from `lr` to 0, each epoch reported with its training loss; spread over the
 * runner's threads when there is one (each trains a slice of every epoch).
 */
function runEpochs(
  p: Prepared,
  args: TrainingArgs,
  rows: readonly [number, number],
  epochs: number,
  lr: number,
  rng: () => number,
  runner: ParallelRunner | undefined,
  report: ((epoch: number, trainLoss: number) => void) | undefined,
): void {
  const K = p.tags.length;
  const { y, labels, tokens } = p.examples;
  const [from, to] = rows;
  const span = Int32Array.from({ length: to - from }, (_, i) => y[from + i]!);
  const order = args.oversample ? oversampledOrder(span, K, rng) : Int32Array.from(span.keys());
  for (let i = 0; i < order.length; i++) order[i]! += from;
  const classWeight =
    args.class_weight !== 'balanced'
      ? null
      : labels
        ? balancedLabelWeights(labels, order, K)
        : balancedClassWeights(
            Int32Array.from(order, (i) => y[i]!),
            K,
          );
  let epochTokens = 0;
  for (const r of order) epochTokens += tokens[r]!;
  const schedule = { lr, totalTokens: Math.max(1, epochTokens * epochs), classWeight };
  const scratch = sgdScratch(args.ft_dim, K);
  const shards = spreads(runner) ? runner.threads : 1;
  const work: FastTextShardWork = {
    examples: p.examples,
    matrices: p.matrices,
    order: sharedCopy(order, shards > 1),
    schedule,
    epochStart: 0,
    shards,
    losses: float64Array(shards, shards > 1),
  };
  for (let epoch = 1; epoch <= epochs; epoch++) {
    // A new order every epoch, drawn from the seeded generator (fastText reads its file in one order every
    // epoch; at 200k rows x 500 tags a new order each epoch scored higher: docs/model-decisions.md).
    shuffleInPlace(work.order, rng);
    let loss: number;
    if (shards > 1) {
      runner!.run('fasttext-shard', { ...work, epochStart: (epoch - 1) * epochTokens }, shards);
      loss = work.losses.reduce((sum, l) => sum + l, 0);
    } else {
      loss = trainExamples(
        p.examples,
        p.matrices,
        work.order,
        0,
        order.length,
        schedule,
        (epoch - 1) * epochTokens,
        scratch,
      ).loss;
    }
    report?.(epoch, loss / Math.max(1, order.length));
  }
}

/** Mean log loss of the model on rows (multi-label: summed per-tag binary cross-entropies); NaN without rows. */
function meanLogLoss(
  model: FastTextTagModel,
  rows: readonly LabelledText[],
  labels: ReturnType<typeof labelArrays>,
): number {
  if (rows.length === 0) return Number.NaN;
  const K = model.tags.length;
  const p = new Float64Array(K);
  let total = 0;
  rows.forEach((row, r) => {
    if (labels.labels === undefined) {
      total -= Math.log(Math.max(model.probabilityOf(row.text, labels.y[r]!), 1e-15));
      return;
    }
    model.probabilitiesInto(row.text, p);
    for (let k = 0; k < K; k++) {
      total -= Math.log(Math.max(labels.labels[r * K + k] === 1 ? p[k]! : 1 - p[k]!, 1e-15));
    }
  });
  return total / rows.length;
}

/** Trains a `fasttext` model as trainTagger describes (validated fit → threshold(s) → refit). */
export function trainFastTextTagger(
  train: LabelledText[],
  validation: LabelledText[],
  args: TrainingArgs,
  options: TrainOptions,
): TrainedTagger {
  const rng = createRng(options.seed);
  const p = prepare(train, validation, args, rng, spreads(options.parallel), options.tags);
  const { tags } = p;
  const K = tags.length;
  const validated = modelOf(p, args, p.trainRowOf, null, args.multi_label ? tags.map(() => 0.5) : null);
  const lossRows = validation.slice(0, VALIDATION_LOSS_ROWS);
  const lossLabels = labelArrays(lossRows, tags, args.multi_label);
  const history: EpochReport[] = [];
  runEpochs(
    p,
    args,
    [0, p.trainRows],
    args.ft_epochs,
    args.ft_lr,
    rng,
    options.parallel,
    (epoch, trainLoss) => {
      const report = {
        epoch,
        epochs: args.ft_epochs,
        trainLoss,
        valLoss: meanLogLoss(validated, lossRows, lossLabels),
      };
      history.push(report);
      options.onEpoch?.(report);
    },
  );
  const probabilities = validation.map((row) => {
    const out = new Float64Array(K);
    validated.probabilitiesInto(row.text, out);
    return out;
  });
  const valLabels = labelArrays(validation, tags, args.multi_label);
  let threshold: number | null = null;
  let tagThresholds: number[] | null = null;
  let validationF1 = Number.NaN;
  if (args.multi_label) {
    tagThresholds = chooseTagThresholds(args.threshold, probabilities, valLabels.labels!, K);
    const setsOf = (pick: (r: number, k: number) => boolean): string[][] =>
      probabilities.map((_, r) => tags.filter((_, k) => pick(r, k)));
    if (validation.length > 0) {
      validationF1 = multiLabelMetrics(
        setsOf((r, k) => valLabels.labels![r * K + k] === 1),
        setsOf((r, k) => probabilities[r]![k]! >= tagThresholds![k]!),
      ).averages.weighted.f1;
    }
  } else {
    const top = new Float64Array(validation.length);
    const predicted = probabilities.map((q, r) => {
      let best = 0;
      for (let k = 1; k < K; k++) if (q[k]! > q[best]!) best = k;
      top[r] = q[best]!;
      return tags[best]!;
    });
    const yVal = Array.from(valLabels.y, (k) => tags[k]!);
    threshold = chooseThreshold(args.threshold, top, predicted, yVal);
    if (validation.length > 0) validationF1 = f1WithThreshold(top, predicted, yVal, threshold);
  }
  let modelArgs = args;
  const finish = (refitted: boolean): TrainedTagger => ({
    model: modelOf(p, modelArgs, refitted ? p.rowOf : p.trainRowOf, threshold, tagThresholds),
    history,
    threshold,
    validationF1,
    tagThresholds,
  });
  if (!args.refit || validation.length === 0) {
    return options.deferRefit ? { ...finish(false), validationProbabilities: probabilities } : finish(false);
  }
  // The refit goes on training the validated fit's weights in place: a deferred one's validated model
  // must be dropped before it is called.
  const refit = (chosen?: ThresholdChoice): TrainedTagger => {
    if (chosen !== undefined && !args.multi_label) {
      threshold = chosen.threshold;
      modelArgs = { ...args, threshold: chosen.mode };
    }
    const epochs = refitEpochs(args);
    runEpochs(
      p,
      args,
      [0, p.examples.tokens.length],
      epochs,
      args.ft_lr * REFIT_LR_SHARE,
      rng,
      options.parallel,
      (epoch, trainLoss) => options.onRefitEpoch?.({ epoch, epochs, trainLoss, valLoss: Number.NaN }),
    );
    return finish(true);
  };
  if (options.deferRefit) return { ...finish(false), validationProbabilities: probabilities, refit };
  return refit();
}
