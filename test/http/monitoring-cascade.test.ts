/**
 * GET /monitoring of a served cascade run (issue 33), through the app, with the synthetic encoder served
 * as the encoder pool serves a real one: every recorded prediction keeps the stage that answered, the
 * window's routed share is judged against the training curve's, and the random share's labels give each
 * stage's live figures; the gauges say the same.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MonitoringData } from '../../src/http/api-types.js';
import { type CascadeTagModel, isCascade } from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { logSampleCascade, sampleCascade, syntheticEncoders } from '../support/cascade-run.js';
import { expectEnvelope, postJson } from '../support/http.js';
import { type MonitoredApp, monitoredApp } from '../support/monitoring.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-monitoring-cascade-');
let store: TrackingStore;
let served: MonitoredApp;
let texts: string[];

beforeAll(async () => {
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  await logSampleCascade(uri);
  texts = (await sampleCascade()).data.map((row) => row.text);
  store = await openTrackingStore(uri, { readOnly: true });
  served = await monitoredApp(store, { config: { minPredictions: 40 }, encoders: syntheticEncoders() });
}, 180_000);

afterAll(async () => {
  await served?.close();
  await store?.close();
});

async function figures() {
  const response = await served.app.inject({ method: 'GET', url: '/monitoring' });
  expect(response.statusCode, response.body).toBe(200);
  return (expectEnvelope(response, { method: 'GET', url: '/monitoring' }).data as MonitoringData).monitoring;
}

describe('GET /monitoring of a cascade run', () => {
  it('counts the window by stage against the training curve, and each stage’s live figures', async () => {
    const model = served.servedRuns.best.model;
    expect(isCascade(model)).toBe(true);
    const before = await figures();
    expect(before.routing).toMatchObject({
      routed: null,
      expected: (model as CascadeTagModel).choice.cv.routed,
      stages: {},
    });
    const response = await postJson(served.app, '/predict', { texts: texts.map((text) => ({ text })) });
    expect(response.statusCode).toBe(200);
    const predictions = response.json().data.predictions as {
      prediction_id: string;
      predicted_tag: string;
    }[];
    await served.monitoring.recorder.settle();
    const { routed } = (model as CascadeTagModel).predictFast(texts);
    // The sample cascade routes some of its texts and answers the others itself.
    expect(routed.length).toBeGreaterThan(0);
    expect(routed.length).toBeLessThan(texts.length);
    const now = await figures();
    expect(now.routing!.stages).toEqual({ encoder: routed.length, fast: texts.length - routed.length });
    expect(now.routing!.routed).toBeCloseTo(routed.length / texts.length, 12);
    expect(now.routing!.drift).toMatchObject({ live: texts.length, threshold: 0.2 });
    // Labels of the random share: each stage's answers scored on their own.
    const labels = predictions.map((p, i) => ({
      prediction_id: p.prediction_id,
      tag: routed.includes(i) ? p.predicted_tag : 'other',
      selection: 'random_share',
    }));
    expect((await postJson(served.app, '/feedback', { feedback: labels })).statusCode).toBe(200);
    const labelled = await figures();
    if (routed.length > 0)
      expect(labelled.live_by_stage!.encoder).toMatchObject({ f1: 1, num_samples: routed.length });
    expect(labelled.live_by_stage!.fast!.num_samples).toBe(texts.length - routed.length);
    const metrics = (await served.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/tagger_cascade_routed_share\{source="training"\} [\d.]+/);
    expect(metrics).toMatch(/tagger_live_stage_f1\{stage="fast"\} [\d.]+/);
  }, 120_000);
});
