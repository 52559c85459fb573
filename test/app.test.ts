/**
 * createApp: wiring, unexpected-error masking and logging, and the documentation-only app, whose document
 * has both variants' endpoints with the contract's parameters and shapes.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp, generateOpenApiDocument } from '../src/app.js';
import { inlineComponentSchemas } from '../src/http/openapi-components.js';
import type { TagModel } from '../src/model/index.js';
import { loadModelDirectory, predictorFor, type ServedModel } from '../src/served-models/index.js';
import { useServingFixture } from './support/serving-fixture.js';

// biome-ignore lint/suspicious/noExplicitAny: walking a JSON document
type Json = any;

const fx = useServingFixture();
let served: ServedModel;

beforeAll(async () => {
  served = await loadModelDirectory(fx.modelDir);
});

function memoryLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('createApp', () => {
  it('masks an unexpected failure as a generic 500 envelope and logs the real error', async () => {
    const { logger, lines } = memoryLogger();
    // Fault injection: the real loaded model, with predict failing the way a bug would.
    const broken: TagModel = {
      tags: served.model.tags,
      args: served.model.args,
      tagThresholds: null,
      threshold: served.model.threshold,
      predict: () => {
        throw new TypeError('secret internal detail');
      },
      explain: () => {
        throw new TypeError('secret internal detail');
      },
    };
    const failing: ServedModel = { ...served, model: broken, predictor: predictorFor(broken) };
    const app = createApp({ serving: { mode: 'model', model: failing, source: 'x' }, logger });
    const response = await app.inject({
      method: 'POST',
      url: '/predict',
      payload: { texts: [{ text: 'a' }] },
    });
    expect(response.statusCode).toBe(500);
    const body = JSON.parse(response.body);
    expect(body).toMatchObject({ 'status-code': 500, message: 'Internal Server Error', method: 'POST' });
    expect(body.detail).toBe('internal error; the server log has the details');
    expect(response.body).not.toContain('secret');
    const logged = lines.find((line) => line.msg === 'unexpected error while handling a request');
    expect(logged).toBeDefined();
    expect((logged!.err as { message: string }).message).toBe('secret internal detail');
    await app.close();
  });

  it('answers an oversized body with a 413 envelope', async () => {
    const app = createApp({ serving: { mode: 'model', model: served, source: 'x' } });
    const payload = JSON.stringify({ texts: [{ text: 'a'.repeat(1024 * 1024 + 10) }] });
    const response = await app.inject({
      method: 'POST',
      url: '/predict',
      headers: { 'content-type': 'application/json' },
      payload,
    });
    expect(response.statusCode).toBe(413);
    expect(JSON.parse(response.body)).toMatchObject({ 'status-code': 413, message: 'Payload Too Large' });
    await app.close();
  });

  it('builds a documentation-only app whose document covers both variants', async () => {
    const document = await generateOpenApiDocument();
    expect(Object.keys(document.paths as object)).toHaveLength(26);
    const api = inlineComponentSchemas(document) as Json;
    const operation = (method: string, path: string): Json => {
      expect(api.paths[path]?.[method], `${method.toUpperCase()} ${path} is documented`).toBeDefined();
      return api.paths[path][method];
    };
    /** The `data` of an operation's 200 envelope. */
    const data = (method: string, path: string): Json => {
      const schema = operation(method, path).responses['200'].content['application/json'].schema;
      expect(schema.required).toEqual(['message', 'method', 'status-code', 'timestamp', 'url', 'data']);
      return schema.properties.data;
    };
    const pathParameter = (method: string, path: string, name: string) =>
      expect(operation(method, path).parameters).toContainEqual(
        expect.objectContaining({
          in: 'path',
          name,
          required: true,
          schema: expect.objectContaining({ type: 'string' }),
        }),
      );
    /** A predict operation: the contract's body (texts, at least one, each a text of at least 1 character) and its 422. */
    const predictOperation = (path: string) => {
      const body = operation('post', path).requestBody.content['application/json'].schema;
      expect(body.required).toEqual(['texts']);
      expect(body.properties.texts).toMatchObject({ type: 'array', minItems: 1 });
      expect(body.properties.texts.items.properties.text).toMatchObject({ type: 'string', minLength: 1 });
      const invalid = operation('post', path).responses['422'].content['application/json'].schema;
      expect(invalid.required).toEqual(['detail']);
      expect(invalid.properties.detail.items.required).toEqual(['loc', 'msg', 'type']);
      const predictions = data('post', path).properties.predictions;
      expect(predictions.type).toBe('array');
      expect(predictions.items.required).toEqual(expect.arrayContaining(['input_text', 'predicted_tag']));
      return data('post', path);
    };

    // Both variants: the health check (data an empty object) and POST /predict, under General.
    expect(data('get', '/')).toMatchObject({ type: 'object', properties: {} });
    expect(predictOperation('/predict').properties.run_id.type).toBe('string');
    for (const path of ['/', '/predict'])
      expect(Object.values(api.paths[path])[0]).toMatchObject({ tags: ['General'] });

    // The run-based variant, under Runs: the runs (top an optional integer), one run's performance, a run's predictions.
    const runs = data('get', '/runs');
    expect(runs.properties.runs).toMatchObject({ type: 'array' });
    expect(runs.properties.runs.items.required).toContain('run_id');
    expect(operation('get', '/runs').parameters).toContainEqual(
      expect.objectContaining({
        in: 'query',
        name: 'top',
        required: false,
        schema: expect.objectContaining({ type: 'integer' }),
      }),
    );
    pathParameter('get', '/runs/{run_id}', 'run_id');
    const run = data('get', '/runs/{run_id}');
    expect(run.required).toEqual(['run_id', 'performance']);
    expect(run.properties.run_id.type).toBe('string');
    expect(run.properties.performance.properties.overall.required).toEqual([
      'precision',
      'recall',
      'f1',
      'num_samples',
    ]);
    pathParameter('post', '/runs/{run_id}/predict', 'run_id');
    expect(predictOperation('/runs/{run_id}/predict').required).toEqual(['run_id', 'predictions']);
    for (const path of ['/runs', '/runs/{run_id}', '/runs/{run_id}/predict'])
      expect(Object.values(api.paths[path])[0]).toMatchObject({ tags: ['Runs'] });

    // The single-model variant: the performance (filter `overall` gives precision, recall, f1, num_samples),
    // every training argument the contract lists, and one argument by name.
    const filter = operation('get', '/performance').parameters.find((p: Json) => p.name === 'filter');
    expect(filter).toMatchObject({ in: 'query', required: false });
    expect(filter.schema.enum).toContain('overall');
    const performance = data('get', '/performance');
    expect(performance.required).toEqual(['performance']);
    expect(performance.properties.performance.anyOf.map((part: Json) => part.required)).toContainEqual([
      'precision',
      'recall',
      'f1',
      'num_samples',
    ]);
    const args = data('get', '/args');
    // The contract's `args`, and the names of them the run's kind does not use (issue 42; an added field).
    expect(args.required).toEqual(['args', 'unused_args']);
    expect(args.properties.unused_args).toMatchObject({ type: 'array', items: { type: 'string' } });
    const CONTRACT_ARGS = ['shuffle', 'subset', 'min_freq', 'lower', 'stem', 'analyzer', 'ngram_max_range'];
    expect(Object.keys(args.properties.args.properties)).toEqual(
      expect.arrayContaining([...CONTRACT_ARGS, 'alpha', 'learning_rate', 'power_t']),
    );
    pathParameter('get', '/args/{param}', 'param');
    expect(data('get', '/args/{param}')).toMatchObject({ type: 'object', additionalProperties: true });

    // A single-model app documents that variant alone: no /runs.
    const single = createApp({ serving: { mode: 'model', model: served, source: 'x' } });
    const own = JSON.parse((await single.inject({ url: '/openapi.json' })).body) as Json;
    await single.close();
    const paths = Object.keys(own.paths);
    expect(paths).toEqual(
      expect.arrayContaining(['/', '/predict', '/performance', '/args', '/args/{param}']),
    );
    expect(paths.filter((path) => path.startsWith('/runs'))).toEqual([]);
  });
});
