/**
 * Classification metrics with scikit-learn's definitions (precision_recall_fscore_support,
 * zero_division=0) and the tagifai-style performance report {overall, class, slices}, for single-label
 * predictions (one tag per text) and multi-label ones (a set of tags per text, sklearn's metrics on the
 * label-indicator matrix).
 */
import { compileSlices, DEFAULT_SLICE_DEFINITIONS, type Slice } from './slices.js';

export interface Metrics {
  precision: number;
  recall: number;
  f1: number;
  num_samples: number;
}

/** The three usual averages over tags (sklearn's average='micro' | 'macro' | 'weighted'). */
export interface Averages {
  micro: Metrics;
  macro: Metrics;
  weighted: Metrics;
}

export interface Performance {
  /** The weighted average (= averages.weighted). */
  overall: Metrics;
  class: Record<string, Metrics>;
  slices: Record<string, Metrics>;
  /** Micro, macro and weighted averages; absent in reports written before they were added. */
  averages?: Averages;
}

const ratio = (a: number, b: number): number => (b === 0 ? 0 : a / b);
const f1Of = (p: number, r: number): number => (p + r === 0 ? 0 : (2 * p * r) / (p + r));

/** Per-label precision/recall/f1 with support (number of true samples of the label). */
export function perLabelMetrics(yTrue: readonly string[], yPred: readonly string[]): Map<string, Metrics> {
  const tp = new Map<string, number>();
  const predicted = new Map<string, number>();
  const actual = new Map<string, number>();
  const inc = (m: Map<string, number>, k: string): void => {
    m.set(k, (m.get(k) ?? 0) + 1);
  };
  yTrue.forEach((t, i) => {
    const p = yPred[i]!;
    inc(actual, t);
    inc(predicted, p);
    if (t === p) inc(tp, t);
  });
  const out = new Map<string, Metrics>();
  for (const label of [...new Set([...yTrue, ...yPred])].sort()) {
    const precision = ratio(tp.get(label) ?? 0, predicted.get(label) ?? 0);
    const recall = ratio(tp.get(label) ?? 0, actual.get(label) ?? 0);
    out.set(label, { precision, recall, f1: f1Of(precision, recall), num_samples: actual.get(label) ?? 0 });
  }
  return out;
}

/** sklearn's average='weighted': per-label metrics averaged with support weights. */
export function weightedMetrics(yTrue: readonly string[], yPred: readonly string[]): Metrics {
  let precision = 0;
  let recall = 0;
  let f1 = 0;
  for (const m of perLabelMetrics(yTrue, yPred).values()) {
    precision += m.precision * m.num_samples;
    recall += m.recall * m.num_samples;
    f1 += m.f1 * m.num_samples;
  }
  const n = yTrue.length;
  return { precision: ratio(precision, n), recall: ratio(recall, n), f1: ratio(f1, n), num_samples: n };
}

/** sklearn's average='micro' over all labels present (for single-label data: P = R = F1 = accuracy). */
export function microMetrics(yTrue: readonly string[], yPred: readonly string[]): Metrics {
  let correct = 0;
  yTrue.forEach((t, i) => {
    if (t === yPred[i]) correct++;
  });
  const n = yTrue.length;
  const precision = ratio(correct, n);
  const recall = ratio(correct, n);
  return { precision, recall, f1: f1Of(precision, recall), num_samples: n };
}

/**
 * sklearn's average='macro': the unweighted mean over the labels present in the true or predicted tags
 * (sklearn's labels when none are given); num_samples is the number of texts.
 */
function macroMetrics(perLabel: ReadonlyMap<string, Metrics>, n: number): Metrics {
  const all = [...perLabel.values()];
  const mean = (pick: (m: Metrics) => number): number =>
    ratio(
      all.reduce((sum, m) => sum + pick(m), 0),
      all.length,
    );
  return {
    precision: mean((m) => m.precision),
    recall: mean((m) => m.recall),
    f1: mean((m) => m.f1),
    num_samples: n,
  };
}

const DEFAULT_SLICES = compileSlices(DEFAULT_SLICE_DEFINITIONS);

/**
 * Builds {overall (weighted), class (per model tag), slices (micro)} from texts, true and predicted tags.
 * A slice no row falls into is left out: an f1 of 0 over 0 rows reads like a failure where there is no
 * evidence at all (training logs every definition with its row count in the run's `slices.json`).
 */
