/**
 * A cascade run served through the app (app.inject), its encoder a fake one (stand-in embeddings, failures
 * on demand; the real encoder's tests are test/served-models/cascade-serving.test.ts and
 * test/e2e/cascade-serve.test.ts): every text gets the fast answer, only the unsure ones are embedded and
 * answered by the encoder model, each prediction says which stage answered (`stage`) and is explained by
 * it; when the encoder cannot take the unsure texts they get the fast answer marked `fast_degraded` (the
 * default) or the request is refused (`cascadeOverload: 'shed'`); the metrics count texts per stage,
 * degraded requests by why, and time each stage; a cascade whose encoder cannot be opened is refused, or
 * with `allowDegraded` served by its fast model alone with a problem in /health/ready.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp, createHttpMetrics, type HttpMetrics } from '../../src/app.js';
import { EXPLAIN_TOP } from '../../src/http/explanation-schemas.js';
import type { CascadeOverload, TaggerApp } from '../../src/http/index.js';
import { Monitoring } from '../../src/monitoring/index.js';
import {
  type ArtifactReader,
  EncoderLoadError,
  EncoderUnavailableError,
  loadServedModel,
  QueueFullError,
  RequestTooLargeError,
  type ServedModel,
} from '../../src/served-models/index.js';
import {
  type CascadeFixture,
  FakeEncoders,
  fakeCascade,
  fakeEmbedding,
  fakeMultiLabelCascade,
} from '../support/cascade-fixture.js';
import { captureLog, postJson } from '../support/http.js';
import { testMonitoringConfig } from '../support/monitoring.js';

interface Item {
  stage?: string;
  predicted_tags: string[];
  probabilities_listed?: { listed: number; of: number };
  input_text: string;
  predicted_tag: string;
  predicted_probabilities: Record<string, number>;
  explanation?: unknown;
}

const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

/** The fixture's artifacts as a run's (no reference profile: an older run, a problem but no refusal). */
const readerOf =
  (fx: CascadeFixture): ArtifactReader =>
  async (path) => {
    if (path === 'args.json') return bytes(fx.args);
    if (path === 'performance.json') return bytes(fx.performance);
    const file = path.startsWith('model/') ? fx.files[path.slice('model/'.length)] : undefined;
    if (file === undefined) throw Object.assign(new Error(`${path} is missing`), { code: 'ENOENT' });
    return file;
  };

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** A metric's value from Prometheus text (labels as written, e.g. `{stage="fast"}`). */
const metric = (text: string, name: string, labels = ''): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
};

async function appOf(
  served: ServedModel,
  cascadeOverload?: CascadeOverload,
  monitoring?: Monitoring,
): Promise<{ app: TaggerApp; metrics: HttpMetrics }> {
  const metrics = createHttpMetrics({ defaultMetrics: false });
  const app = createApp({
    serving: { mode: 'model', model: served, source: 'cascade' },
    metrics,
    ...(cascadeOverload ? { http: { cascadeOverload } } : {}),
    ...(monitoring ? { monitoring } : {}),
  });
  await app.ready();
  return { app, metrics };
}

async function predict(app: TaggerApp, texts: readonly string[], extra: object = {}) {
  const response = await postJson(app, '/predict', { texts: texts.map((text) => ({ text })), ...extra });
  const items =
    response.statusCode === 200 ? (JSON.parse(response.body).data.predictions as Item[]) : undefined;
  return { response, items };
}

