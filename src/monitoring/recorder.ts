/**
 * Recording predictions without slowing them down. On the request path `capture()` only decides the
 * sample and keeps references (the request's ids, texts and predictions, where they came from) in a
 * bounded buffer — one entry per request, nothing copied per text at a sample rate of 1: no hashing, no
 * JSON, no I/O, no promise. A timer (and a full batch) turns the buffer into
 * column batches off the request path (batch.ts) and hands them to every sink's queue (sink-queue.ts),
 * which hands them on and counts what it drops; a SQL store completes and writes them in
 * its worker thread. So a slow or failing store costs memory up to the bounds, never a request's time or
 * its answer.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Prediction } from '../model/index.js';
import type { BatchOrigin, CapturedBatch, Vocabulary } from './record-store.js';
import { type MonitoringLog, type RecordSink, SinkQueue } from './sink-queue.js';

/** Where a request's predictions came from: the same object for every request of one served run. */
export interface RecordOrigin {
  scope: string;
  /** '' in single-model mode. */
  runId: string;
  /** `<name>/<version>` in registry mode, else null. */
  modelVersion: string | null;
  multiLabel: boolean;
  /** Every tag the model knows, in its order. */
  tags: readonly string[];
  /** The run's training words (its reference profile), under a key; null: none (unseen share 0). */
  vocabulary: (Vocabulary & { key: string }) | null;
}

export interface RecorderOptions {
  /** Share of predictions recorded, 0–1. */
  sampleRate: number;
  /** false: keep only the text's SHA-256 (TAGGER_RECORD_TEXT=hash). */
  keepText: boolean;
  /** Most records waiting, in the capture buffer and in each sink's queue. */
  bufferSize: number;
  /** How often the buffer is flushed (also whenever a batch is full). */
  flushMs: number;
  /** Records per write. */
  batchSize: number;
  log: MonitoringLog;
  /** Where the counters go (the app's registry); a private one without. */
  registry?: Registry | undefined;
  random?: () => number;
}

/** One request's captured predictions: the arrays it already had, kept by reference. */
interface Captured {
  createdMs: number;
  origin: RecordOrigin;
  ids: readonly string[];
  texts: readonly string[];
  predictions: readonly Prediction[];
  /** The sampled positions; null: all of them (a sample rate of 1 copies nothing per text). */
  positions: number[] | null;
  /** The protocol the request came in by (PredictionRecord.protocol). */
  protocol: string;
}

const sizeOf = (entry: Captured): number => entry.positions?.length ?? entry.ids.length;

/** Builds the column batch of captured predictions (off the request path). */
function columns(captured: readonly Captured[], keepText: boolean): CapturedBatch {
  const origins: BatchOrigin[] = [];
  const originIndex = new Map<RecordOrigin, number>();
  const vocabularies = new Map<string, Vocabulary>();
  let values = 0;
  let records = 0;
  for (const entry of captured) {
    if (!originIndex.has(entry.origin)) {
      const { scope, runId, modelVersion, multiLabel, tags, vocabulary } = entry.origin;
      originIndex.set(entry.origin, origins.length);
      origins.push({ scope, runId, modelVersion, multiLabel, tags, vocabularyKey: vocabulary?.key ?? null });
      if (vocabulary !== null) vocabularies.set(vocabulary.key, vocabulary);
    }
    records += sizeOf(entry);
    values += sizeOf(entry) * entry.origin.tags.length;
  }
  const probabilities = new Float64Array(values);
  const batch: CapturedBatch = {
    origins,
    origin: new Array(records),
    ids: new Array(records),
    createdMs: new Array(records),
    texts: new Array(records),
    predictedTag: new Array(records),
    predictedTags: new Array(records),
    stage: new Array(records),
    protocol: new Array(records),
    probabilities,
    keepText,
    vocabularies,
  };
  let i = 0;
  let offset = 0;
  for (const entry of captured) {
    const origin = originIndex.get(entry.origin)!;
    const { tags, multiLabel } = entry.origin;
    const count = sizeOf(entry);
    for (let n = 0; n < count; n++, i++) {
      const at = entry.positions === null ? n : entry.positions[n]!;
      const prediction = entry.predictions[at]!;
      batch.origin[i] = origin;
      batch.ids[i] = entry.ids[at]!;
      batch.createdMs[i] = entry.createdMs;
      batch.texts[i] = entry.texts[at]!;
      batch.predictedTag[i] = prediction.predicted_tag;
      batch.predictedTags[i] = multiLabel ? prediction.predicted_tags : null;
      // A cascade's stage: on the prediction (fast, encoder), or `fast_degraded` as the server marked it.
      batch.stage![i] = (prediction as { stage?: string }).stage ?? null;
      batch.protocol![i] = entry.protocol;
      const p = prediction.probabilities;
      for (const tag of tags) probabilities[offset++] = p[tag] ?? 0;
    }
  }
  return batch;
}

