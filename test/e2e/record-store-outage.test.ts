/**
 * A record store taken away and brought back under load (issue 34, item 3), the probe's method: a real
 * server process records every prediction of a steady keep-alive load into a real store; the store is
 * locked (SQLite: another connection holds the write lock) or taken down (PostgreSQL: a fast shutdown)
 * for 15 s, then brought back. Counted from /metrics: the records dropped during the outage and those
 * dropped after the store was back. Before, writing resumed only when the grown back-off fired (up to
 * 30 s): ~32,000 of 39,428 drops came after PostgreSQL was back (here: 202,114 after, 123,140 during).
 * Now the store is probed while records wait (every 0.1 s since issue 42), so few drop after its return
 * (0-778 in five PostgreSQL runs); and every served
 * prediction is written or counted as dropped, exactly once. The locked-SQLite case passed before too:
 * its writes wait out the 5 s busy timeout, so one is still waiting when the lock goes and succeeds; it
 * stays for the accounting (test/monitoring/recorder.test.ts pins the probe on a simulated clock).
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeepAliveLoad, killServers, type ServerProcess, spawnServer } from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';
import { type Postgres, postgresBin, startPostgres } from '../support/stack.js';
import { useTempDir } from '../support/temp-dir.js';

const fx = useServingFixture();
const pgBin = postgresBin();
const scratch = useTempDir('tagger-record-outage-');
let postgres: Postgres | undefined;

beforeAll(async () => {
  if (pgBin) postgres = await startPostgres(pgBin);
}, 120_000);
afterAll(async () => {
  killServers();
  await postgres?.stop();
});

/** How long the store stays away: the back-off before the fix had grown to 16–30 s by then. */
const OUTAGE_MS = 15_000;
/** Texts per request of the load (predictBody's default). */
const TEXTS_PER_REQUEST = 2;

interface Counts {
  written: number;
  dropped: number;
  pending: number;
}

async function recordCounts(server: ServerProcess): Promise<Counts> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const sum = (name: string) =>
    [...text.matchAll(new RegExp(`^${name}\\{sink="store"[^}]*\\} (\\d+)$`, 'gm'))].reduce(
      (total, match) => total + Number(match[1]),
      0,
    );
  return {
    written: sum('tagger_prediction_records_written_total'),
    dropped: sum('tagger_prediction_records_dropped_total'),
    pending: sum('tagger_prediction_records_pending'),
  };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * Serves with records in `storeUri` under load, takes the store away for OUTAGE_MS with `down`, brings
 * it back with `up`, and checks the counts.
 */
async function outageUnderLoad(
  what: string,
  storeUri: string,
  down: () => Promise<void>,
  up: () => Promise<void>,
): Promise<void> {
  const server = await spawnServer({
    MLFLOW_TRACKING_URI: fx.dir,
    TAGGER_RECORD_STORE: storeUri,
    TAGGER_RECORD_BUFFER: '2000',
    TAGGER_LOG_LEVEL: 'info',
  });
  const load = new KeepAliveLoad(server.url, { connections: 4 }).start();
  try {
    await until('records written', async () => (await recordCounts(server)).written > 0);
    await down();
    await server.waitForLog(
      (line) => line.msg.startsWith('prediction records cannot be written'),
      'the outage logged',
      60_000,
    );
    await sleep(OUTAGE_MS);
    await up();
    const upAt = Date.now();
    const atReturn = await recordCounts(server);
    const again = await server.waitForLog(
      (line) => line.msg === 'prediction records are written again',
      'writing again',
      60_000,
    );
    // pino's `time` (epoch ms) of that line: how long after the store's return writing resumed.
    const resumedAfterMs = typeof again.time === 'number' ? again.time - upAt : null;
    // Traffic goes on after the return, then stops; everything waiting is written.
    await sleep(3_000);
    const outcomes = await load.stop();
    await until('no record waiting', async () => (await recordCounts(server)).pending === 0);
    const final = await recordCounts(server);

    const served = outcomes.filter((o) => o.status === 200).length * TEXTS_PER_REQUEST;
    const droppedAfter = final.dropped - atReturn.dropped;
    console.log(
      `${what}: ${served} predictions served; ${atReturn.dropped} records dropped by the store's return, ` +
        `${droppedAfter} after it; ${final.written} written; writing resumed ${resumedAfterMs} ms after the return`,
    );
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(atReturn.dropped).toBeGreaterThan(0);
    // Every served prediction written or counted as dropped, once.
    expect(final.written + final.dropped).toBe(served);
    // The store is probed every 0.1 s while records wait: what drops after its return is what arrives
    // before the next probe and while the full buffer drains, a small share of the outage's (measured
    // 2026-12-01/02, PostgreSQL: 0-778 after 28,000-85,000 during; with a probe every 0.5 s 0-7,310; before
    // the probe 1.6 times the outage's). Half leaves room for a starved process and still tells them apart.
    expect(droppedAfter).toBeLessThan(atReturn.dropped / 2);
  } finally {
    await load.stop();
    server.kill();
    await server.exited;
  }
}

describe('a record store away under load, and back', () => {
  it('SQLite locked by another connection for 15 s: writing resumes on its return, every record counted', async () => {
    const file = join(scratch.path, 'records.db');
    let locker: DatabaseSync | undefined;
    await outageUnderLoad(
      'SQLite locked',
      `sqlite:///${file}`,
      async () => {
        // Waits for a write of the server under way (without a busy timeout BEGIN EXCLUSIVE failed with
        // "database is locked" when it met one).
        locker = new DatabaseSync(file, { timeout: 10_000 });
        locker.exec('BEGIN EXCLUSIVE');
      },
      async () => {
        locker?.exec('ROLLBACK');
        locker?.close();
      },
    );
  }, 180_000);

  it.runIf(pgBin !== null)(
    'PostgreSQL down for 15 s: writing resumes on its return, every record counted',
    async () => {
      const uri = postgres!.sqlalchemyUri('records_outage').replace(/^postgresql\+psycopg2:/, 'postgresql:');
      await outageUnderLoad(
        'PostgreSQL down',
        uri,
        () => postgres!.down(),
        () => postgres!.up(),
      );
    },
    180_000,
  );
});
