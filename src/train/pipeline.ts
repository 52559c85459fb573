/**
 * One training: split the data, train a tagger, evaluate it on the test split. Pure orchestration of
 * `src/model`; logging the result as a run is `log-run.ts`'s job, so this stays easy to test.
 */
import { createHash } from 'node:crypto';
import {
  type BehaviourReport,
  type BehaviourSuite,
  bindEmbeddings,
  buildReferenceProfile,
  type CascadeChoice,
  type CascadeCurve,
  type ConfusionAndMistakes,
  checkCascadeArgs,
  compileSlices,
  DEFAULT_BEHAVIOUR_SUITE,
  DEFAULT_SLICE_DEFINITIONS,
  type EmbeddingLookup,
  type EpochReport,
  evaluate,
  evaluateWithErrors,
  type LabelledText,
  learnsSeveralTags,
  type Performance,
  parseTrainingArgs,
  type ReferenceProfile,
  runBehaviourSuite,
  type SliceDefinition,
  type TagModel,
  type TrainingArgs,
  type TrainOptions,
  trainTagger,
} from '../model/index.js';
import { type TrainedCascade, trainCascade } from './cascade-training.js';
import { DataError } from './data.js';
import {
  checkTrainable,
  type DataWarning,
  dataWarnings,
  duplicateRowsWarning,
  overlapWarnings,
  unreadableTextsWarning,
} from './data-checks.js';
import { splitData } from './splits.js';

export { MIN_TRUSTED_TEST_ROWS } from './data-checks.js';

export {
  MIN_SPLIT_ROWS,
  MIN_STRATUM_ROWS,
  SPLIT_WITH_TEST,
  SPLIT_WITHOUT_TEST,
  splitData,
  splitStratum,
} from './splits.js';

/**
 * The data and arguments of one training, with trainTagger's options (seed, epoch callbacks, and for an
 * encoder run `encoder`: the embeddings of every text it sees, see embeddings.ts).
 */
export interface TrainingInput extends TrainOptions {
  data: readonly LabelledText[];
  /** Separate test data; when absent the test split is carved out of `data`. */
  testData?: readonly LabelledText[];
  args: TrainingArgs;
  /** The behavioural tests run on the trained model (default: DEFAULT_BEHAVIOUR_SUITE). */
  behaviour?: BehaviourSuite;
  /** The slices of the performance report (default: tagifai's nlp_cnn and short_text). */
  slices?: readonly SliceDefinition[];
  /** A cascade run: a fold's out-of-fold models of both stages were trained (before the stages themselves). */
  onCascadeFold?: (done: number, folds: number) => void;
}

/** An epoch's losses with the wall-clock time (epoch ms) it ended, for MLflow's metric history. */
export type TimedEpoch = EpochReport & { time: number };

export interface TrainingOutcome {
  model: TagModel;
  /** Per-epoch losses of the validated fit (its validation loss means something). */
  history: TimedEpoch[];
  /** Per-epoch training losses of the refit on train + validation (`args.refit`): the saved model's. */
  refitHistory: TimedEpoch[];
  /** When the training started (epoch ms) and how long it took: the run's start and `training_seconds`. */
  startedAt: number;
  trainingSeconds: number;
  /** The probability threshold chosen on the validation split, or null for argmax. */
  threshold: number | null;
  performance: Performance;
  /** The test split's confusion matrix and misclassified texts (logged for the inspection page). */
  confusionAndMistakes: ConfusionAndMistakes;
  /**
   * Weighted f1 on the validation split of the model fitted without it (what hyper-parameter search
   * compares); with `args.refit` the returned model has since learnt from those rows too.
   */
  validationF1: number;
  sizes: { train: number; validation: number; test: number };
  /**
   * What the test metrics were measured on: a SHA-256 of the test rows (order-independent) and their
   * count. Runs are comparable by f1 only when they share it (tagger serve's promotion gate).
   */
  testSet: { digest: string; size: number };
  /** Distinct tags the model learnt from at least one training row (`other` counts when it has rows). */
  trainedTags: number;
  /**
   * Data problems that make the model or its metrics untrustworthy (repeated rows, unreadable texts,
   * folded tags, a tiny test split, leaked test rows, conflicting labels); see data-checks.ts.
   */
  warnings: string[];
  /** The same warnings with their kinds (the run's tag `tagger.data_checks`; the leak gate reads it). */
  dataWarnings: DataWarning[];
  /** The behaviour suite's result on the returned model. */
  behaviour: BehaviourReport;
  /** The slice definitions used and how many test rows fell into each (empty ones are not in `performance`). */
  slices: { definitions: readonly SliceDefinition[]; rows: Record<string, number> };
  /** The test split as live traffic is compared with it (drift monitoring; logged as reference_profile.json). */
  reference: ReferenceProfile;
  /** A cascade run: how τ was chosen and how the cascade did on the test split beside each stage alone. */
  cascade?: CascadeOutcome;
}

