/**
 * The shape of a training's data in the numbers its memory grows with, and the parts of a memory
 * estimate (memory-estimate.ts): a leaf module, so each classifier family can say what its training holds
 * (ClassifierFamily.memoryParts) without importing the estimate that dispatches to the families.
 */

/** The data a training sees, in the numbers its memory grows with (all extrapolated to every row). */
export interface DataShape {
  rows: number;
  /** Tags the model learns (after min_freq folds rare ones). */
  tags: number;
  /** TF-IDF features of the vocabulary the training builds. */
  features: number;
  /** Non-zero TF-IDF values of all rows. */
  nonZeros: number;
  /** Distinct words (fastText's input vocabulary). */
  words: number;
  /** Words of all rows. */
  tokens: number;
  /** The texts' size in memory (UTF-16). */
  textBytes: number;
}

/** A part of the estimate: what it is (`2 member weights: 810,000 features x 500 tags`) and its bytes. */
export interface MemoryPart {
  what: string;
  bytes: number;
}

export interface MemoryEstimate {
  bytes: number;
  parts: MemoryPart[];
  shape: DataShape;
}

/** The bytes of CSR matrices holding `nonZeros` values of `rows` rows (Float64 values, Int32 indices). */
export const csrBytes = (nonZeros: number, rows: number): number => 12 * nonZeros + 4 * (rows + 1);

/** A count for a person: `810,000`. */
export const formatCount = (n: number): string => Math.round(n).toLocaleString('en-US');
