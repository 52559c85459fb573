/**
 * HTTP transport of the REST run store: credentials, timeouts, retries and the mapping of MLflow's
 * error answers to `TrackingError`s. Knows nothing about runs; `rest-store.ts` builds on it.
 *
 * Behaviour follows MLflow's Python client (`mlflow/utils/rest_utils.py`, `request_utils.py`) where it
 * matters for interoperability: the same environment variables, Basic before Bearer, the same set of
 * transient HTTP statuses. Messages never contain credentials: the base URL is stored without userinfo,
 * and every message is passed through `redact()` before it leaves this module.
 */
import { channel } from 'node:diagnostics_channel';
import { redactUri } from '../redact.js';
import { TrackingError, type TrackingErrorCode } from '../store.js';
import type { Answer } from './rest-json.js';

/**
 * The diagnostics channel each retry is published on (a RetryNotice), so whoever runs the store can say
 * what it is waiting for (the CLI prints it); nothing is published without a subscriber.
 */
export const RETRY_CHANNEL = 'tagger:tracking:retry';
const retryChannel = channel(RETRY_CHANNEL);

/** One retry of a failed call to the tracking server, as published on RETRY_CHANNEL. */
export interface RetryNotice {
  /** The server (without credentials). */
  uri: string;
  /** Why the last attempt failed (the error a last failure would throw; never holds credentials). */
  message: string;
  /** This retry's number (1-based) and how many there may be (MLFLOW_HTTP_REQUEST_MAX_RETRIES). */
  retry: number;
  retries: number;
  /** How long until it is sent. */
  delayMs: number;
}

/** Statuses MLflow's client retries (`_TRANSIENT_FAILURE_RESPONSE_CODES`). */
const TRANSIENT_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
/**
 * Statuses that say the server did not act on the request, so even a non-idempotent create may be
 * re-sent without risking a duplicate (429: rate limited before handling; 503: not accepted).
 */
const NOT_PROCESSED_STATUSES = new Set([429, 503]);
/** Socket errors raised before a request reached the server: safe to re-send anything. */
const NOT_SENT_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RETRIES = 5;
const DEFAULT_BACKOFF_BASE_MS = 500;
const DEFAULT_BACKOFF_MAX_MS = 10_000;
/** A server asking for a longer pause than this is treated as unavailable rather than waited for. */
const MAX_RETRY_AFTER_MS = 60_000;
/** Server messages can embed whole SQL statements; keep errors readable. */
const MAX_SERVER_MESSAGE_CHARS = 300;

export interface RestHttpOptions {
  /** Tracking URI, `http(s)://[user:password@]host[:port][/prefix]`. */
  uri: string;
  /** Where credentials and tuning variables are read from; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Per-attempt timeout; default `MLFLOW_HTTP_REQUEST_TIMEOUT` (seconds) or 30 s. */
  timeoutMs?: number;
  /** Retries after the first attempt; default `MLFLOW_HTTP_REQUEST_MAX_RETRIES` or 5. */
  maxRetries?: number;
  /** First backoff delay; doubled per retry, plus up to the same amount of random jitter. */
  backoffBaseMs?: number;
  /** Upper bound of one backoff delay. */
  backoffMaxMs?: number;
}

export type Credentials =
  | { kind: 'none' }
  | { kind: 'basic'; username: string; password: string; source: 'env' | 'uri' }
  | { kind: 'bearer'; token: string };

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute URL (already resolved against the base; never carrying userinfo). */
  url: URL;
  /** JSON-serialisable body (sent as `application/json`) or raw bytes. */
  json?: unknown;
  bytes?: Uint8Array;
  /**
   * False for calls that create something (runs/create, experiments/create): they are re-sent only
   * when the server provably did not process them. See `isRetryable`.
   */
  idempotent: boolean;
  /** What the call is for, used in messages: "create run in experiment 12". */
  what: string;
  /**
   * Asked before each retry of a failure the server answered with a retryable status: an error it
   * returns is thrown at once instead of retrying (a download the proxy fails with 500 because the file
   * is not there, say). Not asked when the server could not be reached or timed out.
   */
  insteadOfRetry?: (status: number) => Promise<TrackingError | undefined>;
}

/**
 * The REST store's calls, lent to its registry and run-outputs modules (same transport, retries and
 * error mapping, answers checked by a validator).
 */
export interface RestCalls {
  readonly displayUri: string;
  call<T>(spec: RequestSpec, expected: Answer<T>): Promise<T>;
  /** Like `call`, null for MLflow's RESOURCE_DOES_NOT_EXIST. */
  callOrNull<T>(spec: RequestSpec, expected: Answer<T>): Promise<T | null>;
  api(path: string, query?: Record<string, string | undefined>): URL;
}

