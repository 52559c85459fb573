/**
 * Hot reload of the real server process under load: a better run is logged into the file store while
 * keep-alive clients and autocannon send POST /predict, then SIGHUP; no request fails, and once one
 * response names the new run no later request is answered by the old one. Loopback only.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  KeepAliveLoad,
  killServers,
  logServedRun,
  runAutocannon,
  spawnServer,
} from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();

afterAll(async () => {
  killServers();
});

describe('SIGHUP under load', () => {
  it('swaps to a new best run without failing a request; later responses carry the new run_id', async () => {
    const server = await spawnServer({ MLFLOW_TRACKING_URI: fx.dir });
    const load = new KeepAliveLoad(server.url, { connections: 6 }).start();
    const cannon = runAutocannon(server.url, 4);
    try {
      await load.settleMore(200);
      // Logged while the server is under load, then announced with SIGHUP (polling is off).
      const gamma = await logServedRun(fx.store, 'best', { name: 'gamma', f1: 0.95, model: fx.modelB });
      server.child.kill('SIGHUP');
      while (!load.outcomes.some((o) => o.runId === gamma)) await load.settleMore(1);
      await load.settleMore(200);
      const outcomes = await load.stop();
      const counts = await cannon.stop();

      expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
      expect(new Set(outcomes.map((o) => o.runId))).toEqual(new Set([fx.runs.alpha, gamma]));
      // The swap is one switch: no request sent after a new-run answer arrived was answered by the old run.
      const firstNewAnswer = Math.min(...outcomes.filter((o) => o.runId === gamma).map((o) => o.settledAt));
      const lastOldSend = Math.max(...outcomes.filter((o) => o.runId === fx.runs.alpha).map((o) => o.sentAt));
      expect(lastOldSend).toBeLessThan(firstNewAnswer);
      for (let loop = 0; loop < 6; loop++) {
        expect(outcomes.filter((o) => o.loop === loop).at(-1)?.runId).toBe(gamma);
      }

      expect(counts.sent).toBeGreaterThan(0);
      expect([...counts.statuses.keys()]).toEqual([200]);
      expect(counts.non2xx).toBe(0);
      expect(counts.errors.size).toBe(0);

      const runs = (await (await fetch(`${server.url}/runs?top=2`)).json()) as {
        data: { runs: { run_id: string }[] };
      };
      expect(runs.data.runs.map((r) => r.run_id)).toEqual([fx.runs.broken, gamma]);
      const args = (await (await fetch(`${server.url}/args/analyzer`)).json()) as {
        data: { analyzer: string };
      };
      expect(args.data.analyzer).toBe(fx.modelB.args.analyzer);
    } finally {
      await load.stop();
      await cannon.stop();
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    }
  }, 120_000);
});
