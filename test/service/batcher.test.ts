/** The dynamic batcher on a fake encoder: batch sizes, waiting, order, the bounded queue, failures. */
import { describe, expect, it } from 'vitest';
import { DynamicBatcher, QueueFullError } from '../../src/service/index.js';

/** A fake encoder: each text's "embedding" is its number; every batch is recorded and held until released. */
function fakeEncoder() {
  const batches: string[][] = [];
  const pending: { texts: string[]; done: () => void; fail: (error: Error) => void }[] = [];
  const run = (texts: string[]) =>
    new Promise<Float32Array[]>((resolve, reject) => {
      batches.push(texts);
      pending.push({
        texts,
        done: () => resolve(texts.map((t) => Float32Array.of(Number(t)))),
        fail: reject,
      });
    });
  return {
    batches,
    run,
    /** Answers the oldest batch at the encoder. */
    finish: async () => {
      pending.shift()!.done();
      await new Promise((r) => setImmediate(r));
    },
    fail: async (error: Error) => {
      pending.shift()!.fail(error);
      await new Promise((r) => setImmediate(r));
    },
    get running() {
      return pending.length;
    },
  };
}

const texts = (from: number, count: number): string[] =>
  Array.from({ length: count }, (_, i) => String(from + i));
const values = (vectors: Float32Array[]): number[] => vectors.map((v) => v[0]!);
const tick = () => new Promise((r) => setImmediate(r));

describe('DynamicBatcher', () => {
  it('sends one batch at a time; what queues meanwhile leaves together, at most maxBatch texts', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 4, maxWaitMs: 0, maxQueue: 0 });
    const first = batcher.submit(texts(0, 1));
    const rest = [1, 2, 3, 4, 5, 6].map((n) => batcher.submit([String(n)]));
    expect(encoder.batches).toEqual([['0']]);
    expect(batcher.queued).toBe(6);
    await encoder.finish();
    expect(values(await first)).toEqual([0]);
    expect(encoder.batches[1]).toEqual(['1', '2', '3', '4']);
    await encoder.finish();
    expect(encoder.batches[2]).toEqual(['5', '6']);
    await encoder.finish();
    expect((await Promise.all(rest)).map(values)).toEqual([[1], [2], [3], [4], [5], [6]]);
    expect(encoder.batches).toHaveLength(3);
  });

  it('cuts a large call across batches and answers it whole, in order, after calls before it', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 3, maxWaitMs: 0, maxQueue: 0 });
    const small = batcher.submit(['100']);
    const large = batcher.submit(texts(0, 7));
    const after = batcher.submit(['200']);
    while (encoder.running > 0) await encoder.finish();
    expect(encoder.batches).toEqual([['100'], ['0', '1', '2'], ['3', '4', '5'], ['6', '200']]);
    expect(values(await small)).toEqual([100]);
    expect(values(await large)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(values(await after)).toEqual([200]);
  });

  it('when idle, holds the first text up to maxWaitMs for company, and no longer once the batch is full', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 3, maxWaitMs: 40, maxQueue: 0 });
    const started = performance.now();
    const a = batcher.submit(['1']);
    await tick();
    expect(encoder.batches).toEqual([]);
    const b = batcher.submit(['2']);
    await new Promise((r) => setTimeout(r, 60));
    expect(encoder.batches).toEqual([['1', '2']]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    await encoder.finish();
    expect((await Promise.all([a, b])).map(values)).toEqual([[1], [2]]);
    // A full batch leaves at once.
    const full = batcher.submit(texts(0, 3));
    expect(encoder.batches[1]).toEqual(['0', '1', '2']);
    await encoder.finish();
    await full;
  });

  it('refuses a call that would overfill the queue, nothing of it queued; an empty queue takes any call', async () => {
    const shed: number[] = [];
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(
      encoder.run,
      { maxBatch: 2, maxWaitMs: 0, maxQueue: 5 },
      { shed: (n) => shed.push(n) },
    );
    const running = batcher.submit(['0']);
    const huge = batcher.submit(texts(10, 9)); // the queue was empty: taken though over the bound
    expect(batcher.queued).toBe(9);
    await expect(batcher.submit(['x'])).rejects.toBeInstanceOf(QueueFullError);
    expect(shed).toEqual([1]);
    expect(batcher.queued).toBe(9);
    while (encoder.running > 0) await encoder.finish();
    await Promise.all([running, huge]);
    const queued = [batcher.submit(['1']), batcher.submit(texts(2, 2)), batcher.submit(texts(4, 2))];
    expect(batcher.queued).toBe(4);
    const error = await batcher.submit(texts(6, 2)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueFullError);
    expect((error as QueueFullError).message).toBe(
      'the encoder is at capacity (4 texts waiting, at most 5; this request has 2); retry later',
    );
    while (encoder.running > 0) await encoder.finish();
    expect((await Promise.all(queued)).map(values)).toEqual([[1], [2, 3], [4, 5]]);
  });

  it("fails only the calls of a failed batch, once, dropping a failed call's texts still waiting", async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 2, maxWaitMs: 0, maxQueue: 0 });
    const first = batcher.submit(['0']);
    const split = batcher.submit(texts(1, 4)).catch((error: unknown) => error);
    const last = batcher.submit(['9']);
    await encoder.finish();
    expect(encoder.batches[1]).toEqual(['1', '2']);
    await encoder.fail(new Error('encoder died'));
    expect(String(await split)).toBe('Error: encoder died');
    expect(encoder.batches[2]).toEqual(['9']);
    await encoder.finish();
    expect(values(await first)).toEqual([0]);
    expect(values(await last)).toEqual([9]);
    expect(batcher.queued).toBe(0);
  });

  it('drains: resolves once nothing is queued or at the encoder', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 2, maxWaitMs: 0, maxQueue: 0 });
    await batcher.drain();
    const calls = [batcher.submit(texts(0, 3))];
    let drained = false;
    const draining = batcher.drain().then(() => {
      drained = true;
    });
    await encoder.finish();
    expect(drained).toBe(false);
    await encoder.finish();
    await draining;
    expect(drained).toBe(true);
    await Promise.all(calls);
  });

  it('refuses settings that make no sense', () => {
    const run = async () => [];
    expect(() => new DynamicBatcher(run, { maxBatch: 0, maxWaitMs: 0, maxQueue: 0 })).toThrow(RangeError);
    expect(() => new DynamicBatcher(run, { maxBatch: 1, maxWaitMs: -1, maxQueue: 0 })).toThrow(RangeError);
    expect(() => new DynamicBatcher(run, { maxBatch: 1, maxWaitMs: 0, maxQueue: 1.5 })).toThrow(RangeError);
  });
});
