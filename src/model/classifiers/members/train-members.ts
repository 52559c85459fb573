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
import { float64Array, int32Array, type ParallelRunner, spreads } from '../../parallel.js';
import { createRng, randomInt } from '../../rng.js';
import {
  type EpochReport,
  type LabelledText,
  type MemberReport,
  type ThresholdChoice,
  type TrainedTagger,
  type TrainOptions,
  tagsOf,
} from '../../tag-model.js';
import {
  appendEmbeddingBlock,
  checkEmbeddings,
  type EncoderSpec,
  embeddingsOf,
} from '../../text/embeddings.js';
import { fitVectorizer, type TaggerVectorizer } from '../../text/features.js';
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
import { isMemberClassifier, memberDefinition } from './member-table.js';
import { forStorage } from './member-weights.js';
import { fitPlatt } from './platt.js';
import { type Member, memberRowScores, trainMember } from './train-member.js';

/** Whether a member reads an encoder run's embedding block (its classifier's rule: member.ts). */
export const readsEmbeddings = (spec: MemberSpec): boolean =>
  memberDefinition(spec.classifier).readsEmbeddings;

/** The member specs of the args: a soft vote's members, or the classifier alone as the one member. */
export function memberSpecs(args: TrainingArgs): MemberSpec[] {
  if (args.members !== null) return args.members.map((m) => memberParams(m, args));
  if (!isMemberClassifier(args.classifier)) {
    throw new ModelInputError(`model/members: ${args.classifier} is not a member classifier`);
  }
  return [memberParams({ classifier: args.classifier, weight: 1 }, args)];
}

/**
 * Rows as the members see them: their features (of one vectorizer; in an encoder run with the embedding
 * block appended to every row, `embeddingColumns` wide) and labels.
 */
interface RowFeatures {
  x: CsrMatrix;
  labels: ReturnType<typeof labelArrays>;
  embeddingColumns: number;
}

/** `x` without its last `columns` columns, which are every row's last `columns` entries (the embedding block). */
function withoutBlock(x: CsrMatrix, columns: number): CsrMatrix {
  if (columns === 0) return x;
  const indptr = Int32Array.from(x.indptr, (start, r) => start - r * columns);
  const nnz = indptr[x.nRows]!;
  const indices = new Int32Array(nnz);
  const data = new Float64Array(nnz);
  for (let r = 0; r < x.nRows; r++) {
    const from = x.indptr[r]!;
    const to = x.indptr[r + 1]! - columns;
    indices.set(x.indices.subarray(from, to), indptr[r]!);
    data.set(x.data.subarray(from, to), indptr[r]!);
  }
  return { nRows: x.nRows, nCols: x.nCols - columns, indptr, indices, data };
}

/** How a fit calibrates the members that ask for it: on folds of its rows, or with given sigmoids. */
type Calibrating = { folds: true } | { given: readonly (Member['calibration'] | null)[] | null };

/**
 * One fit of the members on `rows` (features of `vectorizer`): oversampling and class weights from the
 * args, each member trained on the tags with rows. `calibrating.given`: the members that ask for Platt's
 * sigmoids are trained without (null: to be fitted on the validation split by the caller) or take these.
 */
