/**
 * Tags a Tagger run carries about what its metrics were measured on. Training writes them
 * (src/train/log-run.ts); serving's promotion gates read them (src/service/gates.ts).
 */
export const EVALUATION_TAGS = {
  /** SHA-256 of the test rows (order-independent): runs are comparable by f1 only when it matches. */
  testSetDigest: 'tagger.test_set.digest',
  /** Rows the test metrics were measured on. */
  testSetSize: 'tagger.test_set.size',
  /** Distinct tags the model learnt from at least one training row. */
  trainedTags: 'tagger.trained_tags',
  /** The data warnings of the training, one per line. */
  warnings: 'tagger.warnings',
} as const;
