/**
 * MLflow's run ordering, reproduced exactly so that "the best run" is the same run whether Tagger,
 * `mlflow.search_runs(order_by=["metrics.f1 DESC"])` or the MLflow UI picks it.
 *
 * MLflow (`SearchUtils.sort` in `mlflow/utils/search_utils.py`) first sorts runs in their natural order
 * (newest `start_time` first, then `run_id` ascending), then applies each `order_by` clause with Python's
 * *stable* `sorted(..., reverse=not ascending)`. For a metric clause the sort key is:
 *   value  -> DESC (True, v)     ASC (False, v)
 *   NaN    -> DESC (False, +inf) ASC (True, -inf)
 *   absent -> DESC (False, -inf) ASC (True, +inf)
 * so in both directions real values come first (sorted), then NaN, then runs without the metric, and
 * equal keys keep the natural order. The SQL store orders the same way. Pure; shared by both adapters.
 */

/** The part of a run the ordering looks at. */
export interface OrderableRun {
  info: { runId: string; startTime: number };
  metrics: Record<string, number>;
}

export interface MetricOrder {
  key: string;
  descending: boolean;
}

/** Python's `str` comparison is by code point; for MLflow's ASCII run ids this equals `<` on JS strings. */
function compareStrings(a: string, b: string): number {
  if (a < b) return -1;
  if (a > b) return 1;
  return 0;
}

/** Natural order: newest start time first, then run id ascending. */
export function compareNatural(a: OrderableRun, b: OrderableRun): number {
  if (a.info.startTime !== b.info.startTime) return b.info.startTime - a.info.startTime;
  return compareStrings(a.info.runId, b.info.runId);
}

/** 0 = real value, 1 = NaN, 2 = absent: the group a run falls in for one metric, in either direction. */
function group(run: OrderableRun, key: string): 0 | 1 | 2 {
  if (!Object.hasOwn(run.metrics, key)) return 2;
  return Number.isNaN(run.metrics[key]) ? 1 : 0;
}

/**
 * Compares two runs by one metric clause only (0 when MLflow's sort keys are equal, so a stable sort
 * keeps the natural order for ties, NaN-vs-NaN and absent-vs-absent).
 */
export function compareByMetric(a: OrderableRun, b: OrderableRun, order: MetricOrder): number {
  const ga = group(a, order.key);
  const gb = group(b, order.key);
  if (ga !== gb) return ga - gb;
  if (ga !== 0) return 0;
  const va = a.metrics[order.key] as number;
  const vb = b.metrics[order.key] as number;
  if (va === vb) return 0;
  const ascending = va < vb ? -1 : 1;
  return order.descending ? -ascending : ascending;
}

/**
 * Returns a new array in MLflow's order: by the metric when given (NaN, then absent, last), otherwise
 * natural order. Does not modify `runs`.
 */
export function sortRuns<T extends OrderableRun>(runs: readonly T[], order?: MetricOrder): T[] {
  // Array.prototype.sort is stable (ES2019), like Python's sorted.
  const natural = [...runs].sort(compareNatural);
  if (!order) return natural;
  return natural.sort((a, b) => compareByMetric(a, b, order));
}
