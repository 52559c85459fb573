/**
 * `Monitoring`: everything a serving process does about live traffic, behind one object — the record
 * store (opened lazily, again after failures), the recorder and its sinks, feedback, the live figures
 * and the retention of old records. The serving process creates it from its settings and closes it at
 * shutdown; the HTTP layer records predictions through it, takes feedback and reads the figures.
 */
import { randomUUID } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import { hashVocabulary, type ReferenceProfile } from '../model/index.js';
import { maskPaths } from '../tracking/redact.js';
import { CloudEventsSink } from './cloudevents-sink.js';

export { MONITORING_DEFAULTS } from './defaults.js';

import { type FeedbackItem, type FeedbackOutcome, receiveFeedback } from './feedback.js';
import { Monitor, type MonitoredRun, type MonitoringSnapshot } from './monitor.js';
import { openRecordStore } from './open.js';
import type { LabelReview, RecordStore, Vocabulary } from './record-store.js';
import { Recorder, type RecordOrigin } from './recorder.js';
import { type ReviewOrder, type ReviewQueue, reviewQueue } from './review.js';
import type { MonitoringLog, RecordSink } from './sink-queue.js';
import { StoreHandle } from './store-handle.js';

export interface MonitoringConfig {
  /** Where records go (a URI, see open.ts). */
  storeUri: string;
  /** The same URI as logs may show it. */
  storeDisplayUri: string;
  sampleRate: number;
  keepText: boolean;
  bufferSize: number;
  flushMs: number;
  retentionDays: number;
  /** Most records kept in the store (the oldest go first); 0: only the age bounds them. */
  retentionRows: number;
  /** CloudEvents sink (KServe's logger format); null: none. */
  sinkUrl: string | null;
  windowSeconds: number;
  windowPredictions: number;
  feedbackWindowSeconds: number;
  minPredictions: number;
  driftThreshold: number;
  intervalMs: number;
}

/**
 * Records per write: small enough that captured requests are handed to the store's thread within a few
 * milliseconds at high traffic (before the young generation's next collection would copy them), large
 * enough that a write's fixed cost (a message, a transaction) is well under a microsecond a record.
 */
const BATCH_SIZE = 128;
/** Labelled predictions live quality is computed from, at most (the most recent). */
const FEEDBACK_LIMIT = 10_000;
/** Significance a drift must reach besides its PSI threshold (see src/model/drift/drift.ts). */
export const DRIFT_SIGNIFICANCE = 0.01;
/**
 * How often old records are deleted (the first time a minute after start): often enough that a busy
 * server overshoots the row bound by little (600 predictions/s add 180,000 records in 5 minutes).
 */
export const PRUNE_EVERY_MS = 300_000;
/**
 * The longest `POST /feedback` waits for records still on their way from the server that answered
 * (arrival.ts): a few flush intervals, well inside the request deadline (TAGGER_REQUEST_TIMEOUT_MS).
 */
const feedbackWaitMs = (flushMs: number): number => Math.min(20_000, Math.max(10_000, 4 * flushMs));

export interface MonitoringDeps {
  log: MonitoringLog;
  /** The app's metrics registry (`createHttpMetrics().registry`): counters and gauges go there. */
  registry?: Registry | undefined;
  /** Opens the record store (tests pass failing or slow ones); default openRecordStore(config.storeUri). */
  openStore?: () => Promise<RecordStore>;
  /** Extra sinks (tests); the CloudEvents sink comes from `sinkUrl`. */
  sinks?: RecordSink[];
}

/** The training words of a reference profile as a set under a key of its own, built once per profile. */
const vocabularies = new WeakMap<ReferenceProfile, Vocabulary & { key: string }>();
let vocabularyKeys = 0;
export function vocabularyOf(
  reference: ReferenceProfile | null | undefined,
): (Vocabulary & { key: string }) | null {
  if (!reference) return null;
  let vocabulary = vocabularies.get(reference);
  if (vocabulary === undefined) {
    vocabulary = {
      key: `v${++vocabularyKeys}`,
      words: reference.vocabulary,
      set: new Set(reference.vocabulary),
      hashed: hashVocabulary(reference.vocabulary),
    };
    vocabularies.set(reference, vocabulary);
  }
  return vocabulary;
}

