/**
 * Training of the member classifiers' model (member-model.ts): the same flow as the SGD model's
 * (../sgd/train-sgd.ts) — tags from the training rows, a vectorizer fitted on them, oversampling and class
 * weights, a validated fit whose validation probabilities choose the threshold(s), then the refit on train
 * + validation — with each member trained by train-member.ts on features computed once. The solvers are
 * exact, so there are no epochs: the history is one report, the fitted model's mean log loss on the
 * training and validation rows.
 */

import { ModelInputError } from '../../errors.js';
import { multiLabelMetrics } from '../../evaluation/metrics.js';
import { multiLabelModelTags } from '../../labels.js';
import { createRng, randomInt } from '../../rng.js';
import {
  type EpochReport,
  type LabelledText,
  type MemberReport,
  type TrainedTagger,
  type TrainOptions,
  tagsOf,
} from '../../tag-model.js';
import { fitVectorizer } from '../../text/features.js';
import { cleanText } from '../../text/preprocess.js';
import type { CsrMatrix } from '../../text/tfidf.js';
import type { TrainingArgs } from '../../training-args.js';
import { chooseTagThresholds, chooseThreshold, f1WithThreshold } from '../thresholds.js';
import {
  balancedClassWeights,
  balancedLabelWeights,
  labelArrays,
  oversampledOrder,
} from '../training-rows.js';
import { combinedProbabilities } from './combine.js';
import type { MemberTrainingData } from './member.js';
import { type MemberSpec, memberParams } from './member-args.js';
import { MemberTagModel } from './member-model.js';
import { isMemberClassifier } from './member-table.js';
import { type Member, trainMember } from './train-member.js';

/** The member specs of the args: a soft vote's members, or the classifier alone as the one member. */
export function memberSpecs(args: TrainingArgs): MemberSpec[] {
  if (args.members !== null) return args.members.map((m) => memberParams(m, args));
  if (!isMemberClassifier(args.classifier)) {
    throw new ModelInputError(`model/members: ${args.classifier} is not a member classifier`);
  }
  return [memberParams({ classifier: args.classifier, weight: 1 }, args)];
}

/** One fit: the model and the features of the rows it was fitted on and validated with. */
interface FittedMembers {
  model: MemberTagModel;
  train: { x: CsrMatrix; labels: ReturnType<typeof labelArrays> };
  validation: { x: CsrMatrix; labels: ReturnType<typeof labelArrays> };
}

function fitMembers(
  train: readonly LabelledText[],
  validation: readonly LabelledText[],
  args: TrainingArgs,
  seed: number,
  progress: { fit: MemberReport['fit']; onMember: TrainOptions['onMember'] },
  fixedTags?: readonly string[],
): FittedMembers {
  const tags = fixedTags
    ? [...fixedTags]
    : multiLabelModelTags(train.map(tagsOf), args.min_freq, args.accepted_tags);
  const clean = (rows: readonly LabelledText[]): string[] =>
    rows.map((r) => cleanText(r.text, { lower: args.lower, stem: args.stem }));
  const trainTexts = clean(train);
  const vectorizer = fitVectorizer(trainTexts, args);
  const x = vectorizer.transform(trainTexts);
  const labels = labelArrays(train, tags, args.multi_label);
  const K = tags.length;
  const rng = createRng(seed);
  const order = args.oversample ? oversampledOrder(labels.y, K, rng) : Int32Array.from(labels.y.keys());
  const rowWeight = new Float64Array(train.length);
  for (const r of order) rowWeight[r]! += 1;
  // Counted over the rows as visited (oversampling repeats), as the SGD tagger and sklearn count them.
  const classWeight =
    args.class_weight !== 'balanced'
      ? null
      : labels.labels
        ? balancedLabelWeights(labels.labels, order, K)
        : balancedClassWeights(
            Int32Array.from(order, (i) => labels.y[i]!),
            K,
          );
  const data = trainedClassData(tags, x, labels, rowWeight, classWeight);
  const specs = memberSpecs(args);
  const members: Member[] = specs.map((spec, index) => {
    const started = performance.now();
    const member = trainMember(spec, data.data, {
      seed: randomInt(rng, 0x7fffffff),
      calibrationFolds: args.calibration_folds,
    });
    progress.onMember?.({
      fit: progress.fit,
      member: index + 1,
      members: specs.length,
      classifier: spec.classifier,
      fits: spec.calibration === 'none' ? 1 : args.calibration_folds + 1,
      seconds: (performance.now() - started) / 1000,
    });
    return member;
  });
  const model = new MemberTagModel(
    tags,
    args,
    null,
    vectorizer,
    members,
    data.classes,
    args.multi_label ? tags.map(() => 0.5) : null,
  );
  return {
    model,
    train: { x, labels },
    validation: {
      x: vectorizer.transform(clean(validation)),
      labels: labelArrays(validation, tags, args.multi_label),
    },
  };
}

/**
 * The member training rows over the tags that have training rows (a tag without any is left out of the
 * members and gets probability 0), with each row's class remapped to them.
 */
