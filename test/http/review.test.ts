/**
 * The review routes through the app (app.inject), with a run trained and logged the real way, label
 * issues included: GET /review lists the served run's unlabelled predictions, the smallest margin first
 * with an evenly spread random share that says so, each text once (near copies neither), explained; labelled ones leave the
 * queue. GET /review/label-issues lists the rows not decided on; POST /review/label-issues records keep /
 * fix, after which a kept row is not listed again.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTrainingArgs, textSimilarity } from '../../src/model/index.js';
import { marginOf } from '../../src/monitoring/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { trainingLabelIssues } from '../../src/train/label-issues.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { trainAndEvaluate } from '../../src/train/pipeline.js';
import { expectEnvelope, postJson } from '../support/http.js';
import { sampleWithWrongTags } from '../support/label-noise.js';
import { type MonitoredApp, monitoredApp, splitSample } from '../support/monitoring.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-review-');
let store: TrackingStore;
let served: MonitoredApp;
let runId: string;
let heldOut: { text: string; tag: string }[];

beforeAll(async () => {
  const sample = await splitSample(scratch.path);
  heldOut = sample.heldOut;
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  const writer = await openTrackingStore(uri);
  try {
    // Four rows given another tag, so label-issue finding has something to find.
    const rows = await sampleWithWrongTags();
    const args = parseTrainingArgs({});
    const outcome = trainAndEvaluate({ data: rows, args, seed: 42 });
    const labelIssues = trainingLabelIssues(rows, args, 42);
    ({ runId } = await logTrainingRun(writer, {
      experiment: 'best',
      runName: 'reviewed',
      args,
      seed: 42,
      outcome,
      source: 'test',
      labelIssues,
    }));
  } finally {
    await writer.close();
  }
  store = await openTrackingStore(uri, { readOnly: true });
  served = await monitoredApp(store);
}, 240_000);

afterAll(async () => {
  await served?.close();
  await store?.close();
});

interface Item {
  prediction_id: string;
  text: string;
  confidence: number;
  unseen_share: number;
  selection: string;
  explanation?: unknown;
  predicted_probabilities: Record<string, number>;
}

const review = async (query: string) => {
  const response = await served.app.inject({ method: 'GET', url: `/review${query}` });
  return { response, data: response.json().data as { items: Item[]; [key: string]: unknown } };
};

describe('GET /review', () => {
  it('lists the smallest margin first, with an evenly spread random share that says so, each explained', async () => {
    const texts = heldOut.map((row) => row.text);
    await postJson(served.app, '/predict', {
      texts: [...texts, texts[0]!, texts[0]!].map((text) => ({ text })),
    });
    await served.monitoring.recorder.settle();
    const { response, data } = await review('?limit=10&random_share=0.3');
    expect(response.statusCode, response.body).toBe(200);
    expectEnvelope(response, { method: 'GET', url: '/review?limit=10&random_share=0.3' });
    expect(data).toMatchObject({ run_id: runId, order: 'margin', random_share: 0.3, random_items: 3 });
    expect(data.candidates).toBe(texts.length + 2);
    expect(data.tags).toEqual(['computer-vision', 'mlops', 'natural-language-processing', 'other']);
    const { items } = data;
    expect(items).toHaveLength(10);
    // Spread evenly: the random share's running count steps up at items 3, 6 and 9 (0-based).
    expect(items.map((item) => item.selection)).toEqual([
      'margin',
      'margin',
      'margin',
      'random_share',
      'margin',
      'margin',
      'random_share',
      'margin',
      'margin',
      'random_share',
    ]);
    const ordered = items.filter((item) => item.selection === 'margin');
    const margins = ordered.map((item) =>
      marginOf({ multiLabel: false, probabilities: item.predicted_probabilities }),
    );
    expect(margins).toEqual([...margins].sort((a, b) => a - b));
    // The smallest margin of every candidate the random share did not draw (nor a near copy of one drawn)
    // comes first: the share is drawn at random from every candidate, and a text is listed once.
    const all = await review('?limit=200&random_share=0');
    const drawn = items.filter((item) => item.selection === 'random_share').map((item) => item.text);
    const left = all.data.items.filter((item) =>
      drawn.every((text) => textSimilarity(text, item.text) < 0.8),
    );
    expect(margins[0]).toBe(
      Math.min(
        ...left.map((item) => marginOf({ multiLabel: false, probabilities: item.predicted_probabilities })),
      ),
    );
    // Each text once in the ordered part (the same text was predicted three times), near copies neither.
    expect(new Set(all.data.items.map((item) => item.text)).size).toBe(all.data.items.length);
    expect(all.data.near_copies).toBeGreaterThanOrEqual(2);
    for (const item of items) {
      expect(item.explanation).toMatchObject({ tag: expect.any(String) });
      expect(Object.keys(item.predicted_probabilities).sort()).toEqual(data.tags);
    }
    const uncertainty = await review('?limit=20&order=uncertainty&random_share=0');
    const confidences = uncertainty.data.items.map((item) => item.confidence);
    expect(confidences).toEqual([...confidences].sort((a, b) => a - b));
  });

  it('leaves out what has a label, by id and by text; other orders by their signal', async () => {
    const before = await review('?limit=200&random_share=0&explain=false');
    const first = before.data.items[0]!;
    const answer = await postJson(served.app, '/feedback', {
      feedback: [{ prediction_id: first.prediction_id, tag: 'mlops', selection: first.selection }],
    });
    expect(answer.json().data.accepted).toBe(1);
    const after = await review('?limit=200&random_share=0&explain=false');
    expect(after.data.items.map((item) => item.text)).not.toContain(first.text);
    expect(after.data.items[0]!.explanation).toBeUndefined();
    const drift = await review('?limit=20&order=drift&random_share=0');
    const shares = drift.data.items.map((item) => item.unseen_share);
    expect(shares).toEqual([...shares].sort((a, b) => b - a));
    const random = await review('?limit=5&order=random&random_share=1');
    expect(random.data.items.map((item) => item.selection)).toEqual(Array(5).fill('random_share'));
  });

  it('refuses a query that is not one, pydantic style; takes numbers and booleans as query strings write them', async () => {
    for (const query of [
      '?limit=0',
      '?limit=201',
      '?order=loudest',
      '?random_share=2',
      '?random_share=0x1',
      '?explain=yes',
    ]) {
      expect((await review(query)).response.statusCode, query).toBe(422);
    }
    for (const query of [
      '?random_share=1',
      '?random_share=.5',
      '?random_share=2.5e-3',
      '?explain=false&limit=3',
    ]) {
      expect((await review(query)).response.statusCode, query).toBe(200);
    }
  });
});

describe('reviewing label issues', () => {
  it('lists the rows no one decided on; keep hides a row, fix records a correction, each answered', async () => {
    const listed = await served.app.inject({ method: 'GET', url: '/review/label-issues?limit=5' });
    expect(listed.statusCode).toBe(200);
    const data = listed.json().data as {
      run_id: string;
      found: number;
      decided: number;
      items: { text_key: string; given_tags: string[]; suggested_tags: string[] }[];
    };
    expect(data).toMatchObject({ run_id: runId, decided: 0 });
    expect(data.items.length).toBeGreaterThanOrEqual(2);
    const [kept, fixed] = data.items;
    const answer = await postJson(served.app, '/review/label-issues', {
      decisions: [
        { run_id: runId, text_key: kept!.text_key, decision: 'keep' },
        { run_id: runId, text_key: fixed!.text_key, decision: 'fix', tag: fixed!.suggested_tags[0] },
        { run_id: runId, text_key: 'f'.repeat(64), decision: 'keep' },
        { run_id: runId, text_key: fixed!.text_key, decision: 'fix' },
        { run_id: runId, text_key: kept!.text_key, decision: 'keep', tag: 'mlops' },
        { run_id: runId, text_key: fixed!.text_key, decision: 'fix', tag: 'robotics' },
      ],
    });
    expect(answer.statusCode).toBe(200);
    const outcomes = answer.json().data.decisions as { status: number; result: string; detail: string }[];
    expect(outcomes.map((o) => [o.status, o.result])).toEqual([
      [200, 'kept'],
      [200, 'fixed'],
      [404, 'unknown_row'],
      [422, 'invalid'],
      [422, 'invalid'],
      [200, 'fixed'],
    ]);
    expect(outcomes[1]!.detail).toMatch(/replaced by item 5 of this request/);
    expect(outcomes[5]!.detail).toMatch(/"robotics" is not a tag of run .*tagger retrain learns it/);
    const reviews = await served.monitoring.labelReviews(
      (await served.servedRuns.current.runs.find((run) => run.runId === runId))!.experimentId,
    );
    expect(reviews.map((r) => [r.textKey, r.decision, r.tags])).toEqual(
      expect.arrayContaining([
        [kept!.text_key, 'keep', kept!.given_tags],
        [fixed!.text_key, 'fix', ['robotics']],
      ]),
    );
    const again = (await served.app.inject({ method: 'GET', url: '/review/label-issues?limit=200' })).json()
      .data as typeof data;
    expect(again.decided).toBe(2);
    expect(again.items.map((item) => item.text_key)).not.toContain(kept!.text_key);
    expect(again.items.map((item) => item.text_key)).not.toContain(fixed!.text_key);
  });

  it('answers 404 for a run it does not know', async () => {
    const response = await served.app.inject({ method: 'GET', url: '/review/label-issues?run_id=nope' });
    expect(response.statusCode).toBe(404);
  });
});