export class Monitoring {
  readonly recorder: Recorder;
  readonly monitor: Monitor;
  readonly store: StoreHandle;
  private readonly feedbackCount: Counter<'result'>;
  private readonly pruneTimer: NodeJS.Timeout;
  private firstPrune: NodeJS.Timeout;
  /** This process as a writer of records (arrival.ts): its marks are published every flush interval. */
  readonly writerId = randomUUID();
  private readonly markTimer: NodeJS.Timeout;
  private marking: Promise<void> | undefined;

  constructor(
    readonly config: MonitoringConfig,
    deps: MonitoringDeps,
  ) {
    this.store = new StoreHandle(
      config.storeDisplayUri,
      deps.openStore ?? (() => openRecordStore(config.storeUri)),
      deps.log,
    );
    const sinks: RecordSink[] = [this.store.sink(), ...(deps.sinks ?? [])];
    if (config.sinkUrl !== null) {
      sinks.push(new CloudEventsSink(config.sinkUrl, { namespace: process.env.POD_NAMESPACE || undefined }));
    }
    this.recorder = new Recorder(sinks, {
      sampleRate: config.sampleRate,
      keepText: config.keepText,
      bufferSize: config.bufferSize,
      flushMs: config.flushMs,
      batchSize: BATCH_SIZE,
      log: deps.log,
      registry: deps.registry,
    });
    this.monitor = new Monitor(
      this.store,
      {
        windowSeconds: config.windowSeconds,
        windowPredictions: config.windowPredictions,
        feedbackWindowSeconds: config.feedbackWindowSeconds,
        feedbackLimit: FEEDBACK_LIMIT,
        intervalMs: config.intervalMs,
        drift: {
          threshold: config.driftThreshold,
          significance: DRIFT_SIGNIFICANCE,
          minLive: config.minPredictions,
        },
      },
      deps.registry,
    );
    this.feedbackCount = new Counter({
      name: 'tagger_feedback_received_total',
      help: 'Feedback items received by POST /feedback, by result (accepted, replaced, superseded, unknown_prediction, invalid)',
      labelNames: ['result'] as const,
      registers: deps.registry ? [deps.registry] : [],
    });
    for (const result of [
      'accepted',
      'replaced',
      'superseded',
      'unknown_prediction',
      'pending',
      'invalid',
    ] as const) {
      this.feedbackCount.inc({ result }, 0);
    }
    const prune = () => void this.prune();
    this.firstPrune = setTimeout(prune, 60_000);
    this.firstPrune.unref();
    this.pruneTimer = setInterval(prune, PRUNE_EVERY_MS);
    this.pruneTimer.unref();
    this.markTimer = setInterval(() => void this.publishMark(), config.flushMs);
    this.markTimer.unref();
  }

  /**
   * Publishes what this process has written (one at a time; skipped while the store is not open — this
   * never opens it, so a server that predicts nothing creates no tables —, since nothing is written then
   * either). Failures wait for the next interval: a stale mark only makes feedback for very recent
   * predictions wait, never refuse them.
   */
  publishMark(): Promise<void> {
    if (this.marking !== undefined) return this.marking;
    const store = this.store.peek();
    if (store === undefined || !this.recorder.recording) return Promise.resolve();
    const now = Date.now();
    const mark = {
      writerId: this.writerId,
      writtenThroughMs: this.recorder.writtenThroughMs(now),
      heartbeatMs: now,
      flushMs: this.config.flushMs,
    };
    this.marking = store
      .putWriterMark(mark)
      .catch(() => undefined)
      .finally(() => {
        this.marking = undefined;
      });
    return this.marking;
  }

