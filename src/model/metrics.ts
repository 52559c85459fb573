/**
 * Classification metrics with scikit-learn's definitions (precision_recall_fscore_support,
 * zero_division=0) and the tagifai-style performance report {overall, class, slices}.
 */
import { compileSlices, DEFAULT_SLICE_DEFINITIONS, type Slice } from './slices.js';

export interface Metrics {
  precision: number;
  recall: number;
  f1: number;
  num_samples: number;
}

export interface Performance {
  overall: Metrics;
  class: Record<string, Metrics>;
  slices: Record<string, Metrics>;
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
  return { overall: weightedMetrics(yTrue, yPred), class: cls, slices };
}
