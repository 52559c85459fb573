/**
 * One bounded queue per place records go (the record store, the CloudEvents sink): batches are handed
 * on off the request path — one at a time, or up to the sink's `concurrency` at once; a failed batch is retried with back-off a few times, then
 * dropped; beyond `capacity` waiting records new ones are dropped. Every drop is counted, and an outage
 * is logged twice — when it starts and when writing works again, with what it cost — never once per
 * failed write.
 *
 * The back-off spares a store that is down, but must not outlast the outage: while records wait, a sink
 * that can be probed (the record store: `SELECT 1`, opening it first if needed) is probed every
 * PROBE_MS, and the first probe or write that succeeds ends the back-off, so writing resumes within
 * about a tenth of a second of the store's return instead of at the next retry (before: up to 30 s later,
 * dropping the full buffer's newcomers all along — ~32,000 of 39,428 drops came after PostgreSQL was back).
 *
 * Drops are seen, not only counted: the first drop after a quiet minute is logged at once, and while
 * drops go on one line a minute says how many (whatever the cause: an outage, or a store that takes records
 * more slowly than predictions arrive, which no write failure shows); `dropping` says so (readiness and
 * /monitoring list it as a problem) until a minute has passed without a drop.
 */
import type { Counter } from 'prom-client';
import { batchSize } from './batch.js';
import type { CapturedBatch } from './record-store.js';

/** Somewhere records are written to. */
export interface RecordSink {
  /** `store` or `cloudevents`: the metrics' `sink` label. */
  readonly name: string;
  /** Where, for logs (no credentials). */
  readonly target: string;
  write(batch: CapturedBatch): Promise<void>;
  /**
   * Batches it may be handed before the first is written (default 1). A store whose writes queue in its
   * worker thread takes several: a batch handed over is copied there at once, so this thread keeps no
   * reference to it — records kept waiting here outlive the young generation and make the collector
   * copy and promote them (measured: more collector time than the records' own writing).
   */
  readonly concurrency?: number;
  /**
   * A cheap check that writing may work again (the record store: a `SELECT 1`, after opening the store
   * if it is not open), called every PROBE_MS while records wait out a back-off; a success ends it.
   * Without one, the back-off's next attempt is the only check.
   */
  probe?(): Promise<void>;
}

/** The subset of pino the monitoring layer writes to. */
export interface MonitoringLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export type DropReason = 'buffer_full' | 'write_failed';

export interface SinkCounters {
  written: Counter<'sink'>;
  dropped: Counter<'sink' | 'reason'>;
}

export interface SinkQueueOptions {
  /** Most records waiting. */
  capacity: number;
  /** The first retry's delay; doubled up to MAX_BACKOFF_MS. */
  retryMs: number;
  log: MonitoringLog;
  counters: SinkCounters;
}

/** Attempts at one batch before it is dropped (a batch the store refuses for its content must not block the rest). */
export const ATTEMPTS = 4;
const MAX_BACKOFF_MS = 30_000;
/**
 * How often a sink is probed while records wait out a back-off: what arrives between the store's return
 * and the next probe is dropped (the buffer is full by then), so often. Every 0.5 s until issue 42:
 * 0–7,310 records dropped after PostgreSQL's return against 0–778 (docs/monitoring.md). A probe is a
 * `SELECT 1` (or a refused connection): cheap at ten a second.
 */
export const PROBE_MS = 100;
/** Drops are reported once a minute while they go on, and are a problem until a minute without one. */
export const DROP_REPORT_MS = 60_000;

/** Records dropped in one stretch: from the first drop after a quiet minute to a minute without one. */
export interface DropStretch {
  /** The first drop (epoch ms). */
  since: number;
  /** The latest drop (epoch ms). */
  last: number;
  /** Records dropped since `since`, by reason. */
  byReason: Record<DropReason, number>;
}

export class SinkQueue {
  private queue: CapturedBatch[] = [];
  private waiting = 0;
  /** Writes under way, and the records they hold. */
  private readonly writing = new Set<Promise<void>>();
  private inFlight = 0;
  /** The batches being written (for oldestPendingMs). */
  private readonly writingBatches = new Set<CapturedBatch>();
  private retryTimer: NodeJS.Timeout | undefined;
  /** The next probe, or true while one is under way. */
  private probing: NodeJS.Timeout | true | undefined;
  private failures = 0;
  /** Set while writes fail: when the outage began and what was dropped since. */
  private outage: { since: number; dropped: number; error: string } | undefined;
  /** The stretch of drops under way, what was dropped since the last report line, and its timer. */
  private drops: (DropStretch & { unreported: number; timer: NodeJS.Timeout }) | undefined;
  /**
   * The drops of that stretch while no outage was under way (an outage's drops are its problem's): a
   * store slower than the traffic, or the backlog of an outage draining after the store came back.
   */
  private unexplained: DropStretch | undefined;
  private closed = false;

