/**
 * The OpenAPI document: valid per an OpenAPI validator, complete (every endpoint with its real request
 * and response schemas, tags, metadata), each shared schema written once and referenced, and identical
 * to the committed openapi.json (regenerate with `npx tsx scripts/openapi.ts`). The checks of what each
 * operation documents read it with the references inlined.
 */
import { readFile } from 'node:fs/promises';
import { compileErrors, validate } from '@readme/openapi-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatOpenApi, OPENAPI_FILE } from '../../scripts/openapi.js';
import { generateOpenApiDocument } from '../../src/app.js';
import { inlineComponentSchemas, shareComponentSchemas } from '../../src/http/openapi-components.js';

// biome-ignore lint/suspicious/noExplicitAny: walking a JSON document
type Json = any;
/** The document as served and committed: shared schemas under components/schemas, referenced. */
let generated: Json;
/** The same with every reference replaced by its schema, to read an operation by path. */
let document: Json;

beforeAll(async () => {
  generated = await generateOpenApiDocument();
  document = inlineComponentSchemas(generated);
});

const ENDPOINTS: [string, string, string][] = [
  ['get', '/', 'General'],
  ['post', '/predict', 'General'],
  ['get', '/runs', 'Runs'],
  ['get', '/runs/{run_id}', 'Runs'],
  ['post', '/runs/{run_id}/predict', 'Runs'],
  ['get', '/runs/{run_id}/history', 'Runs'],
  ['get', '/runs/{run_id}/errors', 'Runs'],
  ['get', '/runs/{run_id}/label-issues', 'Runs'],
  ['get', '/runs/{run_id}/cascade', 'Runs'],
  ['get', '/performance', 'Model'],
  ['get', '/args', 'Model'],
  ['get', '/args/{param}', 'Model'],
  ['get', '/health/live', 'Operations'],
  ['get', '/health/ready', 'Operations'],
  ['get', '/metrics', 'Operations'],
  ['post', '/feedback', 'Monitoring'],
  ['get', '/monitoring', 'Monitoring'],
  ['get', '/review', 'Monitoring'],
  ['get', '/review/label-issues', 'Monitoring'],
  ['post', '/review/label-issues', 'Monitoring'],
];

/** The protocols beside the contract's API (issue 41): their own shapes, not the envelope. */
const PROTOCOL_ENDPOINTS: [string, string, string][] = [
  ['get', '/v2', 'Open Inference Protocol'],
  ['get', '/v2/health/live', 'Open Inference Protocol'],
  ['get', '/v2/health/ready', 'Open Inference Protocol'],
  ['get', '/v2/models/{name}', 'Open Inference Protocol'],
  ['get', '/v2/models/{name}/ready', 'Open Inference Protocol'],
  ['post', '/v2/models/{name}/infer', 'Open Inference Protocol'],
  ['post', '/hf/text-classification', 'Hugging Face'],
];

/** Operations whose success is the envelope (all but the Prometheus text of /metrics). */
const ENVELOPED = ENDPOINTS.filter(([, path]) => path !== '/metrics');

