/** Two runs side by side: metrics (overall and per tag) and arguments, with what differs highlighted. */
import { useMemo, useState } from 'preact/hooks';
import type { Performance, RunRecord } from '../../src/http/api-types.js';
import { api } from './api';
import { ChartCanvas, PALETTE } from './charts';
import { metric, shortId } from './format';
import { Failure, useLoad } from './load';
import { TAG_PAGE, usePaged } from './many-tags';
import { averagesOf, isMultiLabel } from './multi-label';
import { MultiLabelBadge } from './run';
import { TableScroll } from './table-scroll';

/** Metric differences below this are rounding noise in a 3-decimal table: not highlighted. */
const SAME_METRIC = 0.0005;

const nameOf = (run: RunRecord): string => run.run_name || shortId(run.run_id);

function metricRows(
  a: Performance,
  b: Performance,
  left: RunRecord,
  right: RunRecord,
): { name: string; a: number | null; b: number | null }[] {
  const rows = (['precision', 'recall', 'f1'] as const).map((key) => ({
    name: `overall ${key}`,
    a: a.overall[key],
    b: b.overall[key],
  }));
  // The other averages over tags (overall is the weighted one), when either run has them.
  const averagesA = averagesOf(a, left.metrics);
  const averagesB = averagesOf(b, right.metrics);
  if (averagesA || averagesB) {
    for (const name of ['micro', 'macro'] as const) {
      rows.push({ name: `${name} f1`, a: averagesA?.[name].f1 ?? null, b: averagesB?.[name].f1 ?? null });
    }
  }
  return rows;
}

type TagRow = { tag: string; a: number | null; b: number | null };

/**
 * Each tag's f1 in both runs: by name, or for runs of many tags (shown a page at a time) the largest
 * difference first.
 */
function tagRows(a: Performance, b: Performance): TagRow[] {
  const tags = [...new Set([...Object.keys(a.class), ...Object.keys(b.class)])].sort();
  const rows = tags.map((tag) => ({ tag, a: a.class[tag]?.f1 ?? null, b: b.class[tag]?.f1 ?? null }));
  if (rows.length <= TAG_PAGE) return rows;
  const gap = (row: TagRow) => (row.a === null || row.b === null ? 1 : Math.abs(row.b - row.a));
  return rows.sort((x, y) => gap(y) - gap(x) || x.tag.localeCompare(y.tag));
}

export function CompareView({ left, right }: { left: RunRecord; right: RunRecord }) {
  const a = useLoad(() => api.performance(left.run_id), [left.run_id]);
  const b = useLoad(() => api.performance(right.run_id), [right.run_id]);
  const [onlyDifferent, setOnlyDifferent] = useState(false);
  const allTags = useMemo(() => (a.value && b.value ? tagRows(a.value, b.value) : []), [a.value, b.value]);
  // Runs of many tags: a page of them at a time (many-tags.tsx), in the table and the chart alike.
  const { shown: tags, controls } = usePaged(allTags, 'Tags', 'largest f1 difference first');
  const config = useMemo(() => {
    if (!a.value || !b.value) return null;
    return {
      type: 'bar' as const,
      data: {
        labels: tags.map((row) => row.tag),
        datasets: [
          { label: nameOf(left), data: tags.map((row) => row.a ?? 0), backgroundColor: PALETTE[0] },
          { label: nameOf(right), data: tags.map((row) => row.b ?? 0), backgroundColor: PALETTE[1] },
        ],
      },
      options: { scales: { y: { min: 0, max: 1 } } },
    };
  }, [a.value, b.value, tags, left, right]);
  const params = [...new Set([...Object.keys(left.params), ...Object.keys(right.params)])].sort();
  const shownParams = params.filter((key) => !onlyDifferent || left.params[key] !== right.params[key]);
  const differing = params.filter((key) => left.params[key] !== right.params[key]).length;
  return (
    <article aria-labelledby="compare-title">
      <h2 id="compare-title">
        {nameOf(left)}
        {isMultiLabel(left.params) && <MultiLabelBadge />} vs {nameOf(right)}
        {isMultiLabel(right.params) && <MultiLabelBadge />}
      </h2>
      {a.error && <Failure error={a.error} />}
      {b.error && <Failure error={b.error} />}
      {a.value && b.value && config && (
        <div class="grid">
          <section aria-labelledby="compare-metrics">
            <h3 id="compare-metrics">Metrics</h3>
            {controls}
            <TableScroll label="Metrics of both runs">
              <table class="compare">
                <thead>
                  <tr>
                    <th scope="col">metric</th>
                    <th scope="col">{nameOf(left)}</th>
                    <th scope="col">{nameOf(right)}</th>
                    <th scope="col">difference</th>
                  </tr>
                </thead>
                <tbody>
                  {[
                    ...metricRows(a.value, b.value, left, right),
                    ...tags.map((row) => ({ name: `${row.tag} f1`, a: row.a, b: row.b })),
                  ].map((row) => {
                    const diff = row.a !== null && row.b !== null ? row.b - row.a : null;
                    const differs = diff === null ? row.a !== row.b : Math.abs(diff) >= SAME_METRIC;
                    return (
                      <tr key={row.name} class={differs ? 'differs' : ''}>
                        <th scope="row">{row.name}</th>
                        <td class="num">{metric(row.a)}</td>
                        <td class="num">{metric(row.b)}</td>
                        <td class="num">
                          {diff === null ? '—' : `${diff > 0 ? '+' : ''}${diff.toFixed(3)}`}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableScroll>
          </section>
          <section aria-labelledby="compare-chart">
            <h3 id="compare-chart">f1 per tag</h3>
            <ChartCanvas config={config} label={`f1 of each tag for ${nameOf(left)} and ${nameOf(right)}`} />
          </section>
        </div>
      )}
      <section aria-labelledby="compare-args">
        <h3 id="compare-args">Arguments ({differing} differ)</h3>
        <label class="inline">
          <input
            type="checkbox"
            checked={onlyDifferent}
            onChange={(event) => setOnlyDifferent(event.currentTarget.checked)}
          />{' '}
          only those that differ
        </label>
        <TableScroll label="Arguments of both runs">
          <table class="compare">
            <thead>
              <tr>
                <th scope="col">argument</th>
                <th scope="col">{nameOf(left)}</th>
                <th scope="col">{nameOf(right)}</th>
              </tr>
            </thead>
            <tbody>
              {shownParams.map((key) => (
                <tr key={key} class={left.params[key] !== right.params[key] ? 'differs' : ''}>
                  <th scope="row">{key}</th>
                  <td>{left.params[key] ?? '—'}</td>
                  <td>{right.params[key] ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      </section>
    </article>
  );
}
