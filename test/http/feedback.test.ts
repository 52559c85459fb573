/**
 * Prediction ids and POST /feedback through the app (app.inject), with a real trained run and the
 * record store shared the way replicas share it (one SQLite database, two apps): every bad input the
 * issue lists answered per item with a 4xx, whole bodies that are malformed answered 422 or 413, never a
 * 500, and feedback that cannot reach another experiment's predictions.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { expectEnvelope, postJson } from '../support/http.js';
import { type MonitoredApp, monitoredApp, trainRun } from '../support/monitoring.js';
import { useTempDir } from '../support/temp-dir.js';

/** Version-7 UUIDs (time-ordered; src/monitoring/ids.ts). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const scratch = useTempDir('tagger-feedback-');
let store: TrackingStore;
let runId: string;
let one: MonitoredApp;
let two: MonitoredApp;
let other: MonitoredApp;

beforeAll(async () => {
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  ({ runId } = await trainRun(uri));
  await trainRun(uri, { experiment: 'other' });
  store = await openTrackingStore(uri, { readOnly: true });
  // Two replicas of experiment `best` and a server of experiment `other`, all recording into the
  // tracking database (the default record store of a SQL tracking store).
  // The production flush interval: a record waits up to a second in the buffer of the replica that answered.
  const config = { storeUri: uri, storeDisplayUri: 'mlflow.db', flushMs: 1000 };
  one = await monitoredApp(store, { config });
  two = await monitoredApp(store, { config });
  other = await monitoredApp(store, { config, experiment: 'other' });
}, 120_000);

afterAll(async () => {
  await one?.close();
  await two?.close();
  await other?.close();
  await store?.close();
});

/** Predicts on `on` and waits until the records are in the store. */
async function predictIds(on: MonitoredApp, texts: string[], url = '/predict'): Promise<string[]> {
  const response = await postJson(on.app, url, { texts: texts.map((text) => ({ text })) });
  expect(response.statusCode).toBe(200);
  await on.monitoring.recorder.settle();
  return (response.json().data.predictions as { prediction_id: string }[]).map((p) => p.prediction_id);
}

const feedback = (on: MonitoredApp, items: unknown) => postJson(on.app, '/feedback', { feedback: items });

describe('prediction ids', () => {
  it('every item of every predict route carries its own prediction_id (a UUID)', async () => {
    const served = await postJson(one.app, '/predict', {
      texts: [{ text: 'YOLO on drones' }, { text: 'BERT' }],
    });
    const items = served.json().data.predictions;
    expect(items.map((item: { prediction_id: string }) => item.prediction_id)).toEqual([
      expect.stringMatching(UUID),
      expect.stringMatching(UUID),
    ]);
    expect(items[0].prediction_id).not.toBe(items[1].prediction_id);
    // The request id header keeps working beside them.
    expect(served.headers['x-request-id']).toBeTruthy();
    const byRun = await postJson(one.app, `/runs/${runId}/predict`, {
      texts: [{ text: 'x' }],
      explain: true,
    });
    expect(byRun.json().data.predictions[0]).toMatchObject({
      prediction_id: expect.stringMatching(UUID),
      explanation: expect.any(Object),
    });
  });
});