describe('openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await validate(structuredClone(generated));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(document.openapi).toBe('3.1.0');
  });

  it('matches the committed openapi.json (run `npx tsx scripts/openapi.ts` after changing the API)', async () => {
    const committed = await readFile(OPENAPI_FILE, 'utf8');
    expect(committed).toBe(formatOpenApi(generated));
  });

  it('writes each schema the routes share once, under components/schemas, and refers to it', () => {
    const REF = '#/components/schemas/';
    const schemas = generated.components.schemas;
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining(['ErrorEnvelope', 'ValidationError', 'PredictPayload', 'Prediction', 'Metrics']),
    );
    // Every error answer of every operation is the one error envelope (the 422 body, the one validation error);
    // the protocols beside the contract's (the Open Inference Protocol, the Hugging Face shape) answer theirs,
    // `{"error"}`, and their probes an empty 400.
    let errors = 0;
    for (const [path, item] of Object.entries<Json>(generated.paths))
      for (const [method, operation] of Object.entries<Json>(item))
        for (const [status, response] of Object.entries<Json>(operation.responses)) {
          if (status === '200') continue;
          const protocol = path.startsWith('/v2') || path.startsWith('/hf/');
          if (protocol && response.content === undefined) {
            expect([path, status]).toEqual([path, '400']);
            continue;
          }
          const schema = response.content['application/json'].schema;
          expect(schema, `${method} ${path} ${status}`).toEqual({
            $ref: `${REF}${protocol ? 'ProtocolError' : status === '422' ? 'ValidationError' : 'ErrorEnvelope'}`,
          });
          errors++;
        }
    expect(errors).toBeGreaterThan(100);
    // No named schema is written twice, nor written out beside its component; every reference resolves.
    const inline = new Map<string, number>();
    const refs = new Set<string>();
    const walk = (node: Json, key = ''): void => {
      if (node === null || typeof node !== 'object' || ['example', 'examples', 'enum', 'const'].includes(key))
        return;
      if (typeof node.title === 'string') inline.set(node.title, (inline.get(node.title) ?? 0) + 1);
      if (typeof node.$ref === 'string') refs.add(node.$ref);
      for (const [k, v] of Object.entries(node)) walk(v, k);
    };
    walk(generated.paths);
    for (const [title, count] of inline) {
      expect(count, `${title} written out in paths`).toBe(1);
      expect(schemas[title], `${title} both inline and a component`).toBeUndefined();
    }
    for (const ref of refs) expect(schemas[ref.slice(REF.length)], ref).toBeDefined();
    expect([...refs].map((ref) => ref.slice(REF.length)).sort()).toEqual(Object.keys(schemas).sort());
    // What sharing saves: the same document with its references inlined is more than twice as long.
    expect(formatOpenApi(generated).length * 2).toBeLessThan(formatOpenApi(document).length);
  });

  it('shares schemas losslessly: sharing the inlined document again gives the same document', () => {
    expect(shareComponentSchemas(document)).toEqual(generated);
  });

  it('declares title, description, version 0.1 and the seven tags', () => {
    expect(document.info).toMatchObject({ title: 'Tagger', version: '0.1' });
    expect(document.info.description).toContain('envelope');
    expect(document.tags.map((t: Json) => t.name)).toEqual([
      'General',
      'Runs',
      'Model',
      'Operations',
      'Monitoring',
      'Open Inference Protocol',
      'Hugging Face',
    ]);
  });

  it('describes exactly the API endpoints, each under its tag (docs and helpers are hidden)', () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item as object).map((method) => `${method} ${path}`),
    );
    const all = [...ENDPOINTS, ...PROTOCOL_ENDPOINTS];
    expect(operations.sort()).toEqual(all.map(([m, p]) => `${m} ${p}`).sort());
    for (const [method, path, tag] of all) expect(document.paths[path][method].tags).toEqual([tag]);
  });

  it('gives every success response the envelope schema with data', () => {
    for (const [method, path] of ENVELOPED) {
      const schema = document.paths[path][method].responses['200'].content['application/json'].schema;
      expect(schema.required).toEqual(['message', 'method', 'status-code', 'timestamp', 'url', 'data']);
    }
  });

  it('documents the feedback body, each item answered on its own in a 200', () => {
    const operation = document.paths['/feedback'].post;
    const body = operation.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['feedback']);
    expect(body.properties.feedback).toMatchObject({ minItems: 1, maxItems: 1000 });
    expect(body.properties.feedback.items.required).toEqual(['prediction_id']);
    expect(body.properties.feedback.items.properties.selection.enum).toContain('random_share');
    const answered = operation.responses['200'].content['application/json'].schema.properties.data;
    expect(answered.properties.feedback.items.properties.status.anyOf.map((s: Json) => s.enum[0])).toEqual([
      200, 404, 409, 422, 503,
    ]);
    expect(operation.responses['422'].content['application/json'].schema.title).toBe('ValidationError');
    expect(operation.responses['413']).toBeDefined();
    const item = document.paths['/predict'].post.responses['200'].content['application/json'].schema;
    expect(item.properties.data.properties.predictions.items.required).toContain('prediction_id');
  });

  it('documents the predict request body and the 422 body', () => {
    for (const path of ['/predict', '/runs/{run_id}/predict']) {
      const operation = document.paths[path].post;
      const body = operation.requestBody.content['application/json'].schema;
      expect(body.required).toEqual(['texts']);
      expect(body.properties.texts.minItems).toBe(1);
      expect(body.properties.texts.items.properties.text.minLength).toBe(1);
      expect(operation.requestBody.content['application/json'].example.texts.length).toBeGreaterThan(0);
      const invalid = operation.responses['422'].content['application/json'].schema;
      expect(invalid.properties.detail.items.required).toEqual(['loc', 'msg', 'type']);
      expect(operation.responses['415'].content['application/json'].schema.required).toContain('detail');
    }
  });

  it('documents parameters: top (integer >= 0), filter (enum), run_id and param', () => {
    const top = document.paths['/runs'].get.parameters.find((p: Json) => p.name === 'top');
    expect(top).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 0 } });
    const filter = document.paths['/performance'].get.parameters.find((p: Json) => p.name === 'filter');
    expect(filter.schema.enum).toEqual(['overall', 'class', 'slices', 'averages']);
    expect(document.paths['/runs/{run_id}'].get.parameters[0]).toMatchObject({
      in: 'path',
      name: 'run_id',
      required: true,
    });
    expect(document.paths['/args/{param}'].get.parameters[0]).toMatchObject({
      in: 'path',
      name: 'param',
      required: true,
    });
  });

  it('documents how non-finite metrics are written', () => {
    const run =
      document.paths['/runs'].get.responses['200'].content['application/json'].schema.properties.data
        .properties.runs.items;
    expect(run.properties.metrics.additionalProperties.anyOf[1].enum).toEqual([
      'NaN',
      'Infinity',
      '-Infinity',
    ]);
    expect(run.required).toEqual([
      'run_id',
      'run_name',
      'status',
      'start_time',
      'end_time',
      'metrics',
      'params',
      'unused_params',
      'served',
      'warnings',
    ]);
  });
});

