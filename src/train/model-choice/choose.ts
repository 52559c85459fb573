/**
 * The model choice itself: the plan's candidates (plan.ts), cheapest first, each trained on the training
 * split and scored on the validation split — its validated fit only, the refit deferred — within the time
 * budget (the estimates rescaled by how the candidates so far trained); the clean-up variants tried with
 * the first one; the best validation f1 kept (a tie, rules.ts's, goes to the one that predicts faster),
 * its threshold decided on held-out halves of the validation split, and only that one refitted on train +
 * validation. Synchronous: it runs in `tagger train`'s training thread.
 */

import type { CandidateReport, ChoiceObjective, ChoiceReport, CleanupTry } from '../../model/index.js';
import {
  balancedOtherScore,
  bindEmbeddings,
  encodeModel,
  type LabelledText,
  ModelInputError,
  normalizeTag,
  OTHER_TAG,
  type ParallelRunner,
  parseTrainingArgs,
  type TagModel,
  type ThresholdChoice,
  type TrainEncoder,
  type TrainedTagger,
  type TrainingArgs,
  type TrainOptions,
  thresholdEvidence,
  trainTagger,
  weightedF1Score,
} from '../../model/index.js';
import { trainCascade } from '../cascade-training.js';

export type { CandidateReport, ChoiceReport, CleanupTry };

import { DataError } from '../data.js';
import { CLEANUP_SAMPLE_ROWS, cleanupNotCompared, type PlannedCandidate } from './plan.js';
import {
  CHARS_PER_ENCODER_TOKEN,
  CLEANUP_VARIANTS,
  ENCODER_SECONDS_PER_TOKEN,
  FEW_OTHERS_SHARE,
  MIN_OTHER_ROWS,
  PREDICT_TIE,
  TIE_F1,
  tieMargin,
} from './rules.js';

/**
 * What the choice tells while it runs (its fits report through the usual TrainOptions callbacks too). The
 * estimates are the plan's, in CPU seconds: the progress rescales them by the wall clock it shows.
 */
export type ChoiceEvent =
  | {
      kind: 'start';
      name: string;
      variant: string | null;
      index: number;
      of: number;
      estimatedSeconds: number;
    }
  | { kind: 'done'; report: CandidateReport }
  | { kind: 'skip'; report: CandidateReport }
  | { kind: 'refit'; name: string; estimatedSeconds: number };

export interface ChoiceInput {
  train: LabelledText[];
  validation: LabelledText[];
  plan: readonly PlannedCandidate[];
  budgetSeconds: number;
  budgetSource: ChoiceReport['budget_source'];
  /**
   * The process's CPU time (µs, process.cpuUsage()'s user + system) when the training began: the budget
   * counts the CPU seconds spent since (an embedding pass before the training included), so a busy
   * machine, which stretches the wall time, does not change what is chosen.
   */
  startedCpu: number;
  /**
   * The CPU clock (µs) the budget and the candidates' CPU are read off: the process's (default, every
   * thread: the training's own threads included); a test passes its thread's, which other tests running
   * in the same process do not move.
   */
  cpuClock?: () => number;
  seed: number;
  /** The model's tags, counted on the whole file. */
  tags: readonly string[];
  parallel?: ParallelRunner;
  /** The embeddings of every text, when an encoder candidate is in the plan. */
  encoder?: TrainEncoder;
  /** Characters per text (mean), for the encoder's predict estimate. */
  charsPerText: number;
  /** The clean-up was given by the user: kept as it is, no variants compared. */
  cleanupGiven?: boolean;
  onChoice?: (event: ChoiceEvent) => void;
  fitCallbacks?: Pick<TrainOptions, 'onEpoch' | 'onRefitEpoch' | 'onMember' | 'onClasses'>;
  /** Refit the chosen candidate (default true); false: its validated fit is returned (`tagger optimize` needs its arguments only). */
  refitChosen?: boolean;
}