/** What a cascade run's training found (logged as cascade_curve.json and metrics). */
export interface CascadeOutcome {
  curve: CascadeCurve;
  choice: CascadeChoice;
  /** The fast stage's classifier (the run's `classifier` arg is the encoder stage's). */
  fastClassifier: string;
  /** On the test split: the share routed, and each stage's weighted f1 alone (the cascade's is `performance`). */
  test: { routed: number; fast_f1: number; encoder_f1: number };
}

/** SHA-256 of the rows as `text \0 tag` lines, sorted: the same rows in any order give the same digest. */
export function testSetDigest(rows: readonly LabelledText[]): string {
  const lines = rows.map((row) => `${row.text}\u0000${row.tag}`).sort();
  const hash = createHash('sha256');
  for (const line of lines) hash.update(line).update('\n');
  return hash.digest('hex');
}

/** From this many rows of data on, the arguments for the data take the large-data settings (below). */
export const LARGE_DATA_ROWS = 20_000;

/**
 * The large-data settings, each taken unless the arguments set it (rule fixed before it was measured;
 * evidence in docs/model-decisions.md): n-grams of fewer than 2 training documents are dropped (`min_df`
 * 2: a bounded vocabulary), Platt's sigmoids are fitted on the validation split instead of on 5 more fits
 * (`calibration_data: validation`), the refit keeps the validated fit's vocabulary (`refit_vocabulary:
 * false`: the features are computed once), and a soft vote without members of its own combines a calibrated
 * linear SVM and multinomial naive Bayes (NB-LR's dual logistic regression takes 10× the SVM's time at
 * 50,000 rows and did not help the vote there). The `fasttext` kind takes fastText's own 2,000,000 hash
 * buckets instead of 2^20 (`ft_buckets`: word bigrams of 200,000 texts collide less; its memory grows with
 * the rows used, not the buckets) and none of the others, which it does not use. With fewer rows nothing
 * changes.
 */
export const LARGE_DATA_ARGS = Object.freeze({
  min_df: 2,
  calibration_data: 'validation',
  refit_vocabulary: false,
  members: Object.freeze([
    Object.freeze({ classifier: 'linear_svm', calibration: 'sigmoid' }),
    Object.freeze({ classifier: 'multinomial_nb' }),
  ]),
  ft_buckets: 2_000_000,
});

/** Whether a large-data setting applies to these args: `ft_` settings to `fasttext` only, `members` to a classifier that has members. */
function largeDataSettingApplies(key: string, args: TrainingArgs): boolean {
  if (key === 'members') return args.members !== null;
  return key.startsWith('ft_') === (args.classifier === 'fasttext');
}

/**
 * The large-data settings `args` takes for `rows` rows of data: those it did not set (`explicit`) and that
 * apply to it (largeDataSettingApplies). Empty below LARGE_DATA_ROWS.
 */
