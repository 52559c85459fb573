/**
 * The dynamic batcher on a fake encoder: batch sizes, waiting, fair shares between calls, the queue
 * bounded in texts and in estimated tokens, the cap on one call's work, failures.
 */
import { describe, expect, it } from 'vitest';
import { DynamicBatcher, QueueFullError, RequestTooLargeError } from '../../src/served-models/index.js';
import { estimateTokens } from '../../src/served-models/token-estimate.js';

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

  it('cuts a large call across batches and gives the calls behind it their share of each batch', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 3, maxWaitMs: 0, maxQueue: 0 });
    const small = batcher.submit(['100']);
    const large = batcher.submit(texts(0, 7));
    const after = batcher.submit(['200']);
    while (encoder.running > 0) await encoder.finish();
    // One text of each waiting call in turn, oldest first: the short call behind the large one leaves
    // with the next batch instead of after all of it (before: ['0','1','2'], ['3','4','5'], ['6','200']).
    expect(encoder.batches).toEqual([['100'], ['0', '200', '1'], ['2', '3', '4'], ['5', '6']]);
    expect(values(await small)).toEqual([100]);
    expect(values(await large)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(values(await after)).toEqual([200]);
  });

  it("inOrder: each call leaves before the next one, as one job's batches should", async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, {
      maxBatch: 3,
      maxWaitMs: 0,
      maxQueue: 0,
      inOrder: true,
    });
    const first = batcher.submit(['100']);
    const a = batcher.submit(texts(0, 4));
    const b = batcher.submit(texts(10, 2));
    while (encoder.running > 0) await encoder.finish();
    expect(encoder.batches).toEqual([['100'], ['0', '1', '2'], ['3', '10', '11']]);
    expect((await Promise.all([first, a, b])).map(values)).toEqual([[100], [0, 1, 2, 3], [10, 11]]);
  });

  it('abandon: refuses every call not answered and drops its waiting texts; the batch at the encoder finishes alone', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 2, maxWaitMs: 0, maxQueue: 0 });
    const running = batcher.submit(texts(0, 3)).catch((error: unknown) => error);
    const waiting = batcher.submit(texts(10, 4)).catch((error: unknown) => error);
    expect(encoder.batches).toEqual([['0', '1']]);
    const stopped = new Error('stopped');
    batcher.abandon(stopped);
    expect(batcher.queued).toBe(0);
    expect(await running).toBe(stopped);
    expect(await waiting).toBe(stopped);
    let drained = false;
    const drain = batcher.drain().then(() => {
      drained = true;
    });
    await tick();
    expect(drained).toBe(false); // the batch at the encoder is still under way
    await encoder.finish();
    await drain;
    expect(encoder.batches).toHaveLength(1);
    // Later calls are taken as before.
    const after = batcher.submit(['5']);
    await encoder.finish();
    expect(values(await after)).toEqual([5]);
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

  it('takes a call only when what waits and the call fit the bound, each at its true size; nothing of a refused call is queued', async () => {
    const shed: number[] = [];
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(
      encoder.run,
      { maxBatch: 2, maxWaitMs: 0, maxQueue: 8 },
      { shed: (n) => shed.push(n) },
    );
    const running = batcher.submit(['0']); // at the encoder at once: not waiting
    const waiting = [batcher.submit(texts(1, 3)), batcher.submit(texts(4, 4))];
    expect(batcher.queued).toBe(7);
    await expect(batcher.submit(texts(30, 2))).rejects.toBeInstanceOf(QueueFullError);
    const error = await batcher.submit(texts(30, 2)).catch((e: unknown) => e);
    expect((error as QueueFullError).message).toBe(
      'the encoder is at capacity (7 texts waiting, at most 8; this request has 2); retry later',
    );
    const last = batcher.submit(['8']); // exactly to the bound
    expect(batcher.queued).toBe(8);
    expect(shed).toEqual([2, 2]);
    while (encoder.running > 0) await encoder.finish();
    expect((await Promise.all([running, ...waiting, last])).map(values)).toEqual([
      [0],
      [1, 2, 3],
      [4, 5, 6, 7],
      [8],
    ]);
  });

  it('a call larger than the bound is taken only when nothing waits, and then waits alone until what is left of it fits', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 2, maxWaitMs: 0, maxQueue: 4 });
    const small = batcher.submit(['100']); // at the encoder
    const before = batcher.submit(['101']); // waiting
    // Nine texts never fit beside anything: refused while something waits…
    await expect(batcher.submit(texts(0, 9))).rejects.toBeInstanceOf(QueueFullError);
    await encoder.finish(); // '101' goes to the encoder; nothing waits now
    // …and taken when nothing does, though over the bound.
    const huge = batcher.submit(texts(0, 9));
    expect(batcher.queued).toBe(9);
    await expect(batcher.submit(['200'])).rejects.toBeInstanceOf(QueueFullError);
    await encoder.finish(); // '101' done; the encoder takes '0', '1': 7 wait
    await encoder.finish(); // '2', '3': 5 wait
    expect(batcher.queued).toBe(5);
    await expect(batcher.submit(['200'])).rejects.toBeInstanceOf(QueueFullError);
    await encoder.finish(); // '4', '5': 3 wait, and a one-text call fits again
    const probe = batcher.submit(['200']);
    expect(batcher.queued).toBe(4);
    await encoder.finish();
    // Its share of the next batch: with the huge call's next text, not after all of it.
    expect(encoder.batches.at(-1)).toEqual(['6', '200']);
    while (encoder.running > 0) await encoder.finish();
    expect(values(await probe)).toEqual([200]);
    expect(values(await huge)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    await Promise.all([small, before]);
  });

  it('weighs texts by their estimated tokens: the queue and each batch are bounded in work', async () => {
    const encoder = fakeEncoder();
    // A text's cost: its number (the fake encoder's texts are numbers).
    const batcher = new DynamicBatcher(encoder.run, {
      maxBatch: 100,
      maxWaitMs: 0,
      maxQueue: 0,
      maxQueueTokens: 400,
      maxBatchTokens: 250,
      cost: (text) => Number(text),
    });
    const first = batcher.submit(['10']);
    const a = batcher.submit(['100', '100']);
    const b = batcher.submit(['150']);
    expect(batcher.queuedWork).toBe(350);
    // 350 waiting: a call of 51 would make 401 — refused; one of 50 fills the bound exactly.
    const error = await batcher.submit(['51']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueFullError);
    expect((error as QueueFullError).message).toBe(
      'the encoder is at capacity (~350 tokens of work waiting, at most 400; this request has ~51); retry later',
    );
    const c = batcher.submit(['50']);
    expect(batcher.queuedWork).toBe(400);
    await expect(batcher.submit(['1'])).rejects.toBeInstanceOf(QueueFullError);
    while (encoder.running > 0) await encoder.finish();
    // Round after round, one text of each call, each batch at most 250 tokens (and at least one text).
    expect(encoder.batches).toEqual([['10'], ['100', '150'], ['100', '50']]);
    expect((await Promise.all([first, a, b, c])).map(values)).toEqual([[10], [100, 100], [150], [50]]);
  });

  it('refuses a call over maxRequestTokens whatever the queue holds (HTTP 413: smaller will do)', async () => {
    const encoder = fakeEncoder();
    const shed: number[] = [];
    const batcher = new DynamicBatcher(
      encoder.run,
      { maxBatch: 8, maxWaitMs: 0, maxQueue: 0, maxRequestTokens: 100, cost: (text) => Number(text) },
      { shed: (n) => shed.push(n) },
    );
    const error = await batcher.submit(['60', '50']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestTooLargeError);
    expect((error as RequestTooLargeError).message).toBe(
      'this request is ~110 tokens of encoder work (2 texts), more than the 100 one request may take (TAGGER_ENCODER_MAX_REQUEST_TOKENS); send fewer or shorter texts per request',
    );
    expect(shed).toEqual([2]);
    expect(encoder.batches).toEqual([]);
    const ok = batcher.submit(['60', '40']);
    await encoder.finish();
    expect(values(await ok)).toEqual([60, 40]);
  });

  it("fails only the calls of a failed batch, once, dropping a failed call's texts still waiting", async () => {
    const encoder = fakeEncoder();
    // One text a batch: the split call's first batch holds only its own text.
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 1, maxWaitMs: 0, maxQueue: 0 });
    const first = batcher.submit(['0']);
    const split = batcher.submit(texts(1, 4)).catch((error: unknown) => error);
    const last = batcher.submit(['9']);
    await encoder.finish();
    expect(encoder.batches[1]).toEqual(['1']);
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

