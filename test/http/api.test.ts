/**
 * The API contract in run-based mode, through the real HTTP layer (app.inject) over a temp file store
 * whose runs have known f1 values (see test/support/fixtures.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { MODEL_FILES } from '../../src/model/index.js';
import { TrackingError } from '../../src/tracking/index.js';
import { SPEC_ARG_KEYS } from '../support/components.js';
import { type InstrumentedStore, instrumentStore, type ServingFixture } from '../support/fixtures.js';
import { type CapturedLog, captureLog, expectEnvelope, postJson, runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
let store: InstrumentedStore;
let app: TaggerApp;
let log: CapturedLog;
/** Runs whose reads fail as if the tracking server were down (set per test). */
const unavailable = new Set<string>();

const TEXTS = [
  'Fine-tuning BERT for sentiment analysis of product reviews',
  'Object detection with YOLO on drone images',
  'Deploying models with Docker, Kubernetes and CI/CD pipelines',
];

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

beforeAll(async () => {
  store = instrumentStore(fx.store, {
    beforeRead: (runId) => {
      if (unavailable.has(runId)) throw new TrackingError('UNAVAILABLE', 'tracking: server did not answer');
    },
  });
  log = captureLog();
  ({ app } = await runsApp(store, { log }));
});

afterAll(async () => {
  await app?.close();
});

const get = (url: string) => app.inject({ method: 'GET', url, headers: { accept: 'application/json' } });

describe('startup', () => {
  it('serves the best run with loadable artifacts and logs the broken one it skipped', () => {
    const warnings = log.lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.obj).toMatchObject({ runId: fx.runs.broken });
    expect(log.lines.find((l) => l.level === 'info')!.obj).toMatchObject({ runId: fx.runs.alpha });
  });
});

