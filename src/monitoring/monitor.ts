/**
 * Live quality and drift of the served run, computed from the shared record store over a sliding
 * window: the run's most recent predictions (at most `windowPredictions`, none older than
 * `windowSeconds`) against its reference profile, and the feedback received on its predictions in the
 * last `feedbackWindowSeconds`. Every replica reads the same store, so every replica (and every
 * `--workers` process) computes the same figures, and Prometheus may aggregate them with max.
 *
 * Refreshed on a timer (`intervalMs`) off the request path; `GET /monitoring` and the gauges read the
 * latest result, and a refresh happens first when that is older than the interval. A short history of
 * results (per served run) feeds the inspection page's Live view.
 */
import { Gauge, type Registry } from 'prom-client';
import {
  compareCategories,
  compareCounts,
  DRIFT_SIGNALS,
  type DriftOptions,
  type DriftResult,
  type DriftSignal,
  liveQuality,
  type Metrics,
  NUMERIC_SIGNALS,
  type ReferenceProfile,
} from '../model/index.js';
import type { StoreHandle } from './store-handle.js';

/** What is monitored: the served run (or model) and what it was tested on. */
export interface MonitoredRun {
  scope: string;
  /** '' in single-model mode. */
  runId: string;
  multiLabel: boolean;
  /** Every tag the model knows. */
  tags: readonly string[];
  reference: ReferenceProfile | null;
  /** Why there is no reference (null when there is one). */
  referenceProblem: string | null;
  /** The test split's overall metrics, for the Live view's comparison. */
  test: { precision: number | null; recall: number | null; f1: number | null; num_samples: number | null };
  /**
   * A cascade run: the share of its training rows its threshold routes to the encoder model (the chosen
   * point of its curve) and how many rows that share is of; absent or null for other runs.
   */
  cascade?: { routed: number; rows: number } | null;
}

/** A cascade's routing on live traffic beside its training curve (MonitoringSnapshot.routing). */
export interface CascadeRouting {
  /** Share of the window's predictions the fast model did not answer on its own (encoder + fast_degraded). */
  routed: number | null;
  /** The training curve's share at the chosen τ. */
  expected: number;
  /** The window's predictions by stage (fast, encoder, fast_degraded). */
  stages: Record<string, number>;
  /** The routed share against the training curve's, as the drift signals are judged (PSI, p-value). */
  drift: DriftResult;
}

export interface MonitorOptions {
  windowSeconds: number;
  windowPredictions: number;
  feedbackWindowSeconds: number;
  /** At most this many labelled predictions count (the most recent). */
  feedbackLimit: number;
  intervalMs: number;
  drift: DriftOptions;
}

export interface TagShare {
  tag: string;
  count: number;
  /** Share of the window's predictions. */
  share: number;
  /** Share of the test split's predictions; null without a reference. */
  reference: number | null;
}

export interface MonitoringSnapshot {
  runId: string;
  scope: string;
  computedMs: number;
  sinceMs: number;
  predictions: number;
  tags: TagShare[];
  feedback: number;
  lastFeedbackMs: number | null;
  /**
   * From the labels of the random share only (selection `random_share`): labels chosen by uncertainty,
   * drift or as corrections are a biased sample (mostly mistakes), so they never make the live figures.
   * null without such labels in the window.
   */
  live: Metrics | null;
  /** What `live` comes from: the random share's size, the other labels left out, why it is null. */
  liveBasis: { sample: 'random_share'; numSamples: number; otherLabels: number; reason: string | null };
  /** Every label of the window, however chosen (biased; for comparison). null without feedback. */
  liveAll: Metrics | null;
  liveByTag: Record<string, Metrics>;
  /**
   * A cascade run: live figures of each stage's answers (from the random share's labels, grouped by the
   * stage that answered: `fast`, `encoder`, `fast_degraded`); empty for other runs or without labels.
   */
  liveByStage: Record<string, Metrics>;
  /** A cascade run: its routing on live traffic against the training curve; null for other runs. */
  routing: CascadeRouting | null;
  drift: Record<DriftSignal, DriftResult>;
  test: MonitoredRun['test'];
  referenceAvailable: boolean;
  /** What keeps figures from meaning much (no reference, the store unavailable), for people. */
  problems: string[];
}

export interface HistoryPoint {
  time: number;
  predictions: number;
  feedback: number;
  f1: number | null;
  drift: Record<DriftSignal, number | null>;
}

/** Points of history kept per served run (an hour at the default 10-second interval). */
export const HISTORY_POINTS = 360;

const emptyDrift = (options: DriftOptions, reason: string): Record<DriftSignal, DriftResult> =>
  Object.fromEntries(
    DRIFT_SIGNALS.map((signal) => [
      signal,
      {
        value: null,
        pValue: null,
        threshold: options.threshold,
        drifted: false,
        live: 0,
        reference: 0,
        reason,
      },
    ]),
  ) as Record<DriftSignal, DriftResult>;

