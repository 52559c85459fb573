/**
 * The plan of a model choice: which candidates of the rules' table (rules.ts) are tried on this data, in
 * which order, with which estimated training time, and why each of the others is not — known before
 * anything is trained or embedded, so `tagger train` says it first and embeds only when an encoder
 * candidate is in the plan. Pure: the data's shape, the budget and what the machine has are its inputs.
 */
import type { TrainingArgs } from '../../model/index.js';
import { CANDIDATES, type CandidateRule, type ChoiceShape, embeddingCost } from './rules.js';

/** What the machine offers the candidates. */
export interface PlanContext {
  shape: ChoiceShape;
  /** The time budget (CPU seconds of the whole training). */
  budgetSeconds: number;
  /** Whether the default sentence encoder is installed, or why not (a message). */
  encoder: { installed: true } | { installed: false; why: string };
  /** Threads the training may use (the memory estimate depends on them; the budget counts CPU seconds). */
  threads: number;
  /** A candidate's arguments on this data (the user's data-handling args and the large-data settings applied). */
  argsOf: (rule: CandidateRule) => TrainingArgs;
  /** The estimated peak memory of training these args, and what the process may use (bytes). */
  memoryOf: (args: TrainingArgs) => number;
  memoryBudget: number;
  /** Only these candidates (`--candidates`); absent: every one. */
  only?: readonly string[];
  /** The user gave the clean-up: no variants are compared (and none is counted). */
  cleanupGiven?: boolean;
}

/** A candidate as planned: plain data (it crosses to the training thread). */
export interface PlannedCandidate {
  name: string;
  summary: string;
  /** The rule's own arguments (what the table shows), and the whole arguments it trains with. */
  ruleArgs: Readonly<Record<string, unknown>>;
  args: TrainingArgs;
  needsEncoder: boolean;
  /** Estimated µs of one prediction (rules.ts's predictCost), and the serving rank: what breaks a tie. */
  estimatedPredictUs: number;
  servingRank: number;
  /** Estimated CPU seconds of its validated fit (the embedding included for the first encoder candidate). */
  estimatedSeconds: number;
  /** Of those, the embedding pass's (done before the training: spent by the time the candidate starts). */
  embeddingSeconds: number;
  /** Of those, the clean-up variants' comparison (the first candidate tried only). */
  cleanupSeconds: number;
  /** Estimated CPU seconds of its refit, should it be chosen. */
  estimatedRefitSeconds: number;
  /** Why it is not tried (null: it is). */
  skip: string | null;
}

const seconds = (value: number): string => `${value < 10 ? value.toFixed(1) : Math.round(value)} s`;

/** A count for a person: `20,000`. */
const count = (n: number): string => Math.round(n).toLocaleString('en-US');

/**
 * The candidates in the order they are tried (cheapest estimate first), each with its estimates and,
 * when it is not tried, why: several tags per text it cannot learn, too few rows, no encoder, over the
 * memory, or over what the budget leaves once every cheaper kept candidate and its own refit are counted.
 */
