/**
 * Tags and metrics a Tagger run carries about what its model was checked on. Training writes them
 * (src/train/log-run.ts); serving's promotion gates read them (src/served-models/gates.ts).
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
  /**
   * The kinds of those warnings, comma-separated (DATA_CHECK_KINDS), for rules to read — the promotion gate
   * holds back a run whose test rows leaked into its training data (`test_leak`).
   */
  dataChecks: 'tagger.data_checks',
  /**
   * A retrained run's promotion (`tagger retrain`): `candidate` (not decided: never served), `rejected`
   * (never served; `tagger.promotion.reason` says why) or `promoted`. Runs without it are served as before.
   */
  promotion: 'tagger.promotion',
  promotionReason: 'tagger.promotion.reason',
} as const;

/** The data checks whose warnings a run records by kind (tag `tagger.data_checks`). */
export const DATA_CHECK_KINDS = [
  'duplicate_rows',
  'unreadable_texts',
  'folded_tags',
  'small_test_split',
  'test_leak',
  'conflicting_labels',
  'long_texts',
  // Since issue 40: test rows that repeated a training row, taken out of the test split (within the
  // allowed share; beyond it they stay and the warning is test_leak), test rows that are near copies of
  // training rows (kept), and corrections tagger retrain kept out of training as near copies of test rows.
  'test_repeats_removed',
  'test_near_copies',
  'corrections_near_test',
] as const;
export type DataCheckKind = (typeof DATA_CHECK_KINDS)[number];

export const EVALUATION_METRICS = {
  /**
   * Share of the behaviour suite's cases the model passed (skipped cases excluded); per kind as
   * `behavioural_pass_rate.<mft|inv|dir>`. Absent when no case could run.
   */
  behaviouralPassRate: 'behavioural_pass_rate',
} as const;
