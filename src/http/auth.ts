/**
 * Optional API-key authentication. Keys come from TAGGER_API_KEYS / TAGGER_API_KEYS_FILE (read in
 * src/serve/config.ts with `parseApiKeys`); a client sends one as `Authorization: Bearer <key>` or
 * `X-API-Key: <key>`. Keys are compared as SHA-256 digests with `timingSafeEqual`, so neither the
 * length nor a matching prefix of a key leaks through response timing, and every configured key is
 * compared on every request (no early exit).
 */
import { hash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/**
 * Keys from a comma- or newline-separated text: blank entries are dropped and, in files, `#` starts a
 * comment (a whole line or the rest of one), so keys cannot contain `#` or `,`.
 * @example parseApiKeys('# ops\nk1\nk2 # ci') // ['k1', 'k2']
 */
export function parseApiKeys(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((entry) => entry.replace(/#.*$/, '').trim())
    .filter((entry) => entry !== '');
}

/** What a request presented: nothing, something that is no key of ours, or a valid key (by id). */
export type Credential =
  | { kind: 'missing' }
  | { kind: 'malformed'; reason: string }
  | { kind: 'invalid' }
  | { kind: 'valid'; keyId: string };

/** Node's one-shot `crypto.hash` (no Hash object per request): 1.1 µs vs 1.75 µs for createHash here. */
const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

export class ApiKeys {
  private readonly digests: readonly Buffer[];

  constructor(keys: readonly string[]) {
    this.digests = keys.map(digest);
  }

  get enabled(): boolean {
    return this.digests.length > 0;
  }

  /** The credential a request carries; `Authorization` wins over `X-API-Key` when both are sent. */
  identify(request: FastifyRequest): Credential {
    const authorization = request.headers.authorization;
    const apiKeyHeader = request.headers['x-api-key'];
    let presented: string | undefined;
    if (authorization !== undefined) {
      const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
      if (match === null) {
        return {
          kind: 'malformed',
          reason: 'the Authorization header must be `Bearer <key>`',
        };
      }
      presented = match[1]!;
    } else if (typeof apiKeyHeader === 'string') {
      presented = apiKeyHeader.trim();
    } else if (Array.isArray(apiKeyHeader)) {
      return { kind: 'malformed', reason: 'send one X-API-Key header, not several' };
    }
    if (presented === undefined || presented === '') return { kind: 'missing' };
    const given = digest(presented);
    let found = -1;
    for (let i = 0; i < this.digests.length; i++) {
      // No early exit: the time spent does not depend on which key (if any) matched.
      if (timingSafeEqual(given, this.digests[i]!) && found === -1) found = i;
    }
    if (found === -1) return { kind: 'invalid' };
    // An id safe to use as a rate-limit bucket and in logs: a digest prefix, never the key itself.
    return { kind: 'valid', keyId: given.subarray(0, 8).toString('hex') };
  }
}
