/** Formatting shared by the views: metrics to 3 decimals, times in the reader's local time. */

/** A metric as the API sends it (a number, a "NaN"-style string, or null) for a table cell. */
export function metric(value: number | string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  return Number.isInteger(value) ? String(value) : value.toFixed(3);
}

/** A sortable number for a metric cell: missing and non-finite values sort last. */
export function metricKey(value: number | string | null | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : Number.NEGATIVE_INFINITY;
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function when(iso: string | null): string {
  return iso === null ? '—' : dateFormat.format(new Date(iso));
}

export const shortId = (runId: string): string => runId.slice(0, 8);
