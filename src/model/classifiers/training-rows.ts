/**
 * The training rows as the classifiers see them: each row's class (or a multi-label row's indicator row)
 * and the seeded random oversampling order. Shared by every trainer.
 */
import { normalizeTag, normalizeTagSet } from '../labels.js';
import { randomInt } from '../rng.js';
import { type LabelledText, tagsOf } from '../tag-model.js';

/** Indices 0..n-1, plus random repeats of every class smaller than the largest (random oversampling). */
export function oversampledOrder(y: Int32Array, nClasses: number, rng: () => number): Int32Array {
  const byClass: number[][] = Array.from({ length: nClasses }, () => []);
  y.forEach((k, i) => {
    byClass[k]!.push(i);
  });
  const largest = Math.max(...byClass.map((c) => c.length));
  const order = Array.from(y.keys());
  for (const members of byClass) {
    for (let extra = members.length; members.length > 0 && extra < largest; extra++) {
      order.push(members[randomInt(rng, members.length)]!);
    }
  }
  return Int32Array.from(order);
}

/**
 * The most rows oversampling may visit per epoch, as a multiple of the rows: beyond it (many tags, a few
 * large ones) repeating rows would multiply an SGD epoch's work — by up to the number of tags for
 * one-vs-rest — so the rows are weighted instead (oversampling).
 */
export const OVERSAMPLE_MAX_GROWTH = 2;

/** How an SGD trainer oversamples: the rows it visits (repeats included) and, or instead, their weights. */
export interface Oversampling {
  order: Int32Array;
  /** Per-row step weights with mean 1 (rows of a class of c rows weigh largest / c, rescaled); null: none. */
  sampleWeight: Float64Array | null;
}

/**
 * Random oversampling when it at most doubles the rows (oversampledOrder: the rows visited as before, so
 * small data trains the same model); else every row once, weighted as its class's repeats would have
 * weighed in expectation (largest class / its class's rows), rescaled to mean 1 so a step is no larger
 * than a plain one on average. Balances the classes at a pass over the rows whatever the tags.
 */
export function oversampling(y: Int32Array, nClasses: number, rng: () => number): Oversampling {
  const counts = new Float64Array(nClasses);
  for (const k of y) counts[k]! += 1;
  const largest = Math.max(...counts);
  const present = counts.filter((c) => c > 0).length;
  if (present * largest <= OVERSAMPLE_MAX_GROWTH * y.length) {
    return { order: oversampledOrder(y, nClasses, rng), sampleWeight: null };
  }
  const sampleWeight = Float64Array.from(y, (k) => largest / counts[k]!);
  const mean = sampleWeight.reduce((sum, v) => sum + v, 0) / y.length;
  for (let r = 0; r < sampleWeight.length; r++) sampleWeight[r]! /= mean;
  return { order: Int32Array.from(y.keys()), sampleWeight };
}

/**
 * The label arrays of rows for a model's tags: `y`, each row's class (single-label) or, for multi-label
 * rows, the group oversampling uses — the row's rarest tag (fewest rows among `rows`), so rare tags are
 * repeated like rare classes — and `labels`, the multi-label indicator matrix.
 */
export function labelArrays(
  rows: readonly LabelledText[],
  tags: readonly string[],
  multiLabel: boolean,
): { y: Int32Array; labels?: Uint8Array } {
  const classes = new Set(tags);
  const classIndex = new Map(tags.map((t, i) => [t, i]));
  if (!multiLabel) return { y: Int32Array.from(rows, (r) => classIndex.get(normalizeTag(r.tag, classes))!) };
  const K = tags.length;
  const labels = new Uint8Array(rows.length * K);
  const sets = rows.map((row) => normalizeTagSet(tagsOf(row), classes).map((tag) => classIndex.get(tag)!));
  const counts = new Int32Array(K);
  sets.forEach((set, r) => {
    for (const k of set) {
      labels[r * K + k] = 1;
      counts[k]!++;
    }
  });
  const y = Int32Array.from(sets, (set) =>
    set.reduce((rarest, k) => (counts[k]! < counts[rarest]! ? k : rarest)),
  );
  return { y, labels };
}

/**
 * sklearn's `class_weight='balanced'` for labels y: n / (K × count of class k), K counting the classes y
 * holds (sklearn's classes are those of y; Tagger's `other` may have no rows). A class with no samples gets
 * 1 (it is never a positive sample, so its weight is never used).
 */
export function balancedClassWeights(y: Int32Array, nClasses: number): Float64Array {
  const counts = new Float64Array(nClasses);
  for (let i = 0; i < y.length; i++) counts[y[i]!]!++;
  return weightsFromCounts(counts, y.length);
}

/** n / (present classes × count), 1 for a class with no samples (see balancedClassWeights). */
function weightsFromCounts(counts: Float64Array, n: number): Float64Array {
  const present = counts.filter((c) => c > 0).length;
  return Float64Array.from(counts, (c) => (c > 0 ? n / (present * c) : 1));
}

/**
 * `balanced` weights for multi-label rows: the same formula with each class's count of positive samples
 * among the visited `order` (sklearn has no multi-label class_weight; this is the per-class analogue).
 */
export function balancedLabelWeights(labels: Uint8Array, order: Int32Array, nClasses: number): Float64Array {
  const counts = new Float64Array(nClasses);
  for (const r of order) for (let k = 0; k < nClasses; k++) counts[k]! += labels[r * nClasses + k]!;
  return weightsFromCounts(counts, order.length);
}
