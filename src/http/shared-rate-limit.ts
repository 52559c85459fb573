/**
 * The rate-limit counters shared by every worker and replica: a store for @fastify/rate-limit kept in
 * Redis (ioredis). The plugin ships a Redis store of its own, but with `skipOnError` it swallows a
 * failing Redis without a trace; this one is written here (a Lua INCR + PEXPIRE, as the plugin's) so
 * that every request let through unchecked is counted (`tagger_rate_limit_store_errors_total`) and
 * logged (at most once per LOG_EVERY_MS, with how many were suppressed).
 *
 * Fail open, fast: a Redis that is down or slow must not fail or stall requests. Commands are not queued
 * while disconnected (`enableOfflineQueue: false` rejects them at once), a connected but hung Redis
 * times out after COMMAND_TIMEOUT_MS, and the client reconnects in the background.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { HttpMetrics } from './observability.js';

/** A Redis that does not answer within this costs each request at most this much. */
const COMMAND_TIMEOUT_MS = 250;
const CONNECT_TIMEOUT_MS = 1_000;
const LOG_EVERY_MS = 10_000;
const CONNECT_WAIT_MS = 2_000;
/** Keys of every Tagger deployment sharing one Redis: `tagger:rate-limit:<client>`. */
const KEY_PREFIX = 'tagger:rate-limit:';

// INCR, then start the window on the first hit; answers the count and the window's remaining ms.
const INCREMENT_SCRIPT = `
local current = redis.call('INCR', KEYS[1])
if current == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return {current, tonumber(ARGV[1])}
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}
`;

type IncrCallback = (error: Error | null, result?: { current: number; ttl: number }) => void;

/** What @fastify/rate-limit calls on a store (its documented `store` option). */
export interface RateLimitStore {
  incr(key: string, callback: IncrCallback, timeWindow: number, max: number): void;
  child(routeOptions: unknown): RateLimitStore;
}

interface RedisWithScript extends Redis {
  taggerRateLimit(key: string, windowMs: number): Promise<[number, number]>;
}

export interface SharedRateLimit {
  /** The store class to pass as @fastify/rate-limit's `store` (the plugin constructs it). */
  Store: new (
    ...args: unknown[]
  ) => RateLimitStore;
  /**
   * Resolves once Redis is connected, or after CONNECT_WAIT_MS if it is not: the server waits for it
   * before listening, so a healthy Redis counts the very first requests, and a dead one delays startup
   * only this long.
   */
  connected: Promise<void>;
  close(): Promise<void>;
}

/** Query parameters ioredis would read a credential from (`password`, `sentinelPassword`, …). */
const SECRET_PARAMETER = /pass|pwd|secret|token|key|auth|cred/i;

/**
 * Shows a Redis URL without the credentials ioredis reads from it: the password of the userinfo
 * (`redis://:p@h`, `redis://user:p@h`) and query parameters such as `?password=` or `?sentinelPassword=`
 * (ioredis takes every query parameter as an option; names are matched as it decodes them), shown as
 * `***`; the fragment is dropped.
 * @example redactRedisUrl('redis://h:6379/0?password=s3cret') // 'redis://h:6379/0?password=***'
 */
export function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'an invalid Redis URL';
  }
  if (parsed.password) parsed.password = '***';
  // A password with an unencoded `/` ends up in the path (`redis://u:1/pw@h`): not shown either.
  if (parsed.pathname.includes('@')) parsed.pathname = '/***';
  parsed.hash = '';
  if (parsed.search === '') return parsed.href;
  // Rebuilt by hand: URLSearchParams would re-encode the values it keeps.
  const query = parsed.search
    .slice(1)
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=');
      const name = equals < 0 ? part : part.slice(0, equals);
      let decoded: string;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        return '***';
      }
      return equals >= 0 && SECRET_PARAMETER.test(decoded) ? `${name}=***` : part;
    })
    .join('&');
  parsed.search = '';
  return `${parsed.href}?${query}`;
}

/**
 * Connects to Redis (in the background: a Redis that is down at startup only means fail-open until it
 * is up) and builds the store.
 */
export async function sharedRateLimit(
  url: string,
  metrics: HttpMetrics,
  log: FastifyBaseLogger,
): Promise<SharedRateLimit> {
  // Loaded only when Redis is configured: ioredis and its dependencies cost ~20 MB of RSS.
  const { Redis: RedisClient } = await import('ioredis');
  const redis = new RedisClient(url, {
    enableOfflineQueue: false,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    // Reconnect forever, at most every 2 s: the counters come back as soon as Redis does.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  }) as RedisWithScript;
  redis.defineCommand('taggerRateLimit', { numberOfKeys: 1, lua: INCREMENT_SCRIPT });
  const where = redactRedisUrl(url);

  let lastLog = 0;
  let suppressed = 0;
  const report = (error: Error, what: string): void => {
    const now = Date.now();
    if (now - lastLog < LOG_EVERY_MS) {
      suppressed++;
      return;
    }
    log.warn(
      { redis: where, error: error.message, suppressedSinceLastLog: suppressed },
      `${what}; rate limits are not enforced meanwhile (fail open)`,
    );
    lastLog = now;
    suppressed = 0;
  };
  // ioredis emits connection errors as events; without a listener it would print them to stderr.
  redis.on('error', (error: Error) => report(error, 'the shared rate-limit store (Redis) is unreachable'));
  redis.on('ready', () => {
    if (lastLog > 0) log.info({ redis: where }, 'the shared rate-limit store (Redis) is reachable again');
  });

  class RedisRateLimitStore implements RateLimitStore {
    incr(key: string, callback: IncrCallback, timeWindow: number): void {
      redis.taggerRateLimit(KEY_PREFIX + key, timeWindow).then(
        ([current, ttl]) => callback(null, { current, ttl }),
        (error: Error) => {
          metrics.rateLimitStoreErrors.inc();
          report(error, 'a rate-limit check could not reach Redis');
          // With skipOnError the plugin lets the request through.
          callback(error);
        },
      );
    }
    child(): RateLimitStore {
      return this;
    }
  }
  const connected = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, CONNECT_WAIT_MS);
    timer.unref();
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return {
    Store: RedisRateLimitStore,
    connected,
    close: async () => {
      redis.disconnect();
    },
  };
}
