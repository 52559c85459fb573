/**
 * One member trained: its classifier's fit (the classifier's own file, found in member-table.ts) on the
 * shared tf-idf rows, into one linear model per tag, and with `calibration: sigmoid` Platt sigmoids per tag
 * fitted on out-of-fold scores (platt.ts; sklearn's CalibratedClassifierCV(method='sigmoid',
 * ensemble=False)). Only the tags with training rows take part (`nClasses` counts them): a tag no row has
 * gets no weights, and the model gives it probability 0.
 */
import { ModelInputError } from '../../errors.js';
import { createRng, randomInt } from '../../rng.js';
import { stratifiedSplit } from '../../split.js';
import type { CsrMatrix } from '../../text/tfidf.js';
import {
  type FitOptions,
  isPositive,
  type MemberDefinition,
  type MemberInputs,
  type MemberLink,
  type MemberTrainingData,
} from './member.js';
import type { MemberSpec } from './member-args.js';
import type { MemberClassifier } from './member-table.js';
import { memberDefinition } from './member-table.js';
import { addMemberScores, type MemberWeights } from './member-weights.js';
import { fitPlatt } from './platt.js';

/** A trained member: a linear model over the shared features and how its scores become probabilities. */
export interface Member {
  classifier: MemberClassifier;
  /** Its weight in the vote. */
  weight: number;
  inputs: MemberInputs;
  /** Its features include the embedding block (an encoder run's SVM or logistic regression). */
  readsEmbeddings: boolean;
  /** The features it has weights for: the vocabulary's, plus the embedding block's when it reads one. */
  nFeatures: number;
  /** The tags with training rows (the model maps them to its tags). */
  nClasses: number;
  /** Its weights (dense or sparse by feature, with naive Bayes' shared terms: member-weights.ts). */
  weights: MemberWeights;
  bias: Float64Array;
  link: MemberLink;
  /** Platt's a and b per class (probability 1 / (1 + exp(a·score + b))); null: the link's probabilities. */
  calibration: { a: Float64Array; b: Float64Array } | null;
}

export interface MemberTrainOptions extends FitOptions {
  calibrationFolds: number;
}

/** Trains one member on `data` (with its calibration when the spec asks for one). */
export function trainMember(spec: MemberSpec, data: MemberTrainingData, options: MemberTrainOptions): Member {
  if (spec.calibration === 'none') return fitMember(spec, data, options.seed, options);
  return calibrated(spec, data, options);
}

/** The member fitted on every row with a weight, without calibration. */
function fitMember(
  spec: MemberSpec,
  data: MemberTrainingData,
  seed: number,
  options: Pick<FitOptions, 'tol' | 'maxIter' | 'parallel' | 'onClass'>,
): Member {
  const definition = memberDefinition(spec.classifier);
  const { weights, bias } = definition.fit(data, spec, { ...options, seed });
  return {
    classifier: spec.classifier,
    weight: spec.weight,
    inputs: definition.inputs,
    readsEmbeddings: data.embeddingColumns > 0,
    nFeatures: data.x.nCols,
    nClasses: data.nClasses,
    link: definition.link(data.labels !== undefined),
    calibration: null,
    weights,
    bias,
  };
}

/**
 * The member's linear scores of CSR row r of a training matrix into `out`. A matrix with more columns than
 * the member has features holds the embedding block (every row's last x.nCols − nFeatures entries), which a
 * member that does not read embeddings leaves out.
 */
export function memberRowScores(member: Member, x: CsrMatrix, r: number, out: Float64Array): void {
  out.set(member.bias);
  const values = member.inputs === 'binary' ? null : x.data;
  const to = x.indptr[r + 1]! - (x.nCols - member.nFeatures);
  addMemberScores(member.weights, x.indices, values, x.indptr[r]!, to, out);
}

