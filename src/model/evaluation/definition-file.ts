/**
 * Checks for the definition files a user hands to training (a behaviour suite, slice definitions),
 * already parsed from JSON or YAML. Every message names the file and the path of the bad value
 * (`suite.yaml: cases[3].text`), because these files are written by hand.
 */
import { ModelInputError } from '../errors.js';

/** Where a value sits: the file it came from and its path inside the file. */
export interface Where {
  source: string;
  path: string;
}

export const at = (where: Where, key: string | number): Where => ({
  source: where.source,
  path: typeof key === 'number' ? `${where.path}[${key}]` : where.path === '' ? key : `${where.path}.${key}`,
});

export function invalid(where: Where, problem: string): ModelInputError {
  return new ModelInputError(`${where.source}: ${where.path === '' ? 'the file' : where.path} ${problem}`);
}

const describe = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'a list'
      : typeof value === 'object'
        ? 'a mapping'
        : JSON.stringify(value);

export function record(value: unknown, where: Where): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(where, `must be a mapping (an object), got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/** A mapping with only these keys: a typo in a key must not silently become "not given". */
export function onlyKeys(value: Record<string, unknown>, allowed: readonly string[], where: Where): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw invalid(at(where, key), `is not a known key; allowed here: ${allowed.join(', ')}`);
    }
  }
}

export function list(value: unknown, where: Where): unknown[] {
  if (!Array.isArray(value)) throw invalid(where, `must be a list, got ${describe(value)}`);
  return value;
}

export function nonEmptyString(value: unknown, where: Where): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw invalid(where, `must be a non-empty string, got ${describe(value)}`);
  }
  return value;
}

export function oneOf<T extends string>(value: unknown, allowed: readonly T[], where: Where): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalid(where, `must be one of ${allowed.join(', ')}, got ${describe(value)}`);
  }
  return value as T;
}

export function integerIn(value: unknown, min: number, max: number, where: Where): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(where, `must be a whole number from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

/** Names must be unique: results and metrics are keyed by them. */
export function uniqueNames(names: readonly string[], where: Where, what: string): void {
  const seen = new Set<string>();
  for (const [index, name] of names.entries()) {
    if (seen.has(name)) throw invalid(at(at(where, index), 'name'), `repeats the ${what} name '${name}'`);
    seen.add(name);
  }
}
