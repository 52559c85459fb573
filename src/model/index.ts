/** Public surface of src/model: pure, synchronous text + ML code (no I/O, no imports of other modules). */

export { drawFrom, type HyperParam, type SearchRange } from './arg-checks.js';
export {
  type Analyzer,
  argsForEncoder,
  balancedMultiLabelError,
  type Calibration,
  type Classifier,
  DEFAULT_TRAINING_ARGS,
  DEFAULT_VOTE_MEMBERS,
  ENCODER_DEFAULT_ARGS,
  type LearningRateSchedule,
  type MemberClassifier,
  parseSavedArgs,
  parseTrainingArgs,
  type SvmLoss,
  type ThresholdMode,
  type TrainingArgs,
  type VoteMemberArgs,
} from './args.js';
export {
  type DecodeOptions,
  decodeModel,
  encodeModel,
  MODEL_FILES,
  MODEL_FORMAT,
  statedWeightsBytes,
  weightsSizeProblem,
} from './artifact.js';
export { cascadeArgsProblem, checkCascadeArgs } from './cascade/cascade-args.js';
export {
  type CascadeChoiceRecord,
  CascadeTagModel,
  type FastAnswers,
  isCascade,
  spreadEmbeddings,
  textsNeedingEmbeddings,
} from './cascade/cascade-model.js';
export { isRouted, routingConfidence } from './cascade/routing.js';
export { CASCADE_STAGES, type CascadeStage, encoderStageArgs, fastStageArgs } from './cascade/stages.js';
export {
  type CascadeChoice,
  type CascadeCurve,
  type CascadeRule,
  type CurvePoint,
  cascadeCurve,
  chooseThreshold,
  type OutOfFoldAnswers,
  ruleOf,
} from './cascade/threshold-curve.js';
export {
  CLASSIFIER_FAMILIES,
  CLASSIFIERS,
  familyOf,
  learnsSeveralTags,
} from './classifiers/families.js';
export type { ClassifierFamily, FamilySearch, ProgressPlan, ProgressStep } from './classifiers/family.js';
export { type KindOfArgs, kindOfParams, ownSearchedArgs, unusedArgs } from './classifiers/kind-args.js';
export { MEMBER_CLASSIFIERS, MEMBER_DEFINITIONS } from './classifiers/members/member-table.js';
export { PARALLEL_JOBS } from './classifiers/parallel-jobs.js';
export { LOSSES } from './classifiers/sgd/sgd-params.js';
export {
  balancedOtherScore,
  chooseThreshold as chooseFallbackThreshold,
  type ThresholdEvidence,
  type ThresholdScore,
  thresholdEvidence,
  weightedF1Score,
} from './classifiers/thresholds.js';
export {
  type CsvDialect,
  type CsvParseError,
  csvProblem,
  csvReason,
  delimiterName,
  parseDelimiter,
  SNIFFED_DELIMITERS,
  sniffDelimiter,
} from './data-files/csv-dialect.js';
export {
  bomOf,
  decodeText,
  encodingOf,
  firstInvalidUtf8,
  TextEncodingError,
  TextStreamDecoder,
} from './data-files/encoding.js';
export {
  chiSquareSurvival,
  compareCategories,
  compareCounts,
  DEFAULT_DRIFT_OPTIONS,
  type DriftOptions,
  type DriftResult,
  type LabelledPrediction,
  type LiveQuality,
  liveQuality,
} from './drift/drift.js';
export {
  binOf,
  buildReferenceProfile,
  confidenceOf,
  DEFAULT_BINS,
  DRIFT_SIGNALS,
  type DriftSignal,
  type HashedVocabulary,
  type Histogram,
  hashVocabulary,
  NUMERIC_SIGNALS,
  type NumericSignal,
  PROFILE_FORMAT,
  type PredictionSignals,
  parseReferenceProfile,
  type ReferenceProfile,
  signalsOf,
  unseenShare,
  unseenShareHashed,
} from './drift/profile.js';
export { ModelFormatError, ModelInputError } from './errors.js';
export {
  BEHAVIOUR_KINDS,
  type BehaviourCase,
  type BehaviourKind,
  type BehaviourReport,
  type BehaviourSuite,
  behaviourTexts,
  parseBehaviourSuite,
  runBehaviourSuite,
} from './evaluation/behaviour.js';
export { DEFAULT_BEHAVIOUR_SUITE } from './evaluation/behaviour-suite.js';
export {
  type ConfusionAndMistakes,
  type ConfusionMatrix,
  MISTAKE_TEXT_CHARS,
  MISTAKES_KEPT,
  type Mistake,
  type TestMistakes,
} from './evaluation/confusion-and-mistakes.js';
export { evaluate, evaluateWithErrors } from './evaluation/evaluate.js';
export type { Metrics, Performance } from './evaluation/metrics.js';
export {
  compileSlices,
  DEFAULT_SLICE_DEFINITIONS,
  parseSliceDefinitions,
  type Slice,
  type SliceDefinition,
} from './evaluation/slices.js';
export {
  type Explanation,
  type FeatureContribution,
  isVoteExplanation,
  type LinearTagExplanation,
  type MemberExplanation,
  type VoteExplanation,
  type VoteTagExplanation,
} from './explain.js';
export {
  modelTags,
  multiLabelModelTags,
  normalizeTag,
  normalizeTagSet,
  OTHER_TAG,
  rowsPerTag,
  tagsOverThresholds,
} from './labels.js';
export {
  BYTE_UNITS,
  type DataShape,
  dataShape,
  describeEstimate,
  estimateTrainingMemory,
  formatBytes,
  type MemoryEstimate,
  type MemoryPart,
} from './memory-estimate.js';
export type {
  CandidateReport,
  ChoiceObjective,
  ChoiceReport,
  CleanupTry,
} from './model-choice-report.js';
export type { ParallelJob, ParallelRunner } from './parallel.js';
export {
  DEFAULT_LISTED_PROBABILITIES,
  limitProbabilities,
  listedProbabilities,
  mostProbable,
  type PredictOptions,
} from './prediction.js';
export { createRng, sampleIndices, shuffleInPlace } from './rng.js';
export { RUN_ARTIFACTS } from './run-artifacts.js';
export { DATA_CHECK_KINDS, type DataCheckKind, EVALUATION_METRICS, EVALUATION_TAGS } from './run-tags.js';
export { selectTags, type TagSelection } from './select.js';
export { stratifiedSplit } from './split.js';
export { neutraliseFormula, restoreFormula } from './spreadsheet-cells.js';
export {
  bindEmbeddings,
  type ClassesReport,
  type EpochReport,
  type LabelledText,
  type MemberReport,
  type Prediction,
  type TagModel,
  type ThresholdChoice,
  type TrainEncoder,
  type TrainedTagger,
  type TrainOptions,
  tagSetKey,
  tagsOf,
  trainTagger,
} from './tagger.js';
export { type EmbeddingLookup, type EncoderSpec, embeddingsOf } from './text/embeddings.js';
export {
  type DuplicateMatch,
  duplicateKey,
  NEAR_DUPLICATE_SIMILARITY,
  NearDuplicateIndex,
  textSimilarity,
} from './text/near-duplicates.js';
export { type CleanOptions, cleanText, LEGACY_CLEANUP, STOPWORDS } from './text/preprocess.js';
export { type CsrMatrix, TfidfVectorizer } from './text/tfidf.js';