describe('a cascade run served', () => {
  let fx: CascadeFixture;
  let encoders: FakeEncoders;
  let served: ServedModel;

  beforeAll(async () => {
    fx = fakeCascade();
    expect(fx.confident.length).toBeGreaterThan(0);
    expect(fx.unsure.length).toBeGreaterThan(0);
    encoders = new FakeEncoders();
    served = await loadServedModel(readerOf(fx), { encoders });
  });

  it('answers through the Open Inference Protocol and the Hugging Face shape alike: the stage, only the unsure texts embedded, a full queue refused in their shape when shedding', async () => {
    const { app } = await appOf(served);
    const texts = [...fx.confident, ...fx.unsure];
    const meta = JSON.parse((await app.inject({ url: '/v2/models/tagger' })).body);
    expect(meta.outputs.map((o: { name: string }) => o.name)).toContain('stage');
    expect(meta.parameters).toMatchObject({
      encoder: fx.model.encoder.name,
      encoder_max_tokens: fx.model.encoder.max_tokens,
    });
    const body = { inputs: [{ name: 'text', shape: [texts.length], datatype: 'BYTES', data: texts }] };
    const before = encoders.calls.length;
    const response = await postJson(app, '/v2/models/tagger/infer', body);
    expect(response.statusCode, response.body).toBe(200);
    expect(String(response.headers['server-timing'])).toMatch(
      /queue;dur=[\d.]+, encoder;dur=[\d.]+, model;dur=/,
    );
    expect(encoders.calls.slice(before)).toEqual([fx.unsure]);
    const expected = fx.model.predict(texts, texts.map(fakeEmbedding));
    const outputs = Object.fromEntries(
      (JSON.parse(response.body).outputs as { name: string; data: unknown[] }[]).map((o) => [o.name, o.data]),
    );
    expect(outputs.predicted_tag).toEqual(expected.map((p) => p.predicted_tag));
    expect(outputs.stage).toEqual(expected.map((p) => p.stage));
    const hf = await postJson(app, '/hf/text-classification', { inputs: texts });
    const sorted = (p: Record<string, number>) =>
      Object.entries(p)
        .sort((a, b) => b[1] - a[1])
        .map(([label, score]) => ({ label, score }));
    expect(JSON.parse(hf.body)).toEqual(expected.map((p) => sorted(p.probabilities)));
    await app.close();

    const shedding = await appOf(served, 'shed');
    encoders.failWith = new QueueFullError(1, 10, 10);
    try {
      for (const [url, payload] of [
        ['/v2/models/tagger/infer', body],
        ['/hf/text-classification', { inputs: texts }],
      ] as const) {
        const refused = await postJson(shedding.app, url, payload);
        expect([url, refused.statusCode]).toEqual([url, 503]);
        expect(refused.headers['retry-after']).toBeDefined();
        expect(JSON.parse(refused.body)).toEqual({ error: expect.stringMatching(/at capacity/) });
      }
    } finally {
      encoders.failWith = null;
      await shedding.app.close();
    }
  });

  it('answers every text with the fast model and sends only the unsure ones to the encoder, saying which stage answered', async () => {
    const { app } = await appOf(served);
    const texts = [fx.unsure[0]!, ...fx.confident, ...fx.unsure.slice(1)];
    const before = encoders.calls.length;
    const { response, items } = await predict(app, texts);
    expect(response.statusCode, response.body).toBe(200);
    // Only the unsure texts were embedded, in one call.
    expect(encoders.calls.slice(before)).toEqual([texts.filter((text) => fx.unsure.includes(text))]);
    const expected = fx.model.predict(texts, texts.map(fakeEmbedding));
    items!.forEach((item, i) => {
      expect(item.stage).toBe(fx.unsure.includes(texts[i]!) ? 'encoder' : 'fast');
      expect(item.stage).toBe(expected[i]!.stage);
      expect(item.predicted_tag).toBe(expected[i]!.predicted_tag);
      expect(item.predicted_probabilities).toEqual(roundTrip(expected[i]!.probabilities));
    });

    // Confident texts alone never reach the encoder.
    const calls = encoders.calls.length;
    const confident = await predict(app, fx.confident);
    expect(confident.response.statusCode).toBe(200);
    expect(confident.items!.map((item) => item.stage)).toEqual(fx.confident.map(() => 'fast'));
    expect(encoders.calls.length).toBe(calls);
    await app.close();
  });

  it('explains each text with the stage that answered it', async () => {
    const { app } = await appOf(served);
    const texts = [...fx.confident, ...fx.unsure];
    const { response, items } = await predict(app, texts, { explain: true });
    expect(response.statusCode, response.body).toBe(200);
    items!.forEach((item, i) => {
      const text = texts[i]!;
      const expected =
        item.stage === 'encoder'
          ? fx.model.encoderModel.explain(text, EXPLAIN_TOP, fakeEmbedding(text))
          : fx.model.fast.explain(text, EXPLAIN_TOP);
      expect(item.explanation).toEqual(roundTrip(expected));
    });
    // The two stages explain differently (a vote's members against one linear score over the embedding).
    expect(items!.find((item) => item.stage === 'encoder')!.explanation).not.toEqual(
      items!.find((item) => item.stage === 'fast')!.explanation,
    );
    await app.close();
  });

  it('GET /review explains recorded predictions by the stage that answers them, embedding only the unsure texts', async () => {
    const monitoring = new Monitoring(testMonitoringConfig(), { log: captureLog() });
    const { app } = await appOf(served, undefined, monitoring);
    try {
      const texts = [...fx.confident, ...fx.unsure];
      expect((await predict(app, texts)).response.statusCode).toBe(200);
      await monitoring.recorder.settle();
      const before = encoders.calls.length;
      const response = await app.inject({ url: '/review?limit=50&random_share=0' });
      expect(response.statusCode, response.body).toBe(200);
      const items = JSON.parse(response.body).data.items as { text: string; explanation: unknown }[];
      expect(items.map((item) => item.text).sort()).toEqual([...texts].sort());
      expect(encoders.calls.slice(before).flat().sort()).toEqual([...fx.unsure].sort());
      for (const item of items) {
        const expected = fx.unsure.includes(item.text)
          ? fx.model.encoderModel.explain(item.text, EXPLAIN_TOP, fakeEmbedding(item.text))
          : fx.model.fast.explain(item.text, EXPLAIN_TOP);
        expect(item.explanation).toEqual(roundTrip(expected));
      }
    } finally {
      await app.close();
      await monitoring.close();
    }
  });

  it('the records keep the stage that answered, fast_degraded included (GET /monitoring counts them)', async () => {
    const monitoring = new Monitoring(testMonitoringConfig(), { log: captureLog() });
    const { app } = await appOf(served, undefined, monitoring);
    try {
      const texts = [...fx.confident, ...fx.unsure];
      expect((await predict(app, texts)).response.statusCode).toBe(200);
      encoders.failWith = new QueueFullError(1, 4, 4);
      try {
        expect((await predict(app, texts)).response.statusCode).toBe(200);
      } finally {
        encoders.failWith = null;
      }
      await monitoring.recorder.settle();
      const response = await app.inject({ url: '/monitoring' });
      expect(response.statusCode, response.body).toBe(200);
      expect(JSON.parse(response.body).data.monitoring.routing.stages).toEqual({
        fast: 2 * fx.confident.length,
        encoder: fx.unsure.length,
        fast_degraded: fx.unsure.length,
      });
    } finally {
      await app.close();
      await monitoring.close();
    }
  });

  const overloads: [string, () => Error, number][] = [
    ['its queue is full', () => new QueueFullError(fx.unsure.length, 4, 4), 503],
    ['the request is more work than one may ask', () => new RequestTooLargeError(900, 100, 2), 413],
    ['its thread failed', () => new EncoderUnavailableError('the sentence encoder failed; retry'), 503],
    ['it cannot be opened again', () => new EncoderLoadError('encoder x: the server is shutting down'), 503],
  ];

  for (const [why, error, shedStatus] of overloads) {
    it(`when the encoder cannot take the unsure texts (${why}): fast answers marked fast_degraded by default, a ${shedStatus} with shed`, async () => {
      const degrade = await appOf(served);
      const shed = await appOf(served, 'shed');
      encoders.failWith = error();
      try {
        const texts = [...fx.confident, ...fx.unsure];
        const { response, items } = await predict(degrade.app, texts, { explain: true });
        expect(response.statusCode, response.body).toBe(200);
        const fast = fx.model.fast.predict(texts);
        items!.forEach((item, i) => {
          expect(item.stage).toBe(fx.unsure.includes(texts[i]!) ? 'fast_degraded' : 'fast');
          expect(item.predicted_tag).toBe(fast[i]!.predicted_tag);
          expect(item.explanation).toEqual(roundTrip(fx.model.fast.explain(texts[i]!, EXPLAIN_TOP)));
        });
        const refused = await predict(shed.app, texts);
        expect(refused.response.statusCode).toBe(shedStatus);
        if (shedStatus === 503) expect(refused.response.headers['retry-after']).toBeDefined();
        // Confident texts are answered whatever the encoder does, in either mode.
        const confident = await predict(shed.app, fx.confident);
        expect(confident.response.statusCode).toBe(200);
      } finally {
        encoders.failWith = null;
        await degrade.app.close();
        await shed.app.close();
      }
    });
  }

  it('counts texts per stage and degraded requests by why, and times each stage', async () => {
    const { app, metrics } = await appOf(served);
    await predict(app, [...fx.confident, ...fx.unsure]);
    await predict(app, fx.confident);
    encoders.failWith = new QueueFullError(1, 4, 4);
    try {
      await predict(app, [...fx.confident, ...fx.unsure]);
    } finally {
      encoders.failWith = null;
    }
    const text = await metrics.registry.metrics();
    const texts = (stage: string) => metric(text, 'tagger_cascade_texts_total', `{stage="${stage}"}`);
    expect(texts('fast')).toBe(3 * fx.confident.length);
    expect(texts('encoder')).toBe(fx.unsure.length);
    expect(texts('fast_degraded')).toBe(fx.unsure.length);
    expect(metric(text, 'tagger_cascade_degraded_requests_total', '{reason="queue_full"}')).toBe(1);
    expect(metric(text, 'tagger_cascade_stage_seconds_count', '{stage="fast"}')).toBe(3);
    // Only the request whose unsure texts the encoder answered has an encoder time.
    expect(metric(text, 'tagger_cascade_stage_seconds_count', '{stage="encoder"}')).toBe(1);
    expect(metric(text, 'tagger_served_cascade_degraded')).toBe(0);
    expect(metric(text, 'tagger_texts_predicted_total', '{protocol="tagger"}')).toBe(
      3 * fx.confident.length + 2 * fx.unsure.length,
    );
    await app.close();
  });

  it('a cascade whose encoder cannot be opened is refused, or with allowDegraded served by its fast model, saying so in /health/ready', async () => {
    const missing = new FakeEncoders();
    missing.missing = true;
    await expect(loadServedModel(readerOf(fx), { encoders: missing })).rejects.toThrow(EncoderLoadError);
    const degraded = await loadServedModel(readerOf(fx), { encoders: missing, allowDegraded: true });
    expect(degraded.predictor.holdsEncoder).toBe(false);
    expect(degraded.degraded).toMatch(
      /its sentence encoder cannot be used on this server: .*model\.onnx is missing/,
    );

    const { app, metrics } = await appOf(degraded, 'shed');
    const ready = await app.inject({ url: '/health/ready' });
    expect(ready.statusCode).toBe(200);
    const problems = JSON.parse(ready.body).data.problems as string[];
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^the served model is a cascade served by its fast model alone \(--allow-degraded\): its sentence encoder cannot be used on this server: .*model\.onnx is missing; the texts its fast model is unsure of get its answer, marked fast_degraded/,
    );
    // No path of the serving machine.
    expect(ready.body).not.toContain('/srv/tagger');

    // Served without its encoder by choice: unsure texts degrade even with shed.
    const texts = [...fx.confident, ...fx.unsure];
    const { response, items } = await predict(app, texts, { explain: true });
    expect(response.statusCode, response.body).toBe(200);
    items!.forEach((item, i) => {
      expect(item.stage).toBe(fx.unsure.includes(texts[i]!) ? 'fast_degraded' : 'fast');
      expect(item.explanation).toEqual(roundTrip(fx.model.fast.explain(texts[i]!, EXPLAIN_TOP)));
    });
    const text = await metrics.registry.metrics();
    expect(metric(text, 'tagger_cascade_degraded_requests_total', '{reason="encoder_missing"}')).toBe(1);
    expect(metric(text, 'tagger_served_cascade_degraded')).toBe(1);
    await app.close();
  });
});