  /** Starts following what is served (the app calls it with its serving state). */
  watch(source: () => MonitoredRun | null): void {
    this.monitor.watch(source);
  }

  /** The request path: see Recorder.capture. */
  capture(...args: Parameters<Recorder['capture']>): void {
    this.recorder.capture(...args);
  }

  /** Whether predictions are recorded at all (sample rate above 0). */
  get recording(): boolean {
    return this.recorder.recording;
  }

  /** Judges and stores feedback for `scope`; rejects with a RecordStoreError when the store is unavailable. */
  async feedback(scope: string, items: readonly FeedbackItem[]): Promise<FeedbackOutcome[]> {
    const store = await this.store.get();
    const outcomes = await receiveFeedback(store, items, {
      scope,
      retentionDays: this.config.retentionDays,
      sampleRate: this.config.sampleRate,
      arrival: {
        flushMs: this.config.flushMs,
        maxWaitMs: feedbackWaitMs(this.config.flushMs),
        local: this.recorder.recording
          ? {
              writerId: this.writerId,
              flush: () => this.recorder.flush(),
              writtenThroughMs: (now) => this.recorder.writtenThroughMs(now),
            }
          : undefined,
      },
    });
    for (const outcome of outcomes) this.feedbackCount.inc({ result: outcome.result });
    return outcomes;
  }

  /**
   * What keeps records from being kept now (a record store that cannot be written: down, locked, full),
   * with folders of paths masked; readiness and /monitoring list it.
   */
  problems(): string[] {
    return this.recorder.problems().map(maskPaths);
  }

  /**
   * The review queue of a run's recent unlabelled predictions (review.ts), chosen from the feedback
   * window; rejects with a RecordStoreError when the store is unavailable.
   */
  async review(
    run: { scope: string; runId: string },
    request: {
      limit: number;
      order: ReviewOrder;
      randomShare: number;
      thresholds?: Readonly<Record<string, number>> | undefined;
    },
  ): Promise<ReviewQueue> {
    const store = await this.store.get();
    return reviewQueue(store, {
      ...run,
      ...request,
      sinceMs: Date.now() - this.config.feedbackWindowSeconds * 1000,
    });
  }

  /** The decisions on label issues of a scope, or of every scope (undefined). */
  async labelReviews(scope?: string): Promise<LabelReview[]> {
    return (await this.store.get()).labelReviews(scope);
  }

  /** Records decisions on label issues (a later one for the same text replaces the earlier). */
  async putLabelReviews(reviews: readonly LabelReview[]): Promise<void> {
    await (await this.store.get()).putLabelReviews(reviews);
  }

  /** The latest live figures of what is served (refreshed when older than the interval). */
  figures(): Promise<MonitoringSnapshot | null> {
    return this.monitor.current();
  }

  /**
   * Deletes records older than the retention and beyond its row bound; failures are left to the next
   * round (and the store's log).
   */
  async prune(now = Date.now()): Promise<number> {
    try {
      const store = await this.store.get();
      const { retentionDays, retentionRows } = this.config;
      return await store.prune(
        now - retentionDays * 86_400_000,
        retentionRows > 0 ? retentionRows : undefined,
      );
    } catch {
      return 0;
    }
  }

  /** Writes what is waiting (at most `withinMs`), stops the timers and closes the store. */
  async close(withinMs = 5_000): Promise<void> {
    clearTimeout(this.firstPrune);
    clearInterval(this.pruneTimer);
    clearInterval(this.markTimer);
    this.monitor.stop();
    await this.recorder.close(withinMs);
    await this.marking;
    // Nothing is left to write: other servers need not wait for this one any more.
    await this.store
      .peek()
      ?.removeWriterMark(this.writerId)
      .catch(() => undefined);
    await this.store.close();
  }
}

export type { RecordOrigin };
