/**
 * A multi-label run end to end over HTTP: logged by training into a file store, served by the run
 * registry, asked for predictions with and without `top_k` / `threshold`, for its averages and errors.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { parseTrainingArgs, RUN_ARTIFACTS, type TagModel } from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { argsForData, type TrainingOutcome, trainAndEvaluate } from '../../src/train/pipeline.js';
import { REPO_ROOT } from '../support/components.js';
import { expectEnvelope, runsApp } from '../support/http.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-multi-label-');
let store: TrackingStore;
let app: TaggerApp;
let runId: string;
let outcome: TrainingOutcome;
let model: TagModel;

const TEXTS = [
  'Fine-tuning BERT in PyTorch for sentiment analysis of product reviews',
  'Forecasting electricity demand with a temporal convolutional network deployed on Kubernetes',
  'qqq zzz',
];

beforeAll(async () => {
  store = await openTrackingStore(join(scratch.path, 'mlruns'));
  const data = await readDataset(join(REPO_ROOT, 'samples', 'projects-multilabel.csv'));
  const args = argsForData(parseTrainingArgs({ num_epochs: 20 }), data, new Set());
  outcome = trainAndEvaluate({ data, args, seed: 5 });
  model = outcome.model;
  ({ runId } = await logTrainingRun(store, {
    experiment: 'best',
    runName: 'multi',
    args,
    seed: 5,
    outcome,
    source: 'test',
  }));
  ({ app } = await runsApp(store));
});

afterAll(async () => {
  await app?.close();
  await store?.close();
});

const post = (url: string, body: unknown) => app.inject({ method: 'POST', url, payload: body as object });
const dataOf = (response: { body: string }) => JSON.parse(response.body).data;

describe('a multi-label run', () => {
  it('logs micro and macro f1, each tag’s threshold, multi_label, and no confusion matrix', async () => {
    const run = await store.getRun(runId);
    expect(run!.metrics.micro_f1).toBeCloseTo(outcome.performance.averages!.micro.f1, 12);
    expect(run!.metrics.macro_f1).toBeCloseTo(outcome.performance.averages!.macro.f1, 12);
    model.tags.forEach((tag, k) => {
      expect(run!.metrics[`tag.${tag}.threshold`]).toBe(model.tagThresholds![k]);
    });
    expect(run!.params.multi_label).toBe('true');
    expect(run!.params.threshold).toBe('tuned');
    await expect(store.readArtifact(runId, RUN_ARTIFACTS.confusion)).rejects.toThrow();
  });

  it('POST /predict answers predicted_tags over the per-tag thresholds, and the top one as predicted_tag', async () => {
    const response = await post('/predict', { texts: TEXTS.map((text) => ({ text })) });
    expect(response.statusCode).toBe(200);
    const { run_id, predictions } = dataOf(response);
    expect(run_id).toBe(runId);
    expect(predictions).toEqual(
      model.predict(TEXTS).map((p, i) => ({
        prediction_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        input_text: TEXTS[i],
        predicted_tag: p.predicted_tag,
        predicted_tags: p.predicted_tags,
        predicted_probabilities: p.probabilities,
      })),
    );
    expect(predictions[0].predicted_tags.length).toBeGreaterThan(1);
  });

  it('top_k and threshold choose the listed tags; predicted_tag stays the model’s', async () => {
    const body = { texts: [{ text: TEXTS[0] }], threshold: 0, top_k: 3 };
    const [prediction] = dataOf(await post(`/runs/${runId}/predict`, body)).predictions;
    const byProbability = Object.entries(prediction.predicted_probabilities as Record<string, number>)
      .sort((a, b) => b[1] - a[1])
      .map(([tag]) => tag);
    expect(prediction.predicted_tags).toEqual(byProbability.slice(0, 3));
    expect(prediction.predicted_tag).toBe(model.predict([TEXTS[0]!])[0]!.predicted_tag);
    const [strict] = dataOf(
      await post('/predict', { texts: [{ text: TEXTS[0] }], threshold: 1 }),
    ).predictions;
    expect(strict.predicted_tags).toEqual([]);
  });

  it.each([
    [{ top_k: 0 }, 'top_k'],
    [{ top_k: 1.5 }, 'top_k'],
    [{ threshold: 1.2 }, 'threshold'],
    [{ threshold: -0.1 }, 'threshold'],
    [{ threshold: '0.5' }, 'threshold'],
  ])('rejects %j with a 422 naming the field', async (options, field) => {
    const response = await post('/predict', { texts: [{ text: 'a' }], ...options });
    expect(response.statusCode).toBe(422);
    expect(JSON.parse(response.body).detail[0].loc).toEqual(['body', field]);
  });

  it('GET /performance?filter=averages and GET /runs/{id} serve the averages', async () => {
    const url = '/performance?filter=averages';
    const response = await app.inject({ method: 'GET', url });
    expect(response.statusCode).toBe(200);
    expect(expectEnvelope(response, { method: 'GET', url }).data).toEqual({
      performance: JSON.parse(JSON.stringify(outcome.performance.averages)),
    });
    const run = dataOf(await app.inject({ method: 'GET', url: `/runs/${runId}` }));
    expect(run.performance.averages.micro.f1).toBe(outcome.performance.averages!.micro.f1);
  });

  it('GET /runs/{id}/errors answers no matrix and the mistakes with their tag sets', async () => {
    const response = await app.inject({ method: 'GET', url: `/runs/${runId}/errors` });
    expect(response.statusCode).toBe(200);
    const data = dataOf(response);
    expect(data.labels).toBeNull();
    expect(data.matrix).toBeNull();
    expect(data.total).toBe(outcome.confusionAndMistakes.mistakes.total);
    expect(data.mistakes).toEqual(JSON.parse(JSON.stringify(outcome.confusionAndMistakes.mistakes.mistakes)));
    expect(data.mistakes[0].true_tags.length).toBeGreaterThan(0);
  });
});

describe('a single-label run', () => {
  it('top_k alone lists the k most probable tags; threshold every tag reaching it', async () => {
    const dir2 = await mkdtemp(join(tmpdir(), 'tagger-single-topk-'));
    const store2 = await openTrackingStore(join(dir2, 'mlruns'));
    try {
      const data = await readDataset(join(REPO_ROOT, 'samples', 'projects.csv'));
      const args = parseTrainingArgs({ num_epochs: 5 });
      const single = trainAndEvaluate({ data, args, seed: 1 });
      await logTrainingRun(store2, {
        experiment: 'best',
        runName: 's',
        args,
        seed: 1,
        outcome: single,
        source: 't',
      });
      const { app: app2 } = await runsApp(store2);
      try {
        const ask = async (options: object) =>
          dataOf(
            await app2.inject({
              method: 'POST',
              url: '/predict',
              payload: { texts: [{ text: TEXTS[0] }], ...options },
            }),
          ).predictions[0];
        const plain = await ask({});
        expect(plain.predicted_tags).toEqual([plain.predicted_tag]);
        const ranked = Object.entries(plain.predicted_probabilities as Record<string, number>)
          .sort((a, b) => b[1] - a[1])
          .map(([tag]) => tag);
        expect((await ask({ top_k: 2 })).predicted_tags).toEqual(ranked.slice(0, 2));
        const floor = plain.predicted_probabilities[ranked[1]!];
        expect((await ask({ threshold: floor })).predicted_tags).toEqual(ranked.slice(0, 2));
      } finally {
        await app2.close();
      }
    } finally {
      await store2.close();
      await rm(dir2, { recursive: true, force: true });
    }
  });
});
