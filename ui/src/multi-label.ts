/**
 * What the views need to know about multi-label runs (several tags per text) and the averages over tags:
 * whether a run is multi-label (its `multi_label` param), the per-tag thresholds it logged as metrics, and
 * the micro / macro / weighted averages, from the performance report or else from the run's metrics.
 */
import type { Averages, Metrics, Performance, RunRecord } from '../../src/http/api-types.js';

/** A run's `multi_label` param: `true` as Tagger logs it, `True` as a Python tool would. */
export const isMultiLabel = (params: Record<string, unknown>): boolean =>
  String(params.multi_label ?? '').toLowerCase() === 'true';

/** A tag's part of a metric key, as training writes it (`tag.<part>.f1`): see metricKeyPart in src/train. */
export const metricKeyPart = (name: string): string => name.replace(/[^\w.\- :]/g, '_').slice(0, 200) || '_';

/** Each tag's probability threshold logged by a multi-label run (`tag.<name>.threshold`); null if none. */
export function tagThresholds(
  tags: readonly string[],
  metrics: RunRecord['metrics'],
): Record<string, number | string> | null {
  const found = tags.flatMap((tag) => {
    const value = metrics[`tag.${metricKeyPart(tag)}.threshold`];
    return value === undefined ? [] : [[tag, value] as const];
  });
  return found.length === 0 ? null : Object.fromEntries(found);
}

/** The averages the API reports (each needs a hint below, so a new one cannot go unexplained). */
export type AverageName = keyof Averages;

export const AVERAGE_HINTS: Record<AverageName, string> = {
  micro: 'every (text, tag) decision counted alike',
  macro: 'every tag counted alike',
  weighted: 'tags weighted by their test rows (the run’s f1)',
};

const asNumber = (value: number | string | undefined): number | null =>
  typeof value === 'number' ? value : null;

/**
 * The averages: the report's when it has them; else the f1 of micro and macro the run logged as metrics
 * (`micro_f1`, `macro_f1`) beside the report's overall (weighted) metrics; null when neither has them
 * (reports and runs from before the averages).
 */
export function averagesOf(performance: Performance, metrics?: RunRecord['metrics']): Averages | null {
  if (performance.averages) return performance.averages;
  if (metrics?.micro_f1 === undefined || metrics.macro_f1 === undefined) return null;
  const f1Only = (f1: number | null): Metrics => ({
    precision: null,
    recall: null,
    f1,
    num_samples: performance.overall.num_samples,
  });
  return {
    micro: f1Only(asNumber(metrics.micro_f1)),
    macro: f1Only(asNumber(metrics.macro_f1)),
    weighted: performance.overall,
  };
}
