/**
 * Recording predictions without slowing them down. On the request path `capture()` only decides the
 * sample and keeps references (the text, the model's prediction, where it came from) in a bounded
 * buffer: no hashing, no JSON, no I/O, no promise. A timer (and a full batch) flushes the buffer off the
 * request path: each record is completed there (confidence, share of unseen words, length, SHA-256 of
 * the text, the text itself unless only hashes are kept) and handed to every sink's queue
 * (sink-queue.ts), which writes batches one at a time and counts what it drops. So a slow or failing
 * store costs memory up to the bounds, never a request's time or its answer.
 */
import { createHash } from 'node:crypto';
import { Counter, Gauge, type Registry } from 'prom-client';
import { confidenceOf, type Prediction, unseenShare } from '../model/index.js';
import type { PredictionRecord } from './record-store.js';
import { type MonitoringLog, type RecordSink, SinkQueue } from './sink-queue.js';

/** Where a batch of predictions came from: the same object for every text of one request. */
export interface RecordOrigin {
  scope: string;
  /** '' in single-model mode. */
  runId: string;
  /** `<name>/<version>` in registry mode, else null. */
  modelVersion: string | null;
  multiLabel: boolean;
  /** The run's training words (its reference profile), for the unseen-word share; null: not recorded (0). */
  vocabulary: ReadonlySet<string> | null;
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

interface Captured {
  id: string;
  createdMs: number;
  text: string;
  prediction: Prediction;
  origin: RecordOrigin;
}

export class Recorder {
  private buffer: Captured[] = [];
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
          batchSize: options.batchSize,
          retryMs: Math.max(100, options.flushMs),
          log: options.log,
          counters,
        }),
    );
    const queues = this.queues;
    const buffered = () => this.buffer.length;
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

  /** Whether anything would be recorded (a sample rate above 0 and somewhere to write). */
  get recording(): boolean {
    return this.options.sampleRate > 0 && this.queues.length > 0 && !this.closed;
  }

  /**
   * The request path: keeps the sampled predictions of one request (ids, texts and predictions in the
   * same order). Never throws, never waits.
   */
  capture(
    origin: RecordOrigin,
    ids: readonly string[],
    texts: readonly string[],
    predictions: readonly Prediction[],
  ): void {
    if (!this.recording) return;
    const rate = this.options.sampleRate;
    const createdMs = Date.now();
    for (let i = 0; i < ids.length; i++) {
      if (rate < 1 && this.random() >= rate) continue;
      if (this.buffer.length >= this.options.bufferSize) {
        for (const queue of this.queues) queue.drop(1, 'buffer_full');
        continue;
      }
      this.buffer.push({ id: ids[i]!, createdMs, text: texts[i]!, prediction: predictions[i]!, origin });
    }
    if (this.buffer.length >= this.options.batchSize && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Completes the buffered records and hands them to every sink's queue (off the request path). */
  flush(): void {
    this.flushScheduled = false;
    if (this.buffer.length === 0) return;
    const captured = this.buffer;
    this.buffer = [];
    const records = captured.map((entry) => this.complete(entry));
    for (const queue of this.queues) queue.offer(records);
  }

  private complete({ id, createdMs, text, prediction, origin }: Captured): PredictionRecord {
    return {
      predictionId: id,
      createdMs,
      scope: origin.scope,
      runId: origin.runId,
      modelVersion: origin.modelVersion,
      multiLabel: origin.multiLabel,
      predictedTag: prediction.predicted_tag,
      predictedTags: prediction.predicted_tags,
      probabilities: prediction.probabilities,
      confidence: confidenceOf(prediction, origin.multiLabel),
      unseenShare: origin.vocabulary === null ? 0 : unseenShare(text, origin.vocabulary),
      textLength: text.length,
      text: this.options.keepText ? text : null,
      textSha256: createHash('sha256').update(text).digest('hex'),
    };
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
