/** Single-model mode (`--model <dir>`): one saved model, no tracking store, no /runs endpoints. */
import { cp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { MODEL_FILES } from '../../src/model/index.js';
import { loadModelDirectory, loadServedModel, StartupError } from '../../src/served-models/index.js';
import { expectEnvelope, postJson } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';
import { useTempDir } from '../support/temp-dir.js';

const fx = useServingFixture();
let app: TaggerApp;
const scratch = useTempDir('tagger-single-');

beforeAll(async () => {
  const model = await loadModelDirectory(fx.modelDir);
  app = createApp({ serving: { mode: 'model', model, source: fx.modelDir } });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
});

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('single-model mode', () => {
  it('POST /predict answers with predictions only (no run_id)', async () => {
    const texts = ['Object detection with YOLO', 'Question answering with transformers'];
    const response = await postJson(app, '/predict', { texts: texts.map((text) => ({ text })) });
    expect(response.statusCode).toBe(200);
    const body = expectEnvelope(response, { method: 'POST', url: '/predict' });
    expect(body.data).toEqual({
      predictions: fx.modelA.model.predict(texts).map((p, i) => ({
        prediction_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        input_text: texts[i],
        predicted_tag: p.predicted_tag,
        predicted_tags: p.predicted_tags,
        predicted_probabilities: p.probabilities,
      })),
    });
  });

  it('serves /performance, /args and /args/{param} of the model', async () => {
    const performance = await app.inject({ url: '/performance?filter=class' });
    expect(JSON.parse(performance.body).data).toEqual({
      performance: roundTrip(fx.modelA.performance.class),
    });
    const args = await app.inject({ url: '/args' });
    expect(JSON.parse(args.body).data).toEqual({
      args: roundTrip(fx.modelA.args),
      // Model A is a soft vote (the default): fastText's and SGD's arguments are another kind's.
      unused_args: expect.arrayContaining(['ft_dim', 'learning_rate']),
    });
    expect(JSON.parse(args.body).data.unused_args).not.toContain('analyzer');
    const one = await app.inject({ url: '/args/ngram_max_range' });
    expect(JSON.parse(one.body).data).toEqual({ ngram_max_range: 4 });
  });

  it('serves a report whose slices all held no test row (left out by training) as an empty map', async () => {
    const dir = join(scratch.path, 'no-slices');
    await cp(fx.modelDir, dir, { recursive: true });
    const performance = { ...fx.modelA.performance, slices: {} };
    await writeFile(join(dir, 'performance.json'), JSON.stringify(performance));
    const empty = createApp({
      serving: { mode: 'model', model: await loadModelDirectory(dir), source: dir },
    });
    try {
      const slices = await empty.inject({ url: '/performance?filter=slices' });
      expect(slices.statusCode).toBe(200);
      expect(expectEnvelope(slices, { method: 'GET', url: '/performance?filter=slices' }).data).toEqual({
        performance: {},
      });
      const whole = await empty.inject({ url: '/performance' });
      expect(JSON.parse(whole.body).data).toEqual({ performance: roundTrip(performance) });
    } finally {
      await empty.close();
    }
  });

  it('answers 404 for filter=averages on a report written before the averages, and the report without them', async () => {
    const dir = join(scratch.path, 'no-averages');
    await cp(fx.modelDir, dir, { recursive: true });
    const { averages: _, ...older } = fx.modelA.performance;
    await writeFile(join(dir, 'performance.json'), JSON.stringify(older));
    const app = createApp({ serving: { mode: 'model', model: await loadModelDirectory(dir), source: dir } });
    try {
      const averages = await app.inject({ url: '/performance?filter=averages' });
      expect(averages.statusCode).toBe(404);
      expect(JSON.parse(averages.body).detail).toMatch(/has no averages: it was trained before/);
      const whole = await app.inject({ url: '/performance' });
      expect(JSON.parse(whole.body).data).toEqual({ performance: roundTrip(older) });
    } finally {
      await app.close();
    }
  });

  it.each([
    ['GET', '/runs'],
    ['GET', `/runs/x`],
    ['POST', '/runs/x/predict'],
  ] as const)('%s %s does not exist here: a 404 envelope', async (method, url) => {
    const response = await app.inject({
      method,
      url,
      ...(method === 'POST' ? { payload: { texts: [{ text: 'a' }] } } : {}),
    });
    expect(response.statusCode).toBe(404);
    expect(expectEnvelope(response, { method, url }).detail).toContain(url);
  });

  it('documents only the endpoints it serves', async () => {
    const document = JSON.parse((await app.inject({ url: '/openapi.json' })).body);
    expect(Object.keys(document.paths).sort()).toEqual([
      '/',
      '/args',
      '/args/{param}',
      '/feedback',
      '/health/live',
      '/health/ready',
      '/hf/text-classification',
      '/metrics',
      '/monitoring',
      '/performance',
      '/predict',
      '/review',
      '/v2',
      '/v2/health/live',
      '/v2/health/ready',
      '/v2/models/{name}',
      '/v2/models/{name}/infer',
      '/v2/models/{name}/ready',
    ]);
  });
});

describe('loadModelDirectory failures are startup errors that say what to do', () => {
  const copy = async (name: string): Promise<string> => {
    const dir = join(scratch.path, name);
    await cp(fx.modelDir, dir, { recursive: true });
    return dir;
  };

  it('a directory that does not exist', async () => {
    const error = await loadModelDirectory(join(scratch.path, 'missing')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(
      /does not exist or is not a directory; point --model at a folder holding args\.json/,
    );
  });

  it('a missing model file', async () => {
    const dir = await copy('no-model');
    await rm(join(dir, 'model', MODEL_FILES[0]!));
    const error = await loadModelDirectory(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain(`${MODEL_FILES[0]} is missing`);
  });

  it('a weights.bin of another size than its manifest states, refused before it is read (issue 42)', async () => {
    const dir = await copy('sparse-weights');
    const weights = join(dir, 'model', 'weights.bin');
    const stated = (await readFile(weights)).length;
    // A sparse 1 GiB file: before, read whole first (2.2 GB of RSS and 8.3 s on the probe's machine).
    await truncate(weights, 1024 ** 3);
    const error = await loadModelDirectory(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain(
      `model/: weights.bin is ${1024 ** 3} bytes, but tagger-model.json says ${stated}: not this model's weights`,
    );
    // Not read: a reader that says the size and refuses to read the weights gets the same answer.
    const files = new Map<string, Uint8Array>();
    for (const path of ['args.json', 'performance.json', 'model/tagger-model.json'])
      files.set(path, await readFile(join(dir, path)));
    const read = Object.assign(
      async (path: string) => {
        const bytes = files.get(path);
        if (bytes === undefined)
          throw Object.assign(new Error(`${path} must not be read`), { code: 'EACCES' });
        return bytes;
      },
      { size: async (path: string) => (path === 'model/weights.bin' ? 1024 ** 3 : null) },
    );
    await expect(loadServedModel(read)).rejects.toThrow(
      /weights\.bin is 1073741824 bytes, but tagger-model\.json says/,
    );
  });

  it('broken args.json', async () => {
    const dir = await copy('bad-args');
    await writeFile(join(dir, 'args.json'), '{"alpha": "high"}');
    const error = await loadModelDirectory(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain('args.json');
    expect((error as Error).message).toContain('alpha');
  });

  it('a performance.json of the wrong shape', async () => {
    const dir = await copy('bad-performance');
    await writeFile(join(dir, 'performance.json'), '{"overall": {"f1": "good"}, "class": {}, "slices": {}}');
    const error = await loadModelDirectory(dir).catch((e: unknown) => e);
    expect((error as Error).message).toContain(
      'performance.json: overall.precision must be a number or null',
    );
  });

  it.each([
    ['[]', 'performance.json: averages must be an object'],
    [
      '{"micro": {}, "macro": {}, "weighted": {}}',
      'performance.json: averages.micro.precision must be a number or null',
    ],
  ])('performance.json averages of the wrong shape: %s', async (averages, message) => {
    const dir = await copy(`bad-averages-${averages.length}`);
    const metrics = '{"precision": 1, "recall": 1, "f1": 1, "num_samples": 1}';
    await writeFile(
      join(dir, 'performance.json'),
      `{"overall": ${metrics}, "class": {}, "slices": {}, "averages": ${averages}}`,
    );
    const error = await loadModelDirectory(dir).catch((e: unknown) => e);
    expect((error as Error).message).toContain(message);
  });
});