describe('GET /health/ready and /metrics: what is wrong while serving goes on', () => {
  it('readiness stays 200 and names the better-ranked run that cannot be loaded, without store paths', async () => {
    const response = await get('/health/ready');
    expect(response.statusCode).toBe(200);
    const data = JSON.parse(response.body).data as { status: string; run_id: string; problems: string[] };
    expect(data).toMatchObject({ status: 'ready', run_id: fx.runs.alpha });
    expect(data.problems).toEqual([
      expect.stringMatching(
        new RegExp(
          `^run ${fx.runs.broken} ranks above the served run but is not served: .*model/.*cannot be loaded`,
        ),
      ),
    ]);
    expect(data.problems.join('\n')).not.toMatch(/file:|\/tmp\/|mlruns/);
  });

  it('/runs marks the served run and says why a better-ranked run is not served', async () => {
    const runs = JSON.parse((await get('/runs')).body).data.runs as {
      run_id: string;
      served: boolean;
      not_served_because?: string;
    }[];
    expect(runs.filter((run) => run.served).map((run) => run.run_id)).toEqual([fx.runs.alpha]);
    const broken = runs.find((run) => run.run_id === fx.runs.broken)!;
    expect(broken.served).toBe(false);
    expect(broken.not_served_because).toMatch(/^model\//);
    expect(runs.filter((run) => run.not_served_because !== undefined)).toHaveLength(1);
  });

  it('/metrics counts held-back runs by kind and says the store was readable', async () => {
    const text = (await get('/metrics')).body;
    expect(text).toMatch(/^tagger_runs_held_back\{kind="unloadable"\} 1$/m);
    expect(text).toMatch(/^tagger_runs_held_back\{kind="gates"\} 0$/m);
    expect(text).toMatch(/^tagger_tracking_store_readable 1$/m);
  });
});

describe('GET /', () => {
  it('is a health check: the envelope with an empty data object', async () => {
    const response = await get('/?probe=1&x=%20y');
    expect(response.statusCode).toBe(200);
    const body = expectEnvelope(response, { method: 'GET', url: '/?probe=1&x=%20y' });
    expect(body).toMatchObject({ message: 'OK', 'status-code': 200, data: {} });
    expect(Object.keys(body).sort()).toEqual([
      'data',
      'message',
      'method',
      'status-code',
      'timestamp',
      'url',
    ]);
  });
});

describe('GET /runs', () => {
  const order = () => [
    fx.runs.broken,
    fx.runs.alpha,
    fx.runs.beta,
    fx.runs.noperf,
    fx.runs.nan,
    fx.runs.nof1,
  ];

  it('lists every run, best f1 first, NaN then missing f1 last, with the documented fields', async () => {
    const response = await get('/runs');
    expect(response.statusCode).toBe(200);
    const body = expectEnvelope(response, { method: 'GET', url: '/runs' });
    const runs = (body.data as { runs: Record<string, unknown>[] }).runs;
    expect(runs.map((r) => r.run_id)).toEqual(order());
    expect(runs.map((r) => r.run_name)).toEqual(['broken', 'alpha', 'beta', 'noperf', 'nan', 'nof1']);
    const alpha = runs[1]!;
    expect(alpha).toMatchObject({
      status: 'FINISHED',
      start_time: '2026-01-01T00:04:00.000Z',
      end_time: '2026-01-01T00:04:01.000Z',
    });
    expect((alpha.metrics as Record<string, unknown>).f1).toBe(0.9);
    expect((alpha.params as Record<string, unknown>).analyzer).toBe('"char_wb"');
    // JSON has no NaN: a NaN metric is the string "NaN"; a run without f1 has no f1 key.
    expect((runs[4]!.metrics as Record<string, unknown>).f1).toBe('NaN');
    expect(runs[5]!.metrics).not.toHaveProperty('f1');
  });

  it.each([
    ['0', 0],
    ['2', 2],
    ['6', 6],
    ['1000', 6],
    ['007', 6],
  ])('top=%s returns the first runs only', async (top, count) => {
    const response = await get(`/runs?top=${top}`);
    expect(response.statusCode).toBe(200);
    const runs = (JSON.parse(response.body).data as { runs: { run_id: string }[] }).runs;
    expect(runs.map((r) => r.run_id)).toEqual(order().slice(0, count));
  });

  it.each([
    ['abc', 'value is not a valid integer', 'type_error.integer'],
    ['1.5', 'value is not a valid integer', 'type_error.integer'],
    ['1e2', 'value is not a valid integer', 'type_error.integer'],
    ['', 'value is not a valid integer', 'type_error.integer'],
    ['-1', 'ensure this value is greater than or equal to 0', 'value_error.number.not_ge'],
  ])('top=%j is a 422 at ["query","top"]', async (top, msg, type) => {
    const response = await get(`/runs?top=${encodeURIComponent(top)}`);
    expect(response.statusCode).toBe(422);
    const body = JSON.parse(response.body);
    expect(body.detail).toHaveLength(1);
    expect(body.detail[0]).toMatchObject({ loc: ['query', 'top'], msg, type });
  });
});

describe('GET /runs/{run_id}', () => {
  it("returns the run's performance report", async () => {
    for (const [name, model] of [
      ['alpha', fx.modelA],
      ['beta', fx.modelB],
      ['broken', fx.modelA],
    ] as const) {
      const url = `/runs/${fx.runs[name]}`;
      const response = await get(url);
      expect(response.statusCode).toBe(200);
      const body = expectEnvelope(response, { method: 'GET', url });
      expect(body.data).toEqual({
        run_id: fx.runs[name],
        performance: roundTrip(model.performance),
        warnings: expect.any(Array),
      });
    }
  });

  it('reads a run’s performance.json once, however often it is asked for', async () => {
    const readsOf = (path: string) => store.reads.filter((r) => r.endsWith(`${fx.runs.nan}/${path}`)).length;
    const before = [readsOf('performance.json'), readsOf('model_choice.json')];
    await Promise.all([1, 2, 3].map(() => get(`/runs/${fx.runs.nan}`)));
    await get(`/runs/${fx.runs.nan}`);
    // The run's model choice, which it lacks, is looked for once too (an absent file is remembered).
    expect([readsOf('performance.json') - before[0]!, readsOf('model_choice.json') - before[1]!]).toEqual([
      1, 1,
    ]);
  });

  it('answers 409 naming the run when its performance.json is broken', async () => {
    const url = `/runs/${fx.runs.noperf}`;
    const response = await get(url);
    expect(response.statusCode).toBe(409);
    const body = expectEnvelope(response, { method: 'GET', url });
    expect(body).toMatchObject({ message: 'Conflict' });
    expect(body.detail).toContain(fx.runs.noperf);
    expect(body.detail).toContain('performance.json');
    // The store's location stays on the server (the log has it).
    expect(body.detail).not.toMatch(/file:|\/tmp\/|mlruns|artifacts\//);
  });

  it.each([
    ['unknown', 'nope'],
    ['traversal', '..%2F..%2Fmeta.yaml'],
    ['backslash traversal', '..%5C..%5Cmeta.yaml'],
    ['absolute path', '%2Fetc%2Fpasswd'],
    ['double-encoded', '%252E%252E%252Fetc'],
    ['proto', '__proto__'],
    ['constructor', 'constructor'],
    ['other experiment', 'allbroken'],
  ])('a run id that is not in the experiment (%s) is a 404 naming it, with nothing read', async (_, id) => {
    const readsBefore = store.reads.length;
    const response = await get(`/runs/${id}`);
    expect(response.statusCode).toBe(404);
    const body = JSON.parse(response.body);
    expect(body['status-code']).toBe(404);
    expect(body.detail).toContain(JSON.stringify(decodeURIComponent(id)));
    expect(store.reads.length).toBe(readsBefore);
  });

  it('a run of another experiment is not served either', async () => {
    const response = await get(`/runs/${fx.allBroken[0]}`);
    expect(response.statusCode).toBe(404);
  });

  it('answers 503 with Retry-After when the store cannot be reached', async () => {
    unavailable.add(fx.runs.nof1);
    try {
      const response = await get(`/runs/${fx.runs.nof1}`);
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBe('5');
      expect(JSON.parse(response.body).detail).toContain(fx.runs.nof1);
    } finally {
      unavailable.delete(fx.runs.nof1);
    }
    // The failure was not remembered: the next request reads again and succeeds.
    expect((await get(`/runs/${fx.runs.nof1}`)).statusCode).toBe(200);
  });
});

const expectedPredictions = (model: ServingFixture['modelA'], texts: string[]) =>
  model.model.predict(texts).map((p, i) => ({
    // Every prediction's own id, for POST /feedback (test/http/feedback.test.ts checks them).
    prediction_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    input_text: texts[i],
    predicted_tag: p.predicted_tag,
    predicted_tags: p.predicted_tags,
    predicted_probabilities: p.probabilities,
    // A text the model knows nothing of (the small word-analyzer model knows few words).
    ...(p.no_known_features ? { no_known_features: true } : {}),
  }));

describe('POST /predict', () => {
  it('predicts with the best loadable run, one prediction per text in order, with run_id', async () => {
    const response = await postJson(app, '/predict', { texts: TEXTS.map((text) => ({ text })) });
    expect(response.statusCode).toBe(200);
    const body = expectEnvelope(response, { method: 'POST', url: '/predict' });
    expect(body.data).toEqual({ run_id: fx.runs.alpha, predictions: expectedPredictions(fx.modelA, TEXTS) });
    const predictions = (body.data as { predictions: { predicted_probabilities: Record<string, number> }[] })
      .predictions;
    for (const p of predictions) {
      expect(Object.keys(p.predicted_probabilities).sort()).toEqual([...fx.modelA.model.tags].sort());
      expect(Object.values(p.predicted_probabilities).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
    }
  });

  it('marks the answer to a text with no feature the model knows: no_known_features, and only there', async () => {
    const texts = ['   ', 'これは日本語のテキストです', 'Object detection with YOLO'];
    const response = await postJson(app, '/predict', { texts: texts.map((text) => ({ text })) });
    expect(response.statusCode).toBe(200);
    const items = (JSON.parse(response.body).data as { predictions: Record<string, unknown>[] }).predictions;
    expect(items.map((item) => item.no_known_features)).toEqual([true, true, undefined]);
    // The model's prior: the same answer for both.
    expect(items[0]!.predicted_probabilities).toEqual(items[1]!.predicted_probabilities);
  });

  it('keeps duplicates and order for many texts', async () => {
    const texts = Array.from({ length: 50 }, (_, i) => TEXTS[i % 3]! + (i % 2 ? ' again' : ''));
    const response = await postJson(app, '/predict', { texts: texts.map((text) => ({ text })) });
    const data = JSON.parse(response.body).data as { predictions: { input_text: string }[] };
    expect(data.predictions.map((p) => p.input_text)).toEqual(texts);
  });

  it('ignores extra fields, as pydantic does by default', async () => {
    const response = await postJson(app, '/predict', { texts: [{ text: 'a', id: 3 }], other: true });
    expect(response.statusCode).toBe(200);
  });

  it('refuses a body that is not JSON with a 415 envelope', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/predict',
      headers: { 'content-type': 'text/plain' },
      payload: 'texts=hello',
    });
    expect(response.statusCode).toBe(415);
    const body = expectEnvelope(response, { method: 'POST', url: '/predict' });
    expect(body.detail).toContain('application/json');
  });

  it('explains each prediction with "explain": true, exactly, and only when asked', async () => {
    const payload = { texts: TEXTS.map((text) => ({ text })), explain: true };
    const response = await postJson(app, '/predict', payload);
    expect(response.statusCode).toBe(200);
    type Split = {
      score: number;
      bias: number;
      rest: number;
      features: number;
      contributions: { feature: string; analyzer: string; value: number; contribution: number }[];
    };
    type Member = Split & { classifier: string; weight: number; link: string; probability: number };
    type Explained = {
      predicted_tag: string;
      predicted_probabilities: Record<string, number>;
      explanation: Split & { tag: string; vote?: { rule: string; probability: number; members: Member[] } };
    };
    const exact = (split: Split) => {
      expect(split.contributions.length).toBe(Math.min(10, split.features));
      const sum = split.contributions.reduce((total, c) => total + c.contribution, 0);
      expect(split.bias + sum + split.rest).toBeCloseTo(split.score, 9);
    };
    // The served run (alpha) is the default soft vote: each member's score split exactly, and the rule that
    // makes the vote's probability of the tag from theirs; nothing splits the vote itself.
    const { predictions } = JSON.parse(response.body).data as { predictions: Explained[] };
    const plain = expectedPredictions(fx.modelA, TEXTS);
    for (const [i, prediction] of predictions.entries()) {
      expect(prediction).toMatchObject(plain[i]!);
      const { explanation } = prediction;
      expect(explanation.tag).toBe(prediction.predicted_tag);
      expect(Object.keys(explanation).sort()).toEqual(['features', 'tag', 'vote']);
      const { vote } = explanation;
      expect(vote!.rule).toBe('weighted_mean');
      expect(vote!.probability).toBeCloseTo(prediction.predicted_probabilities[explanation.tag]!, 12);
      expect(vote!.members.map((m) => m.classifier)).toEqual(['linear_svm', 'nb_lr', 'multinomial_nb']);
      const weights = vote!.members.reduce((total, m) => total + m.weight, 0);
      const mean = vote!.members.reduce((total, m) => total + m.weight * m.probability, 0) / weights;
      expect(mean).toBeCloseTo(vote!.probability, 12);
      for (const member of vote!.members) exact(member);
      expect(explanation).toEqual(roundTrip(fx.modelA.model.explain(TEXTS[i]!, 10)));
    }
    for (const explain of [false, undefined]) {
      const again = await postJson(app, '/predict', { texts: [{ text: TEXTS[0] }], explain });
      expect(JSON.parse(again.body).data.predictions[0]).not.toHaveProperty('explanation');
    }
    // Beta is an SGD model: its tag's score split exactly, as before the vote existed.
    const run = await postJson(app, `/runs/${fx.runs.beta}/predict`, payload);
    const byRun = JSON.parse(run.body).data as { predictions: Explained[] };
    for (const [i, prediction] of byRun.predictions.entries()) {
      expect(Object.keys(prediction.explanation)).toEqual([
        'tag',
        'score',
        'bias',
        'contributions',
        'rest',
        'features',
      ]);
      exact(prediction.explanation);
      expect(prediction.explanation).toEqual(roundTrip(fx.modelB.model.explain(TEXTS[i]!, 10)));
    }
    const invalid = await postJson(app, '/predict', { texts: [{ text: 'x' }], explain: 'yes' });
    expect(invalid.statusCode).toBe(422);
    expect(JSON.parse(invalid.body).detail[0]).toMatchObject({ loc: ['body', 'explain'] });
  });

  it('accepts application/json with a charset', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/predict',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify({ texts: [{ text: 'hello' }] }),
    });
    expect(response.statusCode).toBe(200);
  });
});

