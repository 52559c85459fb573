/**
 * How much memory a training will take, estimated before it starts, so a training that would not fit
 * says so (with the estimate and the setting that fixes it) instead of being killed hours in. The shape
 * of the data — features, non-zeros, words — is measured on a seeded sample of the rows and extrapolated
 * to all of them by Heaps' law (a vocabulary grows as rows^β, β fitted on two sample sizes); each family
 * then says what its training holds (ClassifierFamily.memoryParts). An estimate within a factor of about
 * 1.5 either way is the aim: the bench's `scale` section prints it beside the measured peak.
 */
import { encoderStageArgs, fastStageArgs } from './cascade/stages.js';
import { familyOf } from './classifiers/families.js';
import { formatCount as count, type DataShape, type MemoryEstimate, type MemoryPart } from './data-shape.js';
import { ModelInputError } from './errors.js';
import { sampleIndices } from './rng.js';
import { fitVectorizer } from './text/features.js';
import { cleanText } from './text/preprocess.js';
import type { TrainingArgs } from './training-args.js';

export type { DataShape, MemoryEstimate, MemoryPart } from './data-shape.js';

/** What a Node process holds before any data: the runtime, the code, the tracking client. */
const BASE_BYTES = 200 * 2 ** 20;
/** Rows vectorized to measure the shape: enough for a stable β, well under a second. */
const SAMPLE_ROWS = 2_000;

/** The units of sizes, each 1024 times the one before (formatBytes writes them, TAGGER_TRAIN_MEMORY reads them). */
export const BYTE_UNITS = ['B', 'KB', 'MB', 'GB', 'TB'] as const;

/** `<n> B/KB/MB/GB` in powers of 1024, one decimal from MB up. */
export function formatBytes(bytes: number): string {
  const units = BYTE_UNITS;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit < 2 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

/** Heaps' law through (n1, v1) and (n2, v2), evaluated at n (β kept in [0.3, 1]: a vocabulary never shrinks). */
function heaps(n1: number, v1: number, n2: number, v2: number, n: number): number {
  if (n <= n2 || v1 <= 0 || v2 <= v1) return n <= n2 ? v2 : v2 * (n / n2) ** 0.3;
  const beta = Math.min(1, Math.max(0.3, Math.log(v2 / v1) / Math.log(n2 / n1)));
  return v2 * (n / n2) ** beta;
}

/** The shape of training on `texts` with `tags` learnt tags, measured on a sample and extrapolated. */
export function dataShape(texts: readonly string[], tags: number, args: TrainingArgs, seed = 0): DataShape {
  const rows = texts.length;
  const sample = Array.from(sampleIndices(rows, SAMPLE_ROWS, seed), (i) => cleanText(texts[i]!, args));
  const half = sample.slice(0, Math.max(1, Math.floor(sample.length / 2)));
  const vocabulary = (docs: readonly string[]) => {
    // min_df 1 here: the small sample would see few n-grams twice; the full data's count is what matters.
    try {
      const vectorizer = fitVectorizer(docs, { ...args, min_df: 1 });
      return { size: vectorizer.size, nonZeros: vectorizer.transform(docs).indices.length };
    } catch (error) {
      // Texts without a single n-gram: nothing to hold; the training says what is wrong with them.
      if (error instanceof ModelInputError) return { size: 0, nonZeros: 0 };
      throw error;
    }
  };
  const small = vocabulary(half);
  const large = vocabulary(sample);
  const words = (docs: readonly string[]) => {
    const seen = new Set<string>();
    let tokens = 0;
    for (const doc of docs) {
      for (const word of doc.split(/\s+/)) {
        if (word === '') continue;
        seen.add(word);
        tokens++;
      }
    }
    return { distinct: seen.size, tokens };
  };
  const wordsSmall = words(half);
  const wordsLarge = words(sample);
  let textBytes = 0;
  for (const text of texts) textBytes += 2 * text.length;
  const perRow = sample.length === 0 ? 0 : 1 / sample.length;
  return {
    rows,
    tags,
    // min_df m keeps the n-grams of at least m documents: under Zipf's law about 1/m of them (measured at
    // 50,000 rows x 500 tags, min_df 2: the estimate then 1.5x the peak, without it 2.7x).
    features: Math.round(
      heaps(half.length, small.size, sample.length, large.size, rows) / Math.max(1, args.min_df),
    ),
    nonZeros: Math.round(large.nonZeros * perRow * rows),
    words: Math.round(heaps(half.length, wordsSmall.distinct, sample.length, wordsLarge.distinct, rows)),
    tokens: Math.round(wordsLarge.tokens * perRow * rows),
    textBytes,
  };
}

/** The estimate of a training's peak memory: the process, the texts, and what the family holds. */
export function estimateTrainingMemory(
  shape: DataShape,
  args: TrainingArgs,
  threads: number,
): MemoryEstimate {
  const parts: MemoryPart[] = [
    { what: 'the process', bytes: BASE_BYTES },
    // The rows as read, cleaned, and split (copies of the strings' references only).
    { what: `${count(shape.rows)} texts, read and cleaned`, bytes: 3 * shape.textBytes },
    ...modelParts(shape, args, Math.max(1, threads)),
  ];
  return { bytes: parts.reduce((sum, part) => sum + part.bytes, 0), parts, shape };
}

/**
 * What the family holds while it trains; a cascade's stages (and their out-of-fold models) train one after
 * another, so the larger of the two stages' parts.
 */
function modelParts(shape: DataShape, args: TrainingArgs, threads: number): MemoryPart[] {
  if (!args.cascade) return familyOf(args.classifier).memoryParts(shape, args, threads);
  const stages = [fastStageArgs(args), encoderStageArgs(args)].map((stage) =>
    familyOf(stage.classifier).memoryParts(shape, stage, threads),
  );
  const total = (parts: MemoryPart[]): number => parts.reduce((sum, part) => sum + part.bytes, 0);
  return total(stages[0]!) >= total(stages[1]!) ? stages[0]! : stages[1]!;
}

/** One line: the estimate and its largest parts. */
export function describeEstimate(estimate: MemoryEstimate): string {
  const largest = [...estimate.parts]
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3)
    .map((part) => `${part.what}: ${formatBytes(part.bytes)}`);
  return `about ${formatBytes(estimate.bytes)} (${largest.join('; ')})`;
}