export interface RawResponse {
  status: number;
  contentType: string;
  body: Uint8Array;
}

/** Parses a tracking URI; throws INVALID_ARGUMENT for anything but http(s). */
export function parseTrackingUri(uri: string): { base: URL; username: string; password: string } {
  let parsed: URL;
  try {
    parsed = new URL(uri);
  } catch (cause) {
    throw new TrackingError('INVALID_ARGUMENT', `tracking: '${redactUri(uri)}' is not a valid URI`, {
      cause,
    });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TrackingError(
      'INVALID_ARGUMENT',
      `tracking: the REST store needs an http(s) URI, got '${redactUri(uri)}'`,
    );
  }
  const username = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = '';
  parsed.password = '';
  // Query and fragment have no meaning for a tracking URI and could carry secrets.
  parsed.search = '';
  parsed.hash = '';
  if (!parsed.pathname.endsWith('/')) parsed.pathname += '/';
  return { base: parsed, username, password };
}

/** Best effort for strings that are not even URLs: drop anything between `//` and `@`. */
function stripUserinfoText(text: string): string {
  return text.replace(/\/\/[^/@]*@/, '//');
}

/** MLflow's precedence: username+password (Basic) wins over a token (Bearer). */
export function resolveCredentials(
  env: NodeJS.ProcessEnv,
  uriUser: string,
  uriPassword: string,
): Credentials {
  const username = env.MLFLOW_TRACKING_USERNAME;
  const password = env.MLFLOW_TRACKING_PASSWORD;
  if (username && password) return { kind: 'basic', username, password, source: 'env' };
  const token = env.MLFLOW_TRACKING_TOKEN;
  if (token) return { kind: 'bearer', token };
  if (uriUser) return { kind: 'basic', username: uriUser, password: uriPassword, source: 'uri' };
  return { kind: 'none' };
}

function authorizationHeader(credentials: Credentials): string | null {
  switch (credentials.kind) {
    case 'basic':
      return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`, 'utf8').toString('base64')}`;
    case 'bearer':
      return `Bearer ${credentials.token}`;
    case 'none':
      return null;
  }
}

function positiveNumberFromEnv(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new TrackingError('INVALID_ARGUMENT', `tracking: ${name}='${raw}' is not a non-negative number`);
  }
  return value;
}

/** Retry-After is either delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

interface AttemptFailure {
  /** Retrying is allowed for this failure given the request's idempotency. */
  retryable: boolean;
  error: TrackingError;
  retryAfterMs: number | null;
  /** The HTTP status when the server answered (a transient status); absent for network failures. */
  httpStatus?: number;
}

export class RestHttpClient {
  readonly base: URL;
  readonly displayUri: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly credentials: Credentials;
  private readonly authorization: string | null;
  private readonly secrets: string[];
  /** Aborts in-flight requests and backoff sleeps on close(). */
  private readonly closing = new AbortController();

  constructor(options: RestHttpOptions) {
    const env = options.env ?? process.env;
    const { base, username, password } = parseTrackingUri(options.uri);
    this.base = base;
    this.displayUri = base.href.replace(/\/$/, '');
    this.credentials = resolveCredentials(env, username, password);
    this.authorization = authorizationHeader(this.credentials);
    this.secrets = collectSecrets(this.credentials, this.authorization);

    const envTimeoutSeconds = positiveNumberFromEnv(env, 'MLFLOW_HTTP_REQUEST_TIMEOUT');
    this.timeoutMs =
      options.timeoutMs ?? (envTimeoutSeconds !== undefined ? envTimeoutSeconds * 1000 : DEFAULT_TIMEOUT_MS);
    this.maxRetries = Math.floor(
      options.maxRetries ??
        positiveNumberFromEnv(env, 'MLFLOW_HTTP_REQUEST_MAX_RETRIES') ??
        DEFAULT_MAX_RETRIES,
    );
    this.backoffBaseMs = options.backoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS;
    this.backoffMaxMs = options.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS;
    if (!(this.timeoutMs > 0)) {
      throw new TrackingError(
        'INVALID_ARGUMENT',
        `tracking: timeout must be positive, got ${this.timeoutMs} ms`,
      );
    }
  }

  /** Resolves a path relative to the tracking URI, keeping any path prefix (`http://h/mlflow/`). */
  url(path: string, query?: Record<string, string | undefined>): URL {
    const url = new URL(path.replace(/^\/+/, ''), this.base);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    return url;
  }

  /** Removes every known secret from a text (belt and braces: server messages echo headers at times). */
  redact(text: string): string {
    let out = stripUserinfoText(text);
    for (const secret of this.secrets) out = out.split(secret).join('***');
    return out;
  }

  close(): void {
    if (!this.closing.signal.aborted) this.closing.abort();
  }

