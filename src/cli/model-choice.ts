/**
 * The model choice as the commands start it (src/train/model-choice/ does the choosing): whether a command
 * chooses (no argument naming the model, no --encoder or --cascade, no --no-model-choice), its plan
 * printed, the texts embedded only when an encoder candidate is in it, and the inputs of the training's
 * choice; `tagger optimize` takes the chosen candidate's arguments as its base (trial 1). Shared by
 * `train`, `optimize` and `retrain --model-choice`.
 */
import { DEFAULT_ENCODER } from '../encoder/resolve.js';
import {
  type BehaviourSuite,
  behaviourTexts,
  DEFAULT_BEHAVIOUR_SUITE,
  type LabelledText,
  parseTrainingArgs,
  type TrainEncoder,
  type TrainingArgs,
} from '../model/index.js';
import { trainingMemoryBudget } from '../train/memory-check.js';
import { type ChoiceReport, chooseModel, cpuMicroseconds } from '../train/model-choice/choose.js';
import { DATA_HANDLING_ARGS, encoderAvailability, prepareChoice } from '../train/model-choice/prepare.js';
import { argsForData, modelTagsOf, type TrainingInput } from '../train/pipeline.js';
import { splitData } from '../train/splits.js';
import { choiceTable, planLines } from './choice-output.js';
import { embedForTraining } from './embeddings.js';
import type { CliIo } from './io.js';

/** The flags the choice reads (train's; optimize and retrain have those that apply). */
export interface ChoiceFlags {
  modelChoice?: boolean;
  encoder?: string;
  cascade?: boolean;
  timeBudget?: number;
  candidates?: string[];
  seed: number;
  threads?: number;
  quiet?: boolean;
}

/** Whether the command chooses the model: no argument naming it (only data-handling ones), no flag naming one. */
export function choosesModel(flags: ChoiceFlags, explicit: ReadonlySet<string>): boolean {
  if (flags.modelChoice === false || flags.encoder !== undefined || flags.cascade === true) return false;
  return [...explicit].every((key) => (DATA_HANDLING_ARGS as readonly string[]).includes(key));
}

export interface PreparedChoice {
  /** The base arguments: the defaults and the user's data-handling ones, as the data decides them. */
  args: TrainingArgs;
  choice: NonNullable<TrainingInput['choice']>;
  /** The embeddings of every text, when an encoder candidate is in the plan. */
  encoder: TrainEncoder | undefined;
}

/**
 * The plan of the choice (printed on stderr unless quiet), the base arguments and, when an encoder
 * candidate is in the plan, the embeddings of every text; the budget counts the CPU from here.
 */
export async function prepareCommandChoice(
  flags: ChoiceFlags,
  given: { args: TrainingArgs; explicit: ReadonlySet<string> },
  input: { data: readonly LabelledText[]; testData?: readonly LabelledText[]; behaviour?: BehaviourSuite },
  io: CliIo,
): Promise<PreparedChoice> {
  const startedCpu = cpuMicroseconds();
  const quiet = flags.quiet === true;
  const dataArgs = Object.fromEntries(
    [...given.explicit].map((key) => [key, given.args[key as keyof TrainingArgs]]),
  );
  const preparation = prepareChoice({
    data: input.data,
    ...(input.testData ? { testData: input.testData } : {}),
    given: dataArgs,
    seed: flags.seed,
    threads: flags.threads ?? 1,
    ...(flags.timeBudget === undefined ? {} : { budgetSeconds: flags.timeBudget }),
    ...(flags.candidates === undefined ? {} : { only: flags.candidates }),
    extraTexts: behaviourTexts(input.behaviour ?? DEFAULT_BEHAVIOUR_SUITE),
    encoder: await encoderAvailability(),
    memoryBudget: trainingMemoryBudget(),
  });
  if (!quiet) io.stderr.write(planLines(preparation, input.data.length));
  // The texts are embedded once, before the training, only when an encoder candidate is in the plan.
  const encoder = preparation.needsEmbeddings
    ? await embedForTraining(parseTrainingArgs({ ...dataArgs, encoder: DEFAULT_ENCODER }), input, io, quiet)
    : undefined;
  return {
    args: argsForData(parseTrainingArgs(dataArgs), input.data, given.explicit),
    choice: {
      plan: preparation.plan,
      budgetSeconds: preparation.budgetSeconds,
      budgetSource: preparation.budgetSource,
      cleanupGiven: preparation.cleanupGiven,
      startedCpu,
    },
    encoder,
  };
}

/** What `tagger optimize` starts its search from: the chosen candidate's arguments, its table, its embeddings. */
export interface ChosenBase {
  args: TrainingArgs;
  report: ChoiceReport;
  encoder: TrainEncoder | undefined;
}

/**
 * The model choice run for its arguments only (no refit: `tagger optimize` trains every trial itself), on
 * the split `tagger train` would make; its table printed unless quiet or JSON.
 */
export async function chooseBaseArgs(
  flags: ChoiceFlags & { json?: boolean },
  given: { args: TrainingArgs; explicit: ReadonlySet<string> },
  input: { data: readonly LabelledText[]; testData?: readonly LabelledText[]; behaviour?: BehaviourSuite },
  io: CliIo,
): Promise<ChosenBase> {
  const prepared = await prepareCommandChoice(flags, given, input, io);
  const rows = prepared.args.subset === null ? input.data : input.data.slice(0, prepared.args.subset);
  const split = splitData(rows, input.testData !== undefined, flags.seed);
  const outcome = chooseModel({
    train: split.train,
    validation: split.validation,
    ...prepared.choice,
    seed: flags.seed,
    tags: modelTagsOf(rows, prepared.args),
    ...(prepared.encoder ? { encoder: prepared.encoder } : {}),
    charsPerText: rows.reduce((sum, row) => sum + row.text.length, 0) / Math.max(1, rows.length),
    refitChosen: false,
  });
  if (flags.quiet !== true && flags.json !== true) io.stderr.write(choiceTable(outcome.report));
  return { args: outcome.args, report: outcome.report, encoder: prepared.encoder };
}
