/**
 * Feedback for a prediction whose record is still on its way. Records are written in batches off the
 * request path (recorder.ts: flushed every TAGGER_RECORD_FLUSH_MS), by whichever process answered — this
 * one, another `--workers` process, another replica — so a label sent milliseconds after the answer can
 * arrive before its record. Refusing it as unknown loses a label (issue 32: 20 of 20 refused when sent at
 * once); accepting any id would take labels for predictions that never existed.
 *
 * So every recording process publishes a mark in the store each flush interval (`WriterMark`: everything
 * it captured up to a time is written, or was dropped and counted), and an id that is not found is judged
 * by the time its version-7 UUID carries (ids.ts):
 * - written-through by every live writer (and old enough that a writer which had not published yet would
 *   have): it truly does not exist — unknown, a per-item 404;
 * - not yet: wait for it (polling the store, flushing this process's own buffer at once), up to `maxWaitMs`;
 * - still not after that (a writer is behind: a slow or failing store): `pending`, a retryable answer —
 *   never "unknown" for a record that may still arrive.
 * An id that is not a version-7 UUID, or one made in the future, is unknown at once. A writer that has not
 * published for STALE_FLUSHES flush intervals (at least STALE_MIN_MS) has died or cannot reach the store;
 * what it held is lost either way (the recorder counts it), so it is not waited for.
 */
import type { RecordedPrediction, RecordStore, WriterMark } from './record-store.js';

/** A writer silent for this many of its flush intervals (and at least STALE_MIN_MS) is not waited for. */
export const STALE_FLUSHES = 10;
export const STALE_MIN_MS = 30_000;
/** Clocks of replicas differ: an id up to this far in the future is still judged by the marks. */
const FUTURE_SKEW_MS = 60_000;

/** When a prediction id was made (its version-7 UUID's milliseconds), or null for another kind of id. */
export function idTime(id: string): number | null {
  const match = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.exec(id);
  return match === null ? null : Number.parseInt(`${match[1]}${match[2]}`, 16);
}

/** This process's own recorder, as arrival needs it. */
export interface LocalWriter {
  writerId: string;
  /** Hands the buffer to the store's queue now. */
  flush(): void;
  writtenThroughMs(now: number): number;
}

export interface ArrivalOptions {
  /** This server's flush interval: a writer not yet publishing has flushed within about that. */
  flushMs: number;
  /** The longest a request waits for records on their way. */
  maxWaitMs: number;
  pollMs?: number;
  local?: LocalWriter | undefined;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface Arrivals {
  /** Records found while waiting. */
  found: Map<string, RecordedPrediction>;
  /** Ids that may still arrive when the wait ended, with why (for the item's answer). */
  pending: Map<string, string>;
}

const live = (mark: WriterMark, now: number): boolean =>
  now - mark.heartbeatMs <= Math.max(STALE_MIN_MS, STALE_FLUSHES * mark.flushMs);

/** Waits for the records of `ids` (not found in `scope`) that may still be on their way. */
export async function awaitArrivals(
  store: RecordStore,
  scope: string,
  ids: readonly string[],
  options: ArrivalOptions,
): Promise<Arrivals> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((done) => setTimeout(done, ms)));
  const pollMs = options.pollMs ?? Math.min(100, Math.max(10, options.flushMs / 4));
  // A writer that has not published its first mark yet has flushed its first buffer by then.
  const settleMs = 2 * options.flushMs + 1_000;
  const found = new Map<string, RecordedPrediction>();
  const pending = new Map<string, string>();
  let missing = ids.filter((id) => {
    const time = idTime(id);
    return time !== null && time <= now() + FUTURE_SKEW_MS;
  });
  if (missing.length === 0) return { found, pending };
  options.local?.flush();
  const started = now();
  for (;;) {
    const t = now();
    const marks = (await store.writerMarks()).filter(
      (mark) => mark.writerId !== options.local?.writerId && live(mark, t),
    );
    const localMark = options.local?.writtenThroughMs(t) ?? Number.POSITIVE_INFINITY;
    // Looked up after the marks were read: a record a mark covers was written before the mark was.
    const arrived = await store.find(scope, missing);
    for (const [id, record] of arrived) found.set(id, record);
    missing = missing.filter((id) => !arrived.has(id));
    const waiting = new Map<string, string>();
    for (const id of missing) {
      const time = idTime(id)!;
      if (t < time + settleMs) {
        waiting.set(
          id,
          `it was made ${Math.max(0, t - time)} ms ago, and its record may still be on its way`,
        );
      } else if (localMark < time) {
        waiting.set(id, 'this server has not written its records of that time yet');
      } else {
        const behind = marks.filter((mark) => mark.writtenThroughMs < time);
        if (behind.length > 0) {
          waiting.set(
            id,
            `${behind.length === 1 ? 'a server' : `${behind.length} servers`} that may have answered it ${behind.length === 1 ? 'has' : 'have'} not written ${behind.length === 1 ? 'its' : 'their'} records of that time yet (the record store is slow or failing for ${behind.length === 1 ? 'it' : 'them'})`,
          );
        }
      }
    }
    if (waiting.size === 0) return { found, pending };
    if (t - started >= options.maxWaitMs) {
      for (const [id, why] of waiting) pending.set(id, why);
      return { found, pending };
    }
    missing = [...waiting.keys()];
    await sleep(pollMs);
  }
}
