/**
 * The shared schemas of the OpenAPI document. @fastify/swagger writes every route's schemas out in full,
 * so a schema several routes use — the error envelope of every error status of every route, the 422 body,
 * a prediction, a run's metrics — was written out at each use (openapi.json: 13k lines, 565 kB). Here
 * every named schema (a TypeBox `title` in schemas.ts) that the document uses more than once is written
 * once, under `components/schemas/<title>`, and each use becomes a `$ref` to it. Only the document
 * changes: validation and serialisation still compile each route's own schemas, so what the server
 * accepts and answers is the same. Written by hand: @fastify/swagger shares only schemas registered with
 * an `$id` (`addSchema`), which would also change how every route is compiled.
 */
import { isDeepStrictEqual } from 'node:util';

type Json = unknown;
type JsonObject = { [key: string]: Json };

const isObject = (value: Json): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords whose values are data, not schemas: never searched for named schemas. */
const DATA_KEYWORDS = new Set(['example', 'examples', 'default', 'const', 'enum']);

const REF_PREFIX = '#/components/schemas/';

/** A component name as OpenAPI allows it (`^[a-zA-Z0-9._-]+$`). */
const COMPONENT_NAME = /^[\w.-]+$/;

const titleOf = (node: Json): string | undefined =>
  isObject(node) && typeof node.title === 'string' ? node.title : undefined;

/**
 * How often each named schema appears in the document once repeated ones are references: a schema's
 * own named parts count once however often the schema itself is used.
 */
function countUses(node: Json, uses: Map<string, number>): void {
  if (Array.isArray(node)) {
    for (const item of node) countUses(item, uses);
    return;
  }
  if (!isObject(node)) return;
  const title = titleOf(node);
  if (title !== undefined) {
    const seen = uses.get(title) ?? 0;
    uses.set(title, seen + 1);
    if (seen > 0) return;
  }
  for (const [key, value] of Object.entries(node)) if (!DATA_KEYWORDS.has(key)) countUses(value, uses);
}

/**
 * The document with every named schema used more than once moved to `components/schemas` and referenced
 * where it was. A schema keeps its `description` in the component when every use has the same one;
 * otherwise each reference carries its own (OpenAPI 3.1 allows `description` beside `$ref`), except a
 * response's schema, whose description is the response's own (@fastify/swagger copies it there).
 * Two different schemas with the same title are a programming error, thrown.
 */
export function shareComponentSchemas<T extends object>(document: T): T {
  const doc = document as JsonObject;
  const uses = new Map<string, number>();
  countUses(doc.paths, uses);
  const shared = new Set([...uses].filter(([, count]) => count > 1).map(([title]) => title));
  const bodies = new Map<string, JsonObject>();
  const references = new Map<string, JsonObject[]>();

  const share = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(share);
    if (!isObject(node)) return node;
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) out[key] = DATA_KEYWORDS.has(key) ? value : share(value);
    const title = titleOf(node);
    if (title === undefined || !shared.has(title)) return out;
    if (!COMPONENT_NAME.test(title))
      throw new Error(`openapi: schema title ${JSON.stringify(title)} cannot name a component`);
    const { description, ...body } = out;
    const known = bodies.get(title);
    if (known === undefined) bodies.set(title, body);
    else if (!isDeepStrictEqual(known, body))
      throw new Error(`openapi: two different schemas are titled ${title}; give one of them another title`);
    const reference: JsonObject = { $ref: `${REF_PREFIX}${title}` };
    if (description !== undefined) reference.description = description;
    references.set(title, [...(references.get(title) ?? []), reference]);
    return reference;
  };
  const paths = share(doc.paths) as JsonObject;

  const schemas: JsonObject = {};
  for (const title of [...bodies.keys()].sort()) {
    const refs = references.get(title) ?? [];
    const descriptions = new Set(refs.map((ref) => ref.description));
    const component: JsonObject = { ...bodies.get(title) };
    if (descriptions.size === 1) {
      const [description] = descriptions;
      if (description !== undefined) component.description = description;
      for (const ref of refs) delete ref.description;
    }
    schemas[title] = component;
  }
  dropResponseDescriptionCopies(paths);

  const components = isObject(doc.components) ? doc.components : {};
  const ownSchemas = isObject(components.schemas) ? components.schemas : {};
  return {
    ...doc,
    components: { ...components, schemas: { ...ownSchemas, ...schemas } },
    paths,
  } as T;
}

/** A referenced response schema's description is its response's: said once, by the response. */
function dropResponseDescriptionCopies(paths: JsonObject): void {
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue;
    for (const operation of Object.values(item)) {
      if (!isObject(operation) || !isObject(operation.responses)) continue;
      for (const response of Object.values(operation.responses)) {
        if (!isObject(response) || !isObject(response.content)) continue;
        for (const media of Object.values(response.content)) {
          const schema = isObject(media) ? media.schema : undefined;
          if (
            isObject(schema) &&
            typeof schema.$ref === 'string' &&
            schema.description === response.description
          )
            delete schema.description;
        }
      }
    }
  }
}

/**
 * The document with every `$ref` to `components/schemas` replaced by the schema it names (a reference's
 * own `description` kept): the form @fastify/swagger wrote, for reading the document by path (tests, and
 * tools that do not follow references). It loses nothing shareComponentSchemas kept: a response schema's
 * copy of its response's description is all that differs from @fastify/swagger's own document.
 */
export function inlineComponentSchemas<T extends object>(document: T): T {
  const doc = document as JsonObject;
  const schemas = isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : {};
  const inline = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(inline);
    if (!isObject(node)) return node;
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith(REF_PREFIX)) {
      const target = schemas[ref.slice(REF_PREFIX.length)];
      if (!isObject(target)) throw new Error(`openapi: ${ref} names no schema`);
      const { $ref: _ref, ...siblings } = node;
      return { ...(inline(target) as JsonObject), ...siblings };
    }
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node))
      out[key] = DATA_KEYWORDS.has(key) ? value : inline(value);
    return out;
  };
  return { ...doc, paths: inline(doc.paths) } as T;
}