  constructor(
    readonly sink: RecordSink,
    private readonly options: SinkQueueOptions,
  ) {}

  /** Records waiting, and being written. */
  get pending(): number {
    return this.waiting + this.inFlight;
  }

  /** While writes fail: since when, the last error, and the records dropped since; else undefined. */
  get failing(): { since: number; error: string; dropped: number } | undefined {
    return this.outage === undefined ? undefined : { ...this.outage };
  }

  /**
   * While records are being dropped with no outage under way (and for a minute after the last such
   * drop): since when, the latest drop and how many, by reason; else undefined. Drops during an outage
   * are counted in `failing`.
   */
  get dropping(): DropStretch | undefined {
    const drops = this.unexplained;
    if (drops === undefined || Date.now() - drops.last >= DROP_REPORT_MS) return undefined;
    return { since: drops.since, last: drops.last, byReason: { ...drops.byReason } };
  }

  /**
   * When the oldest record still waiting or being written here was captured (epoch ms), or null when
   * nothing is: what a writer's mark is computed from (feedback.ts).
   */
  oldestPendingMs(): number | null {
    let oldest = Number.POSITIVE_INFINITY;
    for (const batch of [...this.queue, ...this.writingBatches]) {
      for (const ms of batch.createdMs) if (ms < oldest) oldest = ms;
    }
    return oldest === Number.POSITIVE_INFINITY ? null : oldest;
  }

  /** Queues a batch (dropped and counted whole when it does not fit) and starts writing if idle. */
  offer(batch: CapturedBatch): void {
    const size = batchSize(batch);
    if (this.waiting + this.inFlight + size > this.options.capacity) {
      this.drop(size, 'buffer_full');
      return;
    }
    this.queue.push(batch);
    this.waiting += size;
    this.pump();
    this.probeWhileWaiting();
  }

  /** Counts records dropped (here, or before they reached this queue: the recorder's buffer was full). */
  drop(count: number, reason: DropReason): void {
    if (count <= 0) return;
    this.options.counters.dropped.inc({ sink: this.sink.name, reason }, count);
    if (this.outage) this.outage.dropped += count;
    this.noteDrop(count, reason);
  }

  /** Keeps the stretch of drops: logged when it starts, then once a minute with the count, then its end. */
  private noteDrop(count: number, reason: DropReason): void {
    const now = Date.now();
    if (this.drops === undefined) {
      const timer = setInterval(() => this.reportDrops(), DROP_REPORT_MS);
      timer.unref();
      this.drops = {
        since: now,
        last: now,
        byReason: { buffer_full: 0, write_failed: 0 },
        unreported: 0,
        timer,
      };
      // An outage's first drops follow its own warning, which says records will be dropped.
      if (this.outage === undefined)
        this.options.log.warn(
          { sink: this.sink.name, target: this.sink.target, dropped: count, reason },
          'prediction records are being dropped (counted in tagger_prediction_records_dropped_total); a line a minute says how many while it goes on',
        );
    } else this.drops.unreported += count;
    this.drops.last = now;
    this.drops.byReason[reason] += count;
    if (this.outage !== undefined) return;
    if (this.unexplained === undefined || now - this.unexplained.last >= DROP_REPORT_MS)
      this.unexplained = { since: now, last: now, byReason: { buffer_full: 0, write_failed: 0 } };
    this.unexplained.last = now;
    this.unexplained.byReason[reason] += count;
  }

  /** The minute's line: how many were dropped in it, or that the stretch is over. */
  private reportDrops(): void {
    const drops = this.drops;
    if (drops === undefined) return;
    const total = drops.byReason.buffer_full + drops.byReason.write_failed;
    const where = { sink: this.sink.name, target: this.sink.target };
    if (Date.now() - drops.last >= DROP_REPORT_MS) {
      clearInterval(drops.timer);
      this.drops = undefined;
      this.options.log.info(
        { ...where, dropped: total, byReason: drops.byReason, durationMs: drops.last - drops.since },
        'prediction records are no longer dropped',
      );
      return;
    }
    this.options.log.warn(
      {
        ...where,
        dropped: drops.unreported,
        sinceStart: total,
        byReason: drops.byReason,
        since: new Date(drops.since).toISOString(),
      },
      `prediction records dropped in the last minute: ${drops.unreported}`,
    );
    drops.unreported = 0;
  }