export interface ChoiceOutcome {
  /** The chosen model, refitted on train + validation when its args refit. */
  trained: TrainedTagger;
  /** Its arguments, as logged (the threshold mode chosen included). */
  args: TrainingArgs;
  report: ChoiceReport;
  /** Its validated fit's probabilities of the validation rows (model tag order), for the label issues. */
  validationProbabilities: readonly Float64Array[] | null;
  /** The chosen model's tags (the validation probabilities' order). */
  tags: readonly string[];
}

/** A trained candidate, kept while it is the best so far. */
interface Trained {
  planned: PlannedCandidate;
  args: TrainingArgs;
  /** Null once its refit has started. */
  trained: TrainedTagger | null;
  report: CandidateReport;
  /** What the choice compares: the objective's score of its validation predictions. */
  score: number;
  threshold: ThresholdChoice | null;
}

/** How the candidates are scored: the objective, and the validation rows of `other` it was decided on. */
interface Scoring {
  objective: ChoiceObjective;
  otherRows: number;
}

const PREDICT_SAMPLE = 200;
const errorsThatFailACandidate = [DataError, ModelInputError, RangeError];

/** A candidate's own fit in the plan's estimate: its embedding pass and the clean-up comparison apart. */
const fitSeconds = (planned: PlannedCandidate): number =>
  planned.estimatedSeconds - planned.embeddingSeconds - planned.cleanupSeconds;

/** The candidate's own arguments, as the table shows them. */
const ownArgs = (planned: PlannedCandidate, cleanup: Record<string, unknown>): Record<string, unknown> => ({
  ...planned.ruleArgs,
  ...cleanup,
});