  /** Performs the request with retries; returns the final response (any status) or throws. */
  async send(spec: RequestSpec): Promise<RawResponse> {
    let attempt = 0;
    for (;;) {
      if (this.closing.signal.aborted) {
        throw new TrackingError('UNAVAILABLE', `tracking: the store for ${this.displayUri} is closed`);
      }
      const outcome = await this.attempt(spec);
      if ('status' in outcome) return outcome;
      if (!outcome.retryable || attempt >= this.maxRetries) {
        if (outcome.retryable && this.maxRetries > 0) {
          throw new TrackingError(
            outcome.error.code,
            `${outcome.error.message} (gave up after ${attempt + 1} attempts)`,
            { cause: outcome.error },
          );
        }
        throw outcome.error;
      }
      const known =
        outcome.httpStatus === undefined ? undefined : await spec.insteadOfRetry?.(outcome.httpStatus);
      if (known) throw known;
      const backoff = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** attempt);
      const jitter = Math.random() * backoff;
      const delay = outcome.retryAfterMs ?? backoff + jitter;
      attempt += 1;
      if (retryChannel.hasSubscribers) {
        retryChannel.publish({
          uri: this.displayUri,
          message: outcome.error.message,
          retry: attempt,
          retries: this.maxRetries,
          delayMs: delay,
        } satisfies RetryNotice);
      }
      await this.sleep(delay);
    }
  }

  private async attempt(spec: RequestSpec): Promise<RawResponse | AttemptFailure> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.authorization) headers.Authorization = this.authorization;
    let body: string | Uint8Array | undefined;
    if (spec.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(spec.json);
    } else if (spec.bytes !== undefined) {
      headers['Content-Type'] = 'application/octet-stream';
      body = spec.bytes;
    }
    const where = `${spec.method} ${this.redact(spec.url.href)}`;
    const signal = AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.closing.signal]);
    try {
      const response = await fetch(spec.url, {
        method: spec.method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal,
        // Redirects would carry the Authorization header to wherever the server points.
        redirect: 'manual',
      });
      // The body is read under the same signal: a server that stalls mid-body times out too.
      const bytes = new Uint8Array(await response.arrayBuffer());
      const raw: RawResponse = {
        status: response.status,
        contentType: response.headers.get('content-type') ?? '',
        body: bytes,
      };
      if (TRANSIENT_STATUSES.has(response.status)) {
        const retryAfter = parseRetryAfter(response.headers.get('retry-after'), Date.now());
        const tooLong = retryAfter !== null && retryAfter > MAX_RETRY_AFTER_MS;
        return {
          retryable: !tooLong && (spec.idempotent || NOT_PROCESSED_STATUSES.has(response.status)),
          retryAfterMs: retryAfter,
          error: this.errorFromResponse(spec, raw),
          httpStatus: response.status,
        };
      }
      return raw;
    } catch (cause) {
      if (this.closing.signal.aborted) {
        return {
          retryable: false,
          retryAfterMs: null,
          error: new TrackingError(
            'UNAVAILABLE',
            `tracking: the store for ${this.displayUri} was closed during ${spec.what}`,
          ),
        };
      }
      if (cause instanceof DOMException && cause.name === 'TimeoutError') {
        return {
          // A timed-out create may have been applied: re-sending it could create a second run.
          retryable: spec.idempotent,
          retryAfterMs: null,
          error: new TrackingError(
            'UNAVAILABLE',
            `tracking: ${where} (${spec.what}) got no complete answer within ${this.timeoutMs} ms; ` +
              `check that ${this.displayUri} is reachable and healthy, or raise MLFLOW_HTTP_REQUEST_TIMEOUT` +
              (spec.idempotent ? '' : '; the request may have been applied on the server'),
          ),
        };
      }
      const code = socketErrorCode(cause);
      const notSent = code !== null && NOT_SENT_ERROR_CODES.has(code);
      return {
        retryable: spec.idempotent || notSent,
        retryAfterMs: null,
        error: new TrackingError(
          'UNAVAILABLE',
          `tracking: cannot reach ${this.displayUri} for ${spec.what} (${code ?? describeCause(cause)}); ` +
            'check that the MLflow tracking server is running and MLFLOW_TRACKING_URI is right' +
            (spec.idempotent || notSent ? '' : '; the request may have been applied on the server'),
          { cause },
        ),
      };
    }
  }

  /** Maps a non-2xx answer to a TrackingError, using MLflow's `error_code` when there is one. */
  errorFromResponse(spec: RequestSpec, response: RawResponse): TrackingError {
    const where = `${spec.method} ${this.redact(spec.url.href)}`;
    const mlflowError = parseMlflowError(response.body);
    const serverMessage = mlflowError ? `: ${this.redact(truncate(mlflowError.message))}` : '';
    const errorCode = mlflowError?.errorCode;
    if (response.status === 401 || errorCode === 'UNAUTHENTICATED') {
      const sent =
        this.credentials.kind === 'none'
          ? 'no credentials were sent'
          : this.credentials.kind === 'bearer'
            ? 'the token from MLFLOW_TRACKING_TOKEN was rejected'
            : this.credentials.source === 'env'
              ? `the password of user '${this.credentials.username}' was rejected`
              : `the credentials in the tracking URI for user '${this.credentials.username}' were rejected`;
      return new TrackingError(
        'UNAUTHENTICATED',
        `tracking: ${this.displayUri} requires authentication for ${spec.what} (HTTP ${response.status}; ${sent}); ` +
          'check MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD or MLFLOW_TRACKING_TOKEN',
      );
    }
    if (response.status === 403 || errorCode === 'PERMISSION_DENIED') {
      return new TrackingError(
        'PERMISSION_DENIED',
        `tracking: ${this.displayUri} denied ${spec.what} (HTTP ${response.status})${serverMessage}; ` +
          'ask an MLflow admin for permission on the experiment or use other credentials',
      );
    }
    const code: TrackingErrorCode = mlflowError
      ? codeForMlflowError(mlflowError.errorCode, response.status)
      : response.status >= 500
        ? 'UNAVAILABLE'
        : 'MALFORMED';
    if (!mlflowError) {
      const kind = response.contentType.split(';')[0]?.trim() || 'no content type';
      return new TrackingError(
        code,
        `tracking: ${where} (${spec.what}) answered HTTP ${response.status} with a non-MLflow response ` +
          `(${kind}, ${response.body.byteLength} bytes); check that ${this.displayUri} is an MLflow tracking ` +
          'server (including any path prefix) and that it is healthy',
      );
    }
    return new TrackingError(
      code,
      `tracking: ${where} (${spec.what}) failed with HTTP ${response.status} ${mlflowError.errorCode}${serverMessage}`,
    );
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.closing.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.closing.signal.addEventListener('abort', done, { once: true });
    });
  }
}

