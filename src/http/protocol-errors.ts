/**
 * Errors of the protocols served beside the contract's API — the Open Inference Protocol (`/v2/…`) and
 * the Hugging Face text-classification shape (`/hf/…`) — in their own shape, `{"error": "…"}`, which
 * `tritonclient` and `huggingface_hub` read. Every refusal is made as everywhere else (the protection
 * hooks, the error handler of errors.ts, the routes' HttpErrors); a `preSerialization` hook in the
 * protocols' plugin rewrites the envelope (or the 422 body of a failed validation, then a 400) before it
 * is written, so the status codes, headers (`Retry-After`, `WWW-Authenticate`) and messages stay the same.
 */

import type { FastifyInstance } from 'fastify';
import Type, { type Static } from 'typebox';

export const ProtocolError = Type.Object(
  { error: Type.String({ description: 'What went wrong, for people' }) },
  { title: 'ProtocolError' },
);
export type ProtocolError = Static<typeof ProtocolError>;

const DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'The request is malformed or does not fit the model (validation included)',
  401: 'An API key is required: send `Authorization: Bearer <key>` or `X-API-Key: <key>`',
  403: 'The API key is not valid here, or lacks the scope',
  404: 'No such model (or endpoint)',
  409: 'The run exists but its artifacts are missing or broken',
  413: 'Too many texts, too much encoder work, or a body over the size limit',
  429: 'Too many requests from this client; `Retry-After` says when to retry',
  500: 'Unexpected failure inside the service (logged)',
  503: 'Overloaded, not ready, or the tracking store is unreachable; retry after `Retry-After` seconds',
  504: "The request did not finish within the server's request timeout",
};

/** Response schemas of the listed error statuses in the protocols' shape, for a route's `schema.response`. */
export function protocolErrorResponses(...codes: readonly number[]): Record<number, typeof ProtocolError> {
  const out: Record<number, typeof ProtocolError> = {};
  for (const code of codes) {
    out[code] = { ...ProtocolError, description: DESCRIPTIONS[code] ?? 'Error' } as typeof ProtocolError;
  }
  return out;
}

/** Whether a route pattern (or a path) belongs to a protocol answered in the `{"error"}` shape. */
export const isProtocolPath = (url: string | undefined): boolean =>
  url !== undefined && (url === '/v2' || url.startsWith('/v2/') || url.startsWith('/hf/'));

interface ValidationIssue {
  loc?: readonly (string | number)[];
  msg?: string;
}

/** The error message of an envelope (`detail`) or of a 422 body (`detail: [{loc, msg}, …]`). */
function messageOf(payload: Record<string, unknown>): string | null {
  const { detail } = payload;
  if (typeof detail === 'string') return detail;
  if (!Array.isArray(detail)) return null;
  return (detail as ValidationIssue[])
    .map((issue) => `${(issue.loc ?? []).join('.')}: ${issue.msg ?? 'invalid'}`)
    .join('; ');
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * Installs, in the protocols' plugin (encapsulated: the contract's routes keep their envelopes), the
 * rewrite of every error answer into `{"error": …}` (a 422 becomes a 400, the protocols' validation
 * status), and for paths under `prefixes` that no route matches a 404 in that shape — or a 405 with
 * `Allow` when the path exists for other methods, as the contract's routes answer.
 */
export function installProtocolErrors(app: FastifyInstance, prefixes: readonly string[]): void {
  // A callback hook: on every answer of these routes, it saves the promise an async one costs.
  app.addHook('preSerialization', function protocolErrorShape(_request, reply, payload, done) {
    if (reply.statusCode < 400 || typeof payload !== 'object' || payload === null) {
      done(null, payload);
      return;
    }
    const message = messageOf(payload as Record<string, unknown>);
    if (message === null) {
      done(null, payload);
      return;
    }
    if (reply.statusCode === 422) reply.code(400);
    done(null, { error: message });
  });
  for (const prefix of prefixes) {
    app.register(
      async (scope) => {
        scope.setNotFoundHandler((request, reply) => {
          const path = request.url.split('?')[0] ?? '/';
          const allowed = METHODS.filter((method) => scope.findRoute({ method, url: path }) !== null);
          if (allowed.length > 0) {
            return reply
              .code(405)
              .header('allow', allowed.join(', '))
              .send({
                error: `method ${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
              });
          }
          return reply
            .code(404)
            .send({ error: `no endpoint at ${request.method} ${path}; see /docs for the API` });
        });
      },
      { prefix },
    );
  }
}
