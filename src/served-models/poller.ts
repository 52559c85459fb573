/**
 * Periodic reloads of the served runs. The next poll is scheduled only after the previous reload has
 * settled, so a slow store never piles reloads up; the timer is unref'd so it never keeps the process
 * alive on its own.
 */
import type { ReloadResult } from './served-runs.js';

export interface ReloadPoller {
  /** Stops scheduling; a reload already under way finishes on its own (see `ServedRuns.settled`). */
  stop(): void;
}

/**
 * Calls `reload` every `intervalMs` (measured from the end of the previous reload); 0 disables polling.
 * @example const poller = pollReloads(() => servedRuns.reload(), 60_000); … poller.stop();
 */
export function pollReloads(reload: () => Promise<ReloadResult>, intervalMs: number): ReloadPoller {
  if (!Number.isInteger(intervalMs) || intervalMs < 0) {
    throw new RangeError(`served-models/poller: intervalMs must be an integer >= 0, got ${intervalMs}`);
  }
  let stopped = intervalMs === 0;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      // reload() never rejects; the catch only keeps a broken promise from stopping the loop.
      void reload()
        .catch(() => undefined)
        .then(schedule);
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    stop: () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
