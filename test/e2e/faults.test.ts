/**
 * Faults after startup, against the real server process over a file store: the served run's artifacts
 * deleted, the whole store folder gone, a new best run with broken artifacts. In each case the process
 * keeps serving the model it loaded, says why in a warning, and recovers once the store is back.
 */
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  killServers,
  type LogLine,
  logServedRun,
  predictBody,
  type ServerProcess,
  servedRunId,
  spawnServer,
} from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();
let server: ServerProcess;
let experimentId: string;

beforeAll(async () => {
  experimentId = (await fx.store.getExperimentByName('best'))!.experimentId;
  server = await spawnServer({ MLFLOW_TRACKING_URI: fx.dir, TAGGER_LOG_LEVEL: 'info' });
});

afterAll(async () => {
  killServers();
});

const predictRunId = (): Promise<string> => servedRunId(server.url, 2);

/** Sends SIGHUP and resolves with the log lines written by that reload (up to its "finished" line). */
async function sighup(): Promise<{ finished: LogLine; lines: LogLine[] }> {
  const from = server.lines.length;
  server.child.kill('SIGHUP');
  const finished = await server.waitForLog(
    (line) => line.msg === 'SIGHUP reload finished' && server.lines.indexOf(line) >= from,
    'SIGHUP reload finished',
  );
  return { finished, lines: server.lines.slice(from, server.lines.indexOf(finished)) };
}

const WARN = 40;

// One server goes through the faults in order; each step leaves the store as the next one expects.
describe.sequential('faults after startup', () => {
  it('keeps serving the best run when its artifacts are deleted, and warns on reload', async () => {
    expect(await predictRunId()).toBe(fx.runs.alpha);
    await rm(join(fx.dir, experimentId, fx.runs.alpha, 'artifacts', 'model'), { recursive: true });

    expect(await predictRunId()).toBe(fx.runs.alpha);
    const { finished, lines } = await sighup();
    expect(finished).toMatchObject({ outcome: 'unchanged', runId: fx.runs.alpha });
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: WARN,
        runId: fx.runs.alpha,
        msg: "the served run's artifacts cannot be loaded any more; still serving the model loaded before",
        reason: expect.stringContaining('model/'),
      }),
    );
    expect(await predictRunId()).toBe(fx.runs.alpha);
    // Its performance comes from the loaded copy.
    const run = await fetch(`${server.url}/runs/${fx.runs.alpha}`);
    expect(run.status).toBe(200);
    expect((await fetch(`${server.url}/performance`)).status).toBe(200);
  });

  it('fails the reload and keeps everything when the store folder is gone, recovers when it is back', async () => {
    const away = `${fx.dir}.away`;
    await rename(fx.dir, away);
    try {
      const { finished, lines } = await sighup();
      expect(finished).toMatchObject({ outcome: 'failed', runId: fx.runs.alpha });
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: WARN,
          outcome: 'failed',
          msg: 'reload failed; still serving the runs and model loaded before',
          reason: expect.stringContaining('experiment "best"'),
        }),
      );
      expect(await predictRunId()).toBe(fx.runs.alpha);
      const runs = (await (await fetch(`${server.url}/runs`)).json()) as { data: { runs: unknown[] } };
      expect(runs.data.runs).toHaveLength(6);
    } finally {
      await rename(away, fx.dir);
    }
    const { finished } = await sighup();
    expect(finished).toMatchObject({ outcome: 'unchanged', runId: fx.runs.alpha });
  });

  it('skips a new best run with broken artifacts: listed, not served, its predict answers 409', async () => {
    const bad = await logServedRun(fx.store, 'best', {
      name: 'bad',
      f1: 0.999,
      model: fx.modelB,
      brokenModel: true,
    });
    const { finished, lines } = await sighup();
    expect(finished).toMatchObject({ outcome: 'updated', runId: fx.runs.alpha });
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: WARN,
        runId: bad,
        msg: 'skipping a run whose artifacts cannot be loaded',
      }),
    );
    expect(await predictRunId()).toBe(fx.runs.alpha);
    const runs = (await (await fetch(`${server.url}/runs?top=1`)).json()) as {
      data: { runs: { run_id: string }[] };
    };
    expect(runs.data.runs[0]!.run_id).toBe(bad);
    const predictBad = await fetch(`${server.url}/runs/${bad}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: predictBody(1),
    });
    expect(predictBad.status).toBe(409);

    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  });
});