export function chooseModel(input: ChoiceInput): ChoiceOutcome {
  const { plan, validation } = input;
  const tie = Math.max(TIE_F1, tieMargin(validation.length) / 2);
  const reports: CandidateReport[] = [];
  const tried: CleanupTry[] = [];
  const scoring = scoringFor(input);
  const tryOf = (name: string, result: Trained): CleanupTry => ({
    name,
    validation_f1: result.report.validation_f1!,
    ...(result.report.validation_balanced === undefined
      ? {}
      : { validation_balanced: result.report.validation_balanced }),
  });
  let cleanup: (typeof CLEANUP_VARIANTS)[number] = CLEANUP_VARIANTS[0]!;
  // A clean-up the user gave is theirs: no variant is compared (none adds its steps over theirs).
  const cleanupSkipped = input.cleanupGiven
    ? null
    : cleanupNotCompared(input.train.length, input.tags.length);
  let cleanupDecided = input.cleanupGiven === true || cleanupSkipped !== null;
  let best: Trained | null = null;
  // Actual over estimated seconds of each fit so far: later estimates are rescaled by their median (one
  // badly estimated kind does not rescale the others much).
  const ratios: number[] = [];
  const scale = (): number => {
    if (ratios.length === 0) return 1;
    const sorted = [...ratios].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    return Math.min(4, Math.max(0.25, median));
  };
  const clock = input.cpuClock ?? cpuMicroseconds;
  const elapsed = (): number => (clock() - input.startedCpu) / 1e6;
  const kept = plan.filter((p) => p.skip === null);

  const skip = (planned: PlannedCandidate, reason: string, args = ownArgs(planned, cleanup.args)): void => {
    const report: CandidateReport = {
      name: planned.name,
      summary: planned.summary,
      args,
      status: 'skipped',
      reason,
      estimated_seconds: planned.estimatedSeconds,
    };
    reports.push(report);
    input.onChoice?.({ kind: 'skip', report });
  };
  /**
   * Whether a candidate's fit and its refit still fit the budget (the embedding pass, done before the
   * training, is spent already); else why not.
   */
  const overBudget = (planned: PlannedCandidate): string | null => {
    const fit = fitSeconds(planned);
    const needed = scale() * (fit + planned.estimatedRefitSeconds);
    const left = input.budgetSeconds - elapsed();
    if (needed <= left) return null;
    const rescaled =
      ratios.length > 0
        ? ` (the plan's estimate × ${scale().toFixed(2)}, as the candidates so far trained)`
        : '';
    return `estimated ${needed.toFixed(1)} s with its refit${rescaled}, more than the ${Math.max(0, left).toFixed(1)} s left of the ${input.budgetSeconds.toFixed(0)} s CPU budget (--time-budget)`;
  };

  for (const planned of plan) {
    if (planned.skip !== null) {
      skip(planned, planned.skip);
      continue;
    }
    if (scoring.objective === 'balanced_other' && planned.args.cascade) {
      skip(
        planned,
        `the validation split's ${scoring.otherRows} rows of \`other\` are few (at most ${FEW_OTHERS_SHARE * 100} %): they call for a fallback threshold, which a cascade does not take`,
      );
      continue;
    }
    // The clean-up variants are compared with the first candidate tried, on a sample of the training
    // rows when there are more (a sample says as much about the clean-up at a fraction of the time).
    if (!cleanupDecided && !planned.needsEncoder && input.train.length > CLEANUP_SAMPLE_ROWS) {
      cleanupDecided = true;
      const sample = { ...input, train: input.train.slice(0, CLEANUP_SAMPLE_ROWS) };
      let winner: { variant: (typeof CLEANUP_VARIANTS)[number]; score: number } | null = null;
      for (const variant of CLEANUP_VARIANTS) {
        input.onChoice?.({
          kind: 'start',
          name: planned.name,
          variant: `${variant.name}, on ${CLEANUP_SAMPLE_ROWS.toLocaleString('en-US')} rows`,
          index: kept.indexOf(planned) + 1,
          of: kept.length,
          estimatedSeconds: planned.cleanupSeconds / CLEANUP_VARIANTS.length,
        });
        let result: Trained;
        try {
          result = trainCandidate(planned, variant.args, sample, scoring);
        } catch (error) {
          if (!errorsThatFailACandidate.some((kind) => error instanceof kind)) throw error;
          break;
        }
        tried.push(tryOf(variant.name, result));
        if (winner === null || result.score > winner.score + tieMargin(validation.length))
          winner = { variant, score: result.score };
      }
      cleanup = winner?.variant ?? CLEANUP_VARIANTS[0]!;
    }
    const variants = cleanupDecided ? [cleanup] : CLEANUP_VARIANTS;
    let candidate: Trained | null = null;
    let failure: string | null = null;
    for (const variant of variants) {
      const late = overBudget(planned);
      if (late !== null) {
        if (candidate === null && failure === null) failure = `skipped: ${late}`;
        break;
      }
      input.onChoice?.({
        kind: 'start',
        name: planned.name,
        variant: cleanupDecided ? null : variant.name,
        index: kept.indexOf(planned) + 1,
        of: kept.length,
        estimatedSeconds: fitSeconds(planned),
      });
      let result: Trained;
      try {
        result = trainCandidate(planned, variant.args, input, scoring);
      } catch (error) {
        if (!errorsThatFailACandidate.some((kind) => error instanceof kind)) throw error;
        failure = (error as Error).message;
        break;
      }
      // Fits estimated under two seconds say more about the fixed costs than about the estimates.
      const fitEstimate = fitSeconds(planned);
      if (fitEstimate >= 2) ratios.push(result.report.training_cpu_seconds! / fitEstimate);
      if (!cleanupDecided) tried.push(tryOf(variant.name, result));
      // The clean-up variant beyond `none` is kept only when it beats it by more than a tie.
      if (candidate === null || result.score > candidate.score + tieMargin(validation.length)) {
        candidate = result;
        cleanup = variant;
      }
    }
    if (tried.length > 0) cleanupDecided = true;
    if (candidate === null) {
      if (failure?.startsWith('skipped: ')) skip(planned, failure.slice('skipped: '.length));
      else {
        const report: CandidateReport = {
          name: planned.name,
          summary: planned.summary,
          args: ownArgs(planned, cleanup.args),
          status: 'failed',
          reason: failure ?? 'no result',
          estimated_seconds: planned.estimatedSeconds,
        };
        reports.push(report);
        input.onChoice?.({ kind: 'skip', report });
      }
      continue;
    }
    reports.push(candidate.report);
    input.onChoice?.({ kind: 'done', report: candidate.report });
    if (best === null || better(candidate, best, tie)) best = candidate;
    // Whatever is not the best is let go now: two models at most are held at once.
    candidate = null;
  }
  if (best === null) {
    const why = reports.map((r) => `${r.name}: ${r.reason ?? r.status}`).join('; ');
    throw new DataError(`data: the model choice could train none of its candidates (${why})`);
  }
  best.report.status = 'chosen';
  const seconds = elapsed();
  const chosen = best;
  best = null;
  if (input.refitChosen !== false) {
    input.onChoice?.({
      kind: 'refit',
      name: chosen.planned.name,
      estimatedSeconds: chosen.planned.estimatedRefitSeconds,
    });
  }
  let validated: TrainedTagger | null = chosen.trained;
  chosen.trained = null;
  const validationProbabilities = validated!.validationProbabilities ?? null;
  const tags = validated!.model.tags;
  const refit = validated!.refit;
  const threshold = chosen.threshold;
  let trained: TrainedTagger;
  // A model without a refit (a cascade: its stages are trained whole) takes no threshold of the choice's;
  // any other lets its validated fit go before the refit starts (see TrainedTagger.refit).
  if (refit === undefined || input.refitChosen === false) trained = validated!;
  else {
    validated = null;
    trained = refit(threshold ?? undefined);
  }
  const args = threshold === null ? chosen.args : { ...chosen.args, threshold: threshold.mode };
  return {
    trained,
    args,
    report: {
      method: 'validation_split',
      training_rows: input.train.length,
      validation_rows: validation.length,
      budget_seconds: input.budgetSeconds,
      budget_source: input.budgetSource,
      objective: scoring.objective,
      other_rows: scoring.otherRows,
      cleanup: {
        chosen: input.cleanupGiven ? 'given' : cleanup.name,
        tried,
        ...(cleanupSkipped === null ? {} : { reason: cleanupSkipped }),
      },
      candidates: reports,
      chosen: chosen.planned.name,
      rule: `the best weighted f1${scoring.objective === 'balanced_other' ? ` of the argmax answers (only ${scoring.otherRows} rows are other: each one's fallback threshold placed for the balanced score, the tags' accuracy and other's recall, half each)` : ''} on the ${validation.length.toLocaleString('en-US')} validation rows; within ${tie.toFixed(4)} of it, the one estimated to predict faster (by more than ${PREDICT_TIE}×, else the cheaper kind to serve)`,
      seconds,
    },
    validationProbabilities,
    tags,
  };
}

/**
 * Whether `a` beats `b`: a better score by more than a tie; on a tie, an estimated prediction cheaper by
 * more than PREDICT_TIE, else the lower serving rank (rules.ts). Estimated, so the same data always gives
 * the same choice.
 */
function better(a: Trained, b: Trained, tie: number): boolean {
  if (Math.abs(a.score - b.score) > tie) return a.score > b.score;
  const [ca, cb] = [a.planned.estimatedPredictUs, b.planned.estimatedPredictUs];
  if (ca * PREDICT_TIE < cb) return true;
  if (cb * PREDICT_TIE < ca) return false;
  return a.planned.servingRank < b.planned.servingRank;
}

/**
 * The objective for this validation split: `balanced_other` for a single-label model whose split has at
 * least MIN_OTHER_ROWS rows of `other` that are at most FEW_OTHERS_SHARE of it, else `weighted_f1`.
 */
function scoringFor(input: ChoiceInput): Scoring {
  const multiLabel = input.plan.some((p) => p.args.multi_label);
  const classes = new Set(input.tags);
  const otherRows = multiLabel
    ? 0
    : input.validation.filter((row) => normalizeTag(row.tag, classes) === OTHER_TAG).length;
  const few =
    !multiLabel &&
    otherRows >= MIN_OTHER_ROWS &&
    otherRows <= FEW_OTHERS_SHARE * Math.max(1, input.validation.length);
  return { objective: few ? 'balanced_other' : 'weighted_f1', otherRows };
}

function trainCandidate(
  planned: PlannedCandidate,
  cleanup: Readonly<Record<string, unknown>>,
  input: ChoiceInput,
  scoring: Scoring,
): Trained {
  const single = !planned.args.multi_label;
  const args = parseTrainingArgs({
    ...planned.args,
    ...cleanup,
    // The choice decides a single-label threshold itself, on held-out halves of the validation split.
    ...(single ? { threshold: 'argmax' } : {}),
  });
  const options: TrainOptions = {
    seed: input.seed,
    tags: input.tags,
    deferRefit: true,
    ...(input.parallel ? { parallel: input.parallel } : {}),
    ...(args.encoder !== null && input.encoder ? { encoder: input.encoder } : {}),
    ...input.fitCallbacks,
  };
  const clock = input.cpuClock ?? cpuMicroseconds;
  const cpu = clock();
  const started = performance.now();
  const trained = args.cascade
    ? trainCascade(input.train, input.validation, args, options)
    : trainTagger(input.train, input.validation, args, options);
  const used = clock() - cpu;
  const seconds = (performance.now() - started) / 1000;
  const scored =
    input.encoder && args.encoder !== null
      ? bindEmbeddings(trained.model, input.encoder.embeddings)
      : trained.model;
  const { score, f1, argmaxF1, balanced, threshold } = scoreOf(trained, scored, args, input, scoring);
  const report: CandidateReport = {
    name: planned.name,
    summary: planned.summary,
    args: ownArgs(planned, cleanup),
    status: 'trained',
    estimated_seconds: planned.estimatedSeconds,
    training_seconds: seconds,
    training_cpu_seconds: used / 1e6,
    validation_f1: f1,
    ...(balanced === null ? {} : { validation_balanced: balanced }),
    ...(argmaxF1 === null ? {} : { validation_f1_argmax: argmaxF1 }),
    ...(single ? { threshold: threshold?.threshold ?? null } : {}),
    predict_us: predictMicroseconds(scored, input.validation),
    estimated_predict_us: planned.estimatedPredictUs,
    ...(args.encoder === null
      ? {}
      : {
          encoder_predict_us:
            1e6 * ENCODER_SECONDS_PER_TOKEN * (input.charsPerText / CHARS_PER_ENCODER_TOKEN + 2),
        }),
    model_bytes: Object.values(encodeModel(trained.model)).reduce((sum, bytes) => sum + bytes.byteLength, 0),
  };
  return { planned, args, trained, report, score, threshold };
}

/**
 * The candidate's validation score. Multi-label models' per-tag thresholds were chosen on the split already
 * (every candidate alike), and a cascade's f1 is its stages' validated fits routed by its τ: their f1 is
 * the score. A single-label model's score is its argmax predictions', or the cross-fitted predictions' with
 * a fallback threshold when held-out halves say it helps (by more than one row's share of the objective) —
 * the weighted f1 or the balanced score, whichever the objective is (scoringFor).
 */
function scoreOf(
  trained: TrainedTagger,
  model: TagModel,
  args: TrainingArgs,
  input: ChoiceInput,
  scoring: Scoring,
): {
  score: number;
  f1: number;
  argmaxF1: number | null;
  balanced: number | null;
  threshold: ThresholdChoice | null;
} {
  const whole = { score: trained.validationF1, f1: trained.validationF1, balanced: null, threshold: null };
  if (args.multi_label || args.cascade) return { ...whole, argmaxF1: null };
  const probabilities =
    trained.validationProbabilities ??
    model
      .predict(
        input.validation.map((row) => row.text),
        undefined,
        { probabilities: 'all' },
      )
      .map((p) => Float64Array.from(model.tags, (tag) => p.probabilities[tag] ?? 0));
  const classes = new Set(model.tags);
  const top = new Float64Array(probabilities.length);
  const argmax = probabilities.map((p, r) => {
    let best = 0;
    for (let k = 1; k < p.length; k++) if (p[k]! > p[best]!) best = k;
    top[r] = p[best]!;
    return model.tags[best]!;
  });
  const truth = input.validation.map((row) => normalizeTag(row.tag, classes));
  const balancedObjective = scoring.objective === 'balanced_other';
  const argmaxF1 = weightedF1Score(truth, argmax);
  // Under the balanced objective the candidates are ranked by their argmax answers' weighted f1 (the
  // tags' quality, which thousands of rows measure), not by the balanced score, which a handful of rows of
  // `other` would decide by their luck; the threshold is then placed for the balanced score.
  const scoreOfPredictions = (predicted: readonly string[]) => {
    const balanced = balancedObjective ? balancedOtherScore(truth, predicted) : null;
    const f1 = balancedObjective ? argmaxF1 : weightedF1Score(truth, predicted);
    return { f1, balanced, score: f1 };
  };
  const plain = { ...scoreOfPredictions(argmax), argmaxF1, threshold: null };
  // A threshold answers `other` where the model is unsure: it is tried only when the split has rows of
  // `other` (texts that fit no tag), which it can then get right; without them it would trade recall for
  // precision on a tag no row has. The refit carries it into the model, so a model without one keeps argmax.
  if (trained.refit === undefined || scoring.otherRows < MIN_OTHER_ROWS) return plain;
  const mode = balancedObjective ? 'balanced' : 'tuned';
  const evidence = thresholdEvidence(top, argmax, truth, input.seed, mode);
  // One row's share of the objective: a threshold has to win by more than that on rows it was not chosen on.
  const oneRow = balancedObjective ? 1 / (2 * scoring.otherRows) : 1 / Math.max(1, truth.length);
  if (evidence.crossFitted <= evidence.argmax + oneRow) return plain;
  return {
    ...scoreOfPredictions(evidence.crossFittedPredictions),
    argmaxF1,
    threshold: { threshold: evidence.threshold, mode },
  };
}

/**
 * µs per text of one-text predictions over a sample of the validation texts: the best of three passes
 * after a warm-up pass (the first candidate's code is still being compiled when it is measured).
 */
function predictMicroseconds(model: TagModel, validation: readonly LabelledText[]): number {
  const texts = validation.slice(0, PREDICT_SAMPLE).map((row) => row.text);
  if (texts.length === 0) return 0;
  for (const text of texts) model.predict([text]);
  let best = Number.POSITIVE_INFINITY;
  for (let pass = 0; pass < 3; pass++) {
    // Wall time: a pass takes milliseconds, finer than the CPU clocks' ticks; the best of three passes
    // leaves out most of what a busy machine adds.
    const started = performance.now();
    for (const text of texts) model.predict([text]);
    best = Math.min(best, (1000 * (performance.now() - started)) / texts.length);
  }
  return best;
}

/** The process's CPU time so far (µs, every thread). */
export function cpuMicroseconds(): number {
  const used = process.cpuUsage();
  return used.user + used.system;
}

/** This thread's CPU time so far (µs): what tests measure a choice by, whatever else their process runs. */
export function threadCpuMicroseconds(): number {
  const used = process.threadCpuUsage();
  return used.user + used.system;
}