export function largeDataSettings(
  args: TrainingArgs,
  rows: number,
  explicit: ReadonlySet<string>,
): Partial<TrainingArgs> {
  if (rows < LARGE_DATA_ROWS) return {};
  return Object.fromEntries(
    Object.entries(LARGE_DATA_ARGS).filter(
      ([key]) => !explicit.has(key) && largeDataSettingApplies(key, args),
    ),
  ) as Partial<TrainingArgs>;
}

/**
 * The arguments for this data: multi-label data (rows read from a `tags` column or list) trains a
 * multi-label model, so `multi_label` is switched on unless the arguments set it to false on purpose,
 * which is refused. Single-label data may train a multi-label model (one tag per row, per-tag thresholds).
 * A multi-label model's `threshold` becomes `tuned` unless the arguments set it: the default `argmax`
 * keeps every tag at 0.5, which on the sample data (seeds 1–5) gave weighted f1 0.72 against 0.86 for
 * thresholds chosen per tag on the validation split (recall 0.59 against 0.86). Data of LARGE_DATA_ROWS
 * rows or more takes the large-data settings the arguments do not set (largeDataSettings). `explicit`: the
 * argument names the user gave.
 */
export function argsForData(
  given: TrainingArgs,
  data: readonly LabelledText[],
  explicit: ReadonlySet<string>,
): TrainingArgs {
  const large = largeDataSettings(given, data.length, explicit);
  const args = Object.keys(large).length === 0 ? given : parseTrainingArgs({ ...given, ...large });
  if (args.multi_label || !data.some((row) => row.tags !== undefined)) return args;
  if (explicit.has('multi_label')) {
    throw new DataError(
      'data: the file gives several tags per text (a tags column), but the args set multi_label to false; drop multi_label from the args, or give one tag per row in a tag column',
    );
  }
  if (!learnsSeveralTags(args.classifier)) {
    throw new DataError(
      `data: the file gives several tags per text (a tags column), which needs a one-vs-rest classifier (e.g. "classifier": "ovr" or "soft_vote"), but the args set "${args.classifier}"`,
    );
  }
  return { ...args, multi_label: true, ...(explicit.has('threshold') ? {} : { threshold: 'tuned' }) };
}

/** Keeps the first `subset` rows when the arguments ask for a subset (quick experiments). */
function applySubset(data: readonly LabelledText[], subset: number | null): readonly LabelledText[] {
  return subset === null ? data : data.slice(0, subset);
}

