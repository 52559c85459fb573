/** Errors of the serving layer; the HTTP layer maps each class to one status code. */
import { TrackingError } from '../tracking/store.js';

/**
 * Startup cannot complete (bad configuration, missing experiment, no loadable run). The message is meant
 * for a person at a terminal: it says what is wrong and what to do, and `tagger serve` prints it as is.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** A run id that is not one of the experiment's runs (the id is never used to read anything). */
export class UnknownRunError extends Error {
  override readonly name = 'UnknownRunError';
  constructor(readonly runId: string) {
    super(`run ${JSON.stringify(truncate(runId))} is not a run of this experiment; GET /runs lists the runs`);
  }
}

/**
 * A known run that never logged what was asked for (e.g. the test-set errors, logged by training since
 * the inspection page exists): nothing is broken, the run is older or was logged by another tool.
 */
export class NotLoggedError extends Error {
  override readonly name = 'NotLoggedError';
  constructor(
    readonly runId: string,
    what: string,
    /** Which runs have it (what a person can do about it). */
    which = 'runs trained by this version of tagger have it',
  ) {
    super(`run ${runId} has no ${what} logged; ${which}`);
  }
}

/**
 * A known run whose artifacts cannot be used. `transient` is true when the store could not be reached
 * (retrying may help) and false when the artifacts themselves are missing or broken.
 */
export class RunLoadError extends Error {
  override readonly name = 'RunLoadError';
  /** For clients: says what is wrong without the store's paths or URIs (the log has `reason`). */
  readonly publicMessage: string;
  readonly publicReason: string;
  constructor(
    readonly runId: string,
    /** The whole story, for logs and terminals: may name server-side paths and URIs. */
    readonly reason: string,
    readonly transient: boolean,
    options?: { cause?: unknown; publicReason?: string },
  ) {
    super(`run ${runId} cannot be served: ${reason}`, options);
    this.publicReason = options?.publicReason ?? reason;
    this.publicMessage = `run ${runId} cannot be served: ${this.publicReason}`;
  }
}

/** Long attacker-supplied ids are shortened before they are echoed back. */
function truncate(value: string, max = 200): string {
  return value.length <= max ? value : `${value.slice(0, max)}…`;
}

/** What to do when the store a command only reads is not there (it is never created for reading). */
export const MISSING_STORE_HINT =
  'point --tracking-uri (or MLFLOW_TRACKING_URI) at the store your runs are in, or train a model first: `tagger train --data <file.csv>`';

/** A store that is not there, with what to do about it; other errors as they are. */
export function withStoreHint(error: unknown): unknown {
  if (!(error instanceof TrackingError) || error.code !== 'NOT_FOUND') return error;
  return new TrackingError('NOT_FOUND', `${error.message}; ${MISSING_STORE_HINT}`, { cause: error });
}