/** Live figures per cascade stage, from the random share's labels each stage answered. */
function liveByStage(
  labels: readonly { predicted: string[]; truth: string[]; stage: string | null }[],
  run: MonitoredRun,
): Record<string, Metrics> {
  const byStage = new Map<string, typeof labels>();
  for (const label of labels) {
    if (label.stage === null) continue;
    byStage.set(label.stage, [...(byStage.get(label.stage) ?? []), label]);
  }
  return Object.fromEntries(
    [...byStage]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([stage, rows]) => [stage, liveQuality(rows, run.tags, run.multiLabel).overall]),
  );
}

/** The window's routed share against the training curve's (a two-category drift signal). */
function routingOf(
  cascade: NonNullable<MonitoredRun['cascade']>,
  stages: Readonly<Record<string, number>>,
  options: DriftOptions,
): CascadeRouting {
  const fast = stages.fast ?? 0;
  const total = Object.values(stages).reduce((a, b) => a + b, 0);
  const routed = total - fast;
  const expectedRouted = Math.round(cascade.routed * cascade.rows);
  return {
    routed: total === 0 ? null : routed / total,
    expected: cascade.routed,
    stages: { ...stages },
    drift: compareCategories(
      { fast: cascade.rows - expectedRouted, routed: expectedRouted },
      { fast, routed },
      options,
    ),
  };
}

export class Monitor {
  private latest: MonitoringSnapshot | null = null;
  private refreshing: Promise<MonitoringSnapshot | null> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private points: HistoryPoint[] = [];
  private source: (() => MonitoredRun | null) | undefined;

  constructor(
    private readonly handle: StoreHandle,
    private readonly options: MonitorOptions,
    registry?: Registry,
  ) {
    if (registry) this.registerGauges(registry);
  }

