/**
 * The runs of the experiment as a table: sortable by any column, filtered by text (name, id or
 * `param=value`), minimum f1 and start date; the served run marked; two runs picked for comparison.
 */
import { useMemo, useState } from 'preact/hooks';
import type { RunRecord } from '../../src/http/api-types.js';
import { metric, metricKey, shortId, when } from './format';
import { isMultiLabel } from './multi-label';
import { MultiLabelBadge } from './run';
import { TableScroll } from './table-scroll';

type SortKey = { kind: 'name' | 'start' } | { kind: 'metric'; key: string } | { kind: 'param'; key: string };

const METRIC_COLUMNS = ['f1', 'precision', 'recall'];
/** Shown when any run has it: the share of behavioural test cases the model passed. */
const BEHAVIOUR_METRIC = 'behavioural_pass_rate';

/** Params whose values differ between runs: the ones worth a column (the rest are the same everywhere). */
function varyingParams(runs: RunRecord[]): string[] {
  const keys = new Set(runs.flatMap((run) => Object.keys(run.params)));
  return [...keys]
    .filter((key) => new Set(runs.map((run) => run.params[key] ?? '')).size > 1)
    .sort()
    .slice(0, 6);
}

function matchesText(run: RunRecord, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const haystack = [
    run.run_name,
    run.run_id,
    run.status,
    ...Object.entries(run.params).map(([key, value]) => `${key}=${value}`),
  ]
    .join(' ')
    .toLowerCase();
  return words.every((word) => haystack.includes(word));
}

interface RunsTableProps {
  runs: RunRecord[];
  onOpen: (runId: string) => void;
  onCompare: (a: string, b: string) => void;
}

