/**
 * The protocols served beside the contract's API (issue 41), through the app: the Open Inference Protocol
 * (KServe V2 REST: health, metadata, infer in JSON and with binary tensor data) and the Hugging Face
 * text-classification shape — the same predictions as POST /predict, errors in the protocols' `{"error"}`
 * shape with their status codes, the `truncate` option, Server-Timing, API keys and scopes, records that
 * say which protocol answered, metrics per protocol. The real clients (tritonclient, huggingface_hub) are
 * in test/e2e/protocol-clients.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { decodeBytesTensor, encodeBytesTensor } from '../../src/http/open-inference.js';
import { MemoryRecordStore, type PredictionRecord, type RecordStore } from '../../src/monitoring/index.js';
import { ServedRuns } from '../../src/served-models/index.js';
import { captureLog, postJson, runsApp } from '../support/http.js';
import { monitoredApp } from '../support/monitoring.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
let app: TaggerApp;

const TEXTS = ['Object detection with YOLO on drone images', 'Question answering with transformers'];

beforeAll(async () => {
  ({ app } = await runsApp(fx.store));
});

afterAll(async () => {
  await app?.close();
});

const inferBody = (texts: readonly string[], extra: Record<string, unknown> = {}) => ({
  inputs: [{ name: 'text', shape: [texts.length], datatype: 'BYTES', data: texts }],
  ...extra,
});

/** What POST /predict answers for the texts (the contract's route, same served run). */
async function contractAnswer(texts: readonly string[]) {
  const response = await postJson(app, '/predict', {
    texts: texts.map((text) => ({ text })),
    probabilities: 'all',
  });
  expect(response.statusCode).toBe(200);
  return JSON.parse(response.body).data.predictions as {
    predicted_tag: string;
    predicted_probabilities: Record<string, number>;
    predicted_tags: string[];
  }[];
}

