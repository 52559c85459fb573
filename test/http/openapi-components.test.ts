/**
 * shareComponentSchemas on small documents: which schemas become components (named, used more than
 * once — a shared schema's own parts counted once), where descriptions go, and a title given to two
 * different schemas refused. test/http/openapi.test.ts checks the result on Tagger's own document.
 */
import { describe, expect, it } from 'vitest';
import { inlineComponentSchemas, shareComponentSchemas } from '../../src/http/openapi-components.js';

// biome-ignore lint/suspicious/noExplicitAny: walking a JSON document
type Json = any;
const share = (document: object): Json => shareComponentSchemas(document);

const tag = { type: 'string', title: 'Tag' };
const item = (description?: string) => ({
  type: 'object',
  title: 'Item',
  properties: { tag, score: { type: 'number' } },
  ...(description === undefined ? {} : { description }),
});
const operation = (schema: object, description = 'OK') => ({
  responses: { 200: { description, content: { 'application/json': { schema } } } },
});

describe('shareComponentSchemas', () => {
  it('moves a named schema used twice to components/schemas and refers to it; one used once stays', () => {
    const document = {
      openapi: '3.1.0',
      components: { securitySchemes: { key: { type: 'apiKey' } } },
      paths: {
        '/a': { get: operation({ type: 'array', items: item() }) },
        '/b': { get: operation({ type: 'object', title: 'Once', properties: { item: item() } }) },
      },
    };
    const before = structuredClone(document);
    const shared = share(document);
    expect(shared.components).toEqual({
      securitySchemes: { key: { type: 'apiKey' } },
      schemas: { Item: { type: 'object', title: 'Item', properties: { tag, score: { type: 'number' } } } },
    });
    expect(shared.paths['/a'].get.responses[200].content['application/json'].schema).toEqual({
      type: 'array',
      items: { $ref: '#/components/schemas/Item' },
    });
    expect(shared.paths['/b'].get.responses[200].content['application/json'].schema).toEqual({
      type: 'object',
      title: 'Once',
      properties: { item: { $ref: '#/components/schemas/Item' } },
    });
    // `Tag` appears twice in the input, but only inside Item, so once in the result: not a component.
    expect(inlineComponentSchemas(shared).paths).toEqual(document.paths);
    expect(document, 'the input is left as it was').toEqual(before);
  });

  it('keeps a description shared by every use in the component, and different ones on the references', () => {
    const same = share({
      paths: {
        '/a': { get: operation({ items: item('an item') }) },
        '/b': { get: operation({ items: item('an item') }) },
      },
    });
    expect(same.components.schemas.Item.description).toBe('an item');
    expect(same.paths['/a'].get.responses[200].content['application/json'].schema.items).toEqual({
      $ref: '#/components/schemas/Item',
    });
    const different = share({
      paths: {
        '/a': { get: operation({ items: item('first') }) },
        '/b': { get: operation({ items: item('second') }) },
      },
    });
    expect(different.components.schemas.Item).not.toHaveProperty('description');
    expect(different.paths['/b'].get.responses[200].content['application/json'].schema.items).toEqual({
      $ref: '#/components/schemas/Item',
      description: 'second',
    });
  });

  it('lets a response say its own description once, not again on the schema it refers to', () => {
    const shared = share({
      paths: {
        '/a': { get: operation(item('Not found'), 'Not found') },
        '/b': { get: operation(item('Conflict'), 'Conflict') },
      },
    });
    expect(shared.paths['/a'].get.responses[200]).toEqual({
      description: 'Not found',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } },
    });
  });

  it('refuses two different schemas with the same title, naming it', () => {
    const other = { ...item(), properties: { tag } };
    expect(() =>
      share({ paths: { '/a': { get: operation(item()) }, '/b': { get: operation(other) } } }),
    ).toThrow(/two different schemas are titled Item/);
  });

  it('leaves examples alone, even ones that look like named schemas', () => {
    const example = { title: 'Item', type: 'object' };
    const shared = share({
      paths: {
        '/a': { get: operation({ type: 'object', examples: [example] }) },
        '/b': { get: operation({ type: 'object', examples: [example] }) },
      },
    });
    expect(shared.components.schemas).toEqual({});
    expect(shared.paths['/b'].get.responses[200].content['application/json'].schema.examples).toEqual([
      example,
    ]);
  });
});
