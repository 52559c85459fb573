/**
 * One retrain per experiment at a time: a lease in the record store, renewed while the retrain lasts,
 * taken over at once from a holder of this machine that has exited.
 */
import { hostname } from 'node:os';
import type { RecordStore } from '../monitoring/index.js';
import { UsageError } from './inputs.js';

/** One retrain per experiment: a lease in the record store, renewed while the retrain lasts. */
const LEASE_MS = 5 * 60_000;
const RENEW_MS = 60_000;

/**
 * Whether a lease holder (`host:pid:start`) is a process of this machine that has exited: a retrain that
 * lost its store while promoting could not release its lease, and nothing holds it any more.
 */
export function holderExited(holder: string): boolean {
  const [host, pidText] = holder.split(':');
  if (host !== hostname() || pidText === undefined || !/^\d+$/.test(pidText)) return false;
  const pid = Number(pidText);
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: alive, someone else's.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export async function holdLease(records: RecordStore, name: string, experiment: string) {
  const holder = `${hostname()}:${process.pid}:${Date.now().toString(36)}`;
  let lease = await records.takeLease(name, holder, LEASE_MS, Date.now());
  if (lease.holder !== holder && holderExited(lease.holder)) {
    // Released in the name of the exited holder, then taken as any free lease (two takers: one wins).
    await records.releaseLease(name, lease.holder);
    lease = await records.takeLease(name, holder, LEASE_MS, Date.now());
  }
  if (lease.holder !== holder) {
    throw new UsageError(
      `retrain: another retrain of experiment '${experiment}' is running (${lease.holder}, since ${new Date(lease.acquiredMs).toISOString()}); one at a time, so this one stops without training (its lease ends by ${new Date(lease.expiresMs).toISOString()} if that one died on another machine; one of this machine that has exited is taken over at once)`,
    );
  }
  const timer = setInterval(() => {
    void records.takeLease(name, holder, LEASE_MS, Date.now()).catch(() => undefined);
  }, RENEW_MS);
  timer.unref();
  return {
    release: async () => {
      clearInterval(timer);
      await records.releaseLease(name, holder).catch(() => undefined);
    },
  };
}
