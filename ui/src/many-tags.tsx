/**
 * What keeps the per-tag parts of a run's view usable with hundreds of tags (issue 31): a run of more
 * than TAG_PAGE tags shows its per-tag metrics a page at a time (sorted, worst f1 first by default, and
 * searchable), and one of more than MATRIX_TAGS tags shows its confusion matrix over the tags with the most
 * mistakes (how many is a control) beside a list of the most confused pairs. A run of few tags is shown
 * as it always was.
 */
import type { JSX } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import type { Performance } from '../../src/http/api-types.js';

/**
 * Probabilities a view lists for a model of many tags: as many as POST /predict lists by default
 * (src/model/prediction.ts's DEFAULT_LISTED_PROBABILITIES; the page imports no values from src/).
 */
export const LISTED_PROBABILITIES = 20;

/** Tag buttons the Review view offers for a model of many tags (keys 1–9); any tag by typing. */
export const REVIEW_BUTTONS = 9;

/**
 * The tags the Review view has buttons for: every tag of a model of few, else `first` (the answer, the
 * given and suggested tags) and then the item's most probable, REVIEW_BUTTONS in all.
 */
export function buttonTags(
  all: readonly string[],
  first: readonly string[],
  probabilities: Readonly<Record<string, number>> = {},
): readonly string[] {
  if (all.length <= TAG_PAGE) return all;
  const known = new Set(all);
  const likely = Object.entries(probabilities)
    .sort((a, b) => b[1] - a[1])
    .map(([tag]) => tag);
  return [...new Set([...first, ...likely])].filter((tag) => known.has(tag)).slice(0, REVIEW_BUTTONS);
}

/** Per-tag rows shown at a time. */
export const TAG_PAGE = 25;
/** Tags the confusion matrix shows by default (a 500 × 500 heatmap shows nothing). */
export const MATRIX_TAGS = 20;
/** How many tags the matrix may be asked to show. */
export const MATRIX_CHOICES = [10, 20, 30] as const;

type TagMetrics = Performance['class'];
export type TagOrder = 'f1' | 'rows' | 'name';

const ORDER_NAMES: Record<TagOrder, string> = {
  f1: 'lowest f1 first',
  rows: 'most test rows first',
  name: 'tag name',
};

/** The tags of `rows` in `order` (ties by name), those containing `find` (any case) only. */
export function orderedTags(rows: TagMetrics, order: TagOrder, find: string): string[] {
  const needle = find.trim().toLowerCase();
  const names = Object.keys(rows).filter((tag) => tag.toLowerCase().includes(needle));
  const byName = (a: string, b: string) => a.localeCompare(b);
  if (order === 'name') return names.sort(byName);
  const key = (tag: string) => (order === 'f1' ? (rows[tag]?.f1 ?? 0) : -(rows[tag]?.num_samples ?? 0));
  return names.sort((a, b) => key(a) - key(b) || byName(a, b));
}

/**
 * The per-tag rows to show: all of them for a run of few tags, else a page of them with its controls
 * (order, search, previous / next).
 */