describe('a multi-label cascade run served', () => {
  it('routes by the least sure tag, answers with the stage that answered, and lists the probabilities asked for', async () => {
    const fx = await fakeMultiLabelCascade();
    expect(fx.model.args.multi_label).toBe(true);
    expect(fx.confident.length).toBeGreaterThan(0);
    expect(fx.unsure.length).toBeGreaterThan(0);
    const encoders = new FakeEncoders();
    const served = await loadServedModel(readerOf(fx), { encoders });
    const { app } = await appOf(served);
    try {
      const texts = [...fx.confident, ...fx.unsure];
      const expected = fx.model.predict(texts, texts.map(fakeEmbedding));
      const { response, items } = await predict(app, texts);
      expect(response.statusCode, response.body).toBe(200);
      expect(encoders.calls).toEqual([fx.unsure]);
      items!.forEach((item, i) => {
        expect(item.stage).toBe(fx.unsure.includes(texts[i]!) ? 'encoder' : 'fast');
        expect(item.predicted_tags).toEqual(expected[i]!.predicted_tags);
        expect(item.predicted_probabilities).toEqual(roundTrip(expected[i]!.probabilities));
      });
      // Two probabilities asked for: routing still sees every tag's (the same texts are routed).
      const limited = await predict(app, texts, { probabilities: 2 });
      expect(limited.response.statusCode, limited.response.body).toBe(200);
      expect(encoders.calls.at(-1)).toEqual(fx.unsure);
      limited.items!.forEach((item, i) => {
        expect(item.stage).toBe(items![i]!.stage);
        expect(item.predicted_tags).toEqual(items![i]!.predicted_tags);
        expect(item.probabilities_listed?.of).toBe(fx.model.tags.length);
      });
    } finally {
      await app.close();
    }
  });
});