export function trainAndEvaluate(input: TrainingInput): TrainingOutcome {
  checkCascadeArgs(input.args);
  const data = applySubset(input.data, input.args.subset);
  if (data.length === 0) throw new DataError('data: no training examples');
  if (
    !input.args.multi_label &&
    [...data, ...(input.testData ?? [])].some((row) => (row.tags?.length ?? 1) > 1)
  ) {
    throw new DataError(
      'data: the rows give several tags per text, but the args train a single-label model; set multi_label (tagger train does so for a tags column)',
    );
  }
  const split = splitData(data, input.testData !== undefined, input.seed);
  const test = input.testData ? [...input.testData] : split.test;
  if (test.length === 0) throw new DataError('data: the test data has no rows');
  // The rows the returned model learns from: with refit, train + validation (tags folded by min_freq
  // are counted there, as the refit counts them).
  const fitRows =
    input.args.refit && split.validation.length > 0 ? [...split.train, ...split.validation] : split.train;
  checkTrainable(fitRows, input.args);
  // Before the training, in the order a person fixes a file: its own rows, then how the splits relate.
  const dataProblems: DataWarning[] = [];
  const duplicates = duplicateRowsWarning(data);
  if (duplicates !== null) dataProblems.push({ kind: 'duplicate_rows', message: duplicates });
  const unreadable = unreadableTextsWarning(data, input.args);
  if (unreadable !== null) dataProblems.push({ kind: 'unreadable_texts', message: unreadable });
  const startedAt = Date.now();
  const started = performance.now();
  const fitTimes: number[] = [];
  const refitHistory: TimedEpoch[] = [];
  const train = input.args.cascade ? trainCascade : trainTagger;
  const trained = train(split.train, split.validation, input.args, {
    ...input,
    onEpoch: (report) => {
      fitTimes.push(Date.now());
      input.onEpoch?.(report);
    },
    onRefitEpoch: (report) => {
      refitHistory.push({ ...report, time: Date.now() });
      input.onRefitEpoch?.(report);
    },
  });
  const trainingSeconds = (performance.now() - started) / 1000;
  const { warnings: trainedWarnings, trainedTags } = dataWarnings(fitRows, trained.model.tags, test.length);
  const checked = [
    ...dataProblems,
    ...trainedWarnings,
    ...overlapWarnings([...split.train, ...split.validation], test),
  ];
  const sliceDefinitions = input.slices ?? DEFAULT_SLICE_DEFINITIONS;
  // An encoder model is scored with the embeddings computed before the training (the same for every text).
  const scored = input.encoder ? bindEmbeddings(trained.model, input.encoder.embeddings) : trained.model;
  const evaluation = evaluateWithErrors(scored, test, compileSlices(sliceDefinitions));
  const report = evaluation.performance;
  const sliceRows: Record<string, number> = {};
  for (const { name } of sliceDefinitions) sliceRows[name] = report.slices[name]?.num_samples ?? 0;
  return {
    // A cascade's training returns the curve its τ was chosen from (src/train/cascade-training.ts).
    ...('curve' in trained
      ? { cascade: cascadeOutcome(trained as TrainedCascade, test, input.encoder!.embeddings) }
      : {}),
    model: trained.model,
    // onEpoch fires once per epoch of the history; an ensemble reports its last member's epochs.
    history: trained.history.map((report, index) => ({ ...report, time: fitTimes[index] ?? startedAt })),
    refitHistory,
    startedAt,
    trainingSeconds,
    threshold: trained.threshold,
    performance: report,
    confusionAndMistakes: evaluation.errors,
    validationF1: trained.validationF1,
    sizes: { train: split.train.length, validation: split.validation.length, test: test.length },
    testSet: { digest: testSetDigest(test), size: test.length },
    trainedTags,
    warnings: checked.map((warning) => warning.message),
    dataWarnings: checked,
    behaviour: runBehaviourSuite(scored, input.behaviour ?? DEFAULT_BEHAVIOUR_SUITE),
    slices: { definitions: sliceDefinitions, rows: sliceRows },
    // The vocabulary is that of the rows the returned model learnt from; the test split is predicted
    // once more (it is small) rather than threading the predictions out of the evaluation.
    reference: buildReferenceProfile({
      trainTexts: fitRows.map((row) => row.text),
      testTexts: test.map((row) => row.text),
      // `scored`: an encoder model predicts with the test texts' embeddings. The profile reads the
      // predicted tags and the largest probability only.
      testPredictions: scored.predict(
        test.map((row) => row.text),
        undefined,
        { probabilities: 1 },
      ),
      tags: trained.model.tags,
      multiLabel: trained.model.args.multi_label,
    }),
  };
}

/** The cascade's figures on the test split: the share routed, and each stage alone. */
function cascadeOutcome(
  trained: TrainedCascade,
  test: readonly LabelledText[],
  embeddings: EmbeddingLookup,
): CascadeOutcome {
  const { model } = trained;
  const { routed } = model.predictFast(
    test.map((row) => row.text),
    { probabilities: 1 },
  );
  const f1Alone = (stage: TagModel): number =>
    evaluate(bindEmbeddings(stage, embeddings), [...test]).overall.f1;
  return {
    curve: trained.curve,
    choice: trained.choice,
    fastClassifier: model.fast.args.classifier,
    test: {
      routed: test.length === 0 ? 0 : routed.length / test.length,
      fast_f1: f1Alone(model.fast),
      encoder_f1: f1Alone(model.encoderModel),
    },
  };
}
