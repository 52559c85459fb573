/**
 * One run: overall metrics, per-tag metrics (chart and table), the confusion matrix as a heatmap with
 * counts, slices, training curves, arguments, the test-set mistakes filterable by tag pair (a click
 * on a heatmap cell picks that pair), and the training data's probable label errors (label-issues.tsx).
 */
import type { Chart } from 'chart.js';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import type {
  Mistake,
  Performance,
  RunErrorsData,
  RunRecord,
  TrainingHistory,
} from '../../src/http/api-types.js';
import { ApiError, api } from './api';
import { CascadePart, isCascadeRun } from './cascade';
import { ChartCanvas, confusionConfig, PALETTE } from './charts';
import { metric, shortId, when } from './format';
import { LabelIssuesPart } from './label-issues';
import { Failure, useLoad } from './load';
import { MATRIX_TAGS, ManyTagsMatrixNote, mostConfused, usePagedTags } from './many-tags';
import { ModelChoiceTable } from './model-choice';
import { AVERAGE_HINTS, averagesOf, isMultiLabel, tagThresholds } from './multi-label';
import { TableScroll } from './table-scroll';

export function MetricCards({
  performance,
  metrics,
}: {
  performance: Performance;
  /** The run's logged metrics: where the averages come from when the report has none. */
  metrics?: RunRecord['metrics'];
}) {
  const { overall } = performance;
  const averages = averagesOf(performance, metrics);
  return (
    <>
      <dl class="cards">
        {(['precision', 'recall', 'f1'] as const).map((key) => (
          <div class="card" key={key}>
            <dt>{key === 'f1' && averages ? 'weighted f1' : key}</dt>
            <dd>{metric(overall[key])}</dd>
          </div>
        ))}
        {averages &&
          (['micro', 'macro'] as const).map((name) => {
            const { precision, recall, f1 } = averages[name];
            return (
              <div class="card" key={name} data-average={name}>
                <dt>{name} f1</dt>
                <dd>{metric(f1)}</dd>
                {precision !== null && recall !== null && (
                  <dd class="sub">
                    precision {metric(precision)} · recall {metric(recall)}
                  </dd>
                )}
              </div>
            );
          })}
        <div class="card">
          <dt>test rows</dt>
          <dd>{metric(overall.num_samples)}</dd>
        </div>
      </dl>
      {averages && (
        <p class="hint">
          Averages over tags: weighted, {AVERAGE_HINTS.weighted}; micro, {AVERAGE_HINTS.micro}; macro,{' '}
          {AVERAGE_HINTS.macro}.
        </p>
      )}
    </>
  );
}

function perTagConfig(rows: Performance['class']) {
  const tags = Object.keys(rows);
  return {
    type: 'bar' as const,
    data: {
      labels: tags,
      datasets: (['precision', 'recall', 'f1'] as const).map((key, index) => ({
        label: key,
        data: tags.map((tag) => rows[tag]?.[key] ?? 0),
        backgroundColor: PALETTE[index],
      })),
    },
    options: { scales: { y: { min: 0, max: 1 } } },
  };
}

export function PerTag({
  performance,
  metrics,
}: {
  performance: Performance;
  /** The run's logged metrics: a multi-label run's per-tag thresholds are there. */
  metrics?: RunRecord['metrics'];
}) {
  // Hundreds of tags: a page of them at a time (many-tags.tsx); a few: all, as before.
  const { shown, controls } = usePagedTags(performance.class);
  const config = useMemo(() => perTagConfig(shown), [shown]);
  const thresholds = metrics ? tagThresholds(Object.keys(performance.class), metrics) : null;
  return (
    <section aria-labelledby="per-tag-title">
      <h3 id="per-tag-title">Per tag</h3>
      {controls}
      <ChartCanvas
        config={config}
        label={`Precision, recall and f1 of ${controls ? 'the listed tags' : 'each tag'} on the test split`}
      />
      <MetricsTable
        rows={shown}
        first="Tag"
        {...(thresholds ? { extra: { label: 'threshold', values: thresholds } } : {})}
      />
      {thresholds && (
        <p class="hint">
          Threshold: the probability a tag needs to be predicted, chosen for each tag on the validation split.
        </p>
      )}
    </section>
  );
}