describe('estimateTokens', () => {
  it('counts a CJK character, a word or a symbol as a token, long words as a few more, capped at the limit', () => {
    expect(estimateTokens('Transformers for text classification', 256)).toBe(2 + 2 + 1 + 1 + 3);
    expect(estimateTokens('機械学習', 256)).toBe(6);
    expect(estimateTokens('a, b!', 256)).toBe(2 + 4);
    expect(estimateTokens('機'.repeat(1_100), 256)).toBe(256);
    expect(estimateTokens('', 256)).toBe(2);
  });
});

describe('DynamicBatcher: a call stopped by its signal, and the start of its wait', () => {
  it('an aborted call leaves the queue at once with the signal’s reason; the others are answered', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 8, maxWaitMs: 0, maxQueue: 0 });
    const first = batcher.submit(texts(0, 1));
    const stop = new AbortController();
    const stopped = batcher.submit(texts(1, 3), { signal: stop.signal });
    const kept = batcher.submit(texts(4, 1));
    expect(batcher.queued).toBe(4);
    stop.abort(new Error('client gone'));
    await expect(stopped).rejects.toThrow('client gone');
    expect(batcher.queued).toBe(1);
    await encoder.finish();
    await encoder.finish();
    expect(values(await first)).toEqual([0]);
    expect(values(await kept)).toEqual([4]);
    expect(encoder.batches).toEqual([['0'], ['4']]);
    const already = new AbortController();
    already.abort(new Error('before'));
    await expect(batcher.submit(texts(9, 1), { signal: already.signal })).rejects.toThrow('before');
    expect(batcher.queued).toBe(0);
  });

  it('tells a call when its first text leaves for the encoder', async () => {
    const encoder = fakeEncoder();
    const batcher = new DynamicBatcher(encoder.run, { maxBatch: 8, maxWaitMs: 0, maxQueue: 0 });
    const started: string[] = [];
    const first = batcher.submit(texts(0, 1), { onStart: () => started.push('first') });
    const second = batcher.submit(texts(1, 2), { onStart: () => started.push('second') });
    expect(started).toEqual(['first']);
    await encoder.finish();
    expect(started).toEqual(['first', 'second']);
    await encoder.finish();
    await Promise.all([first, second]);
    expect(started).toEqual(['first', 'second']);
  });
});
