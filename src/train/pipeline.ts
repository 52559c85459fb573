/**
 * One training: split the data, train a tagger, evaluate it on the test split. Pure orchestration of
 * `src/model`; logging the result as a run is `log-run.ts`'s job, so this stays easy to test.
 */
import {
  type EpochReport,
  evaluate,
  type LabelledText,
  type Performance,
  stratifiedSplit,
  type TagModel,
  type TrainingArgs,
  type TrainOptions,
  trainTagger,
} from '../model/index.js';
import { DataError } from './data.js';

/** Fractions of the stratified split when no separate test file is given (train/validation/test). */
export const SPLIT_WITHOUT_TEST = [0.7, 0.15, 0.15] as const;
/** Fractions of the stratified split of the training file when a test file is given. */
export const SPLIT_WITH_TEST = [0.85, 0.15] as const;
/** Fewest rows a split may have; below it metrics and threshold tuning mean nothing. */
export const MIN_SPLIT_ROWS = 2;

/** The data and arguments of one training, with trainTagger's options (seed, epoch callbacks). */
export interface TrainingInput extends TrainOptions {
  data: readonly LabelledText[];
  /** Separate test data; when absent the test split is carved out of `data`. */
  testData?: readonly LabelledText[];
  args: TrainingArgs;
}

export interface TrainingOutcome {
  model: TagModel;
  history: EpochReport[];
  /** The probability threshold chosen on the validation split, or null for argmax. */
  threshold: number | null;
  performance: Performance;
  /**
   * Weighted f1 on the validation split of the model fitted without it (what hyper-parameter search
   * compares); with `args.refit` the returned model has since learnt from those rows too.
   */
  validationF1: number;
  sizes: { train: number; validation: number; test: number };
}

/** Splits `data` into train/validation(/test) deterministically for `seed`, checking no split is empty. */
export function splitData(
  data: readonly LabelledText[],
  withTestFile: boolean,
  seed: number,
): { train: LabelledText[]; validation: LabelledText[]; test: LabelledText[] } {
  const fractions = withTestFile ? SPLIT_WITH_TEST : SPLIT_WITHOUT_TEST;
  const needed = Math.ceil(MIN_SPLIT_ROWS / Math.min(...fractions));
  if (data.length < needed) {
    throw new DataError(
      `data: ${data.length} example(s) are too few to split ${fractions.map((f) => `${Math.round(f * 100)}%`).join('/')}` +
        ` into train/validation${withTestFile ? '' : '/test'}; need at least ${needed}`,
    );
  }
  const parts = stratifiedSplit(data, (item) => item.tag, fractions, seed);
  const [train = [], validation = [], test = []] = parts;
  const names = ['train', 'validation', 'test'];
  parts.forEach((part, index) => {
    if (part.length < MIN_SPLIT_ROWS) {
      throw new DataError(
        `data: the ${names[index]} split would hold ${part.length} example(s); add more rows (have ${data.length})`,
      );
    }
  });
  return { train, validation, test };
}

/** Keeps the first `subset` rows when the arguments ask for a subset (quick experiments). */
function applySubset(data: readonly LabelledText[], subset: number | null): readonly LabelledText[] {
  return subset === null ? data : data.slice(0, subset);
}

export function trainAndEvaluate(input: TrainingInput): TrainingOutcome {
  const data = applySubset(input.data, input.args.subset);
  if (data.length === 0) throw new DataError('data: no training examples');
  const split = splitData(data, input.testData !== undefined, input.seed);
  const test = input.testData ? [...input.testData] : split.test;
  if (test.length === 0) throw new DataError('data: the test data has no rows');
  const trained = trainTagger(split.train, split.validation, input.args, input);
  return {
    model: trained.model,
    history: trained.history,
    threshold: trained.threshold,
    performance: evaluate(trained.model, test),
    validationF1: trained.validationF1,
    sizes: { train: split.train.length, validation: split.validation.length, test: test.length },
  };
}
