/** Training arguments' declarations: the value checks (one message style), defaults and search ranges. */
import { ModelInputError } from './errors.js';

/** Returns the checked value or throws a ModelInputError naming `key` (e.g. `members[1].C`). */
export type Check = (key: string, value: unknown) => unknown;

export const fail = (key: string, value: unknown, expected: string): never => {
  throw new ModelInputError(
    `model/args: "${key}" must be ${expected}, got ${JSON.stringify(value) ?? String(value)}; fix it in the training args JSON`,
  );
};

export const bool: Check = (key, v) => (typeof v === 'boolean' ? v : fail(key, v, 'true or false'));

export const num =
  (min: number, max: number, opts: { integer?: boolean; minExclusive?: boolean } = {}): Check =>
  (key, v) => {
    const what = `${opts.integer ? 'an integer' : 'a number'} in ${opts.minExclusive ? '(' : '['}${min}, ${max}]`;
    if (typeof v !== 'number' || !Number.isFinite(v)) return fail(key, v, what);
    if (opts.integer && !Number.isInteger(v)) return fail(key, v, what);
    if (v < min || v > max || (opts.minExclusive && v === min)) return fail(key, v, what);
    return v;
  };

export const oneOf =
  (values: readonly string[]): Check =>
  (key, v) =>
    typeof v === 'string' && values.includes(v) ? v : fail(key, v, `one of ${values.join(', ')}`);

/**
 * The range `tagger optimize` draws a hyper-parameter from: log-uniform or uniform between two numbers
 * (rounded to 4 significant digits, so logged params stay readable), or one of a list of values.
 */
export type SearchRange =
  | { readonly kind: 'log-uniform'; readonly low: number; readonly high: number }
  | { readonly kind: 'uniform'; readonly low: number; readonly high: number }
  | { readonly kind: 'choice'; readonly values: readonly unknown[] };

export const logUniform = (low: number, high: number): SearchRange => ({ kind: 'log-uniform', low, high });
export const uniform = (low: number, high: number): SearchRange => ({ kind: 'uniform', low, high });
export const choice = (values: readonly unknown[]): SearchRange => ({ kind: 'choice', values });

/** One draw from `range` (one call of `random`). */
export function drawFrom(range: SearchRange, random: () => number): unknown {
  if (range.kind === 'choice') return range.values[Math.floor(random() * range.values.length)];
  const { low, high } = range;
  const value =
    range.kind === 'uniform'
      ? low + random() * (high - low)
      : Math.exp(Math.log(low) + random() * (Math.log(high) - Math.log(low)));
  return Number(value.toPrecision(4));
}

/**
 * A training argument's declaration: how a given value is checked, its default, and the range `tagger
 * optimize` draws it from (none: the search leaves it as the base args set it). Each classifier family
 * declares its own hyper-parameters this way (classifiers/); args.ts assembles the training args from them.
 */
export interface HyperParam<T = unknown> {
  readonly check: Check;
  readonly default: T;
  readonly search?: SearchRange;
}

/** The defaults of a table of declarations, by name. */
export const defaultsOf = <T>(params: { readonly [K in keyof T]: HyperParam<T[K]> }): T =>
  Object.fromEntries(Object.entries(params).map(([key, p]) => [key, (p as HyperParam).default])) as T;
