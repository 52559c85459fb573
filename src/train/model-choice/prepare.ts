/**
 * What `tagger train` works out before a model choice starts: the data's shape (measured on a sample:
 * model/memory-estimate.ts's dataShape, for the default features and for word n-grams), the budget, whether
 * the encoder is installed, each candidate's arguments on this data, and the plan (plan.ts) — so the plan is
 * printed and the embeddings computed (only when an encoder candidate is in it) before the training.
 */
import { DEFAULT_ENCODER, resolveEncoder } from '../../encoder/resolve.js';
import {
  type DataShape,
  dataShape,
  estimateTrainingMemory,
  type LabelledText,
  parseTrainingArgs,
  type TrainingArgs,
} from '../../model/index.js';
import { argsForData, modelTagsOf } from '../pipeline.js';
import { splitData } from '../splits.js';
import { type PlanContext, type PlannedCandidate, planCandidates } from './plan.js';
import {
  CANDIDATES,
  type CandidateRule,
  CHARS_PER_ENCODER_TOKEN,
  type ChoiceShape,
  defaultBudgetSeconds,
} from './rules.js';

/** The clean-up arguments: given any of them, the choice keeps the user's clean-up instead of comparing variants. */
export const CLEANUP_ARGS = Object.freeze([
  'lower',
  'stem',
  'stopwords',
  'ascii_only',
  'strip_urls',
] as const);

/**
 * The arguments a user may give and still have the model chosen: what rows and tags the data has, and
 * the clean-up (then kept as given).
 */
export const DATA_HANDLING_ARGS = Object.freeze([
  'subset',
  'min_freq',
  'accepted_tags',
  ...CLEANUP_ARGS,
] as const);

export interface ChoicePreparation {
  plan: PlannedCandidate[];
  /** The user gave clean-up arguments: no clean-up variants are compared. */
  cleanupGiven: boolean;
  shape: ChoiceShape;
  budgetSeconds: number;
  budgetSource: 'default' | 'given';
  /** An encoder candidate is in the plan: the texts must be embedded before the training. */
  needsEmbeddings: boolean;
}

export interface PrepareOptions {
  data: readonly LabelledText[];
  testData?: readonly LabelledText[];
  /** The user's data-handling arguments (DATA_HANDLING_ARGS), over the defaults. */
  given: Readonly<Record<string, unknown>>;
  seed: number;
  threads: number;
  /** --time-budget (seconds); absent: the default for the data's size. */
  budgetSeconds?: number;
  /** --candidates: only these (by name); absent: all. */
  only?: readonly string[];
  /** Texts the encoder would embed besides the data's (the behavioural suite's). */
  extraTexts: readonly string[];
  encoder: PlanContext['encoder'];
  memoryBudget: number;
}

/** Whether the default encoder is installed (its files are there; nothing is loaded). */
export async function encoderAvailability(): Promise<PlanContext['encoder']> {
  try {
    await resolveEncoder(DEFAULT_ENCODER);
    return { installed: true };
  } catch (error) {
    return { installed: false, why: `the encoder is not installed (${(error as Error).message})` };
  }
}

/** The feature arguments a data shape depends on (candidates that share them share one measurement). */
const featureKey = (args: TrainingArgs): string =>
  JSON.stringify([
    args.analyzer,
    args.ngram_min_range,
    args.ngram_max_range,
    args.min_df,
    args.lower,
    args.stem,
    args.stopwords,
    args.ascii_only,
    args.strip_urls,
  ]);

export function prepareChoice(options: PrepareOptions): ChoicePreparation {
  const data = options.data;
  const base = parseTrainingArgs(options.given);
  const rows = base.subset === null ? data : data.slice(0, base.subset);
  const split = splitData(rows, options.testData !== undefined, options.seed);
  const tags = modelTagsOf(rows, base).length;
  const texts = split.train.map((row) => row.text);
  const shapes = new Map<string, DataShape>();
  const shapeOf = (args: TrainingArgs): DataShape => {
    const key = featureKey(args);
    let shape = shapes.get(key);
    if (shape === undefined) {
      shape = dataShape(texts, tags, args, options.seed);
      shapes.set(key, shape);
    }
    return shape;
  };
  const argsOf = (rule: CandidateRule): TrainingArgs => {
    const explicit = new Set([...Object.keys(options.given), ...Object.keys(rule.args)]);
    return argsForData(parseTrainingArgs({ ...options.given, ...rule.args }), rows, explicit);
  };
  const perRow = (total: number): number => (texts.length === 0 ? 0 : total / texts.length);
  const standard = shapeOf(argsOf(CANDIDATES.find((rule) => rule.name === 'linear_svm')!));
  const words = shapeOf(argsOf(CANDIDATES.find((rule) => rule.name === 'linear_svm_words')!));
  const embedded = new Set([...rows, ...(options.testData ?? [])].map((row) => row.text));
  for (const text of options.extraTexts) embedded.add(text);
  const chars = rows.reduce((sum, row) => sum + row.text.length, 0) / Math.max(1, rows.length);
  const shape: ChoiceShape = {
    rows: split.train.length,
    validationRows: split.validation.length,
    tags,
    multiLabel: base.multi_label || rows.some((row) => row.tags !== undefined),
    nonZerosPerRow: perRow(standard.nonZeros),
    wordNonZerosPerRow: perRow(words.nonZeros),
    wordsPerRow: perRow(words.tokens),
    textsToEmbed: embedded.size,
    tokensPerText: chars / CHARS_PER_ENCODER_TOKEN,
  };
  const budgetSeconds = options.budgetSeconds ?? defaultBudgetSeconds(rows.length);
  const cleanupGiven = CLEANUP_ARGS.some((key) => Object.hasOwn(options.given, key));
  const plan = planCandidates({
    cleanupGiven,
    shape,
    budgetSeconds,
    encoder: options.encoder,
    threads: options.threads,
    argsOf,
    memoryOf: (args) => estimateTrainingMemory(shapeOf(args), args, options.threads).bytes,
    memoryBudget: options.memoryBudget,
    ...(options.only === undefined ? {} : { only: options.only }),
  });
  return {
    plan,
    cleanupGiven,
    shape,
    budgetSeconds,
    budgetSource: options.budgetSeconds === undefined ? 'default' : 'given',
    needsEmbeddings: plan.some((p) => p.skip === null && p.needsEncoder),
  };
}