describe('POST /feedback', () => {
  it('stores a label given on another replica than the one that predicted, and a later label replaces it', async () => {
    const [id] = await predictIds(one, ['Object detection with YOLO on drone images']);
    const first = await feedback(two, [{ prediction_id: id, tag: 'computer-vision' }]);
    const body = expectEnvelope(first, { method: 'POST', url: '/feedback' });
    expect(first.statusCode).toBe(200);
    expect(body.data).toEqual({
      accepted: 1,
      rejected: 0,
      feedback: [
        {
          index: 0,
          prediction_id: id,
          status: 200,
          result: 'accepted',
          detail: 'stored',
          run_id: runId,
          tags: ['computer-vision'],
        },
      ],
    });
    const again = await feedback(one, [{ prediction_id: id, tag: 'mlops' }]);
    expect(again.json().data.feedback[0]).toMatchObject({ status: 200, result: 'replaced' });
  });

  it('answers each item on its own: unknown ids 404, unknown tags kept and said, malformed labels 422, duplicates 409', async () => {
    const ids = await predictIds(one, ['Transformers for text', 'GANs for faces', 'Feature stores']);
    const unknown = '00000000-0000-4000-8000-000000000000';
    const response = await feedback(two, [
      { prediction_id: ids[0], tag: 'natural-language-processing' },
      { prediction_id: unknown, tag: 'mlops' },
      { prediction_id: ids[1], tag: 'cooking' },
      { prediction_id: ids[2], tag: 'mlops' },
      { prediction_id: ids[2], tag: 'other' },
      { prediction_id: ids[1], tags: ['mlops', 'other'] },
      { prediction_id: ids[1], tag: 'mlops', tags: ['mlops'] },
      { prediction_id: ids[1] },
      { prediction_id: 'not-an-id', tag: 'mlops' },
      { prediction_id: ids[0], tags: [] },
    ]);
    expect(response.statusCode).toBe(200);
    const items = response.json().data.feedback as { status: number; result: string; detail: string }[];
    expect(items.map((item) => [item.status, item.result])).toEqual([
      [200, 'accepted'],
      [404, 'unknown_prediction'],
      [200, 'accepted'],
      [409, 'superseded'],
      [200, 'accepted'],
      [422, 'invalid'],
      [422, 'invalid'],
      [422, 'invalid'],
      [422, 'invalid'],
      [422, 'invalid'],
    ]);
    expect(items[1]!.detail).toMatch(/the id is unknown, or it is older than the records kept \(30 days\)/);
    expect(items[2]!.detail).toMatch(
      /^stored; "cooking" is not a tag of run .* \(its tags are computer-vision, mlops, natural-language-processing, other\): kept for retraining, where a new tag is learnt once it has min_freq rows/,
    );
    expect(items[3]!.detail).toMatch(/item 4 of this request labels the same prediction; the later one wins/);
    expect(items[5]!.detail).toMatch(/gives one tag per text .*not 2/);
    expect(items[6]!.detail).toMatch(/either `tag` or `tags`, not both/);
    expect(items[7]!.detail).toMatch(/give the right tag as `tag`/);
    expect(items[8]!.detail).toMatch(/is not one: send the `prediction_id` of a predict answer/);
    expect(items[9]!.detail).toMatch(/must name at least one tag/);
    expect(response.json().data).toMatchObject({ accepted: 3, rejected: 7 });
  });

  it('answers a well-formed request 200 even when no item could be stored, each item saying why', async () => {
    const none = await feedback(one, [
      { prediction_id: '00000000-0000-4000-8000-000000000001', tag: 'mlops' },
    ]);
    expect(none.statusCode).toBe(200);
    const body = expectEnvelope(none, { method: 'POST', url: '/feedback' });
    expect(body.data).toMatchObject({
      accepted: 0,
      rejected: 1,
      feedback: [{ status: 404, result: 'unknown_prediction' }],
    });
    const [id] = await predictIds(one, ['Kubeflow pipelines']);
    const bad = await feedback(one, [{ prediction_id: id, tags: ['mlops', 'other'] }]);
    expect(bad.statusCode).toBe(200);
    expect(bad.json().data).toMatchObject({
      accepted: 0,
      rejected: 1,
      feedback: [{ status: 422, result: 'invalid' }],
    });
  });

  it('takes labels sent the moment the answers arrive, on another replica, before any record was written', async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `Graph neural networks for molecules, variant ${i}`);
    const served = await postJson(one.app, '/predict', { texts: texts.map((text) => ({ text })) });
    const ids = (served.json().data.predictions as { prediction_id: string }[]).map((p) => p.prediction_id);
    // No settle(): the records wait in replica one's buffer when the labels reach replica two.
    const response = await feedback(
      two,
      ids.map((prediction_id) => ({ prediction_id, tag: 'other', selection: 'random_share' })),
    );
    expect(response.json().data).toMatchObject({ accepted: 40, rejected: 0 });
    const labelled = await (await two.monitoring.store.get()).labelled({ limit: 10_000 });
    const mine = labelled.filter((row) => ids.includes(row.predictionId));
    expect(mine).toHaveLength(40);
    expect(new Set(mine.map((row) => row.selection))).toEqual(new Set(['random_share']));
  });

  it('answers pending (503 and Retry-After), never unknown, while a server that may have answered has not written', async () => {
    const store = await two.monitoring.store.get();
    const made = Date.now() - 5_000;
    // A third replica, alive (its heartbeat is fresh) but behind: it has written nothing newer than `made - 1`.
    const writerId = 'replica-that-is-behind';
    await store.putWriterMark({ writerId, writtenThroughMs: made - 1, heartbeatMs: Date.now(), flushMs: 50 });
    const beat = setInterval(() => {
      void store.putWriterMark({
        writerId,
        writtenThroughMs: made - 1,
        heartbeatMs: Date.now(),
        flushMs: 50,
      });
    }, 200);
    try {
      // An id that replica could have made: a version-7 UUID of five seconds ago, recorded nowhere yet.
      const hex = made.toString(16).padStart(12, '0');
      const id = `${hex.slice(0, 8)}-${hex.slice(8)}-7abc-8def-0123456789ab`;
      const [known] = await predictIds(one, ['Reinforcement learning for robots']);
      const response = await feedback(two, [
        { prediction_id: id, tag: 'mlops' },
        { prediction_id: known, tag: 'mlops' },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.headers['retry-after']).toBeDefined();
      const items = response.json().data.feedback;
      expect(items[0]).toMatchObject({ status: 503, result: 'pending' });
      expect(items[0].detail).toMatch(
        /a server that may have answered it has not written its records of that time yet.*send this item again/,
      );
      expect(items[1]).toMatchObject({ status: 200, result: 'accepted' });
      // Once that replica has written past the id's time, the id is known not to exist.
      clearInterval(beat);
      await store.putWriterMark({
        writerId,
        writtenThroughMs: Date.now(),
        heartbeatMs: Date.now(),
        flushMs: 50,
      });
      const again = await feedback(two, [{ prediction_id: id, tag: 'mlops' }]);
      expect(again.json().data.feedback[0]).toMatchObject({ status: 404, result: 'unknown_prediction' });
      expect(again.headers['retry-after']).toBeUndefined();
    } finally {
      clearInterval(beat);
      await store.removeWriterMark(writerId);
    }
  }, 60_000);

  it('never reaches another experiment’s predictions in the shared database', async () => {
    const [id] = await predictIds(other, ['Object detection with YOLO']);
    const response = await feedback(one, [{ prediction_id: id, tag: 'computer-vision' }]);
    expect(response.json().data.feedback[0]).toMatchObject({ status: 404, result: 'unknown_prediction' });
    // The server of that experiment takes it.
    const there = await feedback(other, [{ prediction_id: id, tag: 'computer-vision' }]);
    expect(there.json().data.feedback[0]).toMatchObject({ status: 200, result: 'accepted' });
  });

  it.each([
    ['no body', undefined, 422, /field required/],
    ['an empty list', { feedback: [] }, 422, /at least 1 items/],
    ['not a list', { feedback: { prediction_id: 'x' } }, 422, /value is not a valid list/],
    ['an item without an id', { feedback: [{ tag: 'mlops' }] }, 422, /field required/],
    ['a number as tag', { feedback: [{ prediction_id: 'x', tag: 3 }] }, 422, /str type expected/],
    ['an empty tag', { feedback: [{ prediction_id: 'x', tag: '' }] }, 422, /at least 1 characters/],
    ['broken JSON', '{"feedback": [', 422, /./],
  ])('refuses a malformed body (%s), pydantic style', async (_name, payload, status, message) => {
    const response =
      payload === undefined
        ? await one.app.inject({
            method: 'POST',
            url: '/feedback',
            headers: { 'content-type': 'application/json' },
          })
        : await postJson(one.app, '/feedback', payload);
    expect(response.statusCode).toBe(status);
    expect(JSON.stringify(response.json().detail)).toMatch(message);
  });

  it('refuses an oversized batch with a 413 naming the limit', async () => {
    const items = Array.from({ length: 1001 }, () => ({ prediction_id: 'x', tag: 'mlops' }));
    const response = await feedback(one, items);
    expect(response.statusCode).toBe(413);
    expect(response.json().detail).toMatch(
      /too many feedback items: 1001 given, the limit is 1000 per request/,
    );
  });

  it('answers anything a client may send with a 2xx or a 4xx, never a 500', async () => {
    const [id] = await predictIds(one, ['Feature stores for MLOps']);
    const item = fc.record(
      {
        prediction_id: fc.oneof(fc.constant(id), fc.uuid(), fc.string(), fc.integer()),
        tag: fc.oneof(
          fc.constantFrom('mlops', 'other', '__proto__', 'constructor'),
          fc.string(),
          fc.constant(null),
        ),
        tags: fc.oneof(fc.array(fc.string(), { maxLength: 3 }), fc.constant(null), fc.string()),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.array(item, { maxLength: 8 }), fc.anything()), async (items) => {
        const response = await feedback(two, items);
        expect(response.statusCode, response.body).toBeLessThan(500);
      }),
      { numRuns: 150, seed: 26 },
    );
  });
});
