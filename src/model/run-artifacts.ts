/**
 * The run artifact layout: the contract between training and serving (see docs/ARCHITECTURE.md).
 * A training run stores its arguments as `args.json`, its evaluation as `performance.json` and the model
 * files (encodeModel's MODEL_FILES) under `model/`, all relative to the run's artifact root; serving reads
 * them back by these names. `confusion_matrix.json`, `test_mistakes.json` (evaluation/confusion-and-mistakes.ts) and
 * `label_issues.json` are for people only; serving never needs them. Change them only together with every
 * reader and writer.
 */
export const RUN_ARTIFACTS = {
  args: 'args.json',
  performance: 'performance.json',
  modelDir: 'model',
  /** What the test split got wrong, for the inspection page (optional: older runs lack them). */
  confusion: 'confusion_matrix.json',
  mistakes: 'test_mistakes.json',
  /** The behaviour suite's result: each case, what was expected, what the model did, pass (not read by serving). */
  behavioural: 'behavioural.json',
  /** The slice definitions the performance report used, with each one's row count (not read by serving). */
  slices: 'slices.json',
  /**
   * The training data's rows whose given tag is probably wrong (src/train/label-issues.ts), for the
   * inspection page (optional: older runs, and runs of data too small to cross-validate, lack it).
   */
  labelIssues: 'label_issues.json',
  /**
   * What the model's inputs and answers looked like on the test split, for drift monitoring (profile.ts;
   * optional: runs logged before it existed have none, and serving then judges no drift).
   */
  referenceProfile: 'reference_profile.json',
  /**
   * A cascade run's threshold curve (share routed and CV f1 at each τ), the rule and its choice, and the
   * test split's figures, for the inspection page (not read by serving: τ is in the model).
   */
  cascadeCurve: 'cascade_curve.json',
  /**
   * How `tagger train` chose the model on the user's validation split (src/train/model-choice/): every
   * candidate with its validation f1, training time, predict µs per text and model size, or why it was
   * skipped; the budget and the clean-up chosen (optional: runs with explicit args, and older runs, lack it).
   */
  modelChoice: 'model_choice.json',
} as const;
