/** The one error type of the tracking layer (stores, registry, model URIs). */

/**
 * Errors a store raises on purpose carry a code, so callers can tell "not there" from "broken".
 * Messages never contain credentials.
 */
export type TrackingErrorCode =
  | 'NOT_FOUND'
  | 'INVALID_ARGUMENT'
  | 'ALREADY_EXISTS'
  | 'MALFORMED'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'UNAVAILABLE'
  | 'UNSUPPORTED';

export class TrackingError extends Error {
  override readonly name = 'TrackingError';
  constructor(
    readonly code: TrackingErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
