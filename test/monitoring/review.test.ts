/**
 * The review queue itself (src/monitoring/review.ts) on the in-memory record store: the smallest margin
 * first (a multi-label answer by its tag closest to the threshold), near copies of texts labelled or
 * listed left out, and a random share that is its share of what is listed even when few predictions wait.
 */
import { describe, expect, it } from 'vitest';
import { predictionId } from '../../src/monitoring/ids.js';
import { openRecordStore, type PredictionRecord, type RecordStore } from '../../src/monitoring/index.js';
import { marginOf, reviewQueue } from '../../src/monitoring/review.js';

const SCOPE = '1';
const RUN = 'r1';
let clock = Date.UTC(2026, 0, 1);

/** A recorded single-label prediction of `text` with these probabilities. */
function recordOf(text: string, probabilities: Record<string, number>, multiLabel = false): PredictionRecord {
  const ms = ++clock;
  const best = Object.entries(probabilities).sort((a, b) => b[1] - a[1])[0]!;
  return {
    predictionId: predictionId(ms),
    createdMs: ms,
    scope: SCOPE,
    runId: RUN,
    modelVersion: null,
    multiLabel,
    predictedTag: best[0],
    predictedTags: [best[0]],
    probabilities,
    confidence: best[1],
    unseenShare: 0,
    textLength: text.length,
    text,
    textSha256: null,
  };
}

async function storeWith(records: PredictionRecord[]): Promise<RecordStore> {
  const store = await openRecordStore('memory:');
  await store.append(records);
  return store;
}

const queue = (store: RecordStore, options: Partial<Parameters<typeof reviewQueue>[1]> = {}) =>
  reviewQueue(store, {
    scope: SCOPE,
    runId: RUN,
    limit: 10,
    order: 'margin',
    randomShare: 0,
    sinceMs: 0,
    random: () => 0.5,
    ...options,
  });

describe('marginOf', () => {
  it('is the best probability less the second best; for a multi-label answer the closest distance to a threshold', () => {
    expect(marginOf({ multiLabel: false, probabilities: { a: 0.5, b: 0.3, c: 0.2 } })).toBeCloseTo(0.2);
    expect(marginOf({ multiLabel: false, probabilities: { a: 0.1, b: 0.45, c: 0.45 } })).toBe(0);
    expect(marginOf({ multiLabel: true, probabilities: { a: 0.9, b: 0.35 } })).toBeCloseTo(0.15);
    expect(
      marginOf({ multiLabel: true, probabilities: { a: 0.9, b: 0.35 } }, { b: 0.3, a: 0.95 }),
    ).toBeCloseTo(0.05);
  });
});

describe('reviewQueue', () => {
  it('lists the smallest margin first, not the least confident', async () => {
    // "low confidence, clear winner" against "high confidence, close second".
    const store = await storeWith([
      recordOf('Fine-tuning BERT for product reviews', { a: 0.4, b: 0.1, c: 0.1, d: 0.1, e: 0.1, f: 0.2 }),
      recordOf('Object detection on drone footage', { a: 0.46, b: 0.44, c: 0.1 }),
      recordOf('A feature store with point-in-time joins', { a: 0.7, b: 0.3 }),
    ]);
    const margin = await queue(store);
    expect(margin.items.map((item) => item.text)).toEqual([
      'Object detection on drone footage',
      'Fine-tuning BERT for product reviews',
      'A feature store with point-in-time joins',
    ]);
    expect(margin.items.every((item) => item.selection === 'margin')).toBe(true);
    const uncertainty = await queue(store, { order: 'uncertainty' });
    expect(uncertainty.items[0]!.text).toBe('Fine-tuning BERT for product reviews');
  });

  it('leaves out near copies of what is labelled or already listed, and counts them', async () => {
    const store = await storeWith([
      recordOf('How do I top up my card?', { a: 0.5, b: 0.5 }),
      recordOf('how do i top up my card', { a: 0.5, b: 0.5 }),
      recordOf('How do I top up my card? #12', { a: 0.51, b: 0.49 }),
      recordOf('How do I top up my account?', { a: 0.52, b: 0.48 }),
      recordOf('Where do I order a virtual card from?', { a: 0.53, b: 0.47 }),
      recordOf('Where do I order a virtual card?', { a: 0.54, b: 0.46 }),
      recordOf('Why was my card declined?', { a: 0.9, b: 0.1 }),
    ]);
    const first = await queue(store);
    // A true neighbour ("... my account?") stays; copies of the card question and the near copy go (of
    // two margins alike the newer comes first).
    expect(first.items.map((item) => item.text)).toEqual([
      'how do i top up my card',
      'How do I top up my account?',
      'Where do I order a virtual card from?',
      'Why was my card declined?',
    ]);
    expect(first.nearCopies).toBe(3);
    // Once the card question is labelled, none of its copies is listed again.
    const labelled = first.items[0]!;
    await store.putFeedback([
      {
        predictionId: labelled.predictionId,
        scope: SCOPE,
        runId: RUN,
        tags: ['a'],
        receivedMs: clock,
        selection: 'margin',
      },
    ]);
    const second = await queue(store);
    expect(second.items.map((item) => item.text)).not.toContainEqual(
      expect.stringMatching(/top up my card/i),
    );
    expect(second.items.map((item) => item.text)).toContain('How do I top up my account?');
  });

  it('keeps the random share its share of what is listed when few predictions wait', async () => {
    const texts = [
      'Transfer learning for text classification',
      'Object detection with YOLO',
      'Kubeflow pipelines in production',
      'Speech recognition with transducers',
      'Graph neural networks for molecules',
    ];
    const store = await storeWith(
      texts.map((text, i) => recordOf(text, { a: 0.5 + i / 20, b: 0.5 - i / 20 })),
    );
    const few = await queue(store, { limit: 20, randomShare: 0.2 });
    expect(few.items).toHaveLength(5);
    expect(few.randomItems).toBe(1);
    expect(few.items.filter((item) => item.selection === 'random_share')).toHaveLength(1);
    const all = await queue(store, { limit: 20, randomShare: 1 });
    expect(all.items.every((item) => item.selection === 'random_share')).toBe(true);
  });
});
