/**
 * The HTTP settings from environment variables (src/config.ts calls this and wraps failures in its
 * StartupError). An empty variable counts as unset; see src/http/README.md for the table.
 */
import { readFileSync } from 'node:fs';
import { parseApiKeys } from './auth.js';
import type { HttpLimits, HttpOptionsInput } from './options.js';

export type { HttpOptionsInput } from './options.js';

/** A setting that cannot be used; the message names the variable and what it must be. */
export class HttpConfigError extends Error {
  override readonly name = 'HttpConfigError';
}

const value = (env: NodeJS.ProcessEnv, name: string): string | undefined => {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
};

function integer(env: NodeJS.ProcessEnv, name: string, min: number, max: number, what: string) {
  const raw = value(env, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new HttpConfigError(
      `${name} must be ${what}, an integer from ${min} to ${max}; got ${JSON.stringify(raw)}`,
    );
  }
  return Number(raw);
}

function boolean(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = value(env, name)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new HttpConfigError(`${name} must be true or false; got ${JSON.stringify(raw)}`);
}

/** Keys from TAGGER_API_KEYS (comma-separated) and TAGGER_API_KEYS_FILE (one per line, `#` comments). */
function apiKeys(env: NodeJS.ProcessEnv, readFile: (path: string) => string): string[] {
  const keys = parseApiKeys(value(env, 'TAGGER_API_KEYS') ?? '');
  const file = value(env, 'TAGGER_API_KEYS_FILE');
  if (file !== undefined) {
    let text: string;
    try {
      text = readFile(file);
    } catch (error) {
      throw new HttpConfigError(
        `TAGGER_API_KEYS_FILE: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
    const fromFile = parseApiKeys(text);
    if (fromFile.length === 0) {
      // An empty key file would silently turn authentication off: refuse to start instead.
      throw new HttpConfigError(`TAGGER_API_KEYS_FILE: ${file} holds no keys (one per line, # for comments)`);
    }
    keys.push(...fromFile);
  }
  return [...new Set(keys)];
}

/** Every variable read here; none set means the defaults (and `httpOptionsFromEnv` returns undefined). */
export const HTTP_ENV_VARIABLES = [
  'TAGGER_MAX_BODY_BYTES',
  'TAGGER_MAX_TEXTS',
  'TAGGER_MAX_TEXT_LENGTH',
  'TAGGER_MAX_JSON_DEPTH',
  'TAGGER_REQUEST_TIMEOUT_MS',
  'TAGGER_API_KEYS',
  'TAGGER_API_KEYS_FILE',
  'TAGGER_PROTECT_DOCS',
  'TAGGER_RATE_LIMIT_MAX',
  'TAGGER_RATE_LIMIT_WINDOW_MS',
  'TAGGER_MAX_IN_FLIGHT',
  'TAGGER_MAX_EVENT_LOOP_DELAY_MS',
  'TAGGER_RETRY_AFTER_S',
  'TAGGER_REDIS_URL',
] as const;

/**
 * The HTTP settings given in `env`, or undefined when none is (the defaults apply).
 * @example httpOptionsFromEnv({ TAGGER_MAX_TEXTS: '50' })?.limits?.texts // 50
 */
export function httpOptionsFromEnv(
  env: NodeJS.ProcessEnv,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): HttpOptionsInput | undefined {
  if (HTTP_ENV_VARIABLES.every((name) => value(env, name) === undefined)) return undefined;
  const limits: Partial<HttpLimits> = {};
  const set = <K extends keyof HttpLimits>(key: K, given: number | undefined) => {
    if (given !== undefined) limits[key] = given;
  };
  set('bodyBytes', integer(env, 'TAGGER_MAX_BODY_BYTES', 1024, 1024 ** 3, 'a size in bytes'));
  set('texts', integer(env, 'TAGGER_MAX_TEXTS', 1, 1_000_000, 'the most texts per request'));
  set('textLength', integer(env, 'TAGGER_MAX_TEXT_LENGTH', 1, 100_000_000, 'the most characters per text'));
  set('jsonDepth', integer(env, 'TAGGER_MAX_JSON_DEPTH', 3, 10_000, 'the deepest JSON nesting'));
  set(
    'requestTimeoutMs',
    integer(env, 'TAGGER_REQUEST_TIMEOUT_MS', 0, 3_600_000, 'a timeout in milliseconds (0: none)'),
  );

  const options: HttpOptionsInput = { limits, apiKeys: apiKeys(env, readFile) };
  const protectDocs = boolean(env, 'TAGGER_PROTECT_DOCS');
  if (protectDocs !== undefined) options.protectDocs = protectDocs;

  const rateMax = integer(env, 'TAGGER_RATE_LIMIT_MAX', 0, 1_000_000_000, 'requests per window (0: off)');
  const rateWindow = integer(env, 'TAGGER_RATE_LIMIT_WINDOW_MS', 1, 86_400_000, 'a window in milliseconds');
  if (rateMax !== undefined && rateMax > 0) {
    options.rateLimit = { max: rateMax, windowMs: rateWindow ?? RATE_LIMIT_WINDOW_DEFAULT_MS };
  }
  const inFlight = integer(
    env,
    'TAGGER_MAX_IN_FLIGHT',
    0,
    1_000_000,
    'the most concurrent requests (0: no cap)',
  );
  if (inFlight !== undefined) options.maxInFlight = inFlight;
  const delay = integer(
    env,
    'TAGGER_MAX_EVENT_LOOP_DELAY_MS',
    0,
    600_000,
    'a delay in milliseconds (0: off)',
  );
  if (delay !== undefined) options.maxEventLoopDelayMs = delay;
  const retry = integer(env, 'TAGGER_RETRY_AFTER_S', 1, 3600, 'seconds');
  if (retry !== undefined) options.retryAfterSeconds = retry;
  const redisUrl = value(env, 'TAGGER_REDIS_URL');
  if (redisUrl !== undefined) {
    if (!/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
      throw new HttpConfigError('TAGGER_REDIS_URL must be a redis:// or rediss:// URL');
    }
    options.redisUrl = redisUrl;
  }
  return options;
}

/** Window of TAGGER_RATE_LIMIT_MAX when TAGGER_RATE_LIMIT_WINDOW_MS is not set. */
export const RATE_LIMIT_WINDOW_DEFAULT_MS = 60_000;