function fitMembers(
  rows: RowFeatures,
  tags: readonly string[],
  vectorizer: TaggerVectorizer,
  args: TrainingArgs,
  seed: number,
  progress: {
    fit: MemberReport['fit'];
    onMember: TrainOptions['onMember'];
    onClasses: TrainOptions['onClasses'];
  },
  calibrating: Calibrating,
  parallel: ParallelRunner | undefined,
  encoder: EncoderSpec | null,
): MemberTagModel {
  const { x, labels } = rows;
  const K = tags.length;
  const rng = createRng(seed);
  const order = args.oversample ? oversampledOrder(labels.y, K, rng) : Int32Array.from(labels.y.keys());
  const rowWeight = new Float64Array(x.nRows);
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
  const data = trainedClassData(tags, x, labels, rowWeight, classWeight, rows.embeddingColumns);
  // The members that do not read embeddings fit on the TF-IDF block alone (made once, when one needs it).
  let textOnly: MemberTrainingData | null = null;
  const dataFor = (spec: MemberSpec): MemberTrainingData => {
    if (rows.embeddingColumns === 0 || memberDefinition(spec.classifier).readsEmbeddings) return data.data;
    textOnly ??= { ...data.data, x: withoutBlock(x, rows.embeddingColumns), embeddingColumns: 0 };
    return textOnly;
  };
  const specs = memberSpecs(args);
  const members: Member[] = specs.map((spec, index) => {
    const started = performance.now();
    const folds = 'folds' in calibrating;
    const member = trainMember(folds ? spec : { ...spec, calibration: 'none' }, dataFor(spec), {
      seed: randomInt(rng, 0x7fffffff),
      calibrationFolds: args.calibration_folds,
      ...(parallel === undefined ? {} : { parallel }),
      ...(progress.onClasses === undefined
        ? {}
        : {
            onClass: (done: number, total: number) =>
              progress.onClasses!({
                fit: progress.fit,
                member: index + 1,
                members: specs.length,
                classifier: spec.classifier,
                done,
                total,
              }),
          }),
    });
    progress.onMember?.({
      fit: progress.fit,
      member: index + 1,
      members: specs.length,
      classifier: spec.classifier,
      fits: spec.calibration === 'none' || !folds ? 1 : args.calibration_folds + 1,
      seconds: (performance.now() - started) / 1000,
    });
    const calibration =
      'given' in calibrating && spec.calibration === 'sigmoid'
        ? (calibrating.given?.[index] ?? null)
        : member.calibration;
    // Trained in Float64; kept (and so scored, saved and loaded) as a model keeps its weights.
    return { ...member, calibration, weights: forStorage(member.weights) };
  });
  return new MemberTagModel(
    tags,
    args,
    null,
    vectorizer,
    members,
    data.classes,
    args.multi_label ? tags.map(() => 0.5) : null,
    encoder,
  );
}

/** Rows stacked: `a`'s then `b`'s (one vocabulary). */
function stackRows(a: RowFeatures, b: RowFeatures, shared: boolean): RowFeatures {
  const nnzA = a.x.indptr[a.x.nRows]!;
  const indptr = int32Array(a.x.nRows + b.x.nRows + 1, shared);
  indptr.set(a.x.indptr);
  for (let r = 1; r <= b.x.nRows; r++) indptr[a.x.nRows + r] = nnzA + b.x.indptr[r]!;
  const nnz = indptr[indptr.length - 1]!;
  const indices = int32Array(nnz, shared);
  indices.set(a.x.indices.subarray(0, nnzA));
  indices.set(b.x.indices.subarray(0, nnz - nnzA), nnzA);
  const data = float64Array(nnz, shared);
  data.set(a.x.data.subarray(0, nnzA));
  data.set(b.x.data.subarray(0, nnz - nnzA), nnzA);
  const y = new Int32Array(a.labels.y.length + b.labels.y.length);
  y.set(a.labels.y);
  y.set(b.labels.y, a.labels.y.length);
  let labels: Uint8Array | undefined;
  if (a.labels.labels !== undefined) {
    labels = new Uint8Array(a.labels.labels.length + b.labels.labels!.length);
    labels.set(a.labels.labels);
    labels.set(b.labels.labels!, a.labels.labels.length);
  }
  return {
    x: { nRows: a.x.nRows + b.x.nRows, nCols: a.x.nCols, indptr, indices, data },
    labels: { y, ...(labels === undefined ? {} : { labels }) },
    embeddingColumns: a.embeddingColumns,
  };
}

/**
 * Platt's sigmoids of the members that ask for them, fitted on the validation rows' scores (the members
 * were trained without those rows): `calibration_data: validation`, what scales where k more fits do not.
 */