export function performanceReport(
  texts: readonly string[],
  yTrue: readonly string[],
  yPred: readonly string[],
  classes: readonly string[],
  sliceList: readonly Slice[] = DEFAULT_SLICES,
): Performance {
  const perLabel = perLabelMetrics(yTrue, yPred);
  const cls: Record<string, Metrics> = {};
  for (const tag of classes) {
    cls[tag] = perLabel.get(tag) ?? { precision: 0, recall: 0, f1: 0, num_samples: 0 };
  }
  const slices: Record<string, Metrics> = {};
  for (const slice of sliceList) {
    const idx = texts.map((_, i) => i).filter((i) => slice.includes(texts[i]!, yTrue[i]!));
    if (idx.length === 0) continue;
    slices[slice.name] = microMetrics(
      idx.map((i) => yTrue[i]!),
      idx.map((i) => yPred[i]!),
    );
  }
  const weighted = weightedMetrics(yTrue, yPred);
  const averages = {
    micro: microMetrics(yTrue, yPred),
    macro: macroMetrics(perLabel, yTrue.length),
    weighted,
  };
  return { overall: weighted, class: cls, slices, averages };
}

/** True-positive, predicted and actual counts per tag of multi-label predictions. */
interface TagCounts {
  tp: number;
  predicted: number;
  actual: number;
}

function tagCounts(
  yTrue: readonly (readonly string[])[],
  yPred: readonly (readonly string[])[],
): Map<string, TagCounts> {
  const counts = new Map<string, TagCounts>();
  const of = (tag: string): TagCounts => {
    let entry = counts.get(tag);
    if (entry === undefined) {
      entry = { tp: 0, predicted: 0, actual: 0 };
      counts.set(tag, entry);
    }
    return entry;
  };
  yTrue.forEach((truth, i) => {
    const predicted = new Set(yPred[i]);
    for (const tag of new Set(truth)) {
      of(tag).actual++;
      if (predicted.has(tag)) of(tag).tp++;
    }
    for (const tag of predicted) of(tag).predicted++;
  });
  return counts;
}

const metricsOf = (c: TagCounts, numSamples: number): Metrics => {
  const precision = ratio(c.tp, c.predicted);
  const recall = ratio(c.tp, c.actual);
  return { precision, recall, f1: f1Of(precision, recall), num_samples: numSamples };
};

/**
 * Micro, macro and weighted averages of multi-label predictions (sets of tags per text), with per-tag
 * metrics (num_samples: the texts that have the tag). Weighted averages weigh each tag by that support,
 * so they divide by the total support, not by the number of texts; every averages' num_samples is the
 * number of texts.
 */
export function multiLabelMetrics(
  yTrue: readonly (readonly string[])[],
  yPred: readonly (readonly string[])[],
): { perTag: Map<string, Metrics>; averages: Averages } {
  const counts = tagCounts(yTrue, yPred);
  const perTag = new Map<string, Metrics>();
  const total: TagCounts = { tp: 0, predicted: 0, actual: 0 };
  let precision = 0;
  let recall = 0;
  let f1 = 0;
  for (const tag of [...counts.keys()].sort()) {
    const c = counts.get(tag)!;
    const m = metricsOf(c, c.actual);
    perTag.set(tag, m);
    total.tp += c.tp;
    total.predicted += c.predicted;
    total.actual += c.actual;
    precision += m.precision * c.actual;
    recall += m.recall * c.actual;
    f1 += m.f1 * c.actual;
  }
  const n = yTrue.length;
  const weighted = {
    precision: ratio(precision, total.actual),
    recall: ratio(recall, total.actual),
    f1: ratio(f1, total.actual),
    num_samples: n,
  };
  return { perTag, averages: { micro: metricsOf(total, n), macro: macroMetrics(perTag, n), weighted } };
}

/**
 * The performance report of multi-label predictions: overall (weighted), per model tag, the slices
 * (micro averages over the texts of each; a slice's `tag` condition holds when the text has that tag
 * among its true tags) and the three averages.
 */
export function multiLabelReport(
  texts: readonly string[],
  yTrue: readonly (readonly string[])[],
  yPred: readonly (readonly string[])[],
  classes: readonly string[],
  sliceList: readonly Slice[] = DEFAULT_SLICES,
): Performance {
  const { perTag, averages } = multiLabelMetrics(yTrue, yPred);
  const cls: Record<string, Metrics> = {};
  for (const tag of classes) {
    cls[tag] = perTag.get(tag) ?? { precision: 0, recall: 0, f1: 0, num_samples: 0 };
  }
  const slices: Record<string, Metrics> = {};
  for (const slice of sliceList) {
    const idx = texts.map((_, i) => i).filter((i) => yTrue[i]!.some((tag) => slice.includes(texts[i]!, tag)));
    if (idx.length === 0) continue;
    slices[slice.name] = multiLabelMetrics(
      idx.map((i) => yTrue[i]!),
      idx.map((i) => yPred[i]!),
    ).averages.micro;
  }
  return { overall: averages.weighted, class: cls, slices, averages };
}
