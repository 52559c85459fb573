/**
 * Tags and metrics a Tagger run carries about what its model was checked on. Training writes them
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

export const EVALUATION_METRICS = {
  /**
   * Share of the behaviour suite's cases the model passed (skipped cases excluded); per kind as
   * `behavioural_pass_rate.<mft|inv|dir>`. Absent when no case could run.
   */
  behaviouralPassRate: 'behavioural_pass_rate',
} as const;