function trainedClassData(
  tags: readonly string[],
  x: CsrMatrix,
  labels: ReturnType<typeof labelArrays>,
  rowWeight: Float64Array,
  classWeight: Float64Array | null,
): { data: MemberTrainingData; classes: Int32Array } {
  const K = tags.length;
  const n = x.nRows;
  const positives = new Float64Array(K);
  for (let r = 0; r < n; r++) {
    if (labels.labels === undefined) positives[labels.y[r]!]!++;
    else for (let k = 0; k < K; k++) positives[k]! += labels.labels[r * K + k]!;
  }
  const classes = Int32Array.from(tags.keys()).filter((k) => positives[k]! > 0);
  if (labels.labels !== undefined) {
    const everywhere = [...classes].find((k) => positives[k] === n);
    if (everywhere !== undefined) {
      throw new ModelInputError(
        `model/members: tag "${tags[everywhere]}" is on every training row, so there is nothing to tell it apart from; drop it (accepted_tags) or add rows without it`,
      );
    }
  }
  const column = new Int32Array(K).fill(-1);
  classes.forEach((k, c) => {
    column[k] = c;
  });
  const Kc = classes.length;
  let memberLabels: Uint8Array | undefined;
  if (labels.labels !== undefined) {
    const source = labels.labels;
    memberLabels = new Uint8Array(n * Kc);
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < Kc; c++) memberLabels[r * Kc + c] = source[r * K + classes[c]!]!;
    }
  }
  return {
    classes,
    data: {
      x,
      rowWeight,
      y: Int32Array.from(labels.y, (k) => column[k]!),
      ...(memberLabels === undefined ? {} : { labels: memberLabels }),
      nClasses: Kc,
      tagNames: Array.from(classes, (k) => tags[k]!),
      classWeight: classWeight === null ? null : Float64Array.from(classes, (k) => classWeight[k]!),
    },
  };
}

/** The model's probabilities of every row of `x` (tags in model order). */
function rowProbabilities(model: MemberTagModel, x: CsrMatrix): Float64Array[] {
  const scratch = new Float64Array(model.classes.length);
  return Array.from({ length: x.nRows }, (_, r) => {
    const out = new Float64Array(model.tags.length);
    combinedProbabilities(model, x.indices, x.data, x.indptr[r]!, x.indptr[r + 1]!, out, scratch);
    return out;
  });
}

/** Mean log loss (multi-label: summed per-tag binary cross-entropies); NaN without rows. */
function meanLogLoss(probabilities: readonly Float64Array[], labels: ReturnType<typeof labelArrays>): number {
  let total = 0;
  probabilities.forEach((p, r) => {
    if (labels.labels === undefined) {
      total -= Math.log(Math.max(p[labels.y[r]!]!, 1e-15));
      return;
    }
    for (let k = 0; k < p.length; k++) {
      total -= Math.log(Math.max(labels.labels[r * p.length + k] === 1 ? p[k]! : 1 - p[k]!, 1e-15));
    }
  });
  return total / probabilities.length;
}

/**
 * Trains the member classifiers' model as trainTagger trains the SGD one: a validated fit on `train`
 * chooses the threshold(s) on `validation`; with `args.refit` the model is fitted again on both.
 */
export function trainMemberTagger(
  train: LabelledText[],
  validation: LabelledText[],
  args: TrainingArgs,
  options: TrainOptions,
): TrainedTagger {
  const first = fitMembers(train, validation, args, options.seed, {
    fit: 'validated',
    onMember: options.onMember,
  });
  const { tags } = first.model;
  const valProbabilities = rowProbabilities(first.model, first.validation.x);
  const report: EpochReport = {
    epoch: 1,
    epochs: 1,
    trainLoss: meanLogLoss(rowProbabilities(first.model, first.train.x), first.train.labels),
    valLoss: validation.length === 0 ? Number.NaN : meanLogLoss(valProbabilities, first.validation.labels),
  };
  options.onEpoch?.(report);
  let threshold: number | null = null;
  let tagThresholds: number[] | null = null;
  let validationF1 = Number.NaN;
  const valLabels = first.validation.labels;
  if (args.multi_label) {
    const K = tags.length;
    tagThresholds = chooseTagThresholds(args.threshold, valProbabilities, valLabels.labels!, K);
    const setsOf = (pick: (r: number, k: number) => boolean): string[][] =>
      valProbabilities.map((_, r) => tags.filter((_, k) => pick(r, k)));
    if (validation.length > 0) {
      validationF1 = multiLabelMetrics(
        setsOf((r, k) => valLabels.labels![r * K + k] === 1),
        setsOf((r, k) => valProbabilities[r]![k]! >= tagThresholds![k]!),
      ).averages.weighted.f1;
    }
  } else {
    const top = new Float64Array(validation.length);
    const predicted = valProbabilities.map((p, r) => {
      let best = 0;
      for (let k = 1; k < p.length; k++) if (p[k]! > p[best]!) best = k;
      top[r] = p[best]!;
      return tags[best]!;
    });
    const yVal = Array.from(valLabels.y, (k) => tags[k]!);
    threshold = chooseThreshold(args.threshold, top, predicted, yVal);
    if (validation.length > 0) validationF1 = f1WithThreshold(top, predicted, yVal, threshold);
  }
  let fitted = first;
  if (args.refit && validation.length > 0) {
    // The refit keeps the validated fit's tags for multi-label models (as the SGD tagger does).
    fitted = fitMembers(
      [...train, ...validation],
      [],
      args,
      options.seed,
      { fit: 'refit', onMember: options.onMember },
      args.multi_label ? tags : undefined,
    );
    options.onRefitEpoch?.({
      epoch: 1,
      epochs: 1,
      trainLoss: meanLogLoss(rowProbabilities(fitted.model, fitted.train.x), fitted.train.labels),
      valLoss: Number.NaN,
    });
  }
  const { model } = fitted;
  return {
    model: new MemberTagModel(
      model.tags,
      args,
      threshold,
      model.vectorizer,
      model.members,
      model.classes,
      tagThresholds,
    ),
    history: [report],
    threshold,
    validationF1,
    tagThresholds,
  };
}
