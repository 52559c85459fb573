/**
 * Cascade runs among an experiment's runs (ServedRuns over a real file store; the cascade's encoder a
 * fake one — stand-in embeddings, so no ONNX Runtime): hot reload from a TF-IDF run to a cascade and back
 * (its encoder acquired, then released), the promotion gates hold a cascade back as any run, a cascade
 * whose encoder cannot be opened is held back with the reason while the next run serves, and with
 * `allowDegraded` it is served by its fast model alone with the problem in /health/ready — until its
 * encoder can be opened, when a reload gives it back (pinned runs too).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { EVALUATION_TAGS } from '../../src/model/index.js';
import { ServedRuns } from '../../src/served-models/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { type CascadeFixture, FakeEncoders, fakeCascade } from '../support/cascade-fixture.js';
import { type TrainedModel, trainModel } from '../support/fixtures.js';
import { captureLog, postJson } from '../support/http.js';
import { logServedRun } from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

interface Item {
  stage?: string;
}

async function stagesOf(
  app: TaggerApp,
  url: string,
  texts: readonly string[],
): Promise<(string | undefined)[]> {
  const response = await postJson(app, url, { texts: texts.map((text) => ({ text })) });
  expect(response.statusCode, response.body).toBe(200);
  return (JSON.parse(response.body).data.predictions as Item[]).map((item) => item.stage);
}

async function readiness(app: TaggerApp): Promise<{ run_id: string; problems?: string[] }> {
  const response = await app.inject({ url: '/health/ready' });
  expect(response.statusCode).toBe(200);
  return JSON.parse(response.body).data;
}

describe('cascade runs among the served runs', () => {
  const tmp = useTempDir('tagger-cascade-serving-');
  let store: TrackingStore;
  let tfidf: TrainedModel;
  let cascade: CascadeFixture;
  let experiments = 0;

  beforeAll(async () => {
    store = await openTrackingStore(join(tmp.path, 'mlruns'));
    tfidf = trainModel({ analyzer: 'word', ngram_max_range: 2 });
    cascade = fakeCascade();
  }, 120_000);

  afterAll(async () => {
    await store?.close();
  });

  const texts = () => [...cascade.confident, ...cascade.unsure];
  const expectedStages = () => [
    ...cascade.confident.map(() => 'fast'),
    ...cascade.unsure.map(() => 'encoder'),
  ];

  it('reloads from a TF-IDF run to a cascade and back: stages only while the cascade serves, its encoder released after', async () => {
    const name = `cascade-${++experiments}`;
    const first = await logServedRun(store, name, { name: 'tfidf', f1: 0.8, model: tfidf });
    const encoders = new FakeEncoders();
    const servedRuns = await ServedRuns.load(store, {
      experiment: name,
      modelCacheSize: 2,
      log: captureLog(),
      encoders,
    });
    const app = createApp({ serving: { mode: 'runs', servedRuns } });
    await app.ready();
    try {
      expect(await stagesOf(app, '/predict', texts())).toEqual(texts().map(() => undefined));

      const casc = await logServedRun(store, name, { name: 'cascade', f1: 0.9, model: cascade });
      expect((await servedRuns.reload()).outcome).toBe('swapped');
      expect(servedRuns.bestRunId).toBe(casc);
      expect(encoders.leases).toBe(1);
      expect(await stagesOf(app, '/predict', texts())).toEqual(expectedStages());
      // The TF-IDF run still answers through its own route, without stages.
      expect(await stagesOf(app, `/runs/${first}/predict`, texts())).toEqual(texts().map(() => undefined));
      // GET /runs lists the cascade's params like any run's.
      const listed = JSON.parse((await app.inject({ url: '/runs' })).body).data.runs as {
        run_id: string;
        params: Record<string, string>;
      }[];
      expect(listed.find((run) => run.run_id === casc)!.params.cascade).toBe('true');

      const back = await logServedRun(store, name, { name: 'tfidf-again', f1: 0.95, model: tfidf });
      expect((await servedRuns.reload()).outcome).toBe('swapped');
      expect(servedRuns.bestRunId).toBe(back);
      expect(await stagesOf(app, '/predict', texts())).toEqual(texts().map(() => undefined));
      // The swapped-out cascade is not kept loaded: its encoder is let go.
      expect(encoders.leases).toBe(0);
      // Asked for by id, it loads again (and answers with stages).
      expect(await stagesOf(app, `/runs/${casc}/predict`, texts())).toEqual(expectedStages());
    } finally {
      await app.close();
    }
  });

  it('the promotion gates hold a cascade back as any run', async () => {
    const name = `cascade-${++experiments}`;
    const first = await logServedRun(store, name, { name: 'tfidf', f1: 0.8, model: tfidf });
    const casc = await logServedRun(store, name, {
      name: 'cascade',
      f1: 0.9,
      model: cascade,
      tags: { [EVALUATION_TAGS.testSetSize]: '4' },
    });
    const servedRuns = await ServedRuns.load(store, {
      experiment: name,
      modelCacheSize: 2,
      log: captureLog(),
      encoders: new FakeEncoders(),
    });
    expect(servedRuns.bestRunId).toBe(first);
    expect(servedRuns.problems.heldBack).toEqual([
      expect.objectContaining({
        runId: casc,
        kind: 'gates',
        reason: expect.stringMatching(/test split has 4 rows/),
      }),
    ]);
  });

  it('a cascade whose encoder cannot be opened is held back, or served by its fast model with allowDegraded', async () => {
    const name = `cascade-${++experiments}`;
    const first = await logServedRun(store, name, { name: 'tfidf', f1: 0.8, model: tfidf });
    const casc = await logServedRun(store, name, { name: 'cascade', f1: 0.9, model: cascade });
    const missing = new FakeEncoders();
    missing.missing = true;

    const held = await ServedRuns.load(store, {
      experiment: name,
      modelCacheSize: 2,
      log: captureLog(),
      encoders: missing,
    });
    const heldApp = createApp({ serving: { mode: 'runs', servedRuns: held } });
    await heldApp.ready();
    try {
      const ready = await readiness(heldApp);
      expect(ready.run_id).toBe(first);
      expect(ready.problems).toEqual([
        expect.stringMatching(
          new RegExp(
            `^run ${casc} ranks above the served run but is not served: its sentence encoder cannot be used on this server: .*model\\.onnx is missing; \`tagger serve --allow-degraded\` \\(TAGGER_ALLOW_DEGRADED=true\\) serves this cascade by its fast model alone`,
          ),
        ),
      ]);
      expect(JSON.stringify(ready)).not.toContain('/srv/tagger');
    } finally {
      await heldApp.close();
    }

    const degraded = await ServedRuns.load(store, {
      experiment: name,
      modelCacheSize: 2,
      log: captureLog(),
      encoders: missing,
      allowDegraded: true,
    });
    const app = createApp({ serving: { mode: 'runs', servedRuns: degraded } });
    await app.ready();
    try {
      const ready = await readiness(app);
      expect(ready.run_id).toBe(casc);
      expect(ready.problems).toEqual([
        expect.stringMatching(
          new RegExp(
            `^run ${casc} is a cascade served by its fast model alone \\(--allow-degraded\\): its sentence encoder cannot be used on this server`,
          ),
        ),
      ]);
      expect(await stagesOf(app, '/predict', texts())).toEqual([
        ...cascade.confident.map(() => 'fast'),
        ...cascade.unsure.map(() => 'fast_degraded'),
      ]);
      // A reload keeps serving it as it is while the encoder is still missing, ready.
      expect((await degraded.reload()).outcome).toBe('unchanged');
      expect((await readiness(app)).run_id).toBe(casc);
      // Once the encoder is installed, the next reload gives the cascade its encoder back.
      missing.missing = false;
      expect(await degraded.reload()).toMatchObject({ outcome: 'swapped', runId: casc, previousRunId: casc });
      expect(await readiness(app)).toEqual({ status: 'ready', run_id: casc });
      expect(await stagesOf(app, '/predict', texts())).toEqual(expectedStages());
      expect(missing.leases).toBe(1);
      expect((await degraded.reload()).outcome).toBe('unchanged');
    } finally {
      await app.close();
    }
  });

  it('a pinned cascade served without its encoder gets it back at a reload too', async () => {
    const name = `cascade-${++experiments}`;
    const casc = await logServedRun(store, name, { name: 'cascade', f1: 0.5, model: cascade });
    await logServedRun(store, name, { name: 'tfidf', f1: 0.8, model: tfidf });
    const encoders = new FakeEncoders();
    encoders.missing = true;
    const servedRuns = await ServedRuns.load(store, {
      experiment: name,
      modelCacheSize: 2,
      log: captureLog(),
      encoders,
      allowDegraded: true,
      pinRunId: casc,
    });
    expect(servedRuns.best.degraded).toMatch(/cannot be used on this server/);
    expect((await servedRuns.reload()).outcome).toBe('unchanged');
    encoders.missing = false;
    expect((await servedRuns.reload()).outcome).toBe('swapped');
    expect(servedRuns.bestRunId).toBe(casc);
    expect(servedRuns.best.degraded).toBeUndefined();
    expect(servedRuns.best.predictor.holdsEncoder).toBe(true);
  });
});
