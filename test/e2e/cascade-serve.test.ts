/**
 * A cascade run served by the real server process with the real minilm encoder (skipped without `npm run
 * setup:encoder`; a failure under CI=true):
 * - texts the fast model is sure of are answered `stage: fast`, the others `stage: encoder` with the
 *   encoder model's answer (the model's own, given the same embeddings), each explained by its stage, and
 *   /metrics counts the texts per stage;
 * - a run trained by `tagger train --encoder minilm --cascade` is served with the stages its τ routes;
 * - with the encoder's queue full (TAGGER_ENCODER_MAX_QUEUE=1, a long batching wait holding one request in
 *   it), unsure texts get the fast answer marked `fast_degraded` by default, and a 503 with
 *   TAGGER_CASCADE_OVERLOAD=shed — while a request of confident texts is answered meanwhile either way;
 * - with the encoder missing on the machine, the cascade is held back with the reason and the next run
 *   serves; `tagger serve --allow-degraded` serves it by its fast model alone, ready, the problem in
 *   /health/ready.
 * Loopback only; no timed assertion (the queue is held by the batcher's wait, and the test waits for
 * /metrics to show it).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CascadeTagModel,
  decodeModel,
  isCascade,
  MODEL_FILES,
  type TrainEncoder,
} from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { type CascadeFixture, realCascade } from '../support/cascade-fixture.js';
import { runCli } from '../support/cli.js';
import { minilmDir, SAMPLE_DATA } from '../support/components.js';
import { sampleEmbeddings } from '../support/encoder-fixture.js';
import { sampleTexts, trainModel } from '../support/fixtures.js';
import { killServers, logServedRun, spawnServe, spawnServer } from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const dir = minilmDir();

/** Probe texts: some of the sample's own (the fast model is sure of most) and some on no clear topic. */
const OFF_TOPIC = [
  'Notes from a workshop on data, models and the people who use them',
  'A short history of computing, from punch cards to the cloud',
  'Weekly reading list: statistics, graphs, images and a bit of language',
  'Benchmarks of several libraries on a laptop',
];

interface Item {
  stage?: string;
  input_text: string;
  predicted_tag: string;
  predicted_probabilities: Record<string, number>;
  explanation?: { encoder?: number; vote?: unknown };
}