export function planCandidates(context: PlanContext): PlannedCandidate[] {
  const { shape } = context;
  const refitShare = (shape.rows + shape.validationRows) / Math.max(1, shape.rows);
  const embedding = embeddingCost(shape);
  const estimated = CANDIDATES.map((rule) => {
    const fit = rule.cost(shape);
    return { rule, fit, refit: fit * refitShare };
  });
  // Cheapest first, an encoder candidate with the embedding pass its kind needs; the encoder candidates
  // share that pass, paid by the first one tried.
  const order = (c: (typeof estimated)[number]): number => c.fit + (c.rule.needsEncoder ? embedding : 0);
  estimated.sort((a, b) => order(a) - order(b));
  const fitOf = new Map(estimated.map((c) => [c.rule.name, c.fit]));
  /** The plan, with a fallback left out where the kind it stands in for is kept (`keptAlready`, pass 1). */
  const plan = (keptAlready: ReadonlySet<string> | null): PlannedCandidate[] => {
    let committed = 0;
    let embedded = false;
    let first = true;
    return estimated.map(({ rule, fit, refit }): PlannedCandidate => {
      const args = context.argsOf(rule);
      const embeds = rule.needsEncoder && !embedded ? embedding : 0;
      // The first one tried also compares the clean-up variants, on a sample of the rows.
      const cleanup =
        first &&
        !rule.needsEncoder &&
        context.cleanupGiven !== true &&
        cleanupNotCompared(shape.rows, shape.tags) === null
          ? cleanupCost(fit, shape.rows)
          : 0;
      const planned = {
        name: rule.name,
        summary: rule.summary,
        ruleArgs: { ...rule.args },
        args,
        needsEncoder: rule.needsEncoder,
        estimatedPredictUs: rule.predictCost(shape),
        servingRank: rule.servingRank,
        estimatedSeconds: fit + embeds + cleanup,
        embeddingSeconds: embeds,
        cleanupSeconds: cleanup,
        estimatedRefitSeconds: rule.args.cascade === true ? 0 : refit,
      };
      const fallback = rule.fallbackFor;
      // A candidate named in --candidates is tried where it can be: the rules' judgement of when it is
      // worth trying (a fallback, too few rows) gives way; the encoder, memory and the budget do not.
      const named = context.only?.includes(rule.name) === true;
      const better =
        named || fallback === undefined || keptAlready === null
          ? undefined
          : fallback.instead.find(
              (name) =>
                keptAlready.has(name) && fit > fallback.share * (fitOf.get(name) ?? Number.POSITIVE_INFINITY),
            );
      const skip =
        keptAlready === null && fallback !== undefined && !named
          ? 'a fallback, decided with the kind it stands in for'
          : better !== undefined
            ? `${better} fits the budget and is tried: ${fallback!.why}`
            : skipReason(rule, planned, context, committed);
      if (skip === null) {
        committed += planned.estimatedSeconds;
        if (rule.needsEncoder) embedded = true;
        if (!rule.needsEncoder) first = false;
      }
      return { ...planned, skip };
    });
  };
  // Pass 1 without the fallbacks says which kinds they stand in for are kept; each pass after it plans
  // with the kinds the last one kept, until they stay the same (a fallback of a fallback — fastText of
  // the word SVM — needs the third).
  const keptOf = (planned: PlannedCandidate[]) =>
    new Set(planned.filter((p) => p.skip === null).map((p) => p.name));
  let kept = keptOf(plan(null));
  let planned = plan(kept);
  for (let pass = 0; pass < CANDIDATES.length; pass++) {
    const next = keptOf(planned);
    if (next.size === kept.size && [...next].every((name) => kept.has(name))) break;
    kept = next;
    planned = plan(kept);
  }
  return planned;
}

/** The rows the clean-up variants are compared on (a sample of the training split's, when it has more). */
export const CLEANUP_SAMPLE_ROWS = 2_000;

/** Fewest rows per tag in the clean-up comparison's sample for it to say anything. */
export const CLEANUP_MIN_ROWS_PER_TAG = 10;

/**
 * Why the clean-up variants are not compared on this data (null: they are): a sample of
 * CLEANUP_SAMPLE_ROWS rows holds too few rows of each tag (at 500 tags, 4: validation f1 0.04 either way).
 * Data of no more rows compares them in the first candidate's own fits.
 */
export function cleanupNotCompared(trainingRows: number, tags: number): string | null {
  if (trainingRows <= CLEANUP_SAMPLE_ROWS) return null;
  const perTag = CLEANUP_SAMPLE_ROWS / Math.max(1, tags);
  if (perTag >= CLEANUP_MIN_ROWS_PER_TAG) return null;
  return `not compared: a sample of ${CLEANUP_SAMPLE_ROWS.toLocaleString('en-US')} rows holds ${perTag.toFixed(0)} per tag of ${tags.toLocaleString('en-US')} (fewer than ${CLEANUP_MIN_ROWS_PER_TAG} say nothing of it); --args with stopwords, ascii_only or strip_urls gives one`;
}

/** Two fits of the first candidate on a sample of the rows (none when the rows are no more: the fit is the candidate's). */
const cleanupCost = (fit: number, rows: number): number =>
  rows <= CLEANUP_SAMPLE_ROWS ? fit : 2 * fit * (CLEANUP_SAMPLE_ROWS / rows);

function skipReason(
  rule: CandidateRule,
  planned: Omit<PlannedCandidate, 'skip'>,
  context: PlanContext,
  committed: number,
): string | null {
  const { shape } = context;
  if (context.only !== undefined && !context.only.includes(rule.name)) return 'not in --candidates';
  if (shape.multiLabel && !rule.multiLabel) return 'does not learn several tags per text';
  if (rule.minRows !== null && shape.rows < rule.minRows.rows && !context.only?.includes(rule.name)) {
    return `fewer than ${count(rule.minRows.rows)} training rows (${count(shape.rows)}): ${rule.minRows.why}`;
  }
  if (rule.needsEncoder && !context.encoder.installed) return context.encoder.why;
  const memory = context.memoryOf(planned.args);
  if (memory > context.memoryBudget) {
    return `needs about ${(memory / 2 ** 30).toFixed(1)} GB, more than the ${(context.memoryBudget / 2 ** 30).toFixed(1)} GB this process may use`;
  }
  const needed = planned.estimatedSeconds + planned.estimatedRefitSeconds;
  const left = context.budgetSeconds - committed;
  if (needed > left) {
    return `estimated ${seconds(needed)} with its refit, more than the ${seconds(Math.max(0, left))} left of the ${seconds(context.budgetSeconds)} CPU budget (--time-budget)`;
  }
  return null;
}
