/**
 * Feedback for records still on their way (src/monitoring/arrival.ts), on a memory store with a fake
 * clock: an id is waited for while some live writer may still write it, found when it arrives, unknown at
 * once when every live writer is past its time (or it is no version-7 id, or from the future), and
 * pending — never unknown — when a live writer stays behind past the wait.
 */
import { describe, expect, it } from 'vitest';
import { awaitArrivals, idTime, STALE_MIN_MS } from '../../src/monitoring/arrival.js';
import { predictionId } from '../../src/monitoring/ids.js';
import { MemoryRecordStore } from '../../src/monitoring/memory-record-store.js';
import { newScope, record } from './contract.js';

/** A clock that moves only when the waiting sleeps. */
function fakeTime(start: number) {
  let now = start;
  const sleeps: number[] = [];
  return {
    now: () => now,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
    advance: (ms: number) => {
      now += ms;
    },
    sleeps,
  };
}

describe('arrival of records', () => {
  it('reads the time of a version-7 id, and nothing from another kind', () => {
    const ms = Date.UTC(2026, 10, 27, 12, 0, 0, 123);
    expect(idTime(predictionId(ms))).toBe(ms);
    expect(idTime('00000000-0000-4000-8000-000000000000')).toBeNull();
    expect(idTime('not an id')).toBeNull();
  });

  it('waits for a record a live writer has not written yet, and takes it when it arrives', async () => {
    const store = new MemoryRecordStore();
    const scope = newScope();
    const clock = fakeTime(1_000_000);
    const made = clock.now() - 5_000;
    const late = record(scope, { createdMs: made });
    await store.putWriterMark({
      writerId: 'w',
      writtenThroughMs: made - 1,
      heartbeatMs: clock.now(),
      flushMs: 1000,
    });
    let polls = 0;
    const sleep = async (ms: number) => {
      await clock.sleep(ms);
      // On the third poll the writer has written the record and published its mark.
      if (++polls === 3) {
        await store.append([late]);
        await store.putWriterMark({
          writerId: 'w',
          writtenThroughMs: clock.now(),
          heartbeatMs: clock.now(),
          flushMs: 1000,
        });
      }
    };
    const arrivals = await awaitArrivals(store, scope, [late.predictionId], {
      flushMs: 1000,
      maxWaitMs: 10_000,
      now: clock.now,
      sleep,
    });
    expect([...arrivals.found.keys()]).toEqual([late.predictionId]);
    expect(arrivals.pending.size).toBe(0);
    expect(polls).toBe(3);
  });

  it('knows an id does not exist once every live writer is past its time, and waits for none of these', async () => {
    const store = new MemoryRecordStore();
    const scope = newScope();
    const clock = fakeTime(2_000_000);
    const old = predictionId(clock.now() - 60_000);
    await store.putWriterMark({
      writerId: 'w',
      writtenThroughMs: clock.now() - 10,
      heartbeatMs: clock.now(),
      flushMs: 1000,
    });
    // A writer silent for longer than it may be (crashed) is not waited for.
    await store.putWriterMark({
      writerId: 'dead',
      writtenThroughMs: 0,
      heartbeatMs: clock.now() - STALE_MIN_MS - 1,
      flushMs: 1000,
    });
    const future = predictionId(clock.now() + 3_600_000);
    const arrivals = await awaitArrivals(
      store,
      scope,
      [old, future, '00000000-0000-4000-8000-000000000000'],
      { flushMs: 1000, maxWaitMs: 10_000, now: clock.now, sleep: clock.sleep },
    );
    expect(arrivals.found.size).toBe(0);
    expect(arrivals.pending.size).toBe(0);
    expect(clock.sleeps).toEqual([]);
  });

  it('waits out the flush of a writer that has not published yet, then calls the id unknown', async () => {
    const store = new MemoryRecordStore();
    const clock = fakeTime(3_000_000);
    const recent = predictionId(clock.now() - 10);
    const arrivals = await awaitArrivals(store, newScope(), [recent], {
      flushMs: 500,
      maxWaitMs: 10_000,
      now: clock.now,
      sleep: clock.sleep,
    });
    expect(arrivals.pending.size).toBe(0);
    // 2 flush intervals + 1 s after the id's time, no sooner.
    expect(clock.now() - (3_000_000 - 10)).toBeGreaterThanOrEqual(2_000);
  });

  it('answers pending, with why, when a live writer stays behind past the wait; flushes this process first', async () => {
    const store = new MemoryRecordStore();
    const clock = fakeTime(4_000_000);
    const made = clock.now() - 5_000;
    const id = predictionId(made);
    let flushed = 0;
    const arrivals = await awaitArrivals(store, newScope(), [id], {
      flushMs: 1000,
      maxWaitMs: 3_000,
      now: clock.now,
      sleep: clock.sleep,
      // This process's own buffer still holds records older than the id.
      local: { writerId: 'me', flush: () => void flushed++, writtenThroughMs: () => made - 100 },
    });
    expect(flushed).toBe(1);
    expect(arrivals.pending.get(id)).toMatch(/this server has not written its records of that time yet/);
    expect(clock.now() - 4_000_000).toBeGreaterThanOrEqual(3_000);
  });
});
