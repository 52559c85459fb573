/**
 * Request validation: one Ajv instance (no type coercion, every error reported) compiles the TypeBox
 * schemas, and its errors are rewritten into FastAPI's pydantic-v1 422 entries
 * (`{loc, msg, type, ctx?}`), the one response the spec shapes without the envelope.
 */
import { Ajv, type ErrorObject } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { CUSTOM_VALIDATION_MESSAGES, type ValidationIssue } from './schemas.js';

/** Where a validated value came from, named as FastAPI names it in `loc`. */
const LOC_ROOT: Readonly<Record<string, string>> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

const ajv = new Ajv({
  allErrors: true,
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: false,
  strict: true,
});

/**
 * Query strings are text on the wire. Without coercion an integer parameter could never validate, so
 * exactly the strings that are decimal integers (`5`, `-1`) become numbers first; anything else
 * (`1.5`, `1e2`, `0x10`, ``) stays a string and fails the integer check, as pydantic's `int` would.
 * Likewise a number parameter takes decimals (`0.25`, `1`, `2.5e-3`), and a boolean one `true` / `false`.
 */
function queryKeys(schema: unknown, type: string): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.keys(properties).filter((key) => properties[key]?.type === type);
}

// Any length: a huge value becomes a large (inexact) number that the schema's `maximum` rejects.
const DECIMAL_INTEGER = /^[+-]?\d+$/;
const DECIMAL_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const BOOLEAN: Readonly<Record<string, boolean>> = { true: true, false: false };

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const validate = ajv.compile(schema as object);
  if (httpPart !== 'querystring') return validate;
  const integers = queryKeys(schema, 'integer');
  const numbers = queryKeys(schema, 'number');
  const booleans = queryKeys(schema, 'boolean');
  const coerced = integers.length + numbers.length + booleans.length > 0;
  return (data: unknown) => {
    let value = data;
    if (coerced && typeof data === 'object' && data !== null) {
      const copy: Record<string, unknown> = { ...(data as Record<string, unknown>) };
      for (const key of integers) {
        const raw = copy[key];
        if (typeof raw === 'string' && DECIMAL_INTEGER.test(raw)) copy[key] = Number(raw);
      }
      for (const key of numbers) {
        const raw = copy[key];
        if (typeof raw === 'string' && DECIMAL_NUMBER.test(raw)) copy[key] = Number(raw);
      }
      for (const key of booleans) {
        const raw = copy[key];
        if (typeof raw === 'string' && Object.hasOwn(BOOLEAN, raw)) copy[key] = BOOLEAN[raw];
      }
      value = copy;
    }
    return validate(value) ? { value } : { error: validate.errors as unknown as Error };
  };
};

/** Decodes an Ajv instancePath (`/texts/0/text`) against the input, so list indexes become integers. */
function locate(instancePath: string, input: unknown): { path: (string | number)[]; value: unknown } {
  const path: (string | number)[] = [];
  let value: unknown = input;
  if (instancePath === '') return { path, value };
  for (const raw of instancePath.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(value)) {
      const index = Number(segment);
      path.push(index);
      value = value[index];
    } else {
      path.push(segment);
      value =
        typeof value === 'object' && value !== null && Object.hasOwn(value, segment)
          ? (value as Record<string, unknown>)[segment]
          : undefined;
    }
  }
  return { path, value };
}

const TYPE_MESSAGES: Readonly<Record<string, { msg: string; type: string }>> = {
  string: { msg: 'str type expected', type: 'type_error.str' },
  array: { msg: 'value is not a valid list', type: 'type_error.list' },
  object: { msg: 'value is not a valid dict', type: 'type_error.dict' },
  integer: { msg: 'value is not a valid integer', type: 'type_error.integer' },
  number: { msg: 'value is not a valid float', type: 'type_error.float' },
  boolean: { msg: 'value could not be parsed to a boolean', type: 'type_error.bool' },
};

const MISSING = { msg: 'field required', type: 'value_error.missing' };

