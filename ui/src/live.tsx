/**
 * The Live view (`#/live`): the served run on live traffic, from `GET /monitoring`, read again every few
 * seconds — predictions and feedback in the window, live precision / recall / f1 beside the test split's,
 * each drift signal with its threshold, the predicted-tag shares beside the test split's, and the
 * figures over time since the server loaded the run.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { DriftFigures, MonitoringReport } from '../../src/http/api-types.js';
import { AuthError, api } from './api';
import { ChartCanvas, PALETTE } from './charts';
import { metric, shortId } from './format';
import { Failure } from './load';
import { TAG_PAGE, usePaged } from './many-tags';
import { TableScroll } from './table-scroll';

/** How often the figures are read again (the server recomputes them every 10 s by default). */
const POLL_MS = 5000;

const SIGNALS = ['predicted_tag', 'confidence', 'unseen_ngrams', 'text_length'] as const;
const SIGNAL_NAMES: Record<(typeof SIGNALS)[number], string> = {
  predicted_tag: 'predicted tag',
  confidence: 'confidence',
  unseen_ngrams: 'words unseen in training',
  text_length: 'text length',
};

const clock = (iso: string): string => new Date(iso).toLocaleTimeString();
const percent = (share: number | null): string => (share === null ? '—' : `${(100 * share).toFixed(1)}%`);

function useMonitoring(): { report?: MonitoringReport; error?: Error } {
  const [state, setState] = useState<{ report?: MonitoringReport; error?: Error }>({});
  useEffect(() => {
    let alive = true;
    const read = () =>
      api.monitoring().then(
        (report) => alive && setState({ report }),
        (error: unknown) => {
          if (!alive) return;
          if (error instanceof AuthError)
            window.dispatchEvent(new CustomEvent('tagger:auth', { detail: error }));
          setState((before) => ({
            ...before,
            error: error instanceof Error ? error : new Error(String(error)),
          }));
        },
      );
    void read();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void read();
    }, POLL_MS);
    return () => {
      alive = false;
      clearInterval(timer);
    };
  }, []);
  return state;
}

function QualityCards({ report }: { report: MonitoringReport }) {
  const { live, test } = report;
  return (
    <dl class="cards">
      <div class="card">
        <dt>predictions in the window</dt>
        <dd>{report.predictions}</dd>
        <dd class="sub">since {clock(report.window.since)}</dd>
      </div>
      <div class="card">
        <dt>labelled (feedback)</dt>
        <dd>{report.feedback}</dd>
        <dd class="sub">
          last {report.last_feedback_at === null ? 'never' : clock(report.last_feedback_at)}
        </dd>
      </div>
      {(['precision', 'recall', 'f1'] as const).map((key) => (
        <div class="card" key={key} data-live={key}>
          <dt>live {key}</dt>
          <dd>{live === null ? '—' : metric(live[key])}</dd>
          <dd class="sub">test split {metric(test[key])}</dd>
        </div>
      ))}
      <div class="card" data-live="basis">
        <dt>from the random share</dt>
        <dd>{report.live_basis.num_samples} labels</dd>
        <dd class="sub">
          {report.live_basis.other_labels} others left out (biased: chosen by uncertainty, drift or as
          corrections
          {report.live_all === null ? '' : `; their f1 ${metric(report.live_all.f1)}`})
        </dd>
      </div>
    </dl>
  );
}