export class Recorder {
  private buffer: Captured[] = [];
  /** Records in `buffer`. */
  private buffered = 0;
  private readonly queues: SinkQueue[];
  private readonly timer: NodeJS.Timeout;
  private flushScheduled = false;
  private closed = false;
  private readonly random: () => number;

  constructor(
    sinks: readonly RecordSink[],
    private readonly options: RecorderOptions,
  ) {
    const registers = options.registry ? [options.registry] : [];
    const counters = {
      written: new Counter({
        name: 'tagger_prediction_records_written_total',
        help: 'Prediction records written, by sink (store: the record store; cloudevents: the CloudEvents sink)',
        labelNames: ['sink'] as const,
        registers,
      }),
      dropped: new Counter({
        name: 'tagger_prediction_records_dropped_total',
        help: 'Prediction records given up, by sink and reason (buffer_full: more waiting than TAGGER_RECORD_BUFFER; write_failed: failed every retry or left at shutdown)',
        labelNames: ['sink', 'reason'] as const,
        registers,
      }),
    };
    this.queues = sinks.map(
      (sink) =>
        new SinkQueue(sink, {
          capacity: options.bufferSize,
          retryMs: Math.max(100, options.flushMs),
          log: options.log,
          counters,
        }),
    );
    const queues = this.queues;
    const buffered = () => this.buffered;
    new Gauge({
      name: 'tagger_prediction_records_pending',
      help: 'Prediction records waiting to be written, by sink',
      labelNames: ['sink'] as const,
      registers,
      collect() {
        this.reset();
        for (const queue of queues) this.set({ sink: queue.sink.name }, queue.pending + buffered());
      },
    });
    // Counted even when nothing was dropped yet, so the series exist for rules and dashboards from the start.
    for (const queue of this.queues) {
      counters.written.inc({ sink: queue.sink.name }, 0);
      for (const reason of ['buffer_full', 'write_failed'] as const) {
        counters.dropped.inc({ sink: queue.sink.name, reason }, 0);
      }
    }
    this.random = options.random ?? Math.random;
    this.timer = setInterval(() => this.flush(), options.flushMs);
    this.timer.unref();
  }

  /**
   * Sinks that cannot be written now, for people (readiness and /monitoring list them): where, since
   * when, why and what it has cost so far. Empty while every sink writes.
   */
  problems(): string[] {
    const problems: string[] = [];
    for (const queue of this.queues) {
      const where = `${queue.sink.name === 'store' ? 'record store' : `${queue.sink.name} sink`} ${queue.sink.target}`;
      const failing = queue.failing;
      if (failing !== undefined) {
        problems.push(
          `prediction records cannot be written to the ${where} since ${new Date(failing.since).toISOString()} (${failing.error}); ${failing.dropped} dropped so far — predictions are served, and records wait (up to TAGGER_RECORD_BUFFER) until writing works again`,
        );
        continue;
      }
      // Drops while writes succeed (a store slower than the traffic, or the backlog of an outage
      // draining), shown until a minute has passed without one.
      const dropping = queue.dropping;
      if (dropping === undefined) continue;
      const { buffer_full: full, write_failed: failed } = dropping.byReason;
      const why = [
        full > 0
          ? `${full} because more were waiting than TAGGER_RECORD_BUFFER allows (the store takes them more slowly than predictions arrive)`
          : '',
        failed > 0 ? `${failed} because their writes failed` : '',
      ]
        .filter((part) => part !== '')
        .join(', ');
      problems.push(
        `prediction records for the ${where} are being dropped: ${full + failed} since ${new Date(dropping.since).toISOString()}, the latest at ${new Date(dropping.last).toISOString()} (${why}) — predictions are served; a larger TAGGER_RECORD_BUFFER or a lower TAGGER_RECORD_SAMPLE_RATE keeps more, and this clears a minute after the last drop`,
      );
    }
    return problems;
  }

