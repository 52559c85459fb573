/**
 * What a classifier family is: the one interface every family of classifiers implements (the SGD
 * classifiers, the member classifiers and their soft vote, …), so training, saving and loading a model,
 * progress and `tagger optimize` dispatch by a lookup in families.ts instead of branching on names. A
 * family's model explains itself (TagModel.explain). To add a family: a folder beside sgd/ and members/
 * with an object of this type, listed in families.ts; the contract suite then runs over its classifiers.
 */
import type { HyperParam } from '../arg-checks.js';
import type { CheckedManifest, DecodeOptions } from '../artifact-common.js';
import type { DataShape, MemoryPart } from '../data-shape.js';
import type {
  ClassesReport,
  EpochReport,
  LabelledText,
  MemberReport,
  TagModel,
  TrainedTagger,
  TrainOptions,
} from '../tag-model.js';
import type { Classifier, TrainingArgs } from '../training-args.js';

/** A model in the saved format: the family's fields of tagger-model.json and the bytes of weights.bin. */
export interface EncodedModel {
  /** Written after the fields every model has (format, tags, args, thresholds, checksum). */
  manifest: Record<string, unknown>;
  bytes: Uint8Array;
}

/** Where a training is, for a progress bar: the steps done and what the bar says. */
export interface ProgressStep {
  done: number;
  message: string;
}

/** How a family's training reports progress: its steps in all, their unit, and each report as a step. */
export interface ProgressPlan {
  total: number;
  /** What a step is (`epochs`, `member fits`): messages say `3 of 120 epochs`. */
  unit: string;
  onEpoch(report: EpochReport): ProgressStep;
  onRefitEpoch(report: EpochReport): ProgressStep;
  /** Null when the family trains no members. */
  onMember(report: MemberReport): ProgressStep | null;
  /** A member's fit among its classes (`done` may be fractional: between two member fits); null: none. */
  onClasses?(report: ClassesReport): ProgressStep | null;
}

/** What `tagger optimize` draws of a family. */
export interface FamilySearch {
  /** The choices the search picks among, one per draw (`sgd`; each member classifier, `soft_vote`). */
  readonly choices: readonly string[];
  /** A drawn choice's classifier arguments, over `base` (which fixes everything else). */
  draw(choice: string, base: TrainingArgs, random: () => number): Record<string, unknown>;
  /** Whether a choice can be drawn over `base` (an encoder run: only the choices that read embeddings); absent: all. */
  allows?(choice: string, base: TrainingArgs): boolean;
}

export interface ClassifierFamily {
  readonly name: string;
  /** The `classifier` values it trains. */
  readonly classifiers: readonly Classifier[];
  /** Whether a classifier of it can learn several tags per text (one-vs-rest; softmax cannot). */
  learnsSeveralTags(classifier: Classifier): boolean;
  /** The model format that introduced the family: a manifest naming its classifiers in an older one is refused. */
  readonly since: string;
  /** Whether its models take sentence embeddings beside the texts (`encoder`). */
  readonly takesEmbeddings: boolean;
  /** Its own hyper-parameters (top-level training arguments): each one's check, default and search range. */
  readonly hyperParams: Readonly<Record<string, HyperParam>>;
  /**
   * The family's part of validating training args, after every argument's own check: combinations it
   * refuses, and what it derives (a vote's filled-in `members`). `raw`: the args as given.
   */
  resolveArgs(args: TrainingArgs, raw: Readonly<Record<string, unknown>>): TrainingArgs;
  train(
    train: LabelledText[],
    validation: LabelledText[],
    args: TrainingArgs,
    options: TrainOptions,
  ): TrainedTagger;
  /** A model this family trained (or decoded), in the saved format; refuses any other model. */
  encode(model: TagModel): EncodedModel;
  /** The model of a checked manifest and its weights; every problem a ModelFormatError. */
  decode(checked: CheckedManifest, bytes: Uint8Array, options: DecodeOptions): TagModel;
  progress(args: TrainingArgs): ProgressPlan;
  /**
   * What its training holds at its peak on data of this shape with `threads` threads (its features,
   * weights, solver state), beside the process and the texts: memory-estimate.ts sums the parts.
   */
  memoryParts(shape: DataShape, args: TrainingArgs, threads: number): MemoryPart[];
  readonly search: FamilySearch;
}