async function predict(url: string, texts: readonly string[], extra: object = {}) {
  const response = await fetch(`${url}/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ texts: texts.map((text) => ({ text })), ...extra }),
  });
  const body = (await response.json()) as { data?: { run_id: string; predictions: Item[] } };
  return { status: response.status, headers: response.headers, data: body.data };
}

/** A metric's value from Prometheus text (labels as written, e.g. `{stage="fast"}`). */
const metric = (text: string, name: string, labels = ''): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
};

const metricsOf = async (url: string): Promise<string> => (await fetch(`${url}/metrics`)).text();

async function readiness(url: string): Promise<{ run_id: string; problems?: string[] }> {
  const response = await fetch(`${url}/health/ready`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { run_id: string; problems?: string[] } }).data;
}

/** Resolves once /metrics shows texts waiting for the encoder (polled; a generous bound, no timing). */
async function untilQueued(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (metric(await metricsOf(url), 'tagger_encoder_queue_texts') >= 1) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no text ever waited in the encoder queue');
}

describe.skipIf(dir === null)('a cascade run in the server process', () => {
  const tmp = useTempDir('tagger-e2e-cascade-');
  let store: TrackingStore;
  let embedded: TrainEncoder;
  let fx: CascadeFixture;
  const runs = { tfidf: '', cascade: '' };
  let uri: string;

  beforeAll(async () => {
    const probes = [
      ...sampleTexts()
        .slice(0, 8)
        .map((row) => row.text),
      ...OFF_TOPIC,
    ];
    embedded = await sampleEmbeddings('minilm', OFF_TOPIC);
    fx = realCascade(embedded, probes);
    uri = join(tmp.path, 'mlruns');
    store = await openTrackingStore(uri);
    runs.tfidf = await logServedRun(store, 'best', {
      name: 'tfidf',
      f1: 0.8,
      model: trainModel({ analyzer: 'word', ngram_max_range: 2 }),
    });
    runs.cascade = await logServedRun(store, 'best', { name: 'cascade', f1: 0.95, model: fx });
  }, 300_000);

  afterAll(async () => {
    killServers();
    await store?.close();
  });

  it('answers confident texts with the fast model and unsure ones with the encoder model, explained and counted by stage', async () => {
    expect(fx.confident.length).toBeGreaterThan(0);
    expect(fx.unsure.length).toBeGreaterThan(0);
    const server = await spawnServer({ MLFLOW_TRACKING_URI: uri });
    try {
      const texts = [...fx.confident, ...fx.unsure];
      const { status, data } = await predict(server.url, texts, { explain: true });
      expect(status).toBe(200);
      expect(data!.run_id).toBe(runs.cascade);
      const expected = fx.model.predict(
        texts,
        texts.map((text) => embedded.embeddings.get(text)!),
      );
      data!.predictions.forEach((item, i) => {
        expect(item.stage).toBe(fx.unsure.includes(texts[i]!) ? 'encoder' : 'fast');
        expect(item.predicted_tag).toBe(expected[i]!.predicted_tag);
        for (const [tag, p] of Object.entries(expected[i]!.probabilities)) {
          expect(item.predicted_probabilities[tag]).toBeCloseTo(p, 4);
        }
        // The encoder model's explanation has its embedding's term; the fast model's is a vote's.
        if (item.stage === 'encoder') expect(typeof item.explanation!.encoder).toBe('number');
        else {
          expect(item.explanation!.encoder).toBeUndefined();
          expect(item.explanation!.vote).toBeDefined();
        }
      });
      const text = await metricsOf(server.url);
      expect(metric(text, 'tagger_cascade_texts_total', '{stage="fast"}')).toBe(fx.confident.length);
      expect(metric(text, 'tagger_cascade_texts_total', '{stage="encoder"}')).toBe(fx.unsure.length);
      expect(metric(text, 'tagger_cascade_texts_total', '{stage="fast_degraded"}')).toBe(0);
      expect(metric(text, 'tagger_cascade_stage_seconds_count', '{stage="encoder"}')).toBe(1);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  }, 180_000);

  it('serves a run trained by tagger train --encoder minilm --cascade: stages as its τ routes, the encoder model’s answers', async () => {
    const trained = join(tmp.path, 'trained');
    const train = await runCli([
      'train',
      '--data',
      SAMPLE_DATA,
      '--encoder',
      'minilm',
      '--cascade',
      '--tracking-uri',
      trained,
    ]);
    expect(train.code, train.stderr).toBe(0);
    const trainedStore = await openTrackingStore(trained);
    let model: CascadeTagModel;
    let runId: string;
    let threshold: string | undefined;
    try {
      const experiment = await trainedStore.getExperimentByName('best');
      const [run] = await trainedStore.searchRuns(experiment!.experimentId);
      runId = run!.info.runId;
      threshold = run!.params['cascade.threshold'];
      const files = Object.fromEntries(
        await Promise.all(
          MODEL_FILES.map(
            async (name) => [name, await trainedStore.readArtifact(runId, `model/${name}`)] as const,
          ),
        ),
      );
      const decoded = decodeModel(files, { withEncoder: true });
      expect(isCascade(decoded)).toBe(true);
      model = decoded as CascadeTagModel;
    } finally {
      await trainedStore.close();
    }
    expect(Number(threshold)).toBe(model.routingThreshold);
    const server = await spawnServer({ MLFLOW_TRACKING_URI: trained });
    try {
      const texts = [...fx.confident, ...fx.unsure];
      const { routed } = model.predictFast(texts);
      expect(routed.length).toBeGreaterThan(0);
      expect(routed.length).toBeLessThan(texts.length);
      const { status, data } = await predict(server.url, texts);
      expect(status).toBe(200);
      expect(data!.run_id).toBe(runId);
      const expected = model.predict(
        texts,
        texts.map((text) => embedded.embeddings.get(text)!),
      );
      data!.predictions.forEach((item, i) => {
        expect(item.stage).toBe(routed.includes(i) ? 'encoder' : 'fast');
        expect(item.predicted_tag).toBe(expected[i]!.predicted_tag);
      });
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  }, 300_000);

  for (const overload of ['degrade', 'shed'] as const) {
    it(`with the encoder's queue full: ${overload === 'degrade' ? 'fast answers marked fast_degraded (the default)' : '503 with TAGGER_CASCADE_OVERLOAD=shed'}, confident texts answered meanwhile`, async () => {
      const server = await spawnServer({
        MLFLOW_TRACKING_URI: uri,
        TAGGER_ENCODER_MAX_QUEUE: '1',
        // The first unsure text waits this long for company before its batch leaves: it holds the queue.
        TAGGER_ENCODER_MAX_WAIT_MS: '10000',
        ...(overload === 'shed' ? { TAGGER_CASCADE_OVERLOAD: 'shed' } : {}),
      });
      try {
        const holding = predict(server.url, [fx.unsure[0]!]);
        let held = false;
        void holding.then(() => {
          held = true;
        });
        await untilQueued(server.url);

        const confident = await predict(server.url, fx.confident);
        expect(confident.status).toBe(200);
        expect(confident.data!.predictions.map((item) => item.stage)).toEqual(fx.confident.map(() => 'fast'));
        // Answered while the unsure text still waits for the encoder.
        expect(held).toBe(false);

        const texts = [...fx.confident, ...fx.unsure];
        const mixed = await predict(server.url, texts);
        if (overload === 'degrade') {
          expect(mixed.status).toBe(200);
          const fast = fx.model.fast.predict(texts);
          mixed.data!.predictions.forEach((item, i) => {
            expect(item.stage).toBe(fx.unsure.includes(texts[i]!) ? 'fast_degraded' : 'fast');
            expect(item.predicted_tag).toBe(fast[i]!.predicted_tag);
          });
        } else {
          expect(mixed.status).toBe(503);
          expect(mixed.headers.get('retry-after')).not.toBeNull();
        }
        const first = await holding;
        expect(first.status).toBe(200);
        expect(first.data!.predictions[0]!.stage).toBe('encoder');
        const text = await metricsOf(server.url);
        expect(metric(text, 'tagger_cascade_texts_total', '{stage="fast_degraded"}')).toBe(
          overload === 'degrade' ? fx.unsure.length : 0,
        );
        expect(metric(text, 'tagger_cascade_degraded_requests_total', '{reason="queue_full"}')).toBe(
          overload === 'degrade' ? 1 : Number.NaN,
        );
        expect(metric(text, 'tagger_encoder_shed_requests_total')).toBe(1);
      } finally {
        server.child.kill('SIGTERM');
        await server.exited;
      }
    }, 180_000);
  }

  it('with its encoder missing here: held back with the reason, or served by its fast model with --allow-degraded', async () => {
    const empty = join(tmp.path, 'no-encoders');
    await mkdir(empty, { recursive: true });
    const held = await spawnServer({ MLFLOW_TRACKING_URI: uri, TAGGER_ENCODERS_DIR: empty });
    try {
      const ready = await readiness(held.url);
      expect(ready.run_id).toBe(runs.tfidf);
      expect(JSON.stringify(ready.problems)).toMatch(
        new RegExp(
          `run ${runs.cascade} ranks above the served run but is not served: its sentence encoder cannot be used on this server: .*minilm`,
        ),
      );
    } finally {
      held.child.kill('SIGTERM');
      await held.exited;
    }

    const serve = spawnServe(['--tracking-uri', uri, '--port', '0', '--workers', '1', '--allow-degraded'], {
      env: { TAGGER_ENCODERS_DIR: empty, TAGGER_RECORD_STORE: 'memory:', TAGGER_RELOAD_INTERVAL_MS: '0' },
    });
    try {
      const url = await serve.listening();
      const ready = await readiness(url);
      expect(ready.run_id).toBe(runs.cascade);
      expect(ready.problems).toEqual([
        expect.stringMatching(
          new RegExp(
            `^run ${runs.cascade} is a cascade served by its fast model alone \\(--allow-degraded\\): its sentence encoder cannot be used on this server: .*minilm`,
          ),
        ),
      ]);
      expect(JSON.stringify(ready)).not.toContain(empty);
      const texts = [...fx.confident, ...fx.unsure];
      const { status, data } = await predict(url, texts);
      expect(status).toBe(200);
      expect(data!.predictions.map((item) => item.stage)).toEqual(
        texts.map((text) => (fx.unsure.includes(text) ? 'fast_degraded' : 'fast')),
      );
      expect(metric(await metricsOf(url), 'tagger_served_cascade_degraded')).toBe(1);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  }, 180_000);
});