  /** Whether anything would be recorded (a sample rate above 0 and somewhere to write). */
  get recording(): boolean {
    return this.options.sampleRate > 0 && this.queues.length > 0 && !this.closed;
  }

  /**
   * The request path: keeps the sampled predictions of one request (ids, texts and predictions in the
   * same order), and the protocol it came in by. Never throws, never waits.
   */
  capture(
    origin: RecordOrigin,
    ids: readonly string[],
    texts: readonly string[],
    predictions: readonly Prediction[],
    protocol = 'tagger',
  ): void {
    if (!this.recording || ids.length === 0) return;
    const rate = this.options.sampleRate;
    let positions: number[] | null = null;
    if (rate < 1) {
      positions = [];
      for (let i = 0; i < ids.length; i++) if (this.random() < rate) positions.push(i);
      if (positions.length === 0) return;
    }
    const entry: Captured = { createdMs: Date.now(), origin, ids, texts, predictions, positions, protocol };
    const size = sizeOf(entry);
    if (this.buffered + size > this.options.bufferSize) {
      for (const queue of this.queues) queue.drop(size, 'buffer_full');
      return;
    }
    this.buffer.push(entry);
    this.buffered += size;
    if (this.buffered >= this.options.batchSize && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Hands the buffered records, as column batches of at most batchSize, to every sink's queue. */
  flush(): void {
    this.flushScheduled = false;
    if (this.buffer.length === 0) return;
    const captured = this.buffer;
    this.buffer = [];
    this.buffered = 0;
    // Requests whole, in batches of about batchSize records (a request of more texts is one batch).
    let start = 0;
    while (start < captured.length) {
      let end = start;
      let size = 0;
      while (
        end < captured.length &&
        (size === 0 || size + sizeOf(captured[end]!) <= this.options.batchSize)
      ) {
        size += sizeOf(captured[end]!);
        end++;
      }
      const batch = columns(captured.slice(start, end), this.options.keepText);
      for (const queue of this.queues) queue.offer(batch);
      start = end;
    }
  }

  /**
   * Every prediction this process captured at or before the time returned is in the record store (sink
   * `store`) or was dropped and counted: one millisecond before the oldest record still in the buffer or
   * the store's queue, or before `now` when nothing waits (a capture in this millisecond may still come).
   */
  writtenThroughMs(now = Date.now()): number {
    let oldest = this.buffer[0]?.createdMs ?? Number.POSITIVE_INFINITY;
    for (const queue of this.queues) {
      if (queue.sink.name !== 'store') continue;
      oldest = Math.min(oldest, queue.oldestPendingMs() ?? Number.POSITIVE_INFINITY);
    }
    return Math.min(oldest, now) - 1;
  }

  /**
   * Flushes now and waits until every sink has written what was waiting (at most `withinMs`); false when
   * time ran out. For tests and tools that need records in the store before they go on.
   */
  async settle(withinMs = 10_000): Promise<boolean> {
    this.flush();
    const idle = await Promise.all(this.queues.map((queue) => queue.idle(withinMs)));
    return idle.every(Boolean);
  }

  /** Flushes and writes what is waiting, for at most `withinMs`; what is left is dropped and counted. */
  async close(withinMs = 5_000): Promise<void> {
    if (this.closed) return;
    clearInterval(this.timer);
    this.flush();
    this.closed = true;
    await Promise.all(this.queues.map((queue) => queue.drain(withinMs)));
  }
}