/**
 * Platt calibration on out-of-fold scores: the rows are split into `calibrationFolds` stratified folds; a
 * member fitted without each fold scores that fold; one sigmoid per class is fitted on all those scores;
 * the returned member is fitted on every row and carries the sigmoids. A tag with fewer rows than folds
 * has at most one row per fold (stratified); a fold that holds a tag's only row is scored by a dual-CD
 * member that had no row of the tag (its binary problem is all negatives), which is what calibration should
 * learn from: one row is not enough to recognise the tag. A classifier that cannot score a tag without rows
 * (naive Bayes) needs every fold's training part to hold every tag.
 */
function calibrated(spec: MemberSpec, data: MemberTrainingData, options: MemberTrainOptions): Member {
  const folds = options.calibrationFolds;
  const K = data.nClasses;
  const rows = Array.from({ length: data.x.nRows }, (_, r) => r).filter((r) => data.rowWeight[r]! > 0);
  if (rows.length < folds) {
    throw new ModelInputError(
      `model/calibration: "calibration": "sigmoid" scores every training row out of fold on ${folds} folds (calibration_folds), but there are only ${rows.length} training rows; lower calibration_folds or use "calibration": "none"`,
    );
  }
  const definition = memberDefinition(spec.classifier);
  const parts = stratifiedSplit(
    rows,
    (r) => String(data.y[r]),
    Array.from({ length: folds }, () => 1 / folds),
    options.seed,
  );
  const scores = new Float64Array(data.x.nRows * K);
  const out = new Float64Array(K);
  const seeds = createRng(options.seed ^ 0x0ca1b4a7);
  // The folds' fits and the last one count as one sweep over the classes, folds + 1 times as long.
  const sweep = (fit: number): Pick<FitOptions, 'onClass'> => {
    const onClass = options.onClass;
    if (onClass === undefined) return {};
    return { onClass: (done, total) => onClass(fit * total + done, (folds + 1) * total) };
  };
  parts.forEach((heldOut, f) => {
    if (heldOut.length === 0) return;
    const rowWeight = Float64Array.from(data.rowWeight);
    for (const r of heldOut) rowWeight[r] = 0;
    if (definition.needsRowsOfEveryTag) checkFoldHasEveryTag(definition, data, rows, rowWeight, f, folds);
    const member = fitMember(spec, { ...data, rowWeight }, randomInt(seeds, 0x7fffffff), {
      ...options,
      ...sweep(f),
    });
    for (const r of heldOut) {
      memberRowScores(member, data.x, r, out);
      scores.set(out, r * K);
    }
  });
  const weights = Float64Array.from(rows, (r) => data.rowWeight[r]!);
  const a = new Float64Array(K);
  const b = new Float64Array(K);
  for (let k = 0; k < K; k++) {
    const classScores = Float64Array.from(rows, (r) => scores[r * K + k]!);
    const fitted = fitPlatt(
      classScores,
      rows.map((r) => isPositive(data, r, k)),
      weights,
    );
    a[k] = fitted.a;
    b[k] = fitted.b;
  }
  return { ...fitMember(spec, data, options.seed, { ...options, ...sweep(folds) }), calibration: { a, b } };
}

/** A calibration fold must leave rows with (and, multi-label, without) every tag, for `definition`'s sake. */
function checkFoldHasEveryTag(
  definition: MemberDefinition,
  data: MemberTrainingData,
  rows: readonly number[],
  rowWeight: Float64Array,
  fold: number,
  folds: number,
): void {
  for (let k = 0; k < data.nClasses; k++) {
    const kept = rows.filter((r) => rowWeight[r]! > 0);
    const positives = kept.filter((r) => isPositive(data, r, k)).length;
    const missing =
      positives === 0 ? 'with' : data.labels !== undefined && positives === kept.length ? 'without' : null;
    if (missing !== null) {
      throw new ModelInputError(
        `model/calibration: calibrating ${definition.kind} on ${folds} folds (calibration_folds) leaves fold ${fold + 1} no training row ${missing} tag "${data.tagNames[k]}", and ${definition.kind} cannot score a tag it has no rows of; give every tag at least 2 training rows ${missing} it, lower calibration_folds, or use "calibration": "none" for this member`,
      );
    }
  }
}
