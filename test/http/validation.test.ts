/**
 * 422 bodies of the predict endpoints, pydantic-v1 / FastAPI shaped, through the HTTP layer; plus the
 * JSON scanner that gives malformed bodies their position.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { findJsonProblem } from '../../src/http/json-body.js';
import { postJson, runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
let app: TaggerApp;

beforeAll(async () => {
  ({ app } = await runsApp(fx.store));
});

afterAll(async () => {
  await app?.close();
});

const REQUIRED = { msg: 'field required', type: 'value_error.missing' };
const NOT_STR = { msg: 'str type expected', type: 'type_error.str' };
const NOT_LIST = { msg: 'value is not a valid list', type: 'type_error.list' };
const NOT_DICT = { msg: 'value is not a valid dict', type: 'type_error.dict' };
const NONE = { msg: 'none is not an allowed value', type: 'type_error.none.not_allowed' };

const CASES: [string, string, unknown[]][] = [
  [
    'an empty text (spec case 1)',
    '{"texts": [{"text": ""}]}',
    [
      {
        loc: ['body', 'texts', 0, 'text'],
        msg: 'ensure this value has at least 1 characters',
        type: 'value_error.any_str.min_length',
        ctx: { limit_value: 1 },
      },
    ],
  ],
  [
    'an empty list of texts (spec case 2)',
    '{"texts": []}',
    [{ loc: ['body', 'texts'], msg: 'List of texts to classify cannot be empty.', type: 'value_error' }],
  ],
  ['a missing texts field', '{}', [{ loc: ['body', 'texts'], ...REQUIRED }]],
  ['texts that is not a list', '{"texts": "hello"}', [{ loc: ['body', 'texts'], ...NOT_LIST }]],
  ['texts null', '{"texts": null}', [{ loc: ['body', 'texts'], ...NONE }]],
  ['an entry that is not an object', '{"texts": ["hello"]}', [{ loc: ['body', 'texts', 0], ...NOT_DICT }]],
  ['an entry without text', '{"texts": [{}]}', [{ loc: ['body', 'texts', 0, 'text'], ...REQUIRED }]],
  ['a null text', '{"texts": [{"text": null}]}', [{ loc: ['body', 'texts', 0, 'text'], ...NONE }]],
  [
    'a number as text (no coercion)',
    '{"texts": [{"text": 5}]}',
    [{ loc: ['body', 'texts', 0, 'text'], ...NOT_STR }],
  ],
  [
    'extra nesting',
    '{"texts": [{"text": {"text": "a"}}]}',
    [{ loc: ['body', 'texts', 0, 'text'], ...NOT_STR }],
  ],
  ['a nested list', '{"texts": [[{"text": "a"}]]}', [{ loc: ['body', 'texts', 0], ...NOT_DICT }]],
  ['a body that is a list', '[{"text": "a"}]', [{ loc: ['body'], ...NOT_DICT }]],
  ['a body that is a string', '"hello"', [{ loc: ['body'], ...NOT_DICT }]],
  ['a JSON null body', 'null', [{ loc: ['body'], ...REQUIRED }]],
  ['an empty body', '', [{ loc: ['body'], ...REQUIRED }]],
  ['a whitespace body', '  \n', [{ loc: ['body'], ...REQUIRED }]],
  [
    'several problems, reported in order',
    '{"texts": [{"text": "ok"}, {"text": ""}, {}, {"text": null}, 7]}',
    [
      {
        loc: ['body', 'texts', 1, 'text'],
        msg: 'ensure this value has at least 1 characters',
        type: 'value_error.any_str.min_length',
        ctx: { limit_value: 1 },
      },
      { loc: ['body', 'texts', 2, 'text'], ...REQUIRED },
      { loc: ['body', 'texts', 3, 'text'], ...NONE },
      { loc: ['body', 'texts', 4], ...NOT_DICT },
    ],
  ],
  [
    'malformed JSON',
    '{"texts": [{"text": "a"}',
    [
      {
        loc: ['body', 24],
        msg: "Expecting ',' delimiter",
        type: 'value_error.jsondecode',
        ctx: { msg: "Expecting ',' delimiter", pos: 24 },
      },
    ],
  ],
  [
    'a missing value',
    '{"texts": }',
    [
      {
        loc: ['body', 10],
        msg: 'Expecting value',
        type: 'value_error.jsondecode',
        ctx: { msg: 'Expecting value', pos: 10 },
      },
    ],
  ],
  [
    'trailing data',
    '{"texts": [{"text": "a"}]} x',
    [
      {
        loc: ['body', 27],
        msg: 'Extra data',
        type: 'value_error.jsondecode',
        ctx: { msg: 'Extra data', pos: 27 },
      },
    ],
  ],
  [
    'single quotes',
    "{'texts': []}",
    [
      {
        loc: ['body', 1],
        msg: 'Expecting property name enclosed in double quotes',
        type: 'value_error.jsondecode',
        ctx: { msg: 'Expecting property name enclosed in double quotes', pos: 1 },
      },
    ],
  ],
];

describe.each(['/predict', 'run'])('422 bodies of %s', (target) => {
  const url = () => (target === 'run' ? `/runs/${fx.runs.beta}/predict` : target);

  it.each(CASES)('%s', async (_, payload, detail) => {
    const response = await postJson(app, url(), payload);
    expect(response.statusCode).toBe(422);
    expect(String(response.headers['content-type'])).toMatch(/^application\/json/);
    // Exactly FastAPI's body: no envelope around validation errors.
    expect(JSON.parse(response.body)).toEqual({ detail });
  });

  it('a POST without any body is a missing body', async () => {
    const response = await app.inject({ method: 'POST', url: url() });
    expect(response.statusCode).toBe(422);
    expect(JSON.parse(response.body)).toEqual({ detail: [{ loc: ['body'], ...REQUIRED }] });
  });
});

describe('validation order against run lookup', () => {
  it('validates the body of an unknown run before looking the run up (FastAPI order)', async () => {
    const response = await postJson(app, '/runs/nope/predict', { texts: [] });
    expect(response.statusCode).toBe(422);
  });
});

describe('findJsonProblem', () => {
  it('agrees with JSON.parse on arbitrary JSON and on its one-character corruptions', () => {
    const corrupt = fc
      .tuple(
        fc.json(),
        fc.nat(),
        fc.constantFrom('', '"', '{', '}', '[', ']', ',', ':', '\\', 'x', '1', '-', '.', 'e', ' '),
        fc.boolean(),
      )
      .map(([text, at, ch, replace]) => {
        const i = text.length === 0 ? 0 : at % text.length;
        return text.slice(0, i) + ch + text.slice(replace ? i + 1 : i);
      });
    fc.assert(
      fc.property(fc.oneof(fc.json(), corrupt), (text) => {
        let valid = true;
        try {
          JSON.parse(text);
        } catch {
          valid = false;
        }
        const problem = findJsonProblem(text);
        expect(problem === null).toBe(valid);
        if (problem) expect(problem.position).toBeGreaterThanOrEqual(0);
        if (problem) expect(problem.position).toBeLessThanOrEqual(text.length);
      }),
      { numRuns: 3000 },
    );
  });

  it.each([
    ['', 0, 'Expecting value'],
    ['[1,]', 3, 'Expecting value'],
    ['{"a" 1}', 5, "Expecting ':' delimiter"],
    ['"abc', 0, 'Unterminated string starting at'],
    ['"a\\qb"', 2, 'Invalid \\escape'],
    ['"\\u12G4"', 1, 'Invalid \\uXXXX escape'],
    ['"a\nb"', 2, 'Invalid control character at'],
    ['01', 1, 'Extra data'],
    ['tru', 0, 'Expecting value'],
  ])('%j → position %i, %s', (text, position, message) => {
    expect(findJsonProblem(text)).toEqual({ position, message });
  });
});
