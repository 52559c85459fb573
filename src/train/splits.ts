/**
 * How `tagger train` splits its data (train / validation / test, stratified by tag) and what every split
 * must hold: shared by the pipeline, cross-validation and the cascade's out-of-fold predictions.
 */
import { type LabelledText, rowsPerTag, stratifiedSplit, tagsOf } from '../model/index.js';
import { DataError } from './data.js';

/** Fractions of the stratified split when no separate test file is given (train/validation/test). */
export const SPLIT_WITHOUT_TEST = [0.7, 0.15, 0.15] as const;
/** Fractions of the stratified split of the training file when a test file is given. */
export const SPLIT_WITH_TEST = [0.85, 0.15] as const;
/** Fewest rows a split may have; below it metrics and threshold tuning mean nothing. */
export const MIN_SPLIT_ROWS = 2;

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
  const parts = stratifiedSplit(data, splitStratum(data), fractions, seed);
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

/**
 * A multi-label stratum needs this many rows to reach every part of a split (15 % of 10 rounds to 2; ten
 * folds get one each); rarer tags do not define strata.
 */
export const MIN_STRATUM_ROWS = 10;

/**
 * What a split keeps in proportion: a row's tag; for multi-label rows, the rarest of its tags that are
 * in at least MIN_STRATUM_ROWS rows of `data`, or one shared stratum for rows with none. (A row's whole
 * tag set, or a tag of a few rows, would make strata of one or two rows, which all go to the training
 * split.) So every tag of some size, rare ones first, reaches the validation and test splits.
 */
export function splitStratum(data: readonly LabelledText[]): (row: LabelledText) => string {
  if (!data.some((row) => row.tags !== undefined)) return (row) => row.tag;
  const counts = rowsPerTag(data.map(tagsOf));
  return (row) => {
    let rarest = '';
    let fewest = Infinity;
    for (const tag of tagsOf(row)) {
      const count = counts.get(tag) ?? 0;
      if (count < MIN_STRATUM_ROWS) continue;
      if (count < fewest || (count === fewest && tag < rarest)) {
        rarest = tag;
        fewest = count;
      }
    }
    return rarest;
  };
}
