/**
 * Error and not-found handling. Every error leaves as the envelope with a `detail`, except request
 * validation, which is FastAPI's 422 body. Nothing unexpected escapes as a raw 500: it is logged and
 * answered with a generic 500 envelope.
 */
import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RunLoadError, UnknownRunError } from '../service/index.js';
import { errorEnvelope } from './envelope.js';
import { JsonDecodeError } from './json-body.js';
import type { ValidationErrorBody } from './schemas.js';
import { toValidationIssues } from './validation.js';

/** An error a handler raises on purpose, with the status and detail the client should see. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly statusCode: number,
    readonly detail: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

function sendValidation(reply: FastifyReply, body: ValidationErrorBody): FastifyReply {
  return reply.code(422).type('application/json; charset=utf-8').send(body);
}

/** Fastify's own client errors (bad media type, body too large, ...) keep their status and message. */
const isClientError = (error: FastifyError): boolean =>
  typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500;

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error.validation) {
      const context = error.validationContext ?? 'body';
      const input =
        context === 'body'
          ? request.body
          : context === 'querystring'
            ? request.query
            : context === 'params'
              ? request.params
              : request.headers;
      return sendValidation(reply, {
        detail: toValidationIssues(error.validation as unknown as ErrorObject[], context, input),
      });
    }
    if (error instanceof JsonDecodeError) {
      return sendValidation(reply, {
        detail: [
          {
            loc: ['body', error.position],
            msg: error.message,
            type: 'value_error.jsondecode',
            ctx: { msg: error.message, pos: error.position },
          },
        ],
      });
    }
    if (error instanceof HttpError) {
      return reply
        .code(error.statusCode)
        .headers(error.headers)
        .send(errorEnvelope(request, error.statusCode, error.detail));
    }
    if (error instanceof UnknownRunError) {
      return reply.code(404).send(errorEnvelope(request, 404, error.message));
    }
    if (error instanceof RunLoadError) {
      // 503 when the tracking store could not be reached (retry later); 409 when the run's artifacts are
      // missing or broken (retrying will not help; pick another run).
      const status = error.transient ? 503 : 409;
      if (error.transient) reply.header('retry-after', '5');
      request.log.warn({ runId: error.runId, reason: error.reason }, 'run artifacts could not be loaded');
      return reply.code(status).send(errorEnvelope(request, status, error.message));
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      const sent = request.headers['content-type'] ?? 'none';
      return reply
        .code(415)
        .send(
          errorEnvelope(
            request,
            415,
            `unsupported Content-Type ${JSON.stringify(sent)}; send application/json`,
          ),
        );
    }
    if (isClientError(error)) {
      return reply.code(error.statusCode!).send(errorEnvelope(request, error.statusCode!, error.message));
    }
    request.log.error({ err: error }, 'unexpected error while handling a request');
    return reply
      .code(500)
      .send(errorEnvelope(request, 500, 'internal error; the server log has the details'));
  });

  // Unknown paths are 404; a known path with another method is 405 with an Allow header.
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send(
          errorEnvelope(
            request,
            405,
            `method ${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
          ),
        );
    }
    return reply
      .code(404)
      .send(errorEnvelope(request, 404, `no endpoint at ${request.method} ${path}; see /docs for the API`));
  });
}
