/** ServedRuns over a real file store: ordering, skipping broken runs, lazy bounded model cache, failures. */
import { describe, expect, it } from 'vitest';
import { MODEL_FILES } from '../../src/model/index.js';
import { RunLoadError, ServedRuns, StartupError, UnknownRunError } from '../../src/served-models/index.js';
import { instrumentStore } from '../support/fixtures.js';
import { captureLog } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();

const load = (experiment: string, modelCacheSize = 4, store = fx.store) =>
  ServedRuns.load(store, { experiment, modelCacheSize, log: captureLog() });

/** Reads of a full model load: args.json, performance.json, every model file and the (optional) reference profile. */
const FULL_LOAD = 3 + MODEL_FILES.length;

describe('ServedRuns.load', () => {
  it('orders runs by f1 descending (NaN, then no f1, last) and serves the best loadable one', async () => {
    const log = captureLog();
    const servedRuns = await ServedRuns.load(fx.store, { experiment: 'best', modelCacheSize: 4, log });
    expect(servedRuns.runs.map((r) => r.runName)).toEqual([
      'broken',
      'alpha',
      'beta',
      'noperf',
      'nan',
      'nof1',
    ]);
    expect(servedRuns.bestRunId).toBe(fx.runs.alpha);
    expect(servedRuns.best.args).toEqual(fx.modelA.args);
    expect(log.lines.filter((l) => l.level === 'warn').map((l) => l.obj)).toEqual([
      { runId: fx.runs.broken, reason: expect.stringContaining('model/') },
    ]);
  });

  it('reads only the best loadable run and the broken ones before it at startup', async () => {
    const store = instrumentStore(fx.store);
    await load('best', 4, store);
    const runsRead = new Set(store.reads.map((r) => r.split('/')[0]));
    expect(runsRead).toEqual(new Set([fx.runs.broken, fx.runs.alpha]));
  });

  it('says how to fix a missing experiment', async () => {
    const error = await load('nope').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(
      /experiment "nope" in .* does not exist; train one first, e\.g\. `tagger train --data samples\/projects\.csv --experiment nope --tracking-uri \S+`/,
    );
  });

  it('says how to fix an experiment without runs', async () => {
    const error = await load('empty').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(
      /experiment "empty" in .* has no runs; train one first, e\.g\. `tagger train --data samples\/projects\.csv --experiment empty --tracking-uri \S+`/,
    );
  });

  it('lists why each run failed when none can be loaded', async () => {
    const error = await load('allbroken').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    const message = (error as Error).message;
    expect(message).toContain('none of the 2 runs of experiment "allbroken"');
    expect(message).toContain(`${fx.allBroken[0]}: model/`);
    expect(message).toContain(`${fx.allBroken[1]}: args.json must hold a JSON object`);
    expect(message).toContain('tagger train --data samples/projects.csv');
  });
});

describe('ServedRuns.model', () => {
  it('loads a run once, keeps at most modelCacheSize others, and never evicts the best run', async () => {
    const store = instrumentStore(fx.store);
    const servedRuns = await load('best', 1, store);
    const startupReads = store.reads.length;
    expect(await servedRuns.model(fx.runs.alpha)).toBe(servedRuns.best);
    expect(store.reads.length).toBe(startupReads);

    await servedRuns.model(fx.runs.beta);
    await servedRuns.model(fx.runs.beta);
    expect(store.readsOf(fx.runs.beta)).toBe(FULL_LOAD);
    await servedRuns.model(fx.runs.nan); // evicts beta (capacity 1)
    expect(servedRuns.cachedModelRunIds()).toEqual([fx.runs.nan]);
    await servedRuns.model(fx.runs.beta);
    expect(store.readsOf(fx.runs.beta)).toBe(2 * FULL_LOAD);
    expect(await servedRuns.model(fx.runs.alpha)).toBe(servedRuns.best);
  });

  it('loads concurrently requested runs once (single flight)', async () => {
    const store = instrumentStore(fx.store);
    const servedRuns = await load('best', 4, store);
    const models = await Promise.all(Array.from({ length: 8 }, () => servedRuns.model(fx.runs.nof1)));
    expect(new Set(models).size).toBe(1);
    expect(store.readsOf(fx.runs.nof1)).toBe(FULL_LOAD);
  });

  it('rejects unknown ids without reading, and broken runs with a RunLoadError each time', async () => {
    const store = instrumentStore(fx.store);
    const servedRuns = await load('best', 4, store);
    const before = store.reads.length;
    await expect(servedRuns.model('../x')).rejects.toBeInstanceOf(UnknownRunError);
    await expect(servedRuns.performance('__proto__')).rejects.toBeInstanceOf(UnknownRunError);
    expect(store.reads.length).toBe(before);
    const error = await servedRuns.model(fx.runs.broken).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunLoadError);
    expect(error).toMatchObject({ runId: fx.runs.broken, transient: false });
    const afterFirst = store.readsOf(fx.runs.broken);
    await expect(servedRuns.model(fx.runs.broken)).rejects.toBeInstanceOf(RunLoadError);
    expect(store.readsOf(fx.runs.broken)).toBeGreaterThan(afterFirst);
  });
});
