/**
 * The contract every prediction-record store adapter passes (memory, SQLite in its worker thread,
 * PostgreSQL), in the style of test/tracking/contract.ts: only the `RecordStore` interface, every case
 * in its own scope (so a shared database and leftovers never interfere), skips only with a reason.
 *
 * Usage: runRecordStoreContract('SQLite', async () => ({ open: () => store, cleanup }), { shared: true }).
 * `open()` gives another store on the same data (another replica) where the adapter has one.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BINS, hashVocabulary } from '../../src/model/drift/profile.js';
import { completeBatch } from '../../src/monitoring/batch.js';
import { predictionId } from '../../src/monitoring/ids.js';
import type { CapturedBatch, PredictionRecord, RecordStore } from '../../src/monitoring/record-store.js';

export interface RecordStoreSubject {
  /** A store on the subject's data; a second call opens another one on the same data (if `shared`). */
  open(): Promise<RecordStore>;
  cleanup(): Promise<void>;
}

export interface RecordContractOptions {
  /** Several stores can be opened on the same data (a database), as replicas do. */
  shared: boolean;
  /** Case name → reason. */
  skip?: Record<string, string>;
}

export const newScope = (): string => `scope-${randomBytes(6).toString('hex')}`;

const BINS = {
  confidence: DEFAULT_BINS.confidence,
  unseen_ngrams: DEFAULT_BINS.unseen_ngrams,
  text_length: DEFAULT_BINS.text_length,
};

/** A record with sensible defaults; `over` changes what a case needs. */
export function record(scope: string, over: Partial<PredictionRecord> = {}): PredictionRecord {
  const createdMs = over.createdMs ?? Date.now();
  return {
    // Version-7 ids of their time, as the predict routes make them (stores order by them).
    predictionId: predictionId(createdMs),
    createdMs,
    scope,
    runId: 'run-a',
    modelVersion: null,
    multiLabel: false,
    predictedTag: 'nlp',
    predictedTags: ['nlp'],
    probabilities: { cv: 0.1, nlp: 0.8, other: 0.1 },
    confidence: 0.8,
    unseenShare: 0.1,
    textLength: 40,
    text: 'Transformers for text classification',
    textSha256: 'a'.repeat(64),
    ...over,
  };
}