function calibrateOnValidation(
  model: MemberTagModel,
  validation: RowFeatures,
  specs: readonly { calibration: string }[],
): (Member['calibration'] | null)[] {
  const n = validation.x.nRows;
  return model.members.map((member, m) => {
    if (specs[m]!.calibration !== 'sigmoid') return null;
    const K = member.nClasses;
    const scores = new Float64Array(n * K);
    const out = new Float64Array(K);
    for (let r = 0; r < n; r++) {
      memberRowScores(member, validation.x, r, out);
      scores.set(out, r * K);
    }
    const a = new Float64Array(K);
    const b = new Float64Array(K);
    const weights = new Float64Array(n).fill(1);
    for (let c = 0; c < K; c++) {
      const k = model.classes[c]!;
      const classScores = Float64Array.from({ length: n }, (_, r) => scores[r * K + c]!);
      const positive = Array.from({ length: n }, (_, r) =>
        validation.labels.labels === undefined
          ? validation.labels.y[r] === k
          : validation.labels.labels[r * model.tags.length + k] === 1,
      );
      const fitted = fitPlatt(classScores, positive, weights);
      a[c] = fitted.a;
      b[c] = fitted.b;
    }
    return { a, b };
  });
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
  embeddingColumns: number,
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
      embeddingColumns,
      classWeight: classWeight === null ? null : Float64Array.from(classes, (k) => classWeight[k]!),
    },
  };
}

/** The model's probabilities of every row (tags in model order). */
function rowProbabilities(model: MemberTagModel, rows: RowFeatures): Float64Array[] {
  const { x, embeddingColumns } = rows;
  const scratch = new Float64Array(model.classes.length);
  return Array.from({ length: x.nRows }, (_, r) => {
    const out = new Float64Array(model.tags.length);
    const [from, to] = [x.indptr[r]!, x.indptr[r + 1]!];
    combinedProbabilities(model, x.indices, x.data, from, to, out, scratch, embeddingColumns);
    return out;
  });
}

/**
 * Mean log loss of the model on rows (multi-label: summed per-tag binary cross-entropies), one row at a
 * time (no rows × tags array); NaN without rows.
 */
