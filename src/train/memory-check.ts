/**
 * The memory check before a training: the estimate of its peak (src/model/memory-estimate.ts) against
 * what this process may use (src/platform: the container's limit, else the machine's memory), so a
 * training that would not fit stops at once with the estimate and the settings that shrink it, instead
 * of being killed by the kernel hours in. `--no-memory-check` trains anyway.
 */
import {
  BYTE_UNITS,
  dataShape,
  describeEstimate,
  estimateTrainingMemory,
  formatBytes,
  type LabelledText,
  type MemoryEstimate,
  multiLabelModelTags,
  type TrainingArgs,
  tagsOf,
} from '../model/index.js';
import { usableMemory } from '../platform/limits.js';

/** The share of the usable memory a training may plan to take (the rest: the OS, buffers, the estimate's error). */
const BUDGET_SHARE = 0.9;

/** A training whose estimated peak is over the memory this process may use. */
export class MemoryBudgetError extends Error {
  constructor(
    message: string,
    readonly estimate: MemoryEstimate,
    readonly budgetBytes: number,
  ) {
    super(message);
    this.name = 'MemoryBudgetError';
  }
}

/**
 * The memory training may use: `TAGGER_TRAIN_MEMORY` (bytes, or with a unit: `6GB`, `512MB`) when set,
 * else 90 % of what the cgroup or the machine allows.
 */
export function trainingMemoryBudget(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.TAGGER_TRAIN_MEMORY?.trim();
  if (given) {
    // The units of BYTE_UNITS.
    const match = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB)?$/i.exec(given);
    if (!match) {
      throw new RangeError(
        `TAGGER_TRAIN_MEMORY must be a size such as 6GB or 512MB (or bytes), got ${JSON.stringify(given)}`,
      );
    }
    const unit = (match[2] ?? 'B').toUpperCase() as (typeof BYTE_UNITS)[number];
    return Number(match[1]) * 1024 ** BYTE_UNITS.indexOf(unit);
  }
  return BUDGET_SHARE * usableMemory();
}

/** What shrinks a training of this kind, for the message (the settings a user can change). */
function remedies(args: TrainingArgs): string {
  if (args.classifier === 'fasttext') {
    return 'a smaller ft_buckets or ft_dim (--args), or ft_maxn 0 (no character n-grams)';
  }
  return `a higher min_df (fewer features; it is ${args.min_df}), fewer tags (a higher min_freq: it is ${args.min_freq}), or classifier fasttext, whose size grows with the words, not features x tags`;
}

/**
 * The estimate of training on `rows` with `args` on `threads` threads; throws a MemoryBudgetError when it
 * is over `budgetBytes`.
 */
export function checkTrainingMemory(
  rows: readonly LabelledText[],
  args: TrainingArgs,
  threads: number,
  budgetBytes: number = trainingMemoryBudget(),
): MemoryEstimate {
  const tags = multiLabelModelTags(rows.map(tagsOf), args.min_freq, args.accepted_tags).length;
  const shape = dataShape(
    rows.map((row) => row.text),
    tags,
    args,
  );
  const estimate = estimateTrainingMemory(shape, args, threads);
  if (estimate.bytes > budgetBytes) {
    throw new MemoryBudgetError(
      `this training would need ${describeEstimate(estimate)} for ${rows.length.toLocaleString('en-US')} rows and ${tags} tags, more than the ${formatBytes(budgetBytes)} this process may use (90 % of the container's memory limit or of the machine's memory; TAGGER_TRAIN_MEMORY sets it). Make it smaller with ${remedies(args)}; or train anyway with --no-memory-check (it may be killed when memory runs out)`,
      estimate,
      budgetBytes,
    );
  }
  return estimate;
}
