/**
 * The request body parser: JSON only, so any other content type is a 415, and malformed JSON becomes a
 * pydantic-style 422 whose `loc` is `["body", <character offset>]` like FastAPI's `value_error.jsondecode`.
 */
import type { FastifyInstance } from 'fastify';
import { HttpError } from './http-error.js';
import type { HttpLimits } from './options.js';

/** Thrown by the body parser; the error handler turns it into a 422. */
export class JsonDecodeError extends Error {
  override readonly name = 'JsonDecodeError';
  constructor(
    message: string,
    /** Zero-based character offset of the first character that makes the text invalid JSON. */
    readonly position: number,
  ) {
    super(message);
  }
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const DIGIT = /[0-9]/;
const HEX = /[0-9a-fA-F]/;

export interface JsonProblem {
  /** Zero-based character offset where the text stops being valid JSON. */
  position: number;
  /** Python's `json` module wording (what FastAPI clients see), e.g. `Expecting value`. */
  message: string;
}

/**
 * The first reason `text` is not valid JSON (RFC 8259), or null when it is valid. V8's JSON.parse
 * messages do not always carry a position, so a small scanner finds it.
 * @example findJsonProblem('{"a": }') // { position: 6, message: 'Expecting value' }
 */
export function findJsonProblem(text: string): JsonProblem | null {
  let i = 0;
  class Stop {
    constructor(readonly problem: JsonProblem) {}
  }
  const fail = (message: string, position = i): never => {
    throw new Stop({ position, message });
  };
  const ws = (): void => {
    while (i < text.length && WHITESPACE.has(text[i]!)) i++;
  };
  const literal = (word: string): void => {
    const start = i;
    for (const ch of word) {
      if (text[i] !== ch) fail('Expecting value', start);
      i++;
    }
  };
  const digits = (start: number): void => {
    if (!DIGIT.test(text[i] ?? '')) fail('Expecting value', start);
    while (DIGIT.test(text[i] ?? '')) i++;
  };
  const number = (): void => {
    const start = i;
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else digits(start);
    if (text[i] === '.') {
      i++;
      digits(start);
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      digits(start);
    }
  };
  const string = (): void => {
    const start = i;
    i++; // opening quote
    for (;;) {
      const ch = text[i];
      if (ch === undefined) fail('Unterminated string starting at', start);
      if (ch! < ' ') fail('Invalid control character at');
      if (ch === '"') {
        i++;
        return;
      }
      if (ch === '\\') {
        i++;
        const esc = text[i];
        if (esc === 'u') {
          for (let k = 1; k <= 4; k++)
            if (!HEX.test(text[i + k] ?? '')) fail('Invalid \\uXXXX escape', i - 1);
          i += 4;
        } else if (esc === undefined || !'"\\/bfnrt'.includes(esc)) fail('Invalid \\escape', i - 1);
      }
      i++;
    }
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('Expecting property name enclosed in double quotes');
        string();
        ws();
        if (text[i] !== ':') fail("Expecting ':' delimiter");
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return;
        } else fail("Expecting ',' delimiter");
      }
    } else if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') {
          i++;
          return;
        } else fail("Expecting ',' delimiter");
      }
    } else if (ch === '"') string();
    else if (ch === 't') literal('true');
    else if (ch === 'f') literal('false');
    else if (ch === 'n') literal('null');
    else if (ch === '-' || (ch !== undefined && DIGIT.test(ch))) number();
    else fail('Expecting value');
  };
  try {
    value();
    ws();
    return i === text.length ? null : { position: i, message: 'Extra data' };
  } catch (error) {
    if (error instanceof Stop) return error.problem;
    throw error;
  }
}

/**
 * The deepest nesting of arrays and objects in JSON text (strings skipped), stopping as soon as it
 * exceeds `limit`: a linear scan, so a hostile body cannot make the parser recurse deeply first. A string
 * is skipped by searching for its closing quote with indexOf (an unescaped one: preceded by an even run
 * of backslashes) rather than a character at a time, since texts are most of a predict body.
 * @example jsonDepthExceeds('[[1]]', 1) // true
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return false; // an unterminated string: JSON.parse reports it
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
      }
      i = end;
    } else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > limit) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Replaces Fastify's parsers with one JSON parser (any `application/json` media type, parameters such as
 * charset allowed). An empty body parses to `undefined`, which validation reports as a missing body.
 * Bytes that are not UTF-8 are a 400 (FastAPI's answer too) rather than silently becoming U+FFFD, and
 * nesting deeper than `limits.jsonDepth` is a 413 before JSON.parse runs.
 */
export function installJsonBodyParser(app: FastifyInstance, limits: Pick<HttpLimits, 'jsonDepth'>): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(new HttpError(400, 'the request body is not valid UTF-8; send JSON encoded as UTF-8'), undefined);
      return;
    }
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    if (jsonDepthExceeds(text, limits.jsonDepth)) {
      done(
        new HttpError(
          413,
          `the JSON body is nested deeper than the limit of ${limits.jsonDepth} levels (TAGGER_MAX_JSON_DEPTH)`,
        ),
        undefined,
      );
      return;
    }
    try {
      // JSON.parse defines own properties only, so a `__proto__` key cannot change any prototype.
      done(null, JSON.parse(text));
    } catch (error) {
      // The scanner and JSON.parse agree on RFC 8259; the fallback only guards against a disagreement.
      const problem = findJsonProblem(text) ?? { position: 0, message: (error as Error).message };
      done(new JsonDecodeError(problem.message, problem.position), undefined);
    }
  });
}
