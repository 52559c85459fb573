/** The value checks training arguments are validated with (args.ts, member-args.ts): one message style. */
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
