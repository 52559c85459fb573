/** The HTTP settings of `tagger serve` (what it passes to createApp), from flags, variables or a file. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseApiKeys, resolveHttpOptions } from '../../src/http/index.js';
import { resolveServeConfig, StartupError } from '../../src/server/config.js';
import { useTempDir } from '../support/temp-dir.js';

const httpOptionsFromEnv = (env: NodeJS.ProcessEnv) => resolveServeConfig({}, env).http;

const scratch = useTempDir('tagger-keys-');

describe('HTTP settings from the environment', () => {
  it('no variable: the defaults (no keys, no rate limit, 256 in flight)', () => {
    expect(httpOptionsFromEnv({})).toBeUndefined();
    const options = resolveHttpOptions(resolveServeConfig({}, {}).http);
    expect(options).toMatchObject({
      apiKeys: [],
      rateLimit: null,
      maxInFlight: 256,
      maxEventLoopDelayMs: 0,
      limits: {
        bodyBytes: 1_048_576,
        texts: 1000,
        textLength: 10_000,
        jsonDepth: 32,
        requestTimeoutMs: 30_000,
      },
    });
  });

  it('reads every limit and switch', () => {
    const options = resolveHttpOptions(
      httpOptionsFromEnv({
        TAGGER_MAX_BODY_BYTES: '2048',
        TAGGER_MAX_TEXTS: '5',
        TAGGER_MAX_TEXT_LENGTH: '100',
        TAGGER_MAX_JSON_DEPTH: '8',
        TAGGER_REQUEST_TIMEOUT_MS: '1500',
        TAGGER_RATE_LIMIT_MAX: '10',
        TAGGER_RATE_LIMIT_WINDOW_MS: '1000',
        TAGGER_MAX_IN_FLIGHT: '4',
        TAGGER_MAX_EVENT_LOOP_DELAY_MS: '500',
        TAGGER_PROTECT_DOCS: 'true',
        TAGGER_RETRY_AFTER_S: '9',
      }),
    );
    expect(options).toMatchObject({
      limits: { bodyBytes: 2048, texts: 5, textLength: 100, jsonDepth: 8, requestTimeoutMs: 1500 },
      rateLimit: { max: 10, windowMs: 1000 },
      maxInFlight: 4,
      maxEventLoopDelayMs: 500,
      protectDocs: true,
      retryAfterSeconds: 9,
    });
    expect(httpOptionsFromEnv({ TAGGER_RATE_LIMIT_MAX: '3' })?.rateLimit).toEqual({
      max: 3,
      windowMs: 60_000,
    });
  });

  it('keys from the variable and from a file with comments and blank lines, without duplicates', async () => {
    const file = join(scratch.path, 'keys.txt');
    await writeFile(
      file,
      '# production keys\nalpha-key\n\n  beta-key   # the CI key\n#gamma-key\nalpha-key\n',
    );
    expect(
      httpOptionsFromEnv({ TAGGER_API_KEYS: ' one , two,,', TAGGER_API_KEYS_FILE: file })?.apiKeys,
    ).toEqual(['one', 'two', 'alpha-key', 'beta-key']);
    expect(parseApiKeys('a,b\nc # d')).toEqual(['a', 'b', 'c']);
  });

  it.each([
    [{ TAGGER_MAX_TEXTS: '0' }, 'TAGGER_MAX_TEXTS'],
    [{ TAGGER_MAX_BODY_BYTES: '1mb' }, 'TAGGER_MAX_BODY_BYTES'],
    [{ TAGGER_PROTECT_DOCS: 'maybe' }, 'TAGGER_PROTECT_DOCS'],
    [{ TAGGER_API_KEYS_FILE: '/nonexistent/keys' }, 'cannot read'],
  ])('refuses %j at startup with a message naming it', (env, words) => {
    expect(() => resolveServeConfig({}, env)).toThrow(StartupError);
    expect(() => resolveServeConfig({}, env)).toThrow(words);
  });

  it('refuses a key file without keys (it would silently turn authentication off)', async () => {
    const file = join(scratch.path, 'empty.txt');
    await writeFile(file, '# nothing yet\n\n');
    expect(() => resolveServeConfig({}, { TAGGER_API_KEYS_FILE: file })).toThrow('holds no keys');
  });
});