function collectSecrets(credentials: Credentials, authorization: string | null): string[] {
  const secrets: string[] = [];
  if (credentials.kind === 'basic' && credentials.password) {
    secrets.push(credentials.password, encodeURIComponent(credentials.password));
  }
  if (credentials.kind === 'bearer') secrets.push(credentials.token);
  if (authorization) secrets.push(authorization.replace(/^\S+ /, ''));
  // Longest first, so a secret containing another is replaced whole.
  return [...new Set(secrets.filter((secret) => secret.length > 0))].sort((a, b) => b.length - a.length);
}

function codeForMlflowError(errorCode: string, status: number): TrackingErrorCode {
  switch (errorCode) {
    case 'RESOURCE_DOES_NOT_EXIST':
    case 'NOT_FOUND':
      return 'NOT_FOUND';
    case 'RESOURCE_ALREADY_EXISTS':
    case 'ALREADY_EXISTS':
      return 'ALREADY_EXISTS';
    case 'INVALID_PARAMETER_VALUE':
    case 'BAD_REQUEST':
    case 'INVALID_STATE':
    case 'RESOURCE_CONFLICT':
      return 'INVALID_ARGUMENT';
    case 'ENDPOINT_NOT_FOUND':
    case 'NOT_IMPLEMENTED':
      return 'UNSUPPORTED';
    default:
      if (status >= 500 || status === 429 || status === 408) return 'UNAVAILABLE';
      if (status === 404) return 'NOT_FOUND';
      return 'INVALID_ARGUMENT';
  }
}

/** `{"error_code": "...", "message": "..."}` (MlflowException.serialize_as_json), or null. */
function parseMlflowError(body: Uint8Array): { errorCode: string; message: string } | null {
  if (body.byteLength === 0 || body.byteLength > 1_000_000) return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(body).toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return null;
    const record = parsed as Record<string, unknown>;
    if (typeof record.error_code !== 'string') return null;
    return {
      errorCode: record.error_code,
      message: typeof record.message === 'string' ? record.message : '',
    };
  } catch {
    return null;
  }
}

function truncate(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_SERVER_MESSAGE_CHARS
    ? `${oneLine.slice(0, MAX_SERVER_MESSAGE_CHARS)}…`
    : oneLine;
}

/** undici wraps socket errors: `TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } })`. */
function socketErrorCode(error: unknown): string | null {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth += 1) {
    if (typeof current === 'object' && current !== null) {
      const code = (current as { code?: unknown }).code;
      if (typeof code === 'string' && /^E[A-Z]+$|^UND_ERR_/.test(code)) return code;
      current = (current as { cause?: unknown }).cause;
    } else {
      break;
    }
  }
  return null;
}

function describeCause(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
