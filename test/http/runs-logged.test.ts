/**
 * A run logged since the server last read the experiment (issue 40: the page said "No run … in this
 * experiment" for up to the reload interval while the store already had it): GET /runs/{run_id} answers
 * it from the store with `loaded: false` and when the next poll is due, until a reload lists it; an id
 * the store does not have in the served experiment stays a 404.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { parseTrainingArgs } from '../../src/model/index.js';
import { DEFAULT_GATES, ServedRuns } from '../../src/served-models/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { trainAndEvaluate } from '../../src/train/pipeline.js';
import { SAMPLE_DATA } from '../support/components.js';
import { captureLog } from '../support/http.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-runs-logged-');
const uri = () => `sqlite:///${join(scratch.path, 'mlflow.db')}`;
const args = parseTrainingArgs({ num_epochs: 3, ngram_max_range: 4 });
let store: TrackingStore;
let servedRuns: ServedRuns;
let app: TaggerApp;

/** Trains on the sample data and logs the run to `experiment` through a store of its own. */
async function logRun(experiment: string, name: string): Promise<string> {
  const writer = await openTrackingStore(uri());
  try {
    const rows = await readDataset(SAMPLE_DATA);
    const outcome = trainAndEvaluate({ data: rows.slice(60), testData: rows.slice(0, 60), args, seed: 42 });
    return (
      await logTrainingRun(writer, { experiment, runName: name, args, seed: 42, outcome, source: 'test' })
    ).runId;
  } finally {
    await writer.close();
  }
}

beforeAll(async () => {
  await logRun('best', 'first');
  store = await openTrackingStore(uri(), { readOnly: true });
  servedRuns = await ServedRuns.load(store, {
    experiment: 'best',
    modelCacheSize: 2,
    log: captureLog(),
    gates: DEFAULT_GATES,
    reloadIntervalMs: 60_000,
  });
  app = createApp({ serving: { mode: 'runs', servedRuns } });
  await app.ready();
}, 240_000);

afterAll(async () => {
  await app?.close();
  await store?.close();
});

describe('GET /runs/{run_id} of a run logged since the last reload', () => {
  it('answers it from the store as not loaded yet, with the next poll, until a reload lists it', async () => {
    const fresh = await logRun('best', 'second');
    const listed = (await app.inject({ url: '/runs' })).json().data.runs as { run_id: string }[];
    expect(listed.map((run) => run.run_id)).not.toContain(fresh);
    const answer = await app.inject({ url: `/runs/${fresh}` });
    expect(answer.statusCode, answer.body).toBe(200);
    const data = answer.json().data;
    expect(data).toMatchObject({ run_id: fresh, loaded: false });
    expect(data.next_poll_in_s).toBeGreaterThanOrEqual(0);
    expect(data.next_poll_in_s).toBeLessThanOrEqual(60);
    expect(data.performance.overall.f1).toBeGreaterThan(0);
    // Not servable until loaded: its predictions are still "no such run".
    const predicted = await app.inject({
      method: 'POST',
      url: `/runs/${fresh}/predict`,
      payload: { texts: [{ text: 'Feature stores for online inference' }] },
    });
    expect(predicted.statusCode).toBe(404);

    await servedRuns.reload();
    const loaded = (await app.inject({ url: `/runs/${fresh}` })).json().data;
    expect(loaded.run_id).toBe(fresh);
    expect(loaded).not.toHaveProperty('loaded');
    expect(loaded).not.toHaveProperty('next_poll_in_s');
  }, 120_000);

  it('stays a 404 for an id the store does not have, or has in another experiment', async () => {
    const elsewhere = await logRun('other', 'elsewhere');
    for (const id of ['0123456789abcdef0123456789abcdef', elsewhere]) {
      const answer = await app.inject({ url: `/runs/${id}` });
      expect(answer.statusCode, answer.body).toBe(404);
      expect(answer.json().detail ?? answer.body).not.toMatch(/loaded/);
    }
  }, 120_000);
});