export function usePagedTags(rows: TagMetrics): { shown: TagMetrics; controls: JSX.Element | null } {
  const all = Object.keys(rows).length;
  const [order, setOrder] = useState<TagOrder>('f1');
  const [find, setFind] = useState('');
  const [page, setPage] = useState(0);
  const names = useMemo(() => orderedTags(rows, order, find), [rows, order, find]);
  const shown = useMemo(() => {
    if (all <= TAG_PAGE) return rows;
    return Object.fromEntries(
      names.slice(page * TAG_PAGE, (page + 1) * TAG_PAGE).map((tag) => [tag, rows[tag]!]),
    ) as TagMetrics;
  }, [rows, names, page, all]);
  if (all <= TAG_PAGE) return { shown, controls: null };
  const pages = Math.max(1, Math.ceil(names.length / TAG_PAGE));
  const first = names.length === 0 ? 0 : page * TAG_PAGE + 1;
  const last = Math.min(names.length, (page + 1) * TAG_PAGE);
  const controls = (
    <div class="pager" data-testid="tag-pager">
      <div class="filters">
        <label>
          Order
          <select
            value={order}
            onChange={(event) => {
              setOrder(event.currentTarget.value as TagOrder);
              setPage(0);
            }}
          >
            {(Object.keys(ORDER_NAMES) as TagOrder[]).map((key) => (
              <option key={key} value={key}>
                {ORDER_NAMES[key]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Find a tag
          <input
            type="search"
            value={find}
            onInput={(event) => {
              setFind(event.currentTarget.value);
              setPage(0);
            }}
          />
        </label>
      </div>
      <p class="count" aria-live="polite" data-testid="tag-page">
        Tags {first}–{last} of {names.length}
        {names.length < all ? ` found (${all} in all)` : ''}, {ORDER_NAMES[order]}
      </p>
      <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
        ‹ Previous
      </button>{' '}
      <button type="button" disabled={page >= pages - 1} onClick={() => setPage(page + 1)}>
        Next ›
      </button>
    </div>
  );
  return { shown, controls };
}

/**
 * A long list shown a page of TAG_PAGE at a time: the page's items, and (only when there is more than
 * one page) the count and previous / next buttons. `what` names the items, e.g. "Tags".
 */
export function usePaged<T>(
  items: readonly T[],
  what: string,
  order: string,
): {
  shown: readonly T[];
  controls: JSX.Element | null;
} {
  const [page, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil(items.length / TAG_PAGE));
  const at = Math.min(page, pages - 1);
  if (items.length <= TAG_PAGE) return { shown: items, controls: null };
  const controls = (
    <div class="pager" data-testid="pager">
      <p class="count" aria-live="polite">
        {what} {at * TAG_PAGE + 1}–{Math.min(items.length, (at + 1) * TAG_PAGE)} of {items.length}, {order}
      </p>
      <button type="button" disabled={at === 0} onClick={() => setPage(at - 1)}>
        ‹ Previous
      </button>{' '}
      <button type="button" disabled={at >= pages - 1} onClick={() => setPage(at + 1)}>
        Next ›
      </button>
    </div>
  );
  return { shown: items.slice(at * TAG_PAGE, (at + 1) * TAG_PAGE), controls };
}

/** A confusion matrix cut to some of its tags, with each kept row's total over every tag. */
export interface MatrixPart {
  labels: string[];
  matrix: number[][];
  rowTotals: number[];
}

/**
 * The `count` tags with the most mistakes (rows of the tag predicted as another, and rows of another tag
 * predicted as it), in the matrix's order, and the matrix over them.
 */
export function mostConfused(
  labels: readonly string[],
  matrix: readonly number[][],
  count: number,
): MatrixPart {
  const mistakes = labels.map((_, t) => {
    let sum = 0;
    for (let o = 0; o < labels.length; o++) {
      if (o !== t) sum += (matrix[t]?.[o] ?? 0) + (matrix[o]?.[t] ?? 0);
    }
    return sum;
  });
  const kept = labels
    .map((_, t) => t)
    .sort((a, b) => mistakes[b]! - mistakes[a]! || a - b)
    .slice(0, count)
    .sort((a, b) => a - b);
  return {
    labels: kept.map((t) => labels[t]!),
    matrix: kept.map((t) => kept.map((p) => matrix[t]?.[p] ?? 0)),
    rowTotals: kept.map((t) => (matrix[t] ?? []).reduce((a, b) => a + b, 0)),
  };
}

/** The `top` largest off-diagonal cells: which true tag is most often predicted as which. */
export function confusedPairs(
  labels: readonly string[],
  matrix: readonly number[][],
  top: number,
): { truth: string; predicted: string; count: number }[] {
  const pairs: { truth: string; predicted: string; count: number }[] = [];
  matrix.forEach((row, t) => {
    row.forEach((count, p) => {
      if (t !== p && count > 0) pairs.push({ truth: labels[t]!, predicted: labels[p]!, count });
    });
  });
  return pairs.sort((a, b) => b.count - a.count).slice(0, top);
}

/** The matrix's size control and the most confused pairs, for a run of many tags. */
export function ManyTagsMatrixNote({
  labels,
  matrix,
  count,
  setCount,
  onPick,
}: {
  labels: readonly string[];
  matrix: readonly number[][];
  count: number;
  setCount: (count: number) => void;
  onPick: (pair: { truth: string; predicted: string }) => void;
}) {
  const pairs = useMemo(() => confusedPairs(labels, matrix, TAG_PAGE), [labels, matrix]);
  return (
    <>
      <p class="hint" data-testid="matrix-limited">
        This run has {labels.length} tags: the matrix shows the{' '}
        <label>
          <select
            aria-label="How many tags the matrix shows"
            value={String(count)}
            onChange={(event) => setCount(Number(event.currentTarget.value))}
          >
            {MATRIX_CHOICES.map((n) => (
              <option key={n} value={String(n)}>
                {n}
              </option>
            ))}
          </select>{' '}
          tags with the most mistakes
        </label>{' '}
        (as the true or the predicted tag), and the colour of a cell is its share of all the true tag’s rows.
        The most confused pairs of all tags are listed below it.
      </p>
      <details open>
        <summary>The {pairs.length} most confused pairs</summary>
        <table class="pairs" data-testid="confused-pairs">
          <thead>
            <tr>
              <th scope="col">True tag</th>
              <th scope="col">Predicted as</th>
              <th scope="col">Rows</th>
            </tr>
          </thead>
          <tbody>
            {pairs.map((pair) => (
              <tr key={`${pair.truth}\u0000${pair.predicted}`}>
                <td>{pair.truth}</td>
                <td>{pair.predicted}</td>
                <td class="num">
                  <button
                    type="button"
                    class="link"
                    aria-label={`${pair.count} rows of ${pair.truth} predicted as ${pair.predicted}`}
                    onClick={() => onPick({ truth: pair.truth, predicted: pair.predicted })}
                  >
                    {pair.count}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </>
  );
}