describe('the Open Inference Protocol', () => {
  it('server metadata, liveness and readiness (empty 200s), model metadata with tags and limits', async () => {
    const server = await app.inject({ url: '/v2' });
    expect(server.statusCode).toBe(200);
    expect(JSON.parse(server.body)).toEqual({
      name: 'tagger',
      version: expect.any(String),
      extensions: ['binary_tensor_data'],
    });
    for (const url of ['/v2/health/live', '/v2/health/ready', '/v2/models/tagger/ready']) {
      const probe = await app.inject({ url });
      expect([url, probe.statusCode, probe.body]).toEqual([url, 200, '']);
    }
    const meta = JSON.parse((await app.inject({ url: '/v2/models/tagger' })).body);
    expect(meta).toMatchObject({
      name: 'tagger',
      versions: [fx.runs.alpha],
      platform: 'tagger',
      inputs: [{ name: 'text', datatype: 'BYTES', shape: [-1] }],
      tags: [...fx.modelA.model.tags],
      parameters: { max_texts: 1000, max_text_characters: 10_000, multi_label: false },
    });
    expect(meta.outputs.map((o: { name: string }) => o.name)).toEqual([
      'predicted_tag',
      'probability',
      'prediction_id',
      'probabilities',
      'predicted_tags',
    ]);
    expect(meta.outputs[3]).toEqual({
      name: 'probabilities',
      datatype: 'FP32',
      shape: [-1, fx.modelA.model.tags.length],
    });
    // A run id names that run; its one version is its id.
    const beta = JSON.parse((await app.inject({ url: `/v2/models/${fx.runs.beta}` })).body);
    expect(beta).toMatchObject({ name: fx.runs.beta, versions: [fx.runs.beta] });
    expect((await app.inject({ url: `/v2/models/tagger/versions/${fx.runs.alpha}/ready` })).statusCode).toBe(
      200,
    );
  });

  it('answers a JSON request as POST /predict does, with the outputs asked for', async () => {
    const expected = await contractAnswer(TEXTS);
    const response = await postJson(app, '/v2/models/tagger/infer', inferBody(TEXTS, { id: 'req-1' }));
    expect(response.statusCode).toBe(200);
    expect(String(response.headers['server-timing'])).toMatch(
      /^parse;dur=[\d.]+, model;dur=[\d.]+, total;dur=/,
    );
    const body = JSON.parse(response.body);
    expect(body).toMatchObject({ model_name: 'tagger', model_version: fx.runs.alpha, id: 'req-1' });
    const [tag, probability, ids] = body.outputs;
    expect(tag).toEqual({
      name: 'predicted_tag',
      datatype: 'BYTES',
      shape: [2],
      data: expected.map((p) => p.predicted_tag),
    });
    expect(probability).toEqual({
      name: 'probability',
      datatype: 'FP32',
      shape: [2],
      data: expected.map((p) => p.predicted_probabilities[p.predicted_tag]),
    });
    expect(ids.data).toEqual([
      expect.stringMatching(/^[0-9a-f-]{36}$/),
      expect.stringMatching(/^[0-9a-f-]{36}$/),
    ]);

    const tags = fx.modelA.model.tags;
    const asked = await postJson(
      app,
      '/v2/models/tagger/infer',
      inferBody(TEXTS, {
        parameters: { top_k: 2 },
        outputs: [{ name: 'probabilities' }, { name: 'predicted_tags' }],
      }),
    );
    const [all, several] = JSON.parse(asked.body).outputs;
    expect(all).toEqual({
      name: 'probabilities',
      datatype: 'FP32',
      shape: [2, tags.length],
      data: expected.flatMap((p) => tags.map((t) => p.predicted_probabilities[t])),
    });
    const top2 = await postJson(app, '/predict', { texts: TEXTS.map((text) => ({ text })), top_k: 2 });
    expect(several).toEqual({
      name: 'predicted_tags',
      datatype: 'BYTES',
      shape: [2, 2],
      data: JSON.parse(top2.body).data.predictions.flatMap(
        (p: { predicted_tags: string[] }) => p.predicted_tags,
      ),
    });
    // [n, 1] and nested data are the same texts.
    const column = await postJson(app, '/v2/models/tagger/infer', {
      inputs: [{ name: 'text', shape: [2, 1], datatype: 'BYTES', data: TEXTS.map((t) => [t]) }],
    });
    expect(JSON.parse(column.body).outputs[0].data).toEqual(expected.map((p) => p.predicted_tag));
  });

  it('takes and gives binary tensor data (what tritonclient sends by default)', async () => {
    const expected = await contractAnswer(TEXTS);
    const data = encodeBytesTensor(TEXTS);
    const header = JSON.stringify({
      inputs: [
        { name: 'text', shape: [2], datatype: 'BYTES', parameters: { binary_data_size: data.length } },
      ],
      parameters: { binary_data_output: true },
      outputs: [
        { name: 'predicted_tag' },
        { name: 'probability' },
        { name: 'probabilities', parameters: { binary_data: false } },
      ],
    });
    const response = await app.inject({
      method: 'POST',
      url: '/v2/models/tagger/infer',
      headers: { 'inference-header-content-length': String(Buffer.byteLength(header)) },
      payload: Buffer.concat([Buffer.from(header), data]),
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    const length = Number(response.headers['inference-header-content-length']);
    const raw = response.rawPayload;
    const head = JSON.parse(raw.subarray(0, length).toString('utf8'));
    const [tagOut, probOut, allOut] = head.outputs;
    expect(allOut.data).toHaveLength(2 * fx.modelA.model.tags.length);
    const tagBytes = raw.subarray(length, length + tagOut.parameters.binary_data_size);
    expect(decodeBytesTensor(tagBytes, 'out')).toEqual(expected.map((p) => p.predicted_tag));
    const probBytes = raw.subarray(length + tagOut.parameters.binary_data_size);
    expect(probBytes.length).toBe(probOut.parameters.binary_data_size);
    const probs = [probBytes.readFloatLE(0), probBytes.readFloatLE(4)];
    expect(probs).toEqual(expected.map((p) => Math.fround(p.predicted_probabilities[p.predicted_tag]!)));
  });

  it('refuses what does not fit in the protocol’s {"error"} shape and status codes', async () => {
    const cases: [string, unknown, number, RegExp][] = [
      ['/v2/models/nope/infer', inferBody(TEXTS), 404, /no model 'nope'/],
      [
        '/v2/models/tagger/infer',
        { inputs: [{ name: 'x', shape: [1], datatype: 'BYTES', data: ['a'] }] },
        400,
        /unknown input 'x'/,
      ],
      [
        '/v2/models/tagger/infer',
        { inputs: [{ name: 'text', shape: [1], datatype: 'FP32', data: [1] }] },
        400,
        /must be BYTES/,
      ],
      [
        '/v2/models/tagger/infer',
        { inputs: [{ name: 'text', shape: [3], datatype: 'BYTES', data: ['a'] }] },
        400,
        /has 1 elements/,
      ],
      ['/v2/models/tagger/infer', { inputs: [] }, 400, /inputs/],
      [
        '/v2/models/tagger/infer',
        inferBody(['a'], { outputs: [{ name: 'logits' }] }),
        400,
        /unknown output 'logits'/,
      ],
      [
        '/v2/models/tagger/infer',
        inferBody(['x'.repeat(10_001)]),
        400,
        /longer than 10000 characters.*truncate/,
      ],
      ['/v2/models/tagger/infer', inferBody(Array(1001).fill('a')), 413, /too many texts: 1001/],
      ['/v2/models/tagger/versions/nope/infer', inferBody(['a']), 404, /no version 'nope'/],
      ['/v2/models/tagger/nothing', {}, 404, /no endpoint/],
    ];
    for (const [url, payload, status, message] of cases) {
      const response = await postJson(app, url, payload);
      expect([url, response.statusCode]).toEqual([url, status]);
      const body = JSON.parse(response.body);
      expect(Object.keys(body)).toEqual(['error']);
      expect(body.error).toMatch(message);
    }
    const badJson = await app.inject({
      method: 'POST',
      url: '/v2/models/tagger/infer',
      payload: '{"inputs": [',
    });
    expect([badJson.statusCode, Object.keys(JSON.parse(badJson.body))]).toEqual([400, ['error']]);
    expect((await app.inject({ url: '/v2/models/nope/ready' })).statusCode).toBe(404);
  });

  it('truncate cuts a text over the limit at the limit, and says how many it cut', async () => {
    const long = `${TEXTS[0]} ${'drone '.repeat(3000)}`;
    const response = await postJson(
      app,
      '/v2/models/tagger/infer',
      inferBody([long, TEXTS[1]!], { parameters: { truncate: true } }),
    );
    expect(response.statusCode).toBe(200);
    const body = JSON.parse(response.body);
    expect(body.parameters).toEqual({ truncated_texts: 1 });
    const cut = await contractAnswer([long.slice(0, 10_000), TEXTS[1]!]);
    expect(body.outputs[0].data).toEqual(cut.map((p) => p.predicted_tag));
  });
});

describe('the Hugging Face text-classification shape', () => {
  it('answers one list of {label, score} per text, most probable first, also for one text', async () => {
    const expected = await contractAnswer(TEXTS);
    const one = await postJson(app, '/hf/text-classification', { inputs: TEXTS[0] });
    expect(one.statusCode).toBe(200);
    expect(String(one.headers['server-timing'])).toMatch(/model;dur=/);
    const sorted = (p: Record<string, number>) =>
      Object.entries(p)
        .sort((a, b) => b[1] - a[1])
        .map(([label, score]) => ({ label, score }));
    expect(JSON.parse(one.body)).toEqual([sorted(expected[0]!.predicted_probabilities)]);
    const two = await postJson(app, '/hf/text-classification', { inputs: TEXTS, parameters: { top_k: 2 } });
    expect(JSON.parse(two.body)).toEqual(expected.map((p) => sorted(p.predicted_probabilities).slice(0, 2)));
    const softmax = await postJson(app, '/hf/text-classification', {
      inputs: TEXTS[0],
      parameters: { function_to_apply: 'softmax', top_k: 1 },
    });
    expect(JSON.parse(softmax.body)).toEqual([sorted(expected[0]!.predicted_probabilities).slice(0, 1)]);
  });

  it('refuses raw scores and a sigmoid of a single-label model, too many and too long texts, in {"error"}', async () => {
    const cases: [unknown, number, RegExp][] = [
      [{ inputs: 'a', parameters: { function_to_apply: 'none' } }, 400, /raw scores/],
      [{ inputs: 'a', parameters: { function_to_apply: 'sigmoid' } }, 400, /single-label/],
      [{ inputs: 'a', parameters: { function_to_apply: 'tanh' } }, 400, /function_to_apply/],
      [{ inputs: Array(1001).fill('a') }, 413, /too many texts/],
      [{ inputs: 'x'.repeat(10_001) }, 400, /longer than 10000/],
      [{ inputs: '' }, 400, /at least 1 character/],
      [{ text: 'a' }, 400, /inputs/],
    ];
    for (const [payload, status, message] of cases) {
      const response = await postJson(app, '/hf/text-classification', payload);
      expect([JSON.stringify(payload).slice(0, 60), response.statusCode]).toEqual([
        JSON.stringify(payload).slice(0, 60),
        status,
      ]);
      expect(JSON.parse(response.body).error).toMatch(message);
    }
    const cut = await postJson(app, '/hf/text-classification', {
      inputs: 'x'.repeat(10_001),
      truncate: true,
    });
    expect(cut.statusCode).toBe(200);
  });
});

describe('shared by every protocol', () => {
  it('POST /predict takes truncate too: a 422 without it, the text cut and marked with it', async () => {
    const long = `${TEXTS[0]} ${'drone '.repeat(3000)}`;
    const refused = await postJson(app, '/predict', { texts: [{ text: long }] });
    expect(refused.statusCode).toBe(422);
    const cut = await postJson(app, '/predict', {
      texts: [{ text: long }, { text: TEXTS[1] }],
      truncate: true,
    });
    expect(cut.statusCode).toBe(200);
    const [first, second] = JSON.parse(cut.body).data.predictions;
    expect(first.truncated).toBe(true);
    expect(first.input_text).toBe(long.slice(0, 10_000));
    expect(second.truncated).toBeUndefined();
    const plain = await postJson(app, '/predict', { texts: [{ text: long.slice(0, 10_000) }] });
    expect(first.predicted_probabilities).toEqual(
      JSON.parse(plain.body).data.predictions[0].predicted_probabilities,
    );
  });

  it('API keys and scopes: predict needs `predict`, metadata `read`, the server probes none', async () => {
    const servedRuns = await ServedRuns.load(fx.store, {
      experiment: 'best',
      modelCacheSize: 2,
      log: captureLog(),
    });
    const keyed = createApp({
      serving: { mode: 'runs', servedRuns },
      http: { apiKeys: ['reader:read', 'caller:predict'] },
    });
    try {
      const as = (key: string | undefined, method: 'GET' | 'POST', url: string, payload?: unknown) =>
        keyed.inject({
          method,
          url,
          ...(key ? { headers: { 'x-api-key': key } } : {}),
          ...(payload ? { payload } : {}),
        });
      expect((await as(undefined, 'GET', '/v2/health/ready')).statusCode).toBe(200);
      const anonymous = await as(undefined, 'POST', '/v2/models/tagger/infer', inferBody(['a']));
      expect([anonymous.statusCode, Object.keys(JSON.parse(anonymous.body))]).toEqual([401, ['error']]);
      expect((await as('reader', 'POST', '/v2/models/tagger/infer', inferBody(['a']))).statusCode).toBe(403);
      expect((await as('reader', 'POST', '/hf/text-classification', { inputs: 'a' })).statusCode).toBe(403);
      expect((await as('reader', 'GET', '/v2/models/tagger')).statusCode).toBe(200);
      expect((await as('caller', 'POST', '/v2/models/tagger/infer', inferBody(['a']))).statusCode).toBe(200);
      expect((await as('caller', 'POST', '/hf/text-classification', { inputs: 'a' })).statusCode).toBe(200);
    } finally {
      await keyed.close();
    }
  });

  it('rate limiting and load shedding refuse the protocols’ requests in their shape, with Retry-After', async () => {
    const servedRuns = await ServedRuns.load(fx.store, {
      experiment: 'best',
      modelCacheSize: 2,
      log: captureLog(),
    });
    const limited = createApp({
      serving: { mode: 'runs', servedRuns },
      http: { rateLimit: { max: 2, windowMs: 60_000 } },
    });
    try {
      const first = await postJson(limited, '/v2/models/tagger/infer', inferBody(['a']));
      expect(first.statusCode).toBe(200);
      await postJson(limited, '/hf/text-classification', { inputs: 'a' });
      for (const [url, body] of [
        ['/v2/models/tagger/infer', inferBody(['a'])],
        ['/hf/text-classification', { inputs: 'a' }],
      ] as const) {
        const refused = await postJson(limited, url, body);
        expect([url, refused.statusCode]).toEqual([url, 429]);
        expect(refused.headers['retry-after']).toBeDefined();
        expect(JSON.parse(refused.body)).toEqual({ error: expect.stringMatching(/rate limit exceeded/) });
      }
      // The server's probes are never limited.
      expect((await limited.inject({ url: '/v2/health/live' })).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('records say which protocol answered; the metrics count texts per protocol', async () => {
    const records = new MemoryRecordStore();
    const appended: PredictionRecord[] = [];
    const capturing: RecordStore = Object.assign(Object.create(records) as RecordStore, {
      append: async (batch: readonly PredictionRecord[]) => {
        appended.push(...batch);
        return records.append(batch);
      },
    });
    const monitored = await monitoredApp(fx.store, {
      config: { flushMs: 10 },
      openStore: async () => capturing,
    });
    try {
      await postJson(monitored.app, '/predict', { texts: [{ text: TEXTS[0] }] });
      const oip = await postJson(monitored.app, '/v2/models/tagger/infer', inferBody(TEXTS));
      const hf = await postJson(monitored.app, '/hf/text-classification', { inputs: TEXTS });
      // Recorded: Server-Timing has the record stage too.
      for (const response of [oip, hf]) {
        expect(String(response.headers['server-timing'])).toMatch(
          /model;dur=[\d.]+, record;dur=[\d.]+, total/,
        );
      }
      for (let waited = 0; appended.length < 5 && waited < 10_000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(appended.map((r) => r.protocol).sort()).toEqual(['hf', 'hf', 'oip', 'oip', 'tagger']);
      const text = await monitored.metrics.registry.metrics();
      expect(text).toMatch(/^tagger_texts_predicted_total\{protocol="tagger"\} 1$/m);
      expect(text).toMatch(/^tagger_texts_predicted_total\{protocol="oip"\} 2$/m);
      expect(text).toMatch(/^tagger_texts_predicted_total\{protocol="hf"\} 2$/m);
    } finally {
      await monitored.close();
    }
  });
});
