/**
 * Data-check warnings on the API (issue 32: a run whose test rows were 31 % in its training data was
 * served and its warning shown nowhere): GET /runs and GET /runs/{id} carry each run's warnings, and the
 * run whose test set leaked is held back by default — its f1 ranks first, another run is served, and
 * `not_served_because` says why.
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

const scratch = useTempDir('tagger-run-warnings-');
let store: TrackingStore;
let app: TaggerApp;
let clean: string;
let leaking: string;

beforeAll(async () => {
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  const writer = await openTrackingStore(uri);
  try {
    const rows = await readDataset(SAMPLE_DATA);
    const args = parseTrainingArgs({ num_epochs: 3, ngram_max_range: 4 });
    const log = async (name: string, outcome: ReturnType<typeof trainAndEvaluate>) =>
      (
        await logTrainingRun(writer, {
          experiment: 'best',
          runName: name,
          args,
          seed: 42,
          outcome,
          source: 'test',
        })
      ).runId;
    // The first run fixes the experiment's test set: every later run is tested on the same rows.
    const test = rows.slice(0, 60);
    const train = rows.slice(60);
    clean = await log('clean', trainAndEvaluate({ data: train, testData: test, args, seed: 42 }));
    // The same test rows, half of them also in the training data: a higher, meaningless f1.
    leaking = await log(
      'leaking',
      trainAndEvaluate({ data: [...train, ...test.slice(0, 30)], testData: test, args, seed: 42 }),
    );
  } finally {
    await writer.close();
  }
  store = await openTrackingStore(uri, { readOnly: true });
  const servedRuns = await ServedRuns.load(store, {
    experiment: 'best',
    modelCacheSize: 2,
    log: captureLog(),
    gates: DEFAULT_GATES,
  });
  app = createApp({ serving: { mode: 'runs', servedRuns } });
  await app.ready();
}, 240_000);

afterAll(async () => {
  await app?.close();
  await store?.close();
});

describe('data-check warnings on the API', () => {
  it('lists every run’s warnings, and holds back the run whose test set leaked, saying why', async () => {
    const runs = (await app.inject({ url: '/runs' })).json().data.runs as {
      run_id: string;
      served: boolean;
      warnings: string[];
      not_served_because?: string;
      metrics: { f1: number };
    }[];
    const byId = new Map(runs.map((run) => [run.run_id, run]));
    expect(byId.get(leaking)!.warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^30 of the 60 test rows \(50\.0%\) have the same text as a training/),
      ]),
    );
    expect(byId.get(leaking)!.metrics.f1).toBeGreaterThan(byId.get(clean)!.metrics.f1);
    expect(byId.get(leaking)!.served).toBe(false);
    expect(byId.get(leaking)!.not_served_because).toMatch(
      /test rows leaked into its training data.*TAGGER_ALLOW_TEST_LEAK/,
    );
    expect(byId.get(clean)!.served).toBe(true);
    expect(byId.get(clean)!.warnings.some((w) => /test rows/.test(w))).toBe(false);
    const one = (await app.inject({ url: `/runs/${leaking}` })).json().data;
    expect(one.warnings).toEqual(byId.get(leaking)!.warnings);
  });
});
