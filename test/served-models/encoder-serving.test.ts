/**
 * Serving encoder runs in-process (the app over ServedRuns with an EncoderPool; the real minilm encoder,
 * skipped without `npm run setup:encoder`): predictions equal the model's own with the same embeddings,
 * explanations carry the encoder term and still sum to the score, concurrent requests share batches, a
 * full queue sheds with 503 + Retry-After, a run whose encoder differs is held back with the reason in
 * /health/ready, predictions that come through the batcher carry their prediction_id and are recorded
 * like any other (feedback finds them), and a reload to a run with another encoder closes the old one
 * without failing a request.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createHttpMetrics } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import type { TrainEncoder } from '../../src/model/index.js';
import { Monitoring } from '../../src/monitoring/index.js';
import {
  EncoderPool,
  type EncoderSettings,
  loadModelDirectory,
  ServedRuns,
} from '../../src/served-models/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { minilmDir } from '../support/components.js';
import {
  otherEncoder,
  sampleEmbeddings,
  trainEncoderModel,
  withWrongDigest,
} from '../support/encoder-fixture.js';
import { type TrainedModel, trainModel } from '../support/fixtures.js';
import { captureLog, postJson } from '../support/http.js';
import { testMonitoringConfig } from '../support/monitoring.js';
import { logServedRun } from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const dir = minilmDir();

const TEXTS = [
  'Transfer learning with transformers for text classification.',
  'Object detection with YOLO on drone images',
  'Generative adversarial networks in both PyTorch and TensorFlow.',
  'Serving models at scale with Kubernetes and feature stores',
];

interface Prediction {
  predicted_tag: string;
  predicted_probabilities: Record<string, number>;
  explanation?: {
    score: number;
    bias: number;
    rest: number;
    encoder?: number;
    contributions: { contribution: number }[];
  };
}

describe.skipIf(dir === null)('serving encoder runs', () => {
  const tmp = useTempDir('tagger-encoder-serving-');
  let store: TrackingStore;
  let embedded: TrainEncoder;
  let encoderModel: TrainedModel;
  /** The run ids, logged in beforeAll (and `other` in a test). */
  const runs = { tfidf: '', enc: '', wrong: '', other: '' };
  const batches: number[] = [];
  const closed: string[] = [];
  const settings: EncoderSettings = { threads: 1, maxBatch: 8, maxWaitMs: 2, maxQueue: 256, nice: 0 };
  let pool: EncoderPool;
  let servedRuns: ServedRuns;
  let app: TaggerApp;

  beforeAll(async () => {
    store = await openTrackingStore(join(tmp.path, 'mlruns'));
    embedded = await sampleEmbeddings('minilm', TEXTS);
    encoderModel = trainEncoderModel(embedded);
    const tfidf = trainModel({ analyzer: 'word', ngram_max_range: 2 });
    runs.tfidf = await logServedRun(store, 'best', { name: 'tfidf', f1: 0.8, model: tfidf });
    runs.enc = await logServedRun(store, 'best', { name: 'enc', f1: 0.95, model: encoderModel });
    runs.wrong = await logServedRun(store, 'best', {
      name: 'wrong',
      f1: 0.99,
      model: { ...encoderModel, files: withWrongDigest(encoderModel.files) },
    });
    pool = new EncoderPool(
      settings,
      { batch: (texts) => batches.push(texts), closed: (spec) => closed.push(spec.name) },
      0,
    );
    servedRuns = await ServedRuns.load(store, {
      experiment: 'best',
      modelCacheSize: 2,
      log: captureLog(),
      encoders: pool,
    });
    app = createApp({ serving: { mode: 'runs', servedRuns }, metrics: createHttpMetrics() });
    await app.ready();
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await pool?.close();
    await store?.close();
  });

  it('serves the encoder run and holds back the run whose encoder differs, saying why in /health/ready', async () => {
    expect(servedRuns.bestRunId).toBe(runs.enc);
    const ready = await app.inject({ url: '/health/ready' });
    expect(ready.statusCode).toBe(200);
    const text = ready.body;
    expect(text).toContain(runs.wrong);
    expect(text).toMatch(
      /its sentence encoder cannot be used on this server: .*model\.onnx has sha256 [0-9a-f]{64}, but the model was trained with 0{64}/,
    );
    // No path of this machine in what clients see.
    expect(text).not.toContain(dir!);
    expect(pool.size).toBe(1);
  });

  it('predicts what the model predicts in-process with the same embeddings', async () => {
    const response = await postJson(app, '/predict', { texts: TEXTS.map((text) => ({ text })) });
    expect(response.statusCode, response.body).toBe(200);
    const body = JSON.parse(response.body) as { data: { run_id: string; predictions: Prediction[] } };
    expect(body.data.run_id).toBe(runs.enc);
    const expected = encoderModel.model.predict(
      TEXTS,
      TEXTS.map((text) => embedded.embeddings.get(text)!),
    );
    body.data.predictions.forEach((prediction, i) => {
      expect(prediction.predicted_tag).toBe(expected[i]!.predicted_tag);
      for (const [tag, p] of Object.entries(expected[i]!.probabilities)) {
        expect(prediction.predicted_probabilities[tag]).toBeCloseTo(p, 4);
      }
    });
    expect(String(response.headers['server-timing'])).toMatch(
      /queue;dur=[\d.]+, encoder;dur=[\d.]+, model;dur=/,
    );
  });

  it('explains with one encoder term, and the terms still sum to the score', async () => {
    const response = await postJson(app, '/predict', { texts: [{ text: TEXTS[0] }], explain: true });
    expect(response.statusCode, response.body).toBe(200);
    const [prediction] = (JSON.parse(response.body) as { data: { predictions: Prediction[] } }).data
      .predictions;
    const explanation = prediction!.explanation!;
    expect(typeof explanation.encoder).toBe('number');
    const sum =
      explanation.bias +
      explanation.contributions.reduce((total, c) => total + c.contribution, 0) +
      explanation.rest +
      explanation.encoder!;
    expect(sum).toBeCloseTo(explanation.score, 9);
  });

  it('puts concurrent requests into shared batches', async () => {
    batches.length = 0;
    const responses = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        postJson(app, '/predict', { texts: [{ text: `${TEXTS[i % TEXTS.length]} ${i}` }] }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(24).fill(200));
    expect(batches.reduce((a, b) => a + b, 0)).toBe(24);
    expect(batches.length).toBeLessThan(24);
    expect(Math.max(...batches)).toBeGreaterThan(1);
    expect(Math.max(...batches)).toBeLessThanOrEqual(settings.maxBatch);
  });

  it('answers /runs/{id}/predict with TF-IDF and encoder runs, and 409 for a run whose encoder differs', async () => {
    const tfidf = await postJson(app, `/runs/${runs.tfidf}/predict`, { texts: [{ text: TEXTS[1] }] });
    expect(tfidf.statusCode).toBe(200);
    expect(String(tfidf.headers['server-timing'])).not.toContain('encoder;');
    const enc = await postJson(app, `/runs/${runs.enc}/predict`, { texts: [{ text: TEXTS[1] }] });
    expect(enc.statusCode).toBe(200);
    const wrong = await postJson(app, `/runs/${runs.wrong}/predict`, { texts: [{ text: TEXTS[1] }] });
    expect(wrong.statusCode).toBe(409);
    expect(wrong.body).toContain('its sentence encoder cannot be used on this server');
    expect(pool.size).toBe(1);
  });

  it('sheds requests with 503 + Retry-After when the queue is full, and answers the others', async () => {
    const small = new EncoderPool({ threads: 1, maxBatch: 2, maxWaitMs: 0, maxQueue: 4, nice: 0 }, {}, 0);
    const shedRuns = await ServedRuns.load(store, {
      experiment: 'best',
      modelCacheSize: 0,
      log: captureLog(),
      encoders: small,
      pinRunId: runs.enc,
    });
    const shedApp = createApp({ serving: { mode: 'runs', servedRuns: shedRuns } });
    try {
      const responses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          postJson(shedApp, '/predict', {
            texts: [{ text: `${TEXTS[0]} ${i}` }, { text: `${TEXTS[2]} ${i}` }],
          }),
        ),
      );
      const shed = responses.filter((r) => r.statusCode === 503);
      const served = responses.filter((r) => r.statusCode === 200);
      expect(shed.length).toBeGreaterThan(0);
      expect(served.length).toBeGreaterThan(0);
      expect(shed.length + served.length).toBe(30);
      expect(shed[0]!.headers['retry-after']).toBe('5');
      expect(shed[0]!.body).toMatch(
        /the encoder is at capacity \(\d+ texts waiting, at most 4; this request has 2\)/,
      );
    } finally {
      await shedApp.close();
      await small.close();
    }
    expect(small.size).toBe(0);
  });

  it('serves a saved encoder model directory (single-model mode)', async () => {
    const modelDir = join(
      tmp.path,
      'mlruns',
      (await store.getRun(runs.enc))!.info.experimentId,
      runs.enc,
      'artifacts',
    );
    const served = await loadModelDirectory(modelDir, pool);
    const single = createApp({ serving: { mode: 'model', model: served, source: modelDir } });
    try {
      const response = await postJson(single, '/predict', { texts: [{ text: TEXTS[3] }] });
      expect(response.statusCode, response.body).toBe(200);
    } finally {
      await single.close();
      served.predictor.release();
    }
    // The same encoder as the served run's: shared, not opened twice.
    expect(pool.size).toBe(1);
  });

  it('gives batched encoder predictions their prediction_id and records them, as for TF-IDF runs', async () => {
    const metrics = createHttpMetrics({ defaultMetrics: false });
    const monitoring = new Monitoring(testMonitoringConfig(), {
      log: captureLog(),
      registry: metrics.registry,
    });
    const monitored = createApp({ serving: { mode: 'runs', servedRuns }, metrics, monitoring });
    try {
      batches.length = 0;
      // Concurrent requests, so their texts share the batcher's batches.
      const responses = await Promise.all([
        ...TEXTS.map((text) => postJson(monitored, '/predict', { texts: [{ text }] })),
        postJson(monitored, `/runs/${runs.enc}/predict`, { texts: [{ text: TEXTS[0] }], explain: true }),
      ]);
      expect(responses.map((r) => r.statusCode)).toEqual(Array(TEXTS.length + 1).fill(200));
      expect(batches.length).toBeLessThan(TEXTS.length + 1);
      const ids = responses.map(
        (r) => (r.json().data.predictions[0] as { prediction_id: string }).prediction_id,
      );
      for (const id of ids)
        expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new Set(ids).size).toBe(ids.length);
      await monitoring.recorder.settle();
      const tag = encoderModel.model.tags[0]!;
      const feedback = await postJson(monitored, '/feedback', {
        feedback: ids.map((prediction_id) => ({ prediction_id, tag })),
      });
      expect(feedback.statusCode, feedback.body).toBe(200);
      const items = feedback.json().data.feedback as { status: number; run_id: string }[];
      expect(items.map((item) => [item.status, item.run_id])).toEqual(ids.map(() => [200, runs.enc]));
      const figures = await monitored.inject({ method: 'GET', url: '/monitoring' });
      expect(figures.statusCode, figures.body).toBe(200);
      // The served run's window: the /predict answers (the /runs/{id}/predict one is the same run).
      expect(figures.json().data.monitoring).toMatchObject({ run_id: runs.enc, predictions: ids.length });
    } finally {
      await monitored.close();
      await monitoring.close();
    }
  });

  it('swaps to a run with another encoder under requests, failing none, and closes the old encoder', async () => {
    const other = await otherEncoder(tmp.path);
    const otherEmbedded = await sampleEmbeddings(other, TEXTS);
    const otherModel = trainEncoderModel(otherEmbedded);
    expect(otherModel.model.encoder!.max_tokens).toBe(128);
    runs.other = await logServedRun(store, 'best', { name: 'other', f1: 0.97, model: otherModel });
    let stop = false;
    const statuses: number[] = [];
    const load = Promise.all(
      Array.from({ length: 3 }, async (_, loop) => {
        while (!stop) {
          const response = await postJson(app, '/predict', {
            texts: [{ text: `${TEXTS[loop]} ${statuses.length}` }],
          });
          statuses.push(response.statusCode);
        }
      }),
    );
    await new Promise((done) => setTimeout(done, 200));
    const result = await servedRuns.reload();
    await new Promise((done) => setTimeout(done, 300));
    stop = true;
    await load;
    expect(result.outcome).toBe('swapped');
    expect(result.runId).toBe(runs.other);
    expect(statuses.length).toBeGreaterThan(3);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // The old encoder closes once drained (no model holds it: the old run is not kept loaded).
    for (let i = 0; i < 100 && !closed.includes('minilm'); i++) await new Promise((d) => setTimeout(d, 50));
    expect(closed).toContain('minilm');
    expect(pool.size).toBe(1);
    const after = await postJson(app, '/predict', { texts: [{ text: TEXTS[0] }] });
    expect(JSON.parse(after.body).data.run_id).toBe(runs.other);
  }, 120_000);
});
