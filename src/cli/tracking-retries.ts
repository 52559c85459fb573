/**
 * A tracking server that does not answer, from the command line's side. The REST store retries
 * connection errors, 429 and 5xx with backoff, as MLflow's client does (MLFLOW_HTTP_REQUEST_MAX_RETRIES,
 * default 5: about 31 s against a server that is down). The commands now say what they wait for, at each
 * retry; and the one-shot commands (`predict`, `evaluate`, `alias`), which someone is waiting on and
 * which log nothing that a retry would save, retry twice (about 3 s) unless that variable says otherwise.
 * `train` and `optimize` keep the default: a retry there can save a training's run.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { RETRY_CHANNEL, type RetryNotice } from '../tracking/rest/rest-http.js';
import type { CliIo } from './io.js';

/** The commands that retry a tracking server less, and how many times. */
export const ONE_SHOT_COMMANDS: readonly string[] = ['predict', 'evaluate', 'alias'];
export const ONE_SHOT_RETRIES = 2;

/** Prints each retry of a tracking-server call on `io.stderr` until the returned function is called. */
export function reportTrackingRetries(io: CliIo): () => void {
  const onRetry = (message: unknown): void => {
    const notice = message as RetryNotice;
    io.stderr.write(
      `tagger: ${notice.message}; retrying in ${(notice.delayMs / 1000).toFixed(1)} s (retry ${notice.retry} of ${notice.retries}; MLFLOW_HTTP_REQUEST_MAX_RETRIES sets how many)\n`,
    );
  };
  subscribe(RETRY_CHANNEL, onRetry);
  return () => unsubscribe(RETRY_CHANNEL, onRetry);
}

/**
 * For a one-shot command: MLFLOW_HTTP_REQUEST_MAX_RETRIES defaults to ONE_SHOT_RETRIES while it runs
 * (the REST store reads MLflow's own variable; a user's setting wins). Returns what undoes it.
 */
export function fewerRetriesFor(command: string, env: NodeJS.ProcessEnv = process.env): () => void {
  if (!ONE_SHOT_COMMANDS.includes(command) || env.MLFLOW_HTTP_REQUEST_MAX_RETRIES !== undefined) {
    return () => undefined;
  }
  env.MLFLOW_HTTP_REQUEST_MAX_RETRIES = String(ONE_SHOT_RETRIES);
  return () => {
    delete env.MLFLOW_HTTP_REQUEST_MAX_RETRIES;
  };
}