describe('POST /runs/{run_id}/predict', () => {
  it("predicts with that run's model, loaded on first use", async () => {
    const url = `/runs/${fx.runs.beta}/predict`;
    const response = await postJson(app, url, { texts: TEXTS.map((text) => ({ text })) });
    expect(response.statusCode).toBe(200);
    const body = expectEnvelope(response, { method: 'POST', url });
    expect(body.data).toEqual({ run_id: fx.runs.beta, predictions: expectedPredictions(fx.modelB, TEXTS) });
  });

  it('serves the best run through this route too', async () => {
    const response = await postJson(app, `/runs/${fx.runs.alpha}/predict`, { texts: [{ text: TEXTS[0] }] });
    expect(JSON.parse(response.body).data).toEqual({
      run_id: fx.runs.alpha,
      predictions: expectedPredictions(fx.modelA, [TEXTS[0]!]),
    });
  });

  it('answers 409 naming a run whose model cannot be loaded', async () => {
    const url = `/runs/${fx.runs.broken}/predict`;
    const response = await postJson(app, url, { texts: [{ text: 'x' }] });
    expect(response.statusCode).toBe(409);
    const body = expectEnvelope(response, { method: 'POST', url });
    expect(body.detail).toContain(fx.runs.broken);
    expect(body.detail).toContain('model/');
    expect(body.detail).not.toMatch(/file:|\/tmp\/|mlruns|artifacts\//);
  });

  it('answers 404 for an unknown run and reads nothing', async () => {
    const before = store.reads.length;
    const response = await postJson(app, '/runs/..%2F..%2Fartifacts/predict', { texts: [{ text: 'x' }] });
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body).detail).toContain('"../../artifacts"');
    expect(store.reads.length).toBe(before);
  });

  it('loads each model file exactly once for concurrent first requests (single flight)', async () => {
    const before = store.readsOf(fx.runs.nan);
    const responses = await Promise.all(
      Array.from({ length: 6 }, () =>
        postJson(app, `/runs/${fx.runs.nan}/predict`, { texts: [{ text: 'x' }] }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(6).fill(200));
    // args.json + model files; performance.json of `nan` may already have been read by another test.
    const modelReads = store.reads.filter((r) => r.startsWith(`${fx.runs.nan}/`)).slice(before);
    expect(modelReads.filter((r) => r.endsWith('/args.json'))).toHaveLength(1);
    for (const file of MODEL_FILES)
      expect(modelReads.filter((r) => r.endsWith(`/model/${file}`))).toHaveLength(1);
  });
});

describe('GET /performance', () => {
  it('returns the whole report of the best run without filter', async () => {
    const response = await get('/performance');
    expect(response.statusCode).toBe(200);
    expect(expectEnvelope(response, { method: 'GET', url: '/performance' }).data).toEqual({
      performance: roundTrip(fx.modelA.performance),
    });
  });

  it.each(['overall', 'class', 'slices', 'averages'] as const)(
    'filter=%s selects that part',
    async (filter) => {
      const response = await get(`/performance?filter=${filter}`);
      expect(response.statusCode).toBe(200);
      expect(JSON.parse(response.body).data).toEqual({
        performance: roundTrip(fx.modelA.performance[filter]),
      });
    },
  );

  it('filter=overall holds precision, recall, f1 and num_samples', async () => {
    const performance = JSON.parse((await get('/performance?filter=overall')).body).data.performance;
    expect(Object.keys(performance).sort()).toEqual(['f1', 'num_samples', 'precision', 'recall']);
  });

  it.each(['x', 'OVERALL', ''])('filter=%j is a 422 listing the allowed values', async (filter) => {
    const response = await get(`/performance?filter=${filter}`);
    expect(response.statusCode).toBe(422);
    const [issue, ...rest] = JSON.parse(response.body).detail;
    expect(rest).toEqual([]);
    expect(issue).toMatchObject({ loc: ['query', 'filter'], type: 'value_error.const' });
    expect(issue.msg).toBe("unexpected value; permitted: 'overall', 'class', 'slices', 'averages'");
  });
});

describe('GET /args and /args/{param}', () => {
  it('returns every training argument of the best run', async () => {
    const response = await get('/args');
    expect(response.statusCode).toBe(200);
    const data = expectEnvelope(response, { method: 'GET', url: '/args' }).data as {
      args: Record<string, unknown>;
    };
    expect(data.args).toEqual(roundTrip(fx.modelA.args));
    for (const key of SPEC_ARG_KEYS) expect(data.args).toHaveProperty(key);
  });

  it.each(['alpha', 'subset', 'analyzer', 'shuffle'])(
    '/args/%s is an object with that one key',
    async (param) => {
      const response = await get(`/args/${param}`);
      expect(response.statusCode).toBe(200);
      const data = expectEnvelope(response, { method: 'GET', url: `/args/${param}` }).data;
      expect(data).toEqual({ [param]: (fx.modelA.args as unknown as Record<string, unknown>)[param] });
    },
  );

  it.each(['nope', 'constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'ALPHA'])(
    '/args/%s is a 404 listing the known names',
    async (param) => {
      const response = await get(`/args/${param}`);
      expect(response.statusCode).toBe(404);
      const body = expectEnvelope(response, { method: 'GET', url: `/args/${param}` });
      expect(body.detail).toContain(JSON.stringify(param));
      expect(body.detail).toContain('alpha, learning_rate, power_t');
    },
  );
});

describe('unknown routes and methods', () => {
  it('answers an unknown path with a 404 envelope', async () => {
    const response = await get('/nothing/here?x=1');
    expect(response.statusCode).toBe(404);
    expect(expectEnvelope(response, { method: 'GET', url: '/nothing/here?x=1' }).message).toBe('Not Found');
  });

  it('answers a known path with another method with a 405 envelope and Allow', async () => {
    for (const [method, url, allow] of [
      ['DELETE', '/predict', 'POST'],
      ['POST', '/runs', 'GET, HEAD'],
      ['PUT', '/args/alpha', 'GET, HEAD'],
    ] as const) {
      const response = await app.inject({ method, url });
      expect(response.statusCode).toBe(405);
      expect(response.headers.allow).toBe(allow);
      expect(expectEnvelope(response, { method, url }).message).toBe('Method Not Allowed');
    }
  });
});