export function MetricsTable({
  rows,
  first,
  extra,
}: {
  rows: Performance['class'];
  first: string;
  /** One more column, by row name (e.g. each tag's threshold). */
  extra?: { label: string; values: Record<string, number | string> };
}) {
  const entries = Object.entries(rows);
  if (entries.length === 0) return <p class="muted">None.</p>;
  return (
    <TableScroll label={`${first} metrics`}>
      <table>
        <thead>
          <tr>
            <th scope="col">{first}</th>
            <th scope="col">precision</th>
            <th scope="col">recall</th>
            <th scope="col">f1</th>
            <th scope="col">rows</th>
            {extra && <th scope="col">{extra.label}</th>}
          </tr>
        </thead>
        <tbody>
          {entries.map(([name, m]) => (
            <tr key={name}>
              <th scope="row">{name}</th>
              <td class="num">{metric(m.precision)}</td>
              <td class="num">{metric(m.recall)}</td>
              <td class="num">{metric(m.f1)}</td>
              <td class="num">{metric(m.num_samples)}</td>
              {extra && <td class="num">{metric(extra.values[name])}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

function Curves({ history }: { history: TrainingHistory }) {
  const config = useMemo(() => {
    const steps = [...new Set([...history.train_loss, ...history.val_loss].map((p) => p.step))].sort(
      (a, b) => a - b,
    );
    const series = (points: TrainingHistory['train_loss']) => {
      const byStep = new Map(points.map((p) => [p.step, p.value]));
      return steps.map((step) => byStep.get(step) ?? null);
    };
    return {
      type: 'line' as const,
      data: {
        labels: steps,
        datasets: [
          { label: 'training loss', data: series(history.train_loss), borderColor: PALETTE[0] },
          { label: 'validation loss', data: series(history.val_loss), borderColor: PALETTE[1] },
        ].map((set) => ({ ...set, pointRadius: 0, borderWidth: 2, spanGaps: true })),
      },
      options: { scales: { x: { title: { display: true, text: 'epoch' } } } },
    };
  }, [history]);
  if (history.train_loss.length === 0 && history.val_loss.length === 0) {
    return <p class="muted">This run logged no per-epoch losses.</p>;
  }
  // A model solved exactly (the member classifiers, the soft vote) has no epochs: one loss per fit.
  if (history.train_loss.length <= 1 && history.val_loss.length <= 1) {
    const [train] = history.train_loss;
    const [validation] = history.val_loss;
    return (
      <p class="muted" data-testid="no-epochs">
        Solved exactly, without epochs: log loss {train ? train.value.toFixed(4) : '–'} on its training rows,{' '}
        {validation ? validation.value.toFixed(4) : '–'} on the validation split.
      </p>
    );
  }
  return <ChartCanvas config={config} label="Training and validation loss per epoch" />;
}

/** A single-label run's errors: with its confusion matrix. */
type MatrixErrors = RunErrorsData & { labels: string[]; matrix: number[][] };

const hasMatrix = (errors: RunErrorsData): errors is MatrixErrors =>
  errors.labels !== null && errors.matrix !== null;

function Mistakes({
  errors,
  pair,
  setPair,
}: {
  errors: MatrixErrors;
  pair: { truth: string; predicted: string };
  setPair: (pair: { truth: string; predicted: string }) => void;
}) {
  const shown = errors.mistakes.filter(
    (m) =>
      (pair.truth === '' || m.true_tag === pair.truth) &&
      (pair.predicted === '' || m.predicted_tag === pair.predicted),
  );
  const options = (selected: string, onPick: (value: string) => void, label: string) => (
    <label>
      {label}
      <select value={selected} onChange={(event) => onPick(event.currentTarget.value)}>
        <option value="">any</option>
        {errors.labels.map((tag) => (
          <option key={tag} value={tag}>
            {tag}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <section aria-labelledby="mistakes-title">
      <h3 id="mistakes-title">Mistakes on the test split</h3>
      <div class="filters">
        {options(pair.truth, (truth) => setPair({ ...pair, truth }), 'True tag')}
        {options(pair.predicted, (predicted) => setPair({ ...pair, predicted }), 'Predicted tag')}
      </div>
      <MistakeCount shown={shown.length} errors={errors} />
      <TableScroll label="Mistakes">
        <table class="mistakes">
          <thead>
            <tr>
              <th scope="col">Text</th>
              <th scope="col">True</th>
              <th scope="col">Predicted</th>
              <th scope="col">Confidence</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((m, index) => (
              <tr key={index}>
                <td class="text">{m.text}</td>
                <td>{m.true_tag}</td>
                <td>{m.predicted_tag}</td>
                <td class="num">{m.confidence.toFixed(2)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

/** The confusion matrix for keyboards and screen readers: each mistake count lists those mistakes. */
function MatrixTable({
  errors,
  onPick,
}: {
  errors: MatrixErrors;
  onPick: (pair: { truth: string; predicted: string }) => void;
}) {
  const { labels, matrix } = errors;
  return (
    <TableScroll label="Confusion matrix table">
      <table class="matrix">
        <thead>
          <tr>
            <th scope="col">true ↓ / predicted →</th>
            {labels.map((tag) => (
              <th scope="col" key={tag}>
                {tag}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {labels.map((truth, t) => (
            <tr key={truth}>
              <th scope="row">{truth}</th>
              {labels.map((predicted, p) => {
                const count = matrix[t]?.[p] ?? 0;
                return (
                  <td class="num" key={predicted}>
                    {t === p || count === 0 ? (
                      count
                    ) : (
                      <button
                        type="button"
                        class="link"
                        aria-label={`${count} rows of ${truth} predicted as ${predicted}`}
                        onClick={() => onPick({ truth, predicted })}
                      >
                        {count}
                      </button>
                    )}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

type MistakeKind = 'any' | 'missed' | 'added';

/** A multi-label mistake's tag sets (from `true_tag` / `predicted_tag` when the lists are missing). */
function tagSets(mistake: Mistake): { truth: string[]; predicted: string[] } {
  const split = (joined: string) => joined.split('|').filter(Boolean);
  return {
    truth: mistake.true_tags ?? split(mistake.true_tag),
    predicted: mistake.predicted_tags ?? split(mistake.predicted_tag),
  };
}

/** Whether a mistake missed `tag` or added it wrongly (any tag when `tag` is empty), as `kind` asks. */
function matchesTag(mistake: Mistake, tag: string, kind: MistakeKind): boolean {
  const { truth, predicted } = tagSets(mistake);
  const missed = truth.filter((t) => !predicted.includes(t));
  const added = predicted.filter((t) => !truth.includes(t));
  const wrong = kind === 'missed' ? missed : kind === 'added' ? added : [...missed, ...added];
  return tag === '' ? kind === 'any' || wrong.length > 0 : wrong.includes(tag);
}

/** Tags as chips; those missing from `other` marked (missed true tags, wrongly added predictions). */
function TagChips({ tags, other, side }: { tags: string[]; other: string[]; side: 'true' | 'predicted' }) {
  if (tags.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="chips">
      {tags.map((tag) => {
        const wrong = !other.includes(tag);
        const mark = side === 'true' ? 'missed' : 'added';
        return (
          <li key={tag} class={wrong ? `chip ${mark}` : 'chip'}>
            {wrong && <span aria-hidden="true">{side === 'true' ? '− ' : '+ '}</span>}
            <span class="name">{tag}</span>
            {wrong && (
              <span class="visually-hidden">{side === 'true' ? ' (missed)' : ' (wrongly added)'}</span>
            )}
          </li>
        );
      })}
    </ul>
  );
}

/**
 * A multi-label run's errors: no confusion matrix (a text's tags are not one cell), and mistakes as tag
 * lists, filterable by a tag that was missed or wrongly added.
 */
function TagSetMistakes({ errors }: { errors: RunErrorsData }) {
  const [tag, setTag] = useState('');
  const [kind, setKind] = useState<MistakeKind>('any');
  const tags = useMemo(
    () =>
      [
        ...new Set(
          errors.mistakes.flatMap((m) => {
            const { truth, predicted } = tagSets(m);
            return [...truth, ...predicted];
          }),
        ),
      ].sort(),
    [errors],
  );
  const shown = errors.mistakes.filter((m) => matchesTag(m, tag, kind));
  return (
    <section aria-labelledby="mistakes-title">
      <h3 id="mistakes-title">Mistakes on the test split</h3>
      <p class="muted" data-testid="no-matrix">
        Multi-label runs have no confusion matrix: each text can have several tags, so a mistake is not one
        cell of a tag-by-tag table. Listed are the texts whose predicted tags differ from their true tags.
      </p>
      <div class="filters">
        <label>
          Wrong tag
          <select value={tag} onChange={(event) => setTag(event.currentTarget.value)}>
            <option value="">any</option>
            {tags.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind of mistake
          <select value={kind} onChange={(event) => setKind(event.currentTarget.value as MistakeKind)}>
            <option value="any">missed or wrongly added</option>
            <option value="missed">missed</option>
            <option value="added">wrongly added</option>
          </select>
        </label>
      </div>
      <MistakeCount shown={shown.length} errors={errors} />
      <p class="hint">
        <span aria-hidden="true">− </span>a true tag the model missed; <span aria-hidden="true">+ </span>a tag
        it added wrongly.
      </p>
      <TableScroll label="Mistakes">
        <table class="mistakes tag-sets">
          <thead>
            <tr>
              <th scope="col">Text</th>
              <th scope="col">True tags</th>
              <th scope="col">Predicted tags</th>
              <th scope="col">Confidence</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((m, index) => {
              const { truth, predicted } = tagSets(m);
              return (
                <tr key={index}>
                  <td class="text">{m.text}</td>
                  <td class="true-tags">
                    <TagChips tags={truth} other={predicted} side="true" />
                  </td>
                  <td class="predicted-tags">
                    <TagChips tags={predicted} other={truth} side="predicted" />
                  </td>
                  <td class="num">{m.confidence.toFixed(2)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

function ErrorsPart({ runId }: { runId: string }) {
  const errors = useLoad(() => api.errors(runId), [runId]);
  const [pair, setPair] = useState({ truth: '', predicted: '' });
  const [matrixTags, setMatrixTags] = useState(MATRIX_TAGS);
  // A run of many tags: the matrix over the tags with the most mistakes (many-tags.tsx).
  const part = useMemo(() => {
    const value = errors.value;
    if (!value || !hasMatrix(value)) return null;
    if (value.labels.length <= MATRIX_TAGS) return { ...value, rowTotals: undefined, limited: false };
    return { ...value, ...mostConfused(value.labels, value.matrix, matrixTags), limited: true };
  }, [errors.value, matrixTags]);
  const config = useMemo(
    () => (part ? confusionConfig(part.labels, part.matrix, part.rowTotals) : null),
    [part],
  );
  const onCellClick = useCallback((chart: Chart, event: MouseEvent) => {
    const [hit] = chart.getElementsAtEventForMode(event, 'nearest', { intersect: true }, false);
    const cell = hit
      ? (chart.data.datasets[0]?.data[hit.index] as { x: string; y: string } | undefined)
      : undefined;
    if (cell) setPair({ truth: cell.y, predicted: cell.x });
  }, []);
  if (errors.error instanceof ApiError && errors.error.status === 404) {
    return (
      <p class="muted">
        This run did not log its test-set errors (it was trained before Tagger logged them, or by another
        tool): no confusion matrix or mistakes to show.
      </p>
    );
  }
  if (errors.error) return <Failure error={errors.error} />;
  if (errors.value !== undefined && !hasMatrix(errors.value)) return <TagSetMistakes errors={errors.value} />;
  if (errors.value === undefined || config === null || part === null)
    return <p class="loading">Loading errors…</p>;
  return (
    <>
      <section aria-labelledby="confusion-title">
        <h3 id="confusion-title">Confusion matrix</h3>
        <p class="hint">Rows: true tag; columns: predicted tag. Click a cell to list those mistakes.</p>
        {part.limited && (
          <ManyTagsMatrixNote
            labels={errors.value.labels}
            matrix={errors.value.matrix}
            count={matrixTags}
            setCount={setMatrixTags}
            onPick={setPair}
          />
        )}
        <ChartCanvas
          config={config}
          label={`Confusion matrix of the test split over ${part.labels.join(', ')}`}
          height={Math.max(220, 60 * part.labels.length)}
          onClick={onCellClick}
        />
        <details>
          <summary>The matrix as a table</summary>
          <MatrixTable errors={part} onPick={setPair} />
        </details>
      </section>
      <Mistakes errors={errors.value} pair={pair} setPair={setPair} />
    </>
  );
}

/** One table of arguments, sorted by name. */
function ArgsRows({ entries }: { entries: [string, unknown][] }) {
  return (
    <table class="args">
      <tbody>
        {entries
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([key, value]) => (
            <tr key={key}>
              <th scope="row">{key}</th>
              <td>{typeof value === 'string' ? value : JSON.stringify(value)}</td>
            </tr>
          ))}
      </tbody>
    </table>
  );
}

/**
 * The arguments this run's (or model's) kind uses; those of other kinds, which a run records with their
 * defaults all the same (`unused`, the server's list), folded away below them.
 */
export function ArgsTable({
  args,
  unused = [],
}: {
  args: Record<string, unknown>;
  unused?: readonly string[];
}) {
  const skip = new Set(unused);
  const own = Object.entries(args).filter(([key]) => !skip.has(key));
  const others = Object.entries(args).filter(([key]) => skip.has(key));
  return (
    <>
      <TableScroll label="Arguments">
        <ArgsRows entries={own} />
      </TableScroll>
      {others.length > 0 && (
        <details class="other-args">
          <summary>
            {others.length} arguments of other kinds, recorded with their defaults but not used by this one
          </summary>
          <TableScroll label="Arguments of other kinds">
            <ArgsRows entries={others} />
          </TableScroll>
        </details>
      )}
    </>
  );
}

/** Marks a multi-label run or model: several tags per text. */
export function MultiLabelBadge() {
  return (
    <span class="badge kind" title="Trained to give each text several tags (multi_label)">
      multi-label
    </span>
  );
}

export function RunView({ run }: { run: RunRecord }) {
  const answer = useLoad(() => api.run(run.run_id), [run.run_id]);
  const performance = { value: answer.value?.performance, error: answer.error };
  const history = useLoad(() => api.history(run.run_id), [run.run_id]);
  useEffect(() => window.scrollTo(0, 0), [run.run_id]);
  return (
    <article aria-labelledby="run-title">
      <h2 id="run-title">
        {run.run_name || shortId(run.run_id)} {run.served && <span class="badge">served</span>}
        {isMultiLabel(run.params) && <MultiLabelBadge />}
      </h2>
      <p class="meta">
        <code>{run.run_id}</code> · {run.status.toLowerCase()} · started {when(run.start_time)}
        {' · '}
        <a href={`#/try/${encodeURIComponent(run.run_id)}`}>try this run’s model</a>
        {run.mlflow_url && (
          <>
            {' · '}
            <a href={run.mlflow_url} target="_blank" rel="noopener noreferrer">
              open in MLflow
            </a>
          </>
        )}
      </p>
      {run.not_served_because && <p class="warn">Not served: {run.not_served_because}</p>}
      {run.warnings.length > 0 && (
        <section class="warnings" aria-labelledby="warnings-title" data-testid="run-warnings">
          <h3 id="warnings-title">Data warnings of its training</h3>
          <p class="hint">The data checks warned that this run’s metrics mislead as follows:</p>
          <ul>
            {run.warnings.map((warning) => (
              <li key={warning}>{warning}</li>
            ))}
          </ul>
        </section>
      )}
      {performance.error && <Failure error={performance.error} />}
      {performance.value && (
        <>
          <MetricCards performance={performance.value} metrics={run.metrics} />
          <div class="grid">
            <PerTag performance={performance.value} metrics={run.metrics} />
            <section aria-labelledby="slices-title">
              <h3 id="slices-title">Slices</h3>
              <MetricsTable rows={performance.value.slices} first="Slice" />
              <h3>Training curves</h3>
              {history.error ? (
                <Failure error={history.error} />
              ) : history.value ? (
                <Curves history={history.value} />
              ) : (
                <p class="loading">Loading…</p>
              )}
            </section>
          </div>
        </>
      )}
      {answer.value?.model_choice && <ModelChoiceTable choice={answer.value.model_choice} />}
      {isCascadeRun(run.params) && (
        <CascadePart
          runId={run.run_id}
          f1={typeof run.metrics.f1 === 'number' ? run.metrics.f1 : undefined}
        />
      )}
      <ErrorsPart runId={run.run_id} />
      <LabelIssuesPart runId={run.run_id} />
      <section aria-labelledby="args-title">
        <h3 id="args-title">Arguments</h3>
        <ArgsTable args={run.params} unused={run.unused_params} />
      </section>
    </article>
  );
}

/** How many mistakes the filters show, of those the run kept (and of all it made, when it kept fewer). */
function MistakeCount({ shown, errors }: { shown: number; errors: { total: number; mistakes: unknown[] } }) {
  return (
    <p class="count" aria-live="polite">
      {shown} shown of {errors.mistakes.length} kept
      {errors.total > errors.mistakes.length
        ? ` (${errors.total} mistakes in all; the most confident kept)`
        : ''}
    </p>
  );
}