describe('openapi.json: operations, limits and access', () => {
  const PROTECTED = ENDPOINTS.filter(([, path]) => !['/', '/health/live', '/health/ready'].includes(path));

  it('documents /metrics as Prometheus text, outside the envelope', () => {
    const ok = document.paths['/metrics'].get.responses['200'];
    expect(Object.keys(ok.content)).toEqual(['text/plain']);
    expect(ok.content['text/plain'].schema.type).toBe('string');
  });

  it('documents the API-key schemes; health checks are open, everything else needs a key', () => {
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.components.securitySchemes.apiKeyHeader).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
    });
    for (const path of ['/', '/health/live', '/health/ready'])
      expect(document.paths[path].get.security).toEqual([]);
    for (const [method, path] of PROTECTED) {
      const operation = document.paths[path][method];
      expect(operation.security, `${method} ${path}`).toEqual([{ bearerAuth: [] }, { apiKeyHeader: [] }]);
      expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(
        expect.arrayContaining(['401', '403']),
      );
    }
  });

  it('documents the refusals of protection and limits on every API operation', () => {
    for (const [method, path] of PROTECTED.filter(([, p]) => p !== '/metrics')) {
      const responses = Object.keys(document.paths[path][method].responses);
      expect(responses, `${method} ${path}`).toEqual(expect.arrayContaining(['429', '503', '504']));
    }
    for (const path of ['/predict', '/runs/{run_id}/predict']) {
      const operation = document.paths[path].post;
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['400', '413', '415', '422']));
      const texts = operation.requestBody.content['application/json'].schema.properties.texts;
      expect(texts.maxItems).toBe(1000);
      expect(texts.items.properties.text.maxLength).toBe(10_000);
    }
    expect(Object.keys(document.paths['/health/ready'].get.responses)).toContain('503');
  });
});