function DriftTable({ drift }: { drift: MonitoringReport['drift'] }) {
  return (
    <TableScroll label="Drift per signal">
      <table>
        <thead>
          <tr>
            <th scope="col">Signal</th>
            <th scope="col" class="num">
              PSI
            </th>
            <th scope="col" class="num">
              threshold
            </th>
            <th scope="col" class="num">
              p-value
            </th>
            <th scope="col">drifted</th>
          </tr>
        </thead>
        <tbody>
          {SIGNALS.map((signal) => {
            const figures: DriftFigures = drift[signal];
            return (
              <tr key={signal} data-signal={signal} class={figures.drifted ? 'drifted' : undefined}>
                <th scope="row">{SIGNAL_NAMES[signal]}</th>
                <td class="num">{metric(figures.value)}</td>
                <td class="num">{metric(figures.threshold)}</td>
                <td class="num">{figures.p_value === null ? '—' : figures.p_value.toExponential(1)}</td>
                {/* "no" under a PSI above the threshold says why when pointed at (not significant yet). */}
                <td title={figures.value !== null ? figures.reason : undefined}>
                  {figures.drifted ? 'yes' : figures.value === null ? (figures.reason ?? '—') : 'no'}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableScroll>
  );
}

const STAGE_NAMES: Record<string, string> = {
  fast: 'fast model',
  encoder: 'encoder model',
  fast_degraded: 'fast model, encoder busy',
};

/** A cascade run: its routing against the training curve, and each stage's live figures. */
function CascadeRouting({ report }: { report: MonitoringReport }) {
  const routing = report.routing;
  if (routing === undefined) return null;
  const stages = Object.keys(STAGE_NAMES);
  const total = stages.reduce((sum, stage) => sum + (routing.stages[stage] ?? 0), 0);
  return (
    <section aria-labelledby="routing-title" data-testid="cascade-routing">
      <h3 id="routing-title">Cascade routing</h3>
      <p class={routing.drift.drifted ? 'warn' : undefined} data-testid="routing-summary">
        {routing.routed === null ? 'No predictions yet' : `${percent(routing.routed)} of the window routed`}{' '}
        to the encoder model; the training curve routed {percent(routing.expected)} at the chosen threshold
        {routing.drift.drifted
          ? ` — drifted (PSI ${metric(routing.drift.value)})`
          : routing.drift.value === null
            ? ` (${routing.drift.reason ?? 'not judged yet'})`
            : ' — no drift'}
        .
      </p>
      <TableScroll label="Answers by cascade stage">
        <table>
          <thead>
            <tr>
              <th scope="col">Stage</th>
              <th scope="col" class="num">
                answers
              </th>
              <th scope="col" class="num">
                live f1
              </th>
              <th scope="col" class="num">
                labels
              </th>
            </tr>
          </thead>
          <tbody>
            {stages.map((stage) => (
              <tr key={stage} data-stage={stage}>
                <th scope="row">{STAGE_NAMES[stage]}</th>
                <td class="num">
                  {routing.stages[stage] ?? 0}
                  {total > 0 ? ` (${percent((routing.stages[stage] ?? 0) / total)})` : ''}
                </td>
                <td class="num">{metric(report.live_by_stage?.[stage]?.f1 ?? null)}</td>
                <td class="num">{report.live_by_stage?.[stage]?.num_samples ?? 0}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

function OverTime({ report }: { report: MonitoringReport }) {
  const labels = report.history.map((point) => clock(point.time));
  const quality = useMemo(
    () => ({
      type: 'line' as const,
      data: {
        labels,
        datasets: [
          {
            label: 'live f1',
            data: report.history.map((p) => p.f1),
            borderColor: PALETTE[0],
            spanGaps: true,
          },
          {
            label: 'test f1',
            data: report.history.map(() => report.test.f1),
            borderColor: PALETTE[1],
            borderDash: [6, 4],
            pointRadius: 0,
          },
        ],
      },
      options: { scales: { y: { min: 0, max: 1 } } },
    }),
    [report],
  );
  const drift = useMemo(
    () => ({
      type: 'line' as const,
      data: {
        labels,
        datasets: [
          ...SIGNALS.map((signal, i) => ({
            label: SIGNAL_NAMES[signal],
            data: report.history.map((p) => p.drift[signal]),
            borderColor: PALETTE[i % PALETTE.length],
            spanGaps: true,
          })),
          {
            label: 'threshold',
            data: report.history.map(() => report.drift.predicted_tag.threshold),
            borderColor: '#6b6b6b',
            borderDash: [6, 4],
            pointRadius: 0,
          },
        ],
      },
      options: { scales: { y: { min: 0 } } },
    }),
    [report],
  );
  return (
    <div class="grid">
      <section aria-labelledby="live-quality-title">
        <h3 id="live-quality-title">Live f1 over time</h3>
        <ChartCanvas
          config={quality}
          label="Live f1 from feedback at each refresh, beside the test split's f1"
        />
      </section>
      <section aria-labelledby="live-drift-title">
        <h3 id="live-drift-title">Drift over time (PSI)</h3>
        <ChartCanvas
          config={drift}
          label="Population stability index of each signal at each refresh, and its threshold"
        />
      </section>
    </div>
  );
}

function TagShares({ report }: { report: MonitoringReport }) {
  // A model of many tags: a page of them at a time (many-tags.tsx), the most predicted first.
  const ordered = useMemo(
    () =>
      report.tags.length <= TAG_PAGE
        ? report.tags
        : [...report.tags].sort((a, b) => b.count - a.count || a.tag.localeCompare(b.tag)),
    [report],
  );
  const { shown: tags, controls } = usePaged(ordered, 'Tags', 'most predicted first');
  const config = useMemo(
    () => ({
      type: 'bar' as const,
      data: {
        labels: tags.map((t) => t.tag),
        datasets: [
          { label: 'live', data: tags.map((t) => t.share), backgroundColor: PALETTE[0] },
          {
            label: 'test split',
            data: tags.map((t) => t.reference ?? 0),
            backgroundColor: PALETTE[1],
          },
        ],
      },
      options: { scales: { y: { min: 0, max: 1 } } },
    }),
    [tags],
  );
  return (
    <section aria-labelledby="live-tags-title">
      <h3 id="live-tags-title">Predicted tags</h3>
      {controls}
      <ChartCanvas config={config} label="Share of each predicted tag in the window and on the test split" />
      <TableScroll label="Predicted tags">
        <table>
          <thead>
            <tr>
              <th scope="col">Tag</th>
              <th scope="col" class="num">
                predictions
              </th>
              <th scope="col" class="num">
                live share
              </th>
              <th scope="col" class="num">
                test split
              </th>
              <th scope="col" class="num">
                live f1
              </th>
            </tr>
          </thead>
          <tbody>
            {tags.map((t) => (
              <tr key={t.tag}>
                <th scope="row">{t.tag}</th>
                <td class="num">{t.count}</td>
                <td class="num">{percent(t.share)}</td>
                <td class="num">{percent(t.reference)}</td>
                <td class="num">{report.live === null ? '—' : metric(report.live_class[t.tag]?.f1)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

export function LiveView() {
  const { report, error } = useMonitoring();
  if (report === undefined)
    return error ? <Failure error={error} /> : <p class="loading">Loading live figures…</p>;
  return (
    <article aria-labelledby="live-title">
      <h2 id="live-title">Live</h2>
      <p class="muted">
        {report.run_id === null ? (
          'The served model'
        ) : (
          <>
            Run <code>{shortId(report.run_id)}</code>
          </>
        )}{' '}
        on its latest {report.predictions} predictions (at most {report.window.max_predictions}, the last{' '}
        {Math.round(report.window.seconds / 60)} minutes), every replica's, beside its test split; feedback
        from the last {Math.round(report.window.feedback_seconds / 86_400)} days. Updated{' '}
        {clock(report.computed_at)}. Records: {report.recording.store},{' '}
        {percent(report.recording.sample_rate)} of predictions,{' '}
        {report.recording.text === 'full' ? 'texts kept' : 'only hashes of the texts'}.
      </p>
      {error && <p class="warn">Not refreshed: {error.message}</p>}
      {report.problems.length > 0 && (
        <ul class="problems" aria-label="Problems">
          {report.problems.map((problem) => (
            <li key={problem}>{problem}</li>
          ))}
        </ul>
      )}
      <QualityCards report={report} />
      {report.live_basis.reason !== undefined && (
        <p class="hint" data-testid="live-basis-reason">
          Live precision, recall and f1: {report.live_basis.reason}.
        </p>
      )}
      <h3>Drift</h3>
      <DriftTable drift={report.drift} />
      <CascadeRouting report={report} />
      <OverTime report={report} />
      <TagShares report={report} />
    </article>
  );
}