/** pydantic v1's wording of a violated bound, by Ajv keyword: `<msg> <limit><unit>`, ctx.limit_value. */
const LIMIT_MESSAGES: Record<string, { msg: string; unit: string; type: string }> = {
  minLength: {
    msg: 'ensure this value has at least',
    unit: ' characters',
    type: 'value_error.any_str.min_length',
  },
  maxLength: {
    msg: 'ensure this value has at most',
    unit: ' characters',
    type: 'value_error.any_str.max_length',
  },
  minItems: { msg: 'ensure this value has at least', unit: ' items', type: 'value_error.list.min_items' },
  maxItems: { msg: 'ensure this value has at most', unit: ' items', type: 'value_error.list.max_items' },
  minimum: {
    msg: 'ensure this value is greater than or equal to',
    unit: '',
    type: 'value_error.number.not_ge',
  },
  maximum: { msg: 'ensure this value is less than or equal to', unit: '', type: 'value_error.number.not_le' },
};

function issueFor(error: ErrorObject, root: string, input: unknown): ValidationIssue {
  const { path, value } = locate(error.instancePath, input);
  const loc: (string | number)[] = [root, ...path];
  const params = error.params as Record<string, unknown>;
  const custom =
    CUSTOM_VALIDATION_MESSAGES[
      `${[root, ...path.filter((p) => typeof p === 'string')].join('.')}:${error.keyword}`
    ];
  if (custom) return { loc, ...custom };
  const limit = Object.hasOwn(LIMIT_MESSAGES, error.keyword) ? LIMIT_MESSAGES[error.keyword] : undefined;
  if (limit) {
    return {
      loc,
      msg: `${limit.msg} ${params.limit}${limit.unit}`,
      type: limit.type,
      ctx: { limit_value: params.limit },
    };
  }
  switch (error.keyword) {
    case 'required':
      return { loc: [...loc, String(params.missingProperty)], ...MISSING };
    case 'type': {
      // No body at all (or a JSON null body) is a missing body, as in FastAPI.
      if (path.length === 0 && (value === null || value === undefined)) return { loc, ...MISSING };
      if (value === null)
        return { loc, msg: 'none is not an allowed value', type: 'type_error.none.not_allowed' };
      const expected = String(Array.isArray(params.type) ? params.type[0] : params.type);
      return {
        loc,
        ...(TYPE_MESSAGES[expected] ?? { msg: `${expected} type expected`, type: `type_error.${expected}` }),
      };
    }
    case 'const':
    case 'enum': {
      const permitted =
        error.keyword === 'const' ? [params.allowedValue] : (params.allowedValues as unknown[]);
      return {
        loc,
        msg: `unexpected value; permitted: ${permitted.map((v) => JSON.stringify(v).replace(/^"|"$/g, "'")).join(', ')}`,
        type: 'value_error.const',
        ctx: { given: value, permitted },
      };
    }
    case 'additionalProperties':
      return {
        loc: [...loc, String(params.additionalProperty)],
        msg: 'extra fields not permitted',
        type: 'value_error.extra',
      };
    default:
      return { loc, msg: error.message ?? 'invalid value', type: `value_error.${error.keyword}` };
  }
}

/**
 * Ajv errors → pydantic-v1 422 entries, in Ajv's order (fields in schema order, list items by index).
 * @param context Fastify's `validationContext` (`body`, `querystring`, `params`, `headers`)
 * @param input the value that was validated (needed to tell null from a wrong type and list indexes)
 * @example toValidationIssues(err.validation, 'body', request.body)
 */
export function toValidationIssues(
  errors: readonly ErrorObject[],
  context: string,
  input: unknown,
): ValidationIssue[] {
  const root = LOC_ROOT[context] ?? context;
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  // A literal (`{type: 'string', const: 'all'}`) fails as one `const` entry, as pydantic's Literal does.
  const parent = (error: ErrorObject): string => error.schemaPath.slice(0, error.schemaPath.lastIndexOf('/'));
  const literals = new Set(errors.filter((error) => error.keyword === 'const').map(parent));
  for (const error of errors) {
    // A union (`anyOf`) is reported as pydantic v1 reports one: an entry per alternative that failed
    // (Ajv lists those too), without a summary entry of its own.
    if (error.keyword === 'anyOf') continue;
    if (error.keyword === 'type' && literals.has(parent(error))) continue;
    const issue = issueFor(error, root, input);
    const key = JSON.stringify([issue.loc, issue.type]);
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}