  private pump(): void {
    const concurrency = this.sink.concurrency ?? 1;
    while (this.writing.size < concurrency && this.retryTimer === undefined && this.queue.length > 0) {
      const batch = this.queue.shift()!;
      const size = batchSize(batch);
      this.waiting -= size;
      this.inFlight += size;
      this.writingBatches.add(batch);
      const write: Promise<void> = this.sink.write(batch).then(
        () => this.succeeded(size),
        (error: unknown) => this.failed(batch, error),
      );
      this.writing.add(write);
      void write.finally(() => {
        this.writing.delete(write);
        this.writingBatches.delete(batch);
        this.inFlight -= size;
        this.pump();
      });
    }
  }

  private succeeded(count: number): void {
    this.options.counters.written.inc({ sink: this.sink.name }, count);
    this.failures = 0;
    // Writing works: what waits goes now, not when a back-off set by an earlier failure ends.
    this.endBackoff();
    if (this.outage) {
      this.options.log.info(
        {
          sink: this.sink.name,
          target: this.sink.target,
          outageMs: Date.now() - this.outage.since,
          dropped: this.outage.dropped,
        },
        'prediction records are written again',
      );
      this.outage = undefined;
    }
  }

  private failed(batch: CapturedBatch, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    const size = batchSize(batch);
    this.failures++;
    if (this.outage !== undefined) this.outage.error = message;
    if (this.outage === undefined) {
      this.outage = { since: Date.now(), dropped: 0, error: message };
      this.options.log.warn(
        { sink: this.sink.name, target: this.sink.target, error: message, keeping: this.options.capacity },
        'prediction records cannot be written; keeping them in memory up to the buffer size, dropping (and counting) beyond it, until writing works again',
      );
    }
    if (this.failures % ATTEMPTS === 0 || this.closed) {
      // Tried enough: this batch goes, so one that can never be written does not hold up the rest.
      this.drop(size, 'write_failed');
    } else if (this.waiting + this.inFlight > this.options.capacity) {
      // (The batch still counts in `inFlight` here; back in the queue it would count the same.)
      this.drop(size, 'buffer_full');
    } else {
      // Back to the front: it is older than what waits behind it.
      this.queue.unshift(batch);
      this.waiting += size;
    }
    // One retry timer at a time, whichever of the batches under way failed first.
    if (this.closed || this.retryTimer !== undefined) return;
    const delay = Math.min(MAX_BACKOFF_MS, this.options.retryMs * 2 ** Math.min(10, this.failures - 1));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.pump();
    }, delay);
    this.retryTimer.unref();
    this.probeWhileWaiting();
  }

  /** Cancels the back-off under way (if any) and hands on what waits. */
  private endBackoff(): void {
    if (this.retryTimer === undefined) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.pump();
  }

  /**
   * While records wait out a back-off, probes the sink every PROBE_MS (one probe at a time); the first
   * success ends the back-off.
   */
  private probeWhileWaiting(): void {
    const probe = this.sink.probe?.bind(this.sink);
    if (probe === undefined || this.probing !== undefined) return;
    const due = (): boolean => !this.closed && this.retryTimer !== undefined && this.queue.length > 0;
    if (!due()) return;
    const next = (): void => {
      this.probing = undefined;
      if (!due()) return;
      this.probing = true;
      probe().then(
        () => {
          this.probing = undefined;
          this.endBackoff();
        },
        () => {
          this.probing = undefined;
          this.probeWhileWaiting();
        },
      );
    };
    this.probing = setTimeout(next, PROBE_MS);
    this.probing.unref();
  }

  /** Resolves once nothing is queued or being written (or after `withinMs`); false if time ran out. */
  async idle(withinMs: number): Promise<boolean> {
    const deadline = Date.now() + withinMs;
    while (this.queue.length > 0 || this.writing.size > 0) {
      if (Date.now() >= deadline) return false;
      await new Promise((done) => setTimeout(done, 5));
    }
    return true;
  }

  /**
   * Writes what is queued (retrying failures at once, without back-off) for at most `withinMs`, then
   * drops and counts the rest; for shutdown.
   */
  async drain(withinMs: number): Promise<void> {
    const deadline = Date.now() + withinMs;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    while (Date.now() < deadline && (this.queue.length > 0 || this.writing.size > 0)) {
      this.pump();
      if (this.writing.size === 0) break;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.race(this.writing),
        new Promise((done) => {
          timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        }),
      ]);
      clearTimeout(timer);
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    this.closed = true;
    clearTimeout(this.retryTimer);
    if (this.probing !== undefined && this.probing !== true) clearTimeout(this.probing);
    this.drop(this.waiting, 'write_failed');
    this.queue = [];
    this.waiting = 0;
    if (this.drops !== undefined) clearInterval(this.drops.timer);
  }
}