  /** Starts refreshing for what `source` says is served (called once by the app). */
  watch(source: () => MonitoredRun | null): void {
    this.source = source;
    if (this.timer !== undefined || this.options.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), this.options.intervalMs);
    this.timer.unref();
  }

  get history(): readonly HistoryPoint[] {
    return this.points;
  }

  get snapshot(): MonitoringSnapshot | null {
    return this.latest;
  }

  /** The latest figures, refreshed first when older than the interval (or of another run). */
  async current(): Promise<MonitoringSnapshot | null> {
    const run = this.source?.() ?? null;
    if (run === null) return null;
    const fresh =
      this.latest !== null &&
      this.latest.runId === run.runId &&
      this.latest.scope === run.scope &&
      Date.now() - this.latest.computedMs < this.options.intervalMs;
    return fresh ? this.latest : this.refresh();
  }

  /** Recomputes the figures (one refresh at a time; callers meanwhile share it). */
  refresh(): Promise<MonitoringSnapshot | null> {
    this.refreshing ??= this.compute().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async compute(): Promise<MonitoringSnapshot | null> {
    const run = this.source?.() ?? null;
    if (run === null) return null;
    const now = Date.now();
    const sinceMs = now - this.options.windowSeconds * 1000;
    const problems: string[] = [];
    if (run.reference === null)
      problems.push(run.referenceProblem ?? 'the served run has no reference profile');
    let snapshot: MonitoringSnapshot;
    try {
      const store = await this.handle.get();
      const bins = {
        confidence: run.reference?.confidence.lower ?? [0],
        unseen_ngrams: run.reference?.unseen_ngrams.lower ?? [0],
        text_length: run.reference?.text_length.lower ?? [0],
      };
      const [window, feedback] = await Promise.all([
        store.windowCounts({
          scope: run.scope,
          runId: run.runId,
          sinceMs,
          limit: this.options.windowPredictions,
          bins,
        }),
        store.feedbackWindow({
          scope: run.scope,
          runId: run.runId,
          sinceMs: now - this.options.feedbackWindowSeconds * 1000,
          limit: this.options.feedbackLimit,
        }),
      ]);
      const randomShare = feedback.labelled.filter((label) => label.selection === 'random_share');
      const quality = randomShare.length > 0 ? liveQuality(randomShare, run.tags, run.multiLabel) : null;
      const all =
        feedback.labelled.length > 0 ? liveQuality(feedback.labelled, run.tags, run.multiLabel) : null;
      const otherLabels = feedback.labelled.length - randomShare.length;
      const reference = run.reference;
      const drift =
        reference === null
          ? emptyDrift(this.options.drift, problems[0]!)
          : ({
              predicted_tag: compareCategories(
                reference.predicted_tag,
                window.predicted_tag,
                this.options.drift,
              ),
              ...Object.fromEntries(
                NUMERIC_SIGNALS.map((signal) => [
                  signal,
                  compareCounts(reference[signal].counts, window[signal], this.options.drift),
                ]),
              ),
            } as Record<DriftSignal, DriftResult>);
      const referenceTotal =
        reference === null ? 0 : Object.values(reference.predicted_tag).reduce((a, b) => a + b, 0);
      const tagNames = [...new Set([...run.tags, ...Object.keys(window.predicted_tag)])].sort();
      snapshot = {
        runId: run.runId,
        scope: run.scope,
        computedMs: now,
        sinceMs,
        predictions: window.predictions,
        tags: tagNames.map((tag) => {
          const count = window.predicted_tag[tag] ?? 0;
          return {
            tag,
            count,
            share: window.predictions === 0 ? 0 : count / window.predictions,
            reference:
              reference === null || referenceTotal === 0
                ? null
                : (reference.predicted_tag[tag] ?? 0) / referenceTotal,
          };
        }),
        feedback: feedback.labelled.length,
        lastFeedbackMs: feedback.lastReceivedMs,
        live: quality?.overall ?? null,
        liveBasis: {
          sample: 'random_share',
          numSamples: randomShare.length,
          otherLabels,
          reason:
            quality !== null
              ? null
              : otherLabels > 0
                ? `none of the ${otherLabels} labels in the feedback window is of the random share (selection random_share): they were chosen by uncertainty, drift or as corrections, a biased sample (live_all shows them, for comparison); the review queue's random share (GET /review) gives unbiased ones`
                : 'no feedback in the feedback window',
        },
        liveAll: all?.overall ?? null,
        liveByTag: quality?.class ?? {},
        liveByStage: run.cascade ? liveByStage(randomShare, run) : {},
        routing: run.cascade ? routingOf(run.cascade, window.stages, this.options.drift) : null,
        drift,
        test: run.test,
        referenceAvailable: reference !== null,
        problems,
      };
    } catch (error) {
      // The store is unavailable: the figures are unknown, not zero.
      snapshot = {
        runId: run.runId,
        scope: run.scope,
        computedMs: now,
        sinceMs,
        predictions: 0,
        tags: [],
        feedback: 0,
        lastFeedbackMs: null,
        live: null,
        liveBasis: {
          sample: 'random_share',
          numSamples: 0,
          otherLabels: 0,
          reason: 'the record store is unavailable',
        },
        liveAll: null,
        liveByTag: {},
        liveByStage: {},
        routing: null,
        drift: emptyDrift(this.options.drift, 'the record store is unavailable'),
        test: run.test,
        referenceAvailable: run.reference !== null,
        problems: [...problems, `the record store is unavailable: ${(error as Error).message}`],
      };
    }
    this.remember(snapshot);
    return snapshot;
  }

  private remember(snapshot: MonitoringSnapshot): void {
    if (
      this.latest !== null &&
      (this.latest.runId !== snapshot.runId || this.latest.scope !== snapshot.scope)
    ) {
      this.points = [];
    }
    this.latest = snapshot;
    this.points.push({
      time: snapshot.computedMs,
      predictions: snapshot.predictions,
      feedback: snapshot.feedback,
      f1: snapshot.live?.f1 ?? null,
      drift: Object.fromEntries(
        DRIFT_SIGNALS.map((signal) => [signal, snapshot.drift[signal].value]),
      ) as Record<DriftSignal, number | null>,
    });
    if (this.points.length > HISTORY_POINTS) this.points.splice(0, this.points.length - HISTORY_POINTS);
  }

  /**
   * The Prometheus gauges, read from the latest figures at scrape time. Across `--workers` they are
   * aggregated by max (every process computes the same figures from the shared store; min for p-values).
   */
  private registerGauges(registry: Registry): void {
    const registers = [registry];
    const latest = () => this.latest;
    const gauge = (
      name: string,
      help: string,
      labelNames: string[],
      fill: (
        set: (labels: Record<string, string>, value: number) => void,
        snapshot: MonitoringSnapshot,
      ) => void,
      aggregator: 'max' | 'min' = 'max',
    ) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        aggregator,
        collect() {
          this.reset();
          const snapshot = latest();
          if (snapshot !== null) fill((labels, value) => this.set(labels, value), snapshot);
        },
      });
    gauge(
      'tagger_monitoring_window_predictions',
      'Predictions of the served run in the monitoring window (TAGGER_MONITORING_WINDOW, TAGGER_MONITORING_WINDOW_S)',
      [],
      (set, s) => set({}, s.predictions),
    );
    gauge(
      'tagger_monitoring_window_feedback',
      "Feedback labels on the served run's predictions in the feedback window (TAGGER_FEEDBACK_WINDOW_S)",
      [],
      (set, s) => set({}, s.feedback),
    );
    gauge(
      'tagger_feedback_last_received_timestamp_seconds',
      "When feedback on the served run's predictions last arrived (Unix time); absent when it never did",
      [],
      (set, s) => {
        if (s.lastFeedbackMs !== null) set({}, s.lastFeedbackMs / 1000);
      },
    );
    for (const metric of ['precision', 'recall', 'f1'] as const) {
      gauge(
        `tagger_live_${metric}`,
        `Live ${metric} of the served run from the feedback labels of the random share (an unbiased sample; weighted over tags, as the test metrics); absent without such labels`,
        [],
        (set, s) => {
          if (s.live !== null) set({}, s.live[metric]);
        },
      );
    }
    gauge(
      'tagger_live_tag_f1',
      'Live f1 of each tag of the served run from the labels of the random share; absent without them',
      ['tag'],
      (set, s) => {
        if (s.live === null) return;
        for (const [tag, metrics] of Object.entries(s.liveByTag)) set({ tag }, metrics.f1);
      },
    );
    gauge(
      'tagger_live_labels',
      "Labels in the feedback window on the served run's predictions, by how they were chosen (sample=random_share: what the live figures come from; sample=other: uncertainty, drift, corrections, unspecified)",
      ['sample'],
      (set, s) => {
        set({ sample: 'random_share' }, s.liveBasis.numSamples);
        set({ sample: 'other' }, s.liveBasis.otherLabels);
      },
    );
    gauge(
      'tagger_predicted_tag_share',
      "Share of each tag among the served run's predictions: in the monitoring window (source=live) and on its test split (source=reference)",
      ['tag', 'source'],
      (set, s) => {
        for (const share of s.tags) {
          set({ tag: share.tag, source: 'live' }, share.share);
          if (share.reference !== null) set({ tag: share.tag, source: 'reference' }, share.reference);
        }
      },
    );
    gauge(
      'tagger_drift_value',
      'Population stability index of each signal (predicted_tag, confidence, unseen_ngrams, text_length): the window against the test split; absent while too few predictions',
      ['signal'],
      (set, s) => {
        for (const signal of DRIFT_SIGNALS) {
          const value = s.drift[signal].value;
          if (value !== null) set({ signal }, value);
        }
      },
    );
    gauge(
      'tagger_drift_p_value',
      "Chance of each signal's difference with no drift (χ² approximation of the PSI); absent while too few predictions",
      ['signal'],
      (set, s) => {
        for (const signal of DRIFT_SIGNALS) {
          const value = s.drift[signal].pValue;
          if (value !== null) set({ signal }, value);
        }
      },
      'min',
    );
    gauge(
      'tagger_drift_threshold',
      'PSI at which a significant shift of a signal counts as drift (TAGGER_DRIFT_THRESHOLD)',
      ['signal'],
      (set, s) => {
        for (const signal of DRIFT_SIGNALS) set({ signal }, s.drift[signal].threshold);
      },
    );
    gauge(
      'tagger_drift_detected',
      'Whether a signal has drifted (1) or not (0): PSI at or above its threshold and significant',
      ['signal'],
      (set, s) => {
        for (const signal of DRIFT_SIGNALS) set({ signal }, s.drift[signal].drifted ? 1 : 0);
      },
    );
    gauge(
      'tagger_cascade_routed_share',
      'A cascade run: the share of its texts routed to the encoder model (encoder or fast_degraded answers) in the monitoring window (source=live) and on its training curve at the chosen threshold (source=training); absent for other runs',
      ['source'],
      (set, s) => {
        if (s.routing === null) return;
        if (s.routing.routed !== null) set({ source: 'live' }, s.routing.routed);
        set({ source: 'training' }, s.routing.expected);
      },
    );
    gauge(
      'tagger_cascade_routing_drift_detected',
      "A cascade run: whether the live routed share has drifted from the training curve's (1) or not (0), judged as the drift signals are (PSI at or above TAGGER_DRIFT_THRESHOLD and significant)",
      [],
      (set, s) => {
        if (s.routing !== null) set({}, s.routing.drift.drifted ? 1 : 0);
      },
    );
    gauge(
      'tagger_live_stage_f1',
      "A cascade run: live f1 of each stage's answers (fast, encoder, fast_degraded) from the random share's labels; absent without them",
      ['stage'],
      (set, s) => {
        for (const [stage, metrics] of Object.entries(s.liveByStage)) set({ stage }, metrics.f1);
      },
    );
    gauge(
      'tagger_reference_profile_available',
      'Whether the served run has a reference profile to judge drift against (1) or not (0: trained before Tagger logged one)',
      [],
      (set, s) => set({}, s.referenceAvailable ? 1 : 0),
      'min',
    );
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
