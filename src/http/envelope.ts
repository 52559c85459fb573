/**
 * The response envelope of the spec: `message`, `method`, `status-code`, `timestamp`, `url` and `data`
 * (or `detail` for errors). Handlers build it with `envelope()`, so the route's response schema and the
 * handler's return type describe the same object.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { ErrorEnvelope } from './schemas.js';

export interface EnvelopeHead {
  message: string;
  method: string;
  'status-code': number;
  timestamp: string;
  url: string;
}

/** ISO 8601 in UTC without a zone designator (the spec forbids one), millisecond precision. */
export const timestamp = (now: Date = new Date()): string => now.toISOString().slice(0, -1);

/** The full URL of the request, including its query string. */
export function requestUrl(request: FastifyRequest): string {
  const host =
    request.host || `${request.socket.localAddress ?? 'localhost'}:${request.socket.localPort ?? ''}`;
  return `${request.protocol}://${host}${request.url}`;
}

function head(request: FastifyRequest, statusCode: number): EnvelopeHead {
  return {
    message: STATUS_CODES[statusCode] ?? 'Unknown Status',
    method: request.method,
    'status-code': statusCode,
    timestamp: timestamp(),
    url: requestUrl(request),
  };
}

/**
 * A success envelope around `data`.
 * @example return envelope(request, 200, { runs });
 */
export function envelope<T>(
  request: FastifyRequest,
  statusCode: number,
  data: T,
): EnvelopeHead & { data: T } {
  return { ...head(request, statusCode), data };
}

/** An error envelope with a human-readable `detail`. */
export function errorEnvelope(request: FastifyRequest, statusCode: number, detail: string): ErrorEnvelope {
  return { ...head(request, statusCode), detail };
}
