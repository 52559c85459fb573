/**
 * The HTTP layer's protection and limit settings, one typed object with documented defaults
 * (src/http/README.md has the table with the environment variables that set them; src/server/config.ts reads
 * those). Every field has a default, so `createApp` works without any of them (tests, docs app).
 */

export interface HttpLimits {
  /** Largest request body in bytes; larger bodies are a 413 before any parsing. */
  bodyBytes: number;
  /** Most entries in `texts` of one predict request; more is a 413. */
  texts: number;
  /** Most characters in one `text`; longer is a 422 `value_error.any_str.max_length`. */
  textLength: number;
  /** Deepest nesting of arrays/objects in a JSON body; deeper is a 413 (checked before JSON.parse). */
  jsonDepth: number;
  /**
   * Time to receive a request (Node answers 408 after it) and, separately, to handle it (a 504 envelope
   * after it). 0 disables both.
   */
  requestTimeoutMs: number;
}

export interface RateLimitOptions {
  /** Requests allowed per client (API key, else address) in one window. */
  max: number;
  windowMs: number;
}

/**
 * What a cascade run answers for a text its fast model is unsure of when the encoder cannot take it (its
 * queue full, the request over its work limit, its thread failed): the fast model's answer marked
 * `fast_degraded` (`degrade`), or the refusal an encoder run gets (`shed`: 503 + Retry-After, or 413).
 */
export const CASCADE_OVERLOADS = ['degrade', 'shed'] as const;
export type CascadeOverload = (typeof CASCADE_OVERLOADS)[number];

export interface HttpOptions {
  limits: HttpLimits;
  /** Accepted API keys; empty means no authentication (the default, as in the spec). */
  apiKeys: readonly string[];
  /** Whether /docs, /redoc and /openapi.json need a key too when keys are configured. */
  protectDocs: boolean;
  /** null: no rate limiting (the default). */
  rateLimit: RateLimitOptions | null;
  /** Most requests handled at once (health and /metrics not counted); more are shed with 503. 0: no cap. */
  maxInFlight: number;
  /** Mean event-loop delay (ms, sampled every second) above which requests are shed with 503. 0: off. */
  maxEventLoopDelayMs: number;
  /** Retry-After (seconds) sent with 503s from load shedding and timeouts. */
  retryAfterSeconds: number;
  /**
   * Redis shared by every worker and replica (`redis://[user:password@]host:port[/db]`): rate limits are
   * counted there, across the whole deployment. null: each process counts on its own.
   */
  redisUrl: string | null;
  /** Cascade runs: degrade to the fast model's answer when the encoder cannot take a text, or shed. */
  cascadeOverload: CascadeOverload;
}

export const HTTP_DEFAULTS: HttpOptions = Object.freeze({
  limits: Object.freeze({
    // 1 MiB holds ~1,000 texts of ~1,000 characters, well above interactive use.
    bodyBytes: 1024 * 1024,
    texts: 1000,
    textLength: 10_000,
    // A PredictPayload is 3 levels deep; 32 leaves room for clients that wrap it while stopping
    // pathological nesting before it costs parse time.
    jsonDepth: 32,
    requestTimeoutMs: 30_000,
  }),
  apiKeys: Object.freeze([]) as readonly string[],
  protectDocs: false,
  rateLimit: null,
  maxInFlight: 256,
  // Off by default: a model load or reload decodes synchronously and would otherwise make every
  // request of the following sampling second a 503. Opt in (e.g. 1000) where that trade-off suits.
  maxEventLoopDelayMs: 0,
  retryAfterSeconds: 5,
  redisUrl: null,
  // A fast answer marked as such serves the caller better than a 503 for texts the fast model already
  // answered; a caller who needs the encoder's answer or none sets `shed`.
  cascadeOverload: 'degrade',
});

/** Settings given partially (per field, limits per limit) on top of the defaults. */
export type HttpOptionsInput = Partial<Omit<HttpOptions, 'limits'>> & { limits?: Partial<HttpLimits> };

const defined = <T extends object>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;

export function resolveHttpOptions(input: HttpOptionsInput = {}): HttpOptions {
  return {
    ...HTTP_DEFAULTS,
    ...defined(input),
    limits: { ...HTTP_DEFAULTS.limits, ...defined(input.limits ?? {}) },
  };
}