function meanLogLoss(model: MemberTagModel, rows: RowFeatures): number {
  const { x, labels, embeddingColumns } = rows;
  const p = new Float64Array(model.tags.length);
  const scratch = new Float64Array(model.classes.length);
  let total = 0;
  for (let r = 0; r < x.nRows; r++) {
    const [from, to] = [x.indptr[r]!, x.indptr[r + 1]!];
    combinedProbabilities(model, x.indices, x.data, from, to, p, scratch, embeddingColumns);
    if (labels.labels === undefined) {
      total -= Math.log(Math.max(p[labels.y[r]!]!, 1e-15));
      continue;
    }
    for (let k = 0; k < p.length; k++) {
      total -= Math.log(Math.max(labels.labels[r * p.length + k] === 1 ? p[k]! : 1 - p[k]!, 1e-15));
    }
  }
  return total / x.nRows;
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
  const tags = options.tags
    ? [...options.tags]
    : multiLabelModelTags(train.map(tagsOf), args.min_freq, args.accepted_tags);
  const clean = (rows: readonly LabelledText[]): string[] => rows.map((r) => cleanText(r.text, args));
  // In shared memory when the classes are solved on threads (parallel.ts).
  const shared = spreads(options.parallel);
  // An encoder run whose members read embeddings: the embedding block after every row's TF-IDF entries.
  const encoder = options.encoder ?? null;
  const block = encoder !== null && memberSpecs(args).some((spec) => readsEmbeddings(spec)) ? encoder : null;
  const featuresOf = (
    vectorizer: TaggerVectorizer,
    rows: readonly LabelledText[],
    texts: string[],
    of: readonly string[],
  ): RowFeatures => {
    const labels = labelArrays(rows, of, args.multi_label);
    if (block === null) return { x: vectorizer.transform(texts, shared), labels, embeddingColumns: 0 };
    const embeddings = checkEmbeddings(
      texts,
      embeddingsOf(
        rows.map((r) => r.text),
        block.embeddings,
      ),
      block.spec,
    );
    const settings = { weight: args.encoder_weight, normalize: args.encoder_normalize };
    const x = appendEmbeddingBlock(vectorizer.transform(texts), embeddings, block.spec.dim, settings, shared);
    return { x, labels, embeddingColumns: block.spec.dim };
  };
  const trainTexts = clean(train);
  const vectorizer = fitVectorizer(trainTexts, args);
  const trainRows = featuresOf(vectorizer, train, trainTexts, tags);
  const validationRows = featuresOf(vectorizer, validation, clean(validation), tags);
  // Platt's sigmoids from the validation split (calibration_data: validation) need one.
  const onValidation = args.calibration_data === 'validation' && validation.length > 0;
  const specs = memberSpecs(args);
  let first: MemberTagModel | null = fitMembers(
    trainRows,
    tags,
    vectorizer,
    args,
    options.seed,
    { fit: 'validated', onMember: options.onMember, onClasses: options.onClasses },
    onValidation ? { given: null } : { folds: true },
    options.parallel,
    encoder?.spec ?? null,
  );
  const sigmoids = onValidation ? calibrateOnValidation(first, validationRows, specs) : null;
  if (sigmoids !== null) {
    first = new MemberTagModel(
      tags,
      args,
      null,
      vectorizer,
      first.members.map((m, i) => ({ ...m, calibration: sigmoids[i] ?? m.calibration })),
      first.classes,
      args.multi_label ? tags.map(() => 0.5) : null,
      first.encoder,
    );
  }
  const valProbabilities = rowProbabilities(first, validationRows);
  const report: EpochReport = {
    epoch: 1,
    epochs: 1,
    trainLoss: meanLogLoss(first, trainRows),
    valLoss: validation.length === 0 ? Number.NaN : meanLogLoss(first, validationRows),
  };
  options.onEpoch?.(report);
  let threshold: number | null = null;
  let tagThresholds: number[] | null = null;
  let validationF1 = Number.NaN;
  const valLabels = validationRows.labels;
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
  let modelArgs = args;
  const finish = (model: MemberTagModel): TrainedTagger => ({
    model: new MemberTagModel(
      model.tags,
      modelArgs,
      threshold,
      model.vectorizer,
      model.members,
      model.classes,
      tagThresholds,
      model.encoder,
    ),
    history: [report],
    threshold,
    validationF1,
    tagThresholds,
  });
  if (!args.refit || validation.length === 0) {
    return options.deferRefit
      ? { ...finish(first), validationProbabilities: valProbabilities }
      : finish(first);
  }
  const refit = (chosen?: ThresholdChoice): TrainedTagger => {
    if (chosen !== undefined && !args.multi_label) {
      threshold = chosen.threshold;
      modelArgs = { ...args, threshold: chosen.mode };
    }
    // The validated fit is let go first: the two are never in memory together (a deferred refit's caller
    // drops the validated result before it calls refit).
    first = null;
    // The refit keeps the validated fit's tags for multi-label models (as the SGD tagger does), when its
    // sigmoids come from the validated fit (they are per tag), and when the caller fixed them.
    const all = [...train, ...validation];
    const refitTags =
      args.multi_label || sigmoids !== null || options.tags !== undefined
        ? tags
        : multiLabelModelTags(all.map(tagsOf), args.min_freq, args.accepted_tags);
    let refitVectorizer = vectorizer;
    let rows: RowFeatures;
    if (args.refit_vocabulary) {
      const texts = clean(all);
      refitVectorizer = fitVectorizer(texts, args);
      rows = featuresOf(refitVectorizer, all, texts, refitTags);
    } else {
      // The validated fit's vocabulary and idf: the features of every row are computed already.
      rows = stackRows(trainRows, validationRows, shared);
    }
    const model = fitMembers(
      rows,
      refitTags,
      refitVectorizer,
      args,
      options.seed,
      { fit: 'refit', onMember: options.onMember, onClasses: options.onClasses },
      sigmoids !== null ? { given: sigmoids } : { folds: true },
      options.parallel,
      encoder?.spec ?? null,
    );
    options.onRefitEpoch?.({ epoch: 1, epochs: 1, trainLoss: meanLogLoss(model, rows), valLoss: Number.NaN });
    return finish(model);
  };
  if (options.deferRefit) return { ...finish(first), validationProbabilities: valProbabilities, refit };
  return refit();
}
