/**
 * Error and not-found handling. Every error leaves as the envelope with a `detail`, except request
 * validation, which is FastAPI's 422 body. Nothing unexpected escapes as a raw 500: it is logged and
 * answered with a generic 500 envelope.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  EncoderLoadError,
  EncoderUnavailableError,
  NotLoggedError,
  QueueFullError,
  RequestTooLargeError,
  RunLoadError,
  UnknownRunError,
} from '../served-models/index.js';
import { errorEnvelope, timestamp } from './envelope.js';
import { HttpError } from './http-error.js';
import { JsonDecodeError } from './json-body.js';
import { lingerOnClose } from './lingering-close.js';
import type { HttpLimits } from './options.js';
import type { ValidationErrorBody } from './schemas.js';
import { toValidationIssues } from './validation.js';

export { HttpError } from './http-error.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

function sendValidation(reply: FastifyReply, body: ValidationErrorBody): FastifyReply {
  return reply.code(422).type('application/json; charset=utf-8').send(body);
}

/** Fastify's own client errors (bad media type, body too large, ...) keep their status and message. */
const isClientError = (error: FastifyError): boolean =>
  typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500;

/** The body lists whose `maxItems` is a size limit of the server (so a 413 rather than a 422), by path. */
const LIMITED_LISTS: Readonly<Record<string, string>> = {
  '/texts': 'texts',
  '/feedback': 'feedback items',
  '/decisions': 'decisions',
};

/** A `maxItems` failure of `texts` (or of `feedback`): a size limit of the server, so a 413 rather than a 422. */
const tooManyTexts = (errors: readonly ErrorObject[], context: string): ErrorObject | undefined =>
  context === 'body'
    ? errors.find((e) => e.keyword === 'maxItems' && Object.hasOwn(LIMITED_LISTS, e.instancePath))
    : undefined;

export function installErrorHandling(
  app: FastifyInstance,
  limits: HttpLimits,
  /** Retry-After of the encoder's 503s (a full queue, an encoder that failed while answering). */
  retryAfterSeconds = 5,
): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // An answer before the whole body arrived (over the byte limit) must reach a client that is still
    // writing it: the connection closes only once the client has finished (lingering-close.ts).
    lingerOnClose(request.raw);
    // A request no route matched fails body handling (e.g. a QUERY without Content-Type) before the
    // not-found handler runs; what the client needs to hear is still 404/405, not a body complaint.
    if (
      request.routeOptions.url === undefined &&
      (error.code?.startsWith('FST_ERR_') || error instanceof JsonDecodeError)
    ) {
      return notFound(app, request, reply);
    }
    if (error.validation) {
      const context = error.validationContext ?? 'body';
      const overLimit = tooManyTexts(error.validation as unknown as ErrorObject[], context);
      if (overLimit) {
        const key = overLimit.instancePath.slice(1);
        const list = (request.body as Record<string, unknown> | undefined)?.[key];
        const given = Array.isArray(list) ? list.length : 'more';
        return reply
          .code(413)
          .send(
            errorEnvelope(
              request,
              413,
              `too many ${LIMITED_LISTS[overLimit.instancePath]}: ${given} given, the limit is ${limits.texts} per request (TAGGER_MAX_TEXTS); split the request`,
            ),
          );
      }
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
    if (error instanceof UnknownRunError || error instanceof NotLoggedError) {
      return reply.code(404).send(errorEnvelope(request, 404, error.message));
    }
    if (error instanceof RequestTooLargeError) {
      // More encoder work than one request may ask for: sending it again will not help, smaller will.
      return reply.code(413).send(errorEnvelope(request, 413, error.message));
    }
    if (
      error instanceof QueueFullError ||
      error instanceof EncoderUnavailableError ||
      error instanceof EncoderLoadError
    ) {
      // An encoder run's load shedding: the encoder's queue is full (the texts would wait too long), or
      // its thread failed and is being replaced, or (a request that started on a model since replaced)
      // it could not be opened again. Like the other load shedding, a 503 to retry later.
      if (!(error instanceof QueueFullError)) request.log.warn({ err: error }, 'encoder failed');
      // An encoder that cannot be opened names the server's paths in its message; its public reason not.
      const detail = error instanceof EncoderLoadError ? error.publicReason : error.message;
      return reply
        .code(503)
        .header('retry-after', String(retryAfterSeconds))
        .send(errorEnvelope(request, 503, detail));
    }
    if (error instanceof RunLoadError) {
      // 503 when the tracking store could not be reached (retry later); 409 when the run's artifacts are
      // missing or broken (retrying will not help; pick another run).
      const status = error.transient ? 503 : 409;
      if (error.transient) reply.header('retry-after', '5');
      request.log.warn({ runId: error.runId, reason: error.reason }, 'run artifacts could not be loaded');
      // Never the store's paths or URIs: the full reason is in the log line above, under this request id.
      return reply.code(status).send(errorEnvelope(request, status, error.publicMessage));
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
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply
        .code(413)
        .send(
          errorEnvelope(
            request,
            413,
            `the request body is larger than the limit of ${limits.bodyBytes} bytes (TAGGER_MAX_BODY_BYTES)`,
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
  app.setNotFoundHandler((request, reply) => notFound(app, request, reply));
}

function notFound(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?')[0] ?? '/';
  const allowed = METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
  // A route of this very method that found nothing (a file of the inspection page that is gone, e.g.
  // after a rebuild with new asset names) is a 404: the method is allowed, the resource is missing.
  if (allowed.length > 0 && !(allowed as readonly string[]).includes(request.method)) {
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
  if (path.startsWith('/ui/')) {
    return reply
      .code(404)
      .send(
        errorEnvelope(
          request,
          404,
          `the inspection page has no file ${path}; load /ui/ again (it may have been rebuilt since this page was loaded)`,
        ),
      );
  }
  return reply
    .code(404)
    .send(errorEnvelope(request, 404, `no endpoint at ${request.method} ${path}; see /docs for the API`));
}

const CLIENT_ERRORS: Readonly<Record<string, { status: number; detail: string }>> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    detail:
      'the request line and headers are larger than the server accepts (16 KiB); shorten the URL or headers',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    detail: 'the request was not received completely within the request timeout (TAGGER_REQUEST_TIMEOUT_MS)',
  },
};

/**
 * Fastify's `clientErrorHandler`: requests Node rejects before Fastify sees them (headers too large,
 * unparsable request line, timed out while arriving) get the envelope too, with empty `method` and
 * `url` (the request could not be read), and the connection is closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const known = CLIENT_ERRORS[error.code ?? ''];
  const status = known?.status ?? 400;
  const detail = known?.detail ?? 'the request could not be parsed as HTTP/1.1';
  const message = STATUS_CODES[status] ?? 'Bad Request';
  const body = JSON.stringify({
    message,
    method: '',
    'status-code': status,
    timestamp: timestamp(),
    url: '',
    detail,
  });
  socket.end(
    `HTTP/1.1 ${status} ${message}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/**
 * Fastify's `frameworkErrors`: URLs the router rejects before any hook runs (a path parameter over
 * maxParamLength → 414, a malformed percent-encoding → 400) get the envelope and the request id too.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : (error.statusCode ?? 400);
  const detail =
    status === 414
      ? 'a path parameter is longer than 100 characters; no run id or argument name is that long'
      : `the URL is not valid: ${error.message}`;
  reply
    .code(status)
    .header('x-request-id', request.id)
    .send(errorEnvelope(request, status, detail));
}
