/**
 * What a member classifier is: the declaration every member classifier's file exports (its name,
 * hyper-parameters, input, link, search rules and how it fits), and the training rows it fits on. A member
 * fits one linear model per tag over the shared features; train-member.ts adds calibration, and the
 * member model (member-model.ts) combines one member or several.
 */
import type { ParallelRunner } from '../../parallel.js';
import type { CsrMatrix } from '../../text/tfidf.js';
import type { Calibration, MemberHyperParams } from './hyper-params.js';
import type { LinearParts } from './naive-bayes.js';

/** What a member reads of a text's features: their tf-idf values, or 1 for every feature present (x̂). */
export type MemberInputs = 'tfidf' | 'binary';
/** How a member's scores become probabilities without calibration (sgd-solver.ts's links of the same names). */
export type MemberLink = 'ovr' | 'sigmoid' | 'softmax';

export type { LinearParts } from './naive-bayes.js';

/** The training rows of the members: distinct tf-idf rows, their weights and their classes. */
export interface MemberTrainingData {
  /**
   * The rows' features: the TF-IDF block (columns 0 … V − 1) and, for a member that reads embeddings in an
   * encoder run, the embedding block after it (text/embeddings.ts's appendEmbeddingBlock).
   */
  x: CsrMatrix;
  /** Each row's weight: how many times oversampling visits it (0 leaves it out). */
  rowWeight: Float64Array;
  /** Each row's class; for multi-label rows, the group the rows are stratified and oversampled by. */
  y: Int32Array;
  /** Multi-label: labels[r × nClasses + k] = 1 when row r has class k. */
  labels?: Uint8Array;
  nClasses: number;
  /** The classes' tag names, for messages. */
  tagNames: readonly string[];
  /** How many of x's columns (the last ones) are the embedding block: 0 for TF-IDF rows alone. */
  embeddingColumns: number;
  /** sklearn's class_weight per class (liblinear weighs a class's positive rows by it); null: all 1. */
  classWeight: Float64Array | null;
}

/** Whether row r is a positive of class k. */
export const isPositive = (data: MemberTrainingData, r: number, k: number): boolean =>
  data.labels === undefined ? data.y[r] === k : data.labels[r * data.nClasses + k] === 1;

export interface FitOptions {
  seed: number;
  /** Threads a fit may spread its classes over (parallel.ts). */
  parallel?: ParallelRunner;
  /** Hears how many of the fit's one-vs-rest classes are solved (so a long fit never looks hung). */
  onClass?: (done: number, total: number) => void;
  /** Dual-CD stopping tolerance and iteration cap (default liblinear's, as sklearn sets them). */
  tol?: number;
  maxIter?: number;
}

/**
 * A member classifier. To add one: a file exporting `defineMember({...})` beside the others, listed in
 * member-table.ts; the contract suite (test/model/classifiers/contract.test.ts) then runs over it.
 */
export interface MemberDefinition<Name extends string = string> {
  /** The `classifier` value (and a vote member's `classifier`). */
  readonly name: Name;
  /** How messages name its kind of model (`linear SVM`, `naive Bayes`, …). */
  readonly kind: string;
  /** One line: what it is and its scikit-learn counterpart (docs, `--help`). */
  readonly summary: string;
  /** The hyper-parameters it takes (declared in hyper-params.ts), in the order a member lists them. */
  readonly params: readonly (keyof MemberHyperParams)[];
  readonly inputs: MemberInputs;
  /**
   * In an encoder run, whether it also reads the sentence-embedding block (columns V … V + dim − 1 after
   * the vocabulary's): the SVM and logistic regression do, scaled by `encoder_weight`; naive Bayes needs
   * counts and NB-LR / NB-SVM binary features, so they read the TF-IDF block alone.
   */
  readonly readsEmbeddings: boolean;
  /** How its own scores become probabilities (single- or multi-label), without calibration. */
  link(multiLabel: boolean): MemberLink;
  /**
   * `tagger optimize`: whether a lone one draws its calibration or stays uncalibrated, and the calibration
   * it gets as a member of a drawn vote (an SVM's margins are not probabilities: calibrated).
   */
  readonly searchCalibration: { readonly alone: 'draw' | 'none'; readonly inVote: Calibration };
  /**
   * It cannot score a tag it has no training rows of (naive Bayes: the tag's log prior is −∞), so each
   * calibration fold must leave it rows with (and, multi-label, without) every tag.
   */
  readonly needsRowsOfEveryTag: boolean;
  /** One linear model per class fitted on the rows with a weight, in Float64 (calibration is train-member.ts's). */
  fit(data: MemberTrainingData, params: MemberHyperParams, options: FitOptions): LinearParts;
}

/** A member classifier's declaration, its name kept as a literal type (member-table.ts derives the names). */
export const defineMember = <Name extends string>(
  definition: MemberDefinition<Name>,
): MemberDefinition<Name> => Object.freeze(definition);

/** The link of the one-vs-rest classifiers (SVMs, logistic regression): normalised sigmoids, or each tag's own. */
export const oneVsRestLink = (multiLabel: boolean): MemberLink => (multiLabel ? 'sigmoid' : 'ovr');
/** The link of naive Bayes: the classes compete (softmax of the joint log likelihoods), or each tag's two-class problem. */
export const naiveBayesLink = (multiLabel: boolean): MemberLink => (multiLabel ? 'sigmoid' : 'softmax');