export function runRecordStoreContract(
  name: string,
  subject: () => Promise<RecordStoreSubject>,
  options: RecordContractOptions,
): void {
  describe(`RecordStore contract: ${name}`, () => {
    let made: RecordStoreSubject;
    let store: RecordStore;
    beforeAll(async () => {
      made = await subject();
      store = await made.open();
    });
    afterAll(async () => {
      await store?.close();
      await made?.cleanup();
    });
    const skip = options.skip ?? {};
    const test = (title: string, fn: () => Promise<void>) =>
      skip[title] !== undefined ? it.skip(`${title} [skipped: ${skip[title]}]`, fn) : it(title, fn, 60_000);

    test('append and find: a record is found in its own scope only, with the tags it knows', async () => {
      const scope = newScope();
      const a = record(scope, { multiLabel: true, probabilities: { b: 0.2, a: 0.7, c: 0.1 } });
      await store.append([a]);
      const found = await store.find(scope, [a.predictionId, randomUUID()]);
      expect([...found.keys()]).toEqual([a.predictionId]);
      expect(found.get(a.predictionId)).toEqual({
        predictionId: a.predictionId,
        runId: 'run-a',
        multiLabel: true,
        tags: ['a', 'b', 'c'],
        createdMs: a.createdMs,
      });
      expect((await store.find(newScope(), [a.predictionId])).size).toBe(0);
      expect((await store.find(scope, [])).size).toBe(0);
    });

    test('captured batches: completed where the store works, the same as anywhere else', async () => {
      const scope = newScope();
      const words = ['pasta', 'transformers'];
      const batch: CapturedBatch = {
        origins: [
          {
            scope,
            runId: 'run-a',
            modelVersion: null,
            multiLabel: false,
            tags: ['cv', 'nlp'],
            vocabularyKey: 'v-contract',
          },
          {
            scope,
            runId: 'run-m',
            modelVersion: 'tagger/3',
            multiLabel: true,
            tags: ['cv', 'nlp'],
            vocabularyKey: null,
          },
        ],
        origin: [0, 1],
        ids: [predictionId(), predictionId()],
        createdMs: [Date.now(), Date.now()],
        texts: ['Transformers for pasta sauce recipes', 'YOLO'],
        predictedTag: ['nlp', 'cv'],
        predictedTags: [null, ['cv', 'nlp']],
        probabilities: Float64Array.of(0.25, 0.75, 0.9, 0.6),
        keepText: false,
        vocabularies: new Map([
          ['v-contract', { words, set: new Set(words), hashed: hashVocabulary(words) }],
        ]),
      };
      // What the server's store sink does (src/monitoring/store-handle.ts).
      await (store.appendCaptured
        ? store.appendCaptured(batch)
        : store.append(completeBatch(batch, batch.vocabularies)));
      const found = await store.find(scope, batch.ids);
      expect(found.get(batch.ids[1]!)).toMatchObject({
        runId: 'run-m',
        multiLabel: true,
        tags: ['cv', 'nlp'],
      });
      const bins = { confidence: [0, 0.5], unseen_ngrams: [0, 0.5], text_length: [0] };
      const counts = await store.windowCounts({ scope, runId: 'run-a', sinceMs: 0, limit: 10, bins });
      // "transformers pasta sauce recipes": two of four words unseen; the answer's probability 0.75.
      expect(counts).toMatchObject({
        predictions: 1,
        predicted_tag: { nlp: 1 },
        confidence: [0, 1],
        unseen_ngrams: [0, 1],
      });
      await store.putFeedback([
        { predictionId: batch.ids[1]!, scope, runId: 'run-m', tags: ['nlp'], receivedMs: 1 },
      ]);
      const labelled = await store.labelled({ scope, limit: 10 });
      // Only the hash was kept: no text to export.
      expect(labelled).toEqual([
        {
          predictionId: batch.ids[1],
          runId: 'run-m',
          createdMs: batch.createdMs[1],
          text: null,
          multiLabel: true,
          tags: ['nlp'],
          receivedMs: 1,
          selection: 'unspecified',
        },
      ]);
      const window = await store.feedbackWindow({ scope, runId: 'run-m', sinceMs: 0, limit: 10 });
      expect(window.labelled).toEqual([
        { predicted: ['cv', 'nlp'], truth: ['nlp'], selection: 'unspecified', stage: null },
      ]);
    });

    test('append: an id recorded before keeps its first record; large batches and odd texts round-trip', async () => {
      const scope = newScope();
      const first = record(scope, { text: 'first "quoted", new\nline, ünïcödé 🎉, \u0000 NUL?' });
      await store.append([first]);
      await store.append([{ ...first, predictedTag: 'cv', probabilities: { zz: 1 } }]);
      expect((await store.find(scope, [first.predictionId])).get(first.predictionId)!.tags).toEqual([
        'cv',
        'nlp',
        'other',
      ]);
      const many = Array.from({ length: 1234 }, (_, i) =>
        record(scope, { textLength: i, text: `text ${i}` }),
      );
      await store.append(many);
      expect(
        (
          await store.find(
            scope,
            many.map((r) => r.predictionId),
          )
        ).size,
      ).toBe(1234);
      await store.putFeedback([
        { predictionId: first.predictionId, scope, runId: 'run-a', tags: ['cv'], receivedMs: Date.now() },
      ]);
      const [labelled] = await store.labelled({ scope, limit: 10 });
      // NUL, which PostgreSQL's text cannot hold, comes back as U+FFFD everywhere.
      expect(labelled!.text).toBe(first.text!.replace('\u0000', '\uFFFD'));
    });

    test('feedback: the later one wins and is counted once; it never changes the prediction', async () => {
      const scope = newScope();
      const r = record(scope);
      await store.append([r]);
      const entry = (tags: string[], receivedMs: number) => ({
        predictionId: r.predictionId,
        scope,
        runId: r.runId,
        tags,
        receivedMs,
      });
      expect([...(await store.putFeedback([entry(['cv'], 1000)]))]).toEqual([]);
      expect([
        ...(await store.putFeedback([{ ...entry(['other'], 2000), selection: 'random_share' }])),
      ]).toEqual([r.predictionId]);
      const window = await store.feedbackWindow({ scope, runId: r.runId, sinceMs: 0, limit: 10 });
      // The later label's selection replaces the earlier one's, with its tags.
      expect(window.labelled).toEqual([
        { predicted: ['nlp'], truth: ['other'], selection: 'random_share', stage: null },
      ]);
      expect(window.lastReceivedMs).toBe(2000);
      expect((await store.find(scope, [r.predictionId])).get(r.predictionId)!.tags).toEqual([
        'cv',
        'nlp',
        'other',
      ]);
      const page = await store.labelled({ scope, limit: 10 });
      expect(page.map((row) => [row.text, row.tags])).toEqual([[r.text, ['other']]]);
    });

    test('windowCounts: the run’s most recent predictions since a time, binned', async () => {
      const scope = newScope();
      const now = Date.now();
      const records = [
        record(scope, { createdMs: now - 10_000, predictedTag: 'old', confidence: 0.95, textLength: 5000 }),
        record(scope, {
          createdMs: now - 3,
          predictedTag: 'cv',
          confidence: 0.95,
          unseenShare: 1,
          textLength: 5000,
        }),
        record(scope, {
          createdMs: now - 2,
          predictedTag: 'nlp',
          confidence: 0.35,
          unseenShare: 0.25,
          textLength: 20,
        }),
        record(scope, {
          createdMs: now - 1,
          predictedTag: 'nlp',
          confidence: 0.05,
          unseenShare: 0,
          textLength: 0,
        }),
        record(scope, { createdMs: now, runId: 'run-b', predictedTag: 'other' }),
      ];
      await store.append(records);
      const counts = await store.windowCounts({
        scope,
        runId: 'run-a',
        sinceMs: now - 5000,
        limit: 100,
        bins: BINS,
      });
      expect(counts.predictions).toBe(3);
      expect(counts.predicted_tag).toEqual({ cv: 1, nlp: 2 });
      expect(counts.confidence).toEqual([1, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
      expect(counts.unseen_ngrams).toEqual([1, 0, 1, 0, 0, 0, 0, 0, 0, 1]);
      expect(counts.text_length).toEqual([1, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
      const newest = await store.windowCounts({ scope, runId: 'run-a', sinceMs: 0, limit: 2, bins: BINS });
      expect(newest.predicted_tag).toEqual({ nlp: 2 });
      const none = await store.windowCounts({
        scope: newScope(),
        runId: 'run-a',
        sinceMs: 0,
        limit: 10,
        bins: BINS,
      });
      expect(none).toMatchObject({ predictions: 0, predicted_tag: {} });
      expect(none.confidence.every((n) => n === 0)).toBe(true);
    });

    test('feedbackWindow: the run’s labels received since a time, newest first, at most the limit', async () => {
      const scope = newScope();
      const records = Array.from({ length: 5 }, (_, i) =>
        record(scope, { predictedTag: `p${i}`, predictedTags: [`p${i}`] }),
      );
      const other = record(scope, { runId: 'run-b' });
      await store.append([...records, other]);
      await store.putFeedback([
        ...records.map((r, i) => ({
          predictionId: r.predictionId,
          scope,
          runId: 'run-a',
          tags: [`t${i}`],
          receivedMs: 1000 + i,
        })),
        { predictionId: other.predictionId, scope, runId: 'run-b', tags: ['x'], receivedMs: 9999 },
      ]);
      const window = await store.feedbackWindow({ scope, runId: 'run-a', sinceMs: 1001, limit: 3 });
      expect(window.labelled).toEqual([
        { predicted: ['p4'], truth: ['t4'], selection: 'unspecified', stage: null },
        { predicted: ['p3'], truth: ['t3'], selection: 'unspecified', stage: null },
        { predicted: ['p2'], truth: ['t2'], selection: 'unspecified', stage: null },
      ]);
      expect(window.lastReceivedMs).toBe(1004);
      const never = await store.feedbackWindow({ scope: newScope(), runId: 'run-a', sinceMs: 0, limit: 3 });
      expect(never).toEqual({ labelled: [], lastReceivedMs: null });
    });

    test("a cascade's stage: counted per stage in the window, and given with each label", async () => {
      const scope = newScope();
      const now = Date.now();
      const stages = ['fast', 'fast', 'encoder', 'fast_degraded', null] as const;
      const records = stages.map((stage, i) => record(scope, { createdMs: now - 10 + i, stage }));
      await store.append(records);
      const counts = await store.windowCounts({
        scope,
        runId: 'run-a',
        sinceMs: now - 1000,
        limit: 10,
        bins: BINS,
      });
      expect(counts.predictions).toBe(5);
      expect(counts.stages).toEqual({ fast: 2, encoder: 1, fast_degraded: 1 });
      await store.putFeedback(
        records.map((r, i) => ({
          predictionId: r.predictionId,
          scope,
          runId: 'run-a',
          tags: ['nlp'],
          receivedMs: 1000 + i,
        })),
      );
      const window = await store.feedbackWindow({ scope, runId: 'run-a', sinceMs: 0, limit: 10 });
      expect(window.labelled.map((label) => label.stage)).toEqual([...stages].reverse());
    });

    test('labelled: pages in prediction-id order, filtered by scope, run and time; hashed texts are null', async () => {
      const scope = newScope();
      const records = Array.from({ length: 7 }, (_, i) =>
        record(scope, { text: i === 3 ? null : `text ${i}`, runId: i === 6 ? 'run-b' : 'run-a' }),
      );
      await store.append(records);
      await store.putFeedback(
        records.map((r, i) => ({
          predictionId: r.predictionId,
          scope,
          runId: r.runId,
          tags: ['cv'],
          receivedMs: 100 * i,
        })),
      );
      const pages: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.labelled({ scope, runId: 'run-a', after, limit: 2 });
        if (page.length === 0) break;
        pages.push(...page.map((row) => row.predictionId));
        after = page.at(-1)!.predictionId;
      }
      const runA = records
        .filter((r) => r.runId === 'run-a')
        .map((r) => r.predictionId)
        .sort();
      expect(pages).toEqual(runA);
      const hashed = (await store.labelled({ scope, limit: 10 })).find(
        (row) => row.predictionId === records[3]!.predictionId,
      );
      expect(hashed!.text).toBeNull();
      expect((await store.labelled({ scope, sinceMs: 400, limit: 10 })).length).toBe(3);
      expect(await store.labelled({ scope: newScope(), limit: 10 })).toEqual([]);
    });

    test('prune: predictions before a time go, with their feedback; newer ones stay', async () => {
      const scope = newScope();
      const now = Date.now();
      const old = record(scope, { createdMs: now - 100 * 86_400_000 });
      const fresh = record(scope, { createdMs: now });
      await store.append([old, fresh]);
      await store.putFeedback([
        { predictionId: old.predictionId, scope, runId: 'run-a', tags: ['cv'], receivedMs: now },
        { predictionId: fresh.predictionId, scope, runId: 'run-a', tags: ['cv'], receivedMs: now },
      ]);
      expect(await store.prune(now - 50 * 86_400_000)).toBeGreaterThanOrEqual(1);
      expect([...(await store.find(scope, [old.predictionId, fresh.predictionId])).keys()]).toEqual([
        fresh.predictionId,
      ]);
      expect((await store.labelled({ scope, limit: 10 })).map((row) => row.predictionId)).toEqual([
        fresh.predictionId,
      ]);
      // Feedback for the pruned id now creates nothing the window could read.
      expect(
        (await store.feedbackWindow({ scope, runId: 'run-a', sinceMs: 0, limit: 10 })).labelled,
      ).toHaveLength(1);
    });

    test('prune with a row bound: the newest rows of the whole store stay, the rest go with their feedback', async () => {
      const scope = newScope();
      // The newest predictions of the store (a year ahead), oldest first.
      const base = Date.now() + 365 * 86_400_000;
      const records = Array.from({ length: 30 }, (_, i) => record(scope, { createdMs: base + i }));
      await store.append(records);
      await store.putFeedback(
        records.map((r) => ({
          predictionId: r.predictionId,
          scope,
          runId: 'run-a',
          tags: ['cv'],
          receivedMs: base,
        })),
      );
      const deleted = await store.prune(0, 12);
      expect(deleted).toBeGreaterThanOrEqual(18);
      const ids = records.map((r) => r.predictionId);
      expect([...(await store.find(scope, ids)).keys()].sort()).toEqual(ids.slice(18));
      expect((await store.labelled({ scope, limit: 100 })).map((row) => row.predictionId)).toEqual(
        ids.slice(18),
      );
      // Within the bound, nothing more goes.
      expect(await store.prune(0, 12)).toBe(0);
      expect((await store.find(scope, ids)).size).toBe(12);
    });

    if (options.shared) {
      test('replicas: what one store records, another finds and labels; concurrent writers lose nothing', async () => {
        const scope = newScope();
        const other = await made.open();
        try {
          const batches = Array.from({ length: 8 }, () => Array.from({ length: 100 }, () => record(scope)));
          await Promise.all(batches.map((batch, i) => (i % 2 === 0 ? store : other).append(batch)));
          const ids = batches.flat().map((r) => r.predictionId);
          expect((await other.find(scope, ids)).size).toBe(800);
          await other.putFeedback([
            { predictionId: ids[0]!, scope, runId: 'run-a', tags: ['cv'], receivedMs: 1 },
          ]);
          expect(
            await store.putFeedback([
              { predictionId: ids[0]!, scope, runId: 'run-a', tags: ['nlp'], receivedMs: 2 },
            ]),
          ).toEqual(new Set([ids[0]]));
          const window = await other.feedbackWindow({ scope, runId: 'run-a', sinceMs: 0, limit: 10 });
          expect(window.labelled).toEqual([
            { predicted: ['nlp'], truth: ['nlp'], selection: 'unspecified', stage: null },
          ]);
          // Marks and leases are seen by every replica: one writer's mark, one retrain at a time.
          await store.putWriterMark({
            writerId: `w-${scope}`,
            writtenThroughMs: 5,
            heartbeatMs: 6,
            flushMs: 7,
          });
          expect((await other.writerMarks()).find((m) => m.writerId === `w-${scope}`)).toEqual({
            writerId: `w-${scope}`,
            writtenThroughMs: 5,
            heartbeatMs: 6,
            flushMs: 7,
          });
          const name = `lease-${scope}`;
          const taken = await Promise.all([
            store.takeLease(name, 'a', 60_000, 1000),
            other.takeLease(name, 'b', 60_000, 1000),
          ]);
          // Whoever came second sees the first one's lease.
          expect(taken[0]!.holder).toBe(taken[1]!.holder);
          await store.removeWriterMark(`w-${scope}`);
        } finally {
          await other.close();
        }
      });
    }

    test('writer marks: the latest per writer, removed on request and with old records', async () => {
      const id = `writer-${newScope()}`;
      await store.putWriterMark({ writerId: id, writtenThroughMs: 100, heartbeatMs: 200, flushMs: 1000 });
      await store.putWriterMark({ writerId: id, writtenThroughMs: 300, heartbeatMs: 400, flushMs: 500 });
      const mine = (await store.writerMarks()).filter((mark) => mark.writerId === id);
      expect(mine).toEqual([{ writerId: id, writtenThroughMs: 300, heartbeatMs: 400, flushMs: 500 }]);
      await store.removeWriterMark(id);
      expect((await store.writerMarks()).some((mark) => mark.writerId === id)).toBe(false);
      const old = `writer-${newScope()}`;
      await store.putWriterMark({ writerId: old, writtenThroughMs: 1, heartbeatMs: 2, flushMs: 1000 });
      await store.prune(1000);
      expect((await store.writerMarks()).some((mark) => mark.writerId === old)).toBe(false);
    });

    test('review candidates: the run’s recent predictions with a text and no feedback, newest first', async () => {
      const scope = newScope();
      const now = Date.now();
      const records = [
        record(scope, { createdMs: now - 100_000, text: 'too old' }),
        record(scope, { createdMs: now - 40, text: 'labelled' }),
        record(scope, { createdMs: now - 30, text: null }),
        record(scope, { createdMs: now - 20, text: 'other run', runId: 'run-b' }),
        record(scope, {
          createdMs: now - 10,
          text: 'unsure',
          confidence: 0.4,
          unseenShare: 0.5,
          predictedTag: 'cv',
          predictedTags: ['cv'],
          probabilities: { cv: 0.4, nlp: 0.35, other: 0.25 },
        }),
        record(scope, { createdMs: now, text: 'sure' }),
      ];
      await store.append(records);
      await store.putFeedback([
        { predictionId: records[1]!.predictionId, scope, runId: 'run-a', tags: ['cv'], receivedMs: now },
      ]);
      const found = await store.reviewCandidates({ scope, runId: 'run-a', sinceMs: now - 50_000, limit: 10 });
      expect(found.map((c) => c.text)).toEqual(['sure', 'unsure']);
      expect(found[1]).toEqual({
        predictionId: records[4]!.predictionId,
        createdMs: now - 10,
        runId: 'run-a',
        multiLabel: false,
        predictedTag: 'cv',
        predictedTags: ['cv'],
        probabilities: { cv: 0.4, nlp: 0.35, other: 0.25 },
        confidence: 0.4,
        unseenShare: 0.5,
        text: 'unsure',
      });
      expect(
        (await store.reviewCandidates({ scope, runId: 'run-a', sinceMs: 0, limit: 1 })).map((c) => c.text),
      ).toEqual(['sure']);
    });

    test('label reviews: one decision per text of a scope, the later one replacing the earlier', async () => {
      const scope = newScope();
      const review = {
        scope,
        textKey: 'a'.repeat(64),
        text: 'YOLO for \u0000 drones',
        givenTags: ['nlp'],
        decision: 'keep' as const,
        tags: ['nlp'],
        runId: 'run-a',
        receivedMs: 10,
      };
      await store.putLabelReviews([
        review,
        { ...review, textKey: 'b'.repeat(64), text: 'b', receivedMs: 11 },
      ]);
      await store.putLabelReviews([
        { ...review, decision: 'fix', tags: ['computer-vision'], receivedMs: 12 },
      ]);
      const reviews = await store.labelReviews(scope);
      expect(reviews.map((r) => [r.textKey[0], r.decision, r.tags])).toEqual([
        ['b', 'keep', ['nlp']],
        ['a', 'fix', ['computer-vision']],
      ]);
      expect(reviews[1]).toMatchObject({
        text: 'YOLO for \uFFFD drones',
        givenTags: ['nlp'],
        runId: 'run-a',
      });
      expect(await store.labelReviews(newScope())).toEqual([]);
    });

    test('leases: one holder until it expires or is released; its holder renews it', async () => {
      const name = `retrain:${newScope()}`;
      expect(await store.takeLease(name, 'a', 1000, 10_000)).toEqual({
        name,
        holder: 'a',
        acquiredMs: 10_000,
        expiresMs: 11_000,
      });
      expect((await store.takeLease(name, 'b', 1000, 10_500)).holder).toBe('a');
      expect(await store.takeLease(name, 'a', 1000, 10_600)).toMatchObject({
        holder: 'a',
        acquiredMs: 10_000,
        expiresMs: 11_600,
      });
      // Expired: the next taker gets it.
      expect(await store.takeLease(name, 'b', 1000, 12_000)).toMatchObject({
        holder: 'b',
        acquiredMs: 12_000,
      });
      await store.releaseLease(name, 'a');
      expect((await store.takeLease(name, 'c', 1000, 12_100)).holder).toBe('b');
      await store.releaseLease(name, 'b');
      expect((await store.takeLease(name, 'c', 1000, 12_100)).holder).toBe('c');
    });
  });
}