export function RunsTable({ runs, onOpen, onCompare }: RunsTableProps) {
  const [sort, setSort] = useState<{ by: SortKey; descending: boolean }>({
    by: { kind: 'metric', key: 'f1' },
    descending: true,
  });
  const [query, setQuery] = useState('');
  const [floorMetric, setFloorMetric] = useState('f1');
  const [minimum, setMinimum] = useState('');
  const [since, setSince] = useState('');
  const [picked, setPicked] = useState<string[]>([]);
  const params = useMemo(() => varyingParams(runs), [runs]);
  const metricColumns = useMemo(
    () =>
      runs.some((run) => run.metrics[BEHAVIOUR_METRIC] !== undefined)
        ? [...METRIC_COLUMNS, BEHAVIOUR_METRIC]
        : METRIC_COLUMNS,
    [runs],
  );

  const shown = useMemo(() => {
    const floor = minimum === '' ? null : Number(minimum);
    const from = since === '' ? null : new Date(`${since}T00:00:00`).getTime();
    const filtered = runs.filter(
      (run) =>
        matchesText(run, query) &&
        (floor === null || metricKey(run.metrics[floorMetric]) >= floor) &&
        (from === null || (run.start_time !== null && Date.parse(run.start_time) >= from)),
    );
    const sortValue = (run: RunRecord): number | string => {
      const { by } = sort;
      if (by.kind === 'name') return run.run_name.toLowerCase();
      if (by.kind === 'start') return run.start_time === null ? 0 : Date.parse(run.start_time);
      if (by.kind === 'metric') return metricKey(run.metrics[by.key]);
      if (by.kind !== 'param') return '';
      const raw = run.params[by.key] ?? '';
      const asNumber = Number(raw);
      return raw !== '' && Number.isFinite(asNumber) ? asNumber : raw;
    };
    return [...filtered].sort((a, b) => {
      const x = sortValue(a);
      const y = sortValue(b);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return sort.descending ? -order : order;
    });
  }, [runs, query, floorMetric, minimum, since, sort]);

  const header = (label: string, by: SortKey) => {
    const active = JSON.stringify(sort.by) === JSON.stringify(by);
    const ariaSort = active ? (sort.descending ? 'descending' : 'ascending') : 'none';
    return (
      <th scope="col" aria-sort={ariaSort}>
        <button
          type="button"
          class="sort"
          onClick={() => setSort({ by, descending: active ? !sort.descending : by.kind !== 'name' })}
        >
          {label}
          <span aria-hidden="true">{active ? (sort.descending ? ' ▼' : ' ▲') : ''}</span>
        </button>
      </th>
    );
  };

  const toggle = (runId: string) =>
    setPicked((now) => (now.includes(runId) ? now.filter((id) => id !== runId) : [...now, runId].slice(-2)));

  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      <div class="filters">
        <label>
          Filter
          <input
            type="search"
            value={query}
            placeholder="name, id or param=value"
            onInput={(event) => setQuery(event.currentTarget.value)}
          />
        </label>
        <label>
          Metric
          <select
            aria-label="Metric"
            value={floorMetric}
            onChange={(event) => setFloorMetric(event.currentTarget.value)}
          >
            {metricColumns.map((key) => (
              <option key={key} value={key}>
                {key === BEHAVIOUR_METRIC ? 'behaviour' : key}
              </option>
            ))}
          </select>
        </label>
        <label>
          at least
          <input
            type="number"
            min="0"
            max="1"
            step="0.01"
            value={minimum}
            onInput={(event) => setMinimum(event.currentTarget.value)}
          />
        </label>
        <label>
          Started since
          <input type="date" value={since} onInput={(event) => setSince(event.currentTarget.value)} />
        </label>
        <button
          type="button"
          disabled={picked.length !== 2}
          onClick={() => onCompare(picked[0]!, picked[1]!)}
        >
          Compare {picked.length}/2
        </button>
      </div>
      <p class="count" aria-live="polite">
        {shown.length} of {runs.length} runs
      </p>
      <TableScroll label="Runs">
        <table class="runs">
          <thead>
            <tr>
              <th scope="col">
                <span class="visually-hidden">Pick for comparison</span>
              </th>
              {header('Run', { kind: 'name' })}
              {header('Started', { kind: 'start' })}
              {metricColumns.map((key) =>
                header(key === BEHAVIOUR_METRIC ? 'behaviour' : key, { kind: 'metric', key }),
              )}
              {params.map((key) => header(key, { kind: 'param', key }))}
            </tr>
          </thead>
          <tbody>
            {shown.map((run) => (
              <tr key={run.run_id} class={run.served ? 'served' : ''}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Pick ${run.run_name} for comparison`}
                    checked={picked.includes(run.run_id)}
                    onChange={() => toggle(run.run_id)}
                  />
                </td>
                <td>
                  <a
                    href={`#/run/${encodeURIComponent(run.run_id)}`}
                    onClick={(event) => {
                      event.preventDefault();
                      onOpen(run.run_id);
                    }}
                  >
                    {run.run_name || shortId(run.run_id)}
                  </a>{' '}
                  <code class="id">{shortId(run.run_id)}</code>
                  {run.served && <span class="badge">served</span>}
                  {isMultiLabel(run.params) && <MultiLabelBadge />}
                  {run.status !== 'FINISHED' && <span class="badge muted">{run.status.toLowerCase()}</span>}
                  {run.not_served_because && (
                    <span class="badge warn" title={run.not_served_because}>
                      held back
                    </span>
                  )}
                  {run.warnings.length > 0 && (
                    <span class="badge warn" data-testid="data-warnings" title={run.warnings.join('\n')}>
                      ⚠ {run.warnings.length} data warning{run.warnings.length === 1 ? '' : 's'}
                      <span class="visually-hidden">: {run.warnings.join('; ')}</span>
                    </span>
                  )}
                  {run.promotion && run.promotion !== 'promoted' && (
                    <span class="badge muted" title="tagger retrain: served only once promoted">
                      {run.promotion}
                    </span>
                  )}
                  {run.mlflow_url && (
                    <a class="mlflow" href={run.mlflow_url} target="_blank" rel="noopener noreferrer">
                      MLflow
                    </a>
                  )}
                </td>
                <td>{when(run.start_time)}</td>
                {metricColumns.map((key) => (
                  <td class="num" key={key}>
                    {metric(run.metrics[key])}
                  </td>
                ))}
                {params.map((key) => (
                  <td key={key}>{run.params[key] ?? '—'}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}
