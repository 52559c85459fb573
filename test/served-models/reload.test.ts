/**
 * ServedRuns.reload over a real file store: outcomes (unchanged, updated, swapped, failed), snapshots
 * that stay consistent for requests that started on them, the model caches across reloads, faults of
 * the store and of the served run's artifacts, coalescing of overlapping reloads, and the poll timer.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EVALUATION_METRICS, EVALUATION_TAGS } from '../../src/model/index.js';
import {
  DEFAULT_GATES,
  pollReloads,
  type ReloadOutcome,
  type ReloadResult,
  ServedRuns,
  StartupError,
  UnknownRunError,
} from '../../src/served-models/index.js';
import {
  parseModelUri,
  registerModelVersion,
  TrackingError,
  type TrackingStore,
} from '../../src/tracking/index.js';
import { instrumentStore } from '../support/fixtures.js';
import { captureLog } from '../support/http.js';
import { logServedRun } from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';

const fx = useServingFixture();

let experiments = 0;

/** A fresh experiment with alpha (f1 0.9, model A) and beta (f1 0.7, model B), so tests never share runs. */
async function freshExperiment(): Promise<{ name: string; alpha: string; beta: string }> {
  const name = `reload-${++experiments}`;
  const alpha = await logServedRun(fx.store, name, { name: 'alpha', f1: 0.9, model: fx.modelA });
  const beta = await logServedRun(fx.store, name, { name: 'beta', f1: 0.7, model: fx.modelB });
  return { name, alpha, beta };
}

/** Store wrapper whose searchRuns / readArtifact can be made to fail or hide runs. */
function faultyStore(inner: TrackingStore) {
  const faults = {
    searchFails: false as false | TrackingError,
    hiddenRuns: new Set<string>(),
    unreadableRuns: new Set<string>(),
  };
  const store: TrackingStore = {
    ...instrumentStore(inner),
    searchRuns: async (id, options) => {
      if (faults.searchFails) throw faults.searchFails;
      const runs = await inner.searchRuns(id, options);
      return runs.filter((run) => !faults.hiddenRuns.has(run.info.runId));
    },
    readArtifact: async (runId, path) => {
      if (faults.unreadableRuns.has(runId)) {
        throw new TrackingError('NOT_FOUND', `artifact ${path} of run ${runId} not found`);
      }
      return inner.readArtifact(runId, path);
    },
  };
  return { store, faults };
}

async function loadServedRuns(
  name: string,
  store: TrackingStore = fx.store,
  onReload?: (outcome: ReloadOutcome, runId: string) => void,
) {
  const log = captureLog();
  const servedRuns = await ServedRuns.load(store, {
    experiment: name,
    modelCacheSize: 4,
    log,
    ...(onReload ? { onReload } : {}),
  });
  return { servedRuns, log };
}

describe('ServedRuns.reload outcomes', () => {
  it('is unchanged (same snapshot object) when neither the runs nor the best run changed', async () => {
    const { name, alpha } = await freshExperiment();
    const { servedRuns, log } = await loadServedRuns(name);
    const before = servedRuns.current;
    const result = await servedRuns.reload();
    expect(result).toEqual({ outcome: 'unchanged', runId: alpha, previousRunId: alpha, problems: [] });
    expect(servedRuns.current).toBe(before);
    expect(log.lines.filter((line) => line.level === 'warn')).toEqual([]);
  });

  it('is updated when a worse run appears: listed by /runs, same loaded best model', async () => {
    const { name, alpha, beta } = await freshExperiment();
    const { servedRuns } = await loadServedRuns(name);
    const best = servedRuns.best;
    const gamma = await logServedRun(fx.store, name, { name: 'gamma', f1: 0.8, model: fx.modelB });
    const result = await servedRuns.reload();
    expect(result.outcome).toBe('updated');
    expect(result.runId).toBe(alpha);
    expect(servedRuns.runs.map((run) => run.runId)).toEqual([alpha, gamma, beta]);
    expect(servedRuns.best).toBe(best);
    expect((await servedRuns.model(gamma)).args).toEqual(fx.modelB.args);
  });

  it('swaps to a new better run; a snapshot taken before still answers with the old run', async () => {
    const { name, alpha, beta } = await freshExperiment();
    const store = instrumentStore(fx.store);
    const { servedRuns, log } = await loadServedRuns(name, store);
    const old = servedRuns.current;
    await servedRuns.model(beta); // cached before the swap, handed over to the next snapshot
    const gamma = await logServedRun(fx.store, name, { name: 'gamma', f1: 0.95, model: fx.modelB });

    const result = await servedRuns.reload();
    expect(result).toEqual({ outcome: 'swapped', runId: gamma, previousRunId: alpha, problems: [] });
    expect(servedRuns.bestRunId).toBe(gamma);
    expect(servedRuns.best.args).toEqual(fx.modelB.args);
    expect(servedRuns.runs.map((run) => run.runId)).toEqual([gamma, alpha, beta]);
    expect(log.lines).toContainEqual(
      expect.objectContaining({ level: 'info', msg: 'reload: serving a new best run' }),
    );

    // The old snapshot is untouched: what a request that started on it reads.
    expect(old.bestRunId).toBe(alpha);
    expect(old.best.args).toEqual(fx.modelA.args);
    expect(old.runs.map((run) => run.runId)).toEqual([alpha, beta]);
    expect(() => old.run(gamma)).toThrow(UnknownRunError);

    // Models already loaded move over to the new snapshot without being read again.
    const reads = store.reads.length;
    expect(await servedRuns.model(alpha)).toBe(old.best);
    expect(await servedRuns.model(beta)).toBe(await old.model(beta));
    expect(await servedRuns.performance(alpha)).toBe(old.best.performance);
    expect(store.reads.length).toBe(reads);
  });

  it('skips a broken new best run for the next loadable one, and keeps the current one when that is it', async () => {
    const { name, alpha } = await freshExperiment();
    const { servedRuns, log } = await loadServedRuns(name);
    const best = servedRuns.best;
    const bad = await logServedRun(fx.store, name, {
      name: 'bad',
      f1: 0.99,
      model: fx.modelA,
      brokenModel: true,
    });

    const kept = await servedRuns.reload();
    expect(kept.outcome).toBe('updated');
    expect(kept.runId).toBe(alpha);
    expect(kept.problems).toEqual([expect.stringMatching(new RegExp(`^${bad}: model/`))]);
    expect(servedRuns.best).toBe(best);
    expect(servedRuns.runs[0]!.runId).toBe(bad);
    expect(log.lines).toContainEqual({
      level: 'warn',
      msg: 'skipping a run whose artifacts cannot be loaded',
      obj: { runId: bad, reason: expect.stringContaining('model/') },
    });

    const good = await logServedRun(fx.store, name, { name: 'good', f1: 0.95, model: fx.modelB });
    const swapped = await servedRuns.reload();
    expect(swapped).toMatchObject({ outcome: 'swapped', runId: good, previousRunId: alpha });
    expect(swapped.problems).toHaveLength(1);
    expect(servedRuns.best.args).toEqual(fx.modelB.args);
  });

  it('fails when the store cannot be read, keeps the snapshot, and recovers on the next reload', async () => {
    const { name, alpha } = await freshExperiment();
    const { store, faults } = faultyStore(fx.store);
    const outcomes: [ReloadOutcome, string][] = [];
    const { servedRuns, log } = await loadServedRuns(name, store, (outcome, runId) => {
      outcomes.push([outcome, runId]);
    });
    const before = servedRuns.current;
    faults.searchFails = new TrackingError('UNAVAILABLE', 'tracking server 127.0.0.1:9 is unreachable');
    const gamma = await logServedRun(fx.store, name, { name: 'gamma', f1: 0.95, model: fx.modelB });

    const failed = await servedRuns.reload();
    expect(failed.outcome).toBe('failed');
    expect(failed.runId).toBe(alpha);
    expect(failed.problems[0]).toMatch(
      /cannot read experiment "reload-\d+" in .*: tracking server .* unreachable/,
    );
    expect(servedRuns.current).toBe(before);
    expect(log.lines).toContainEqual({
      level: 'warn',
      msg: 'reload failed; still serving the runs and model loaded before',
      obj: { outcome: 'failed', runId: alpha, reason: expect.stringContaining('unreachable') },
    });

    faults.searchFails = false;
    expect((await servedRuns.reload()).outcome).toBe('swapped');
    expect(servedRuns.bestRunId).toBe(gamma);
    expect(outcomes).toEqual([
      ['failed', alpha],
      ['swapped', gamma],
    ]);
  });

  it('fails and keeps serving when no listed run is loadable any more', async () => {
    const { name, alpha, beta } = await freshExperiment();
    const { store, faults } = faultyStore(fx.store);
    const { servedRuns } = await loadServedRuns(name, store);
    const before = servedRuns.current;
    faults.hiddenRuns.add(alpha); // the served run left the experiment…
    faults.unreadableRuns.add(beta); // …and the only other one cannot be read
    const result = await servedRuns.reload();
    expect(result.outcome).toBe('failed');
    expect(result.problems[0]).toBe('none of the 1 finished runs of 1 has loadable artifacts');
    expect(servedRuns.current).toBe(before);
    expect(servedRuns.bestRunId).toBe(alpha);
  });

  it('keeps serving the loaded model when its artifacts disappear, and says so on each reload', async () => {
    const { name, alpha } = await freshExperiment();
    const { store, faults } = faultyStore(fx.store);
    const { servedRuns, log } = await loadServedRuns(name, store);
    const best = servedRuns.best;
    faults.unreadableRuns.add(alpha);
    const result = await servedRuns.reload();
    expect(result.outcome).toBe('unchanged');
    expect(result.runId).toBe(alpha);
    expect(result.problems).toEqual([expect.stringContaining(`${alpha}: artifact`)]);
    expect(log.lines).toContainEqual({
      level: 'warn',
      msg: "the served run's artifacts cannot be loaded any more; still serving the model loaded before",
      obj: { runId: alpha, reason: expect.stringContaining('not found') },
    });
    expect(servedRuns.best).toBe(best);
    expect(await servedRuns.model(alpha)).toBe(best);
    expect(await servedRuns.performance(alpha)).toBe(best.performance);
  });

  it('drops runs that left the experiment: unknown (404) with their cached models gone', async () => {
    const { name, alpha, beta } = await freshExperiment();
    const { store, faults } = faultyStore(fx.store);
    const { servedRuns } = await loadServedRuns(name, store);
    await servedRuns.model(beta);
    await servedRuns.performance(beta);
    expect(servedRuns.cachedModelRunIds()).toEqual([beta]);
    const old = servedRuns.current;

    faults.hiddenRuns.add(beta);
    expect((await servedRuns.reload()).outcome).toBe('updated');
    expect(servedRuns.runs.map((run) => run.runId)).toEqual([alpha]);
    expect(servedRuns.cachedModelRunIds()).toEqual([]);
    await expect(servedRuns.model(beta)).rejects.toBeInstanceOf(UnknownRunError);
    await expect(servedRuns.performance(beta)).rejects.toBeInstanceOf(UnknownRunError);
    // A request that started before the reload still finishes on its snapshot.
    expect((await old.model(beta)).args).toEqual(fx.modelB.args);
  });

  it('ignores a reload listener that throws', async () => {
    const { name } = await freshExperiment();
    const { servedRuns } = await loadServedRuns(name, fx.store, () => {
      throw new Error('metrics broke');
    });
    expect((await servedRuns.reload()).outcome).toBe('unchanged');
  });
});

describe('ServedRuns: only finished runs go live, skips are logged once', () => {
  it('never serves a RUNNING or FAILED run, however high its f1, at load or on reload', async () => {
    const { name, alpha } = await freshExperiment();
    const running = await logServedRun(fx.store, name, { name: 'still-running', f1: 0.99, model: fx.modelB });
    await fx.store.updateRun(running, { status: 'RUNNING' });
    const failed = await logServedRun(fx.store, name, { name: 'failed', f1: 0.98, model: fx.modelB });
    await fx.store.updateRun(failed, { status: 'FAILED' });

    const { servedRuns } = await loadServedRuns(name);
    expect(servedRuns.bestRunId).toBe(alpha);
    // Listed all the same (GET /runs shows every run with its status).
    expect(servedRuns.runs.map((run) => run.runId).slice(0, 2)).toEqual([running, failed]);

    const later = await logServedRun(fx.store, name, { name: 'later-running', f1: 0.995, model: fx.modelB });
    await fx.store.updateRun(later, { status: 'RUNNING' });
    expect((await servedRuns.reload()).runId).toBe(alpha);

    await fx.store.updateRun(later, { status: 'FINISHED' });
    expect(await servedRuns.reload()).toMatchObject({ outcome: 'swapped', runId: later });
  });

  it('an experiment with no finished run does not start, and says why', async () => {
    const name = `reload-${++experiments}`;
    const running = await logServedRun(fx.store, name, { name: 'running', f1: 0.9, model: fx.modelA });
    await fx.store.updateRun(running, { status: 'RUNNING' });
    const error = await loadServedRuns(name).catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(/none of the 1 runs of experiment .* is FINISHED \(1 RUNNING\)/);
  });

  it('a broken run that outranks the served one is logged once, not at every reload', async () => {
    const { name, alpha } = await freshExperiment();
    const { servedRuns, log } = await loadServedRuns(name);
    const bad = await logServedRun(fx.store, name, {
      name: 'bad',
      f1: 0.99,
      model: fx.modelA,
      brokenModel: true,
    });
    for (let poll = 0; poll < 4; poll += 1) expect((await servedRuns.reload()).runId).toBe(alpha);
    const warnings = log.lines.filter(
      (line) =>
        line.msg === 'skipping a run whose artifacts cannot be loaded' &&
        (line.obj as { runId?: string } | undefined)?.runId === bad,
    );
    expect(warnings).toHaveLength(1);
  });
});

describe('ServedRuns: promotion gates', () => {
  const evaluated = (digest: string, size: number, tags = 4) => ({
    [EVALUATION_TAGS.testSetDigest]: digest,
    [EVALUATION_TAGS.testSetSize]: String(size),
    [EVALUATION_TAGS.trainedTags]: String(tags),
  });

  it('a better f1 on a tiny or different test set, or from a one-tag model, never goes live', async () => {
    const name = `reload-${++experiments}`;
    const served = await logServedRun(fx.store, name, {
      name: 'served',
      f1: 0.8,
      model: fx.modelA,
      tags: evaluated('digest-1', 200),
    });
    const { servedRuns, log } = await loadServedRuns(name);
    expect(servedRuns.bestRunId).toBe(served);

    await logServedRun(fx.store, name, {
      name: 'tiny',
      f1: 1,
      model: fx.modelB,
      tags: evaluated('digest-9', 9),
    });
    await logServedRun(fx.store, name, {
      name: 'one-tag',
      f1: 0.99,
      model: fx.modelB,
      tags: evaluated('digest-1', 200, 1),
    });
    const other = await logServedRun(fx.store, name, {
      name: 'other-test-set',
      f1: 0.95,
      model: fx.modelB,
      tags: evaluated('digest-2', 200),
    });
    for (let poll = 0; poll < 3; poll += 1) expect((await servedRuns.reload()).runId).toBe(served);
    const held = log.lines.filter(
      (line) => line.msg === 'not serving a run that does not pass the promotion gates',
    );
    // Once per run, not once per poll.
    expect(held).toHaveLength(3);

    const comparable = await logServedRun(fx.store, name, {
      name: 'comparable',
      f1: 0.9,
      model: fx.modelB,
      tags: evaluated('digest-1', 200),
    });
    expect(await servedRuns.reload()).toMatchObject({ outcome: 'swapped', runId: comparable });
    expect(other).not.toBe(comparable);
  });

  it('allowIncomparable swaps to the best run whatever its test set', async () => {
    const name = `reload-${++experiments}`;
    await logServedRun(fx.store, name, {
      name: 'served',
      f1: 0.8,
      model: fx.modelA,
      tags: evaluated('digest-1', 200),
    });
    const log = captureLog();
    const servedRuns = await ServedRuns.load(fx.store, {
      experiment: name,
      modelCacheSize: 4,
      log,
      gates: { ...DEFAULT_GATES, allowIncomparable: true },
    });
    const other = await logServedRun(fx.store, name, {
      name: 'other-test-set',
      f1: 0.95,
      model: fx.modelB,
      tags: evaluated('digest-2', 200),
    });
    expect(await servedRuns.reload()).toMatchObject({ outcome: 'swapped', runId: other });
  });

  it('holds back a run whose model fails too many behavioural tests; runs without the metric pass', async () => {
    const name = `reload-${++experiments}`;
    const failing = await logServedRun(fx.store, name, {
      name: 'fails-behaviour',
      f1: 0.99,
      model: fx.modelB,
      metrics: { [EVALUATION_METRICS.behaviouralPassRate]: 0.58 },
    });
    const passing = await logServedRun(fx.store, name, {
      name: 'passes-behaviour',
      f1: 0.9,
      model: fx.modelA,
      metrics: { [EVALUATION_METRICS.behaviouralPassRate]: 0.97 },
    });
    const gated = async () => {
      const log = captureLog();
      const servedRuns = await ServedRuns.load(fx.store, {
        experiment: name,
        modelCacheSize: 4,
        log,
        gates: { ...DEFAULT_GATES, minBehaviouralPassRate: 0.9 },
      });
      return { servedRuns, log };
    };
    const { servedRuns, log } = await gated();
    expect(servedRuns.bestRunId).toBe(passing);
    expect(servedRuns.problems.heldBack).toEqual([
      {
        runId: failing,
        kind: 'gates',
        reason: expect.stringMatching(
          /passed 58\.0% of its behavioural tests, fewer than the 90\.0% required/,
        ),
      },
    ]);
    expect(
      log.lines.some((line) => line.msg === 'not serving a run that does not pass the promotion gates'),
    ).toBe(true);
    // Off by default: the best f1 serves.
    expect((await loadServedRuns(name)).servedRuns.bestRunId).toBe(failing);
    // A run logged without behavioural tests (older Tagger, another tool) is not held back for that.
    const unchecked = await logServedRun(fx.store, name, { name: 'unchecked', f1: 0.995, model: fx.modelA });
    expect((await servedRuns.reload()).runId).toBe(unchecked);
    expect((await gated()).servedRuns.bestRunId).toBe(unchecked);
  });

  it('startup skips runs that fail the gates and says so when none passes', async () => {
    const name = `reload-${++experiments}`;
    await logServedRun(fx.store, name, { name: 'tiny', f1: 1, model: fx.modelA, tags: evaluated('d', 9) });
    const error = await loadServedRuns(name).catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(/none of the finished runs .* passes the promotion gates/);
    const ok = await logServedRun(fx.store, name, {
      name: 'ok',
      f1: 0.5,
      model: fx.modelB,
      tags: evaluated('d', 100),
    });
    expect((await loadServedRuns(name)).servedRuns.bestRunId).toBe(ok);
  });
});

describe('ServedRuns.problems: what readiness and metrics report', () => {
  it('lists better-ranked runs held back (gates, unloadable) and an unreadable store, then clears them', async () => {
    const { name, alpha } = await freshExperiment();
    const { store, faults } = faultyStore(fx.store);
    const { servedRuns } = await loadServedRuns(name, store);
    expect(servedRuns.problems).toEqual({ store: null, heldBack: [] });

    const broken = await logServedRun(fx.store, name, {
      name: 'broken',
      f1: 0.99,
      model: fx.modelA,
      brokenModel: true,
    });
    const tiny = await logServedRun(fx.store, name, {
      name: 'tiny',
      f1: 0.98,
      model: fx.modelB,
      tags: { [EVALUATION_TAGS.testSetSize]: '5' },
    });
    expect((await servedRuns.reload()).runId).toBe(alpha);
    expect(servedRuns.problems.store).toBeNull();
    expect(servedRuns.problems.heldBack).toEqual([
      { runId: broken, kind: 'unloadable', reason: expect.stringMatching(/^model\//) },
      { runId: tiny, kind: 'gates', reason: expect.stringMatching(/test split has 5 rows/) },
    ]);

    faults.searchFails = new TrackingError('UNAVAILABLE', 'tracking server 127.0.0.1:9 is unreachable');
    expect((await servedRuns.reload()).outcome).toBe('failed');
    expect(servedRuns.problems.store).toMatch(/could not read the tracking store/);
    expect(servedRuns.problems.store).not.toMatch(/127\.0\.0\.1/);
    faults.searchFails = false;
    await servedRuns.reload();
    expect(servedRuns.problems.store).toBeNull();
  });
});

describe('ServedRuns: a pinned run (--run-id)', () => {
  it('serves the pinned run, not the best, and keeps it through reloads while the list refreshes', async () => {
    const { name, alpha, beta } = await freshExperiment();
    const log = captureLog();
    const servedRuns = await ServedRuns.load(fx.store, {
      experiment: name,
      modelCacheSize: 4,
      log,
      pinRunId: beta,
    });
    expect(servedRuns.bestRunId).toBe(beta);
    expect(servedRuns.runs[0]!.runId).toBe(alpha);
    const better = await logServedRun(fx.store, name, { name: 'better', f1: 0.99, model: fx.modelA });
    const result = await servedRuns.reload();
    expect(result).toMatchObject({ outcome: 'updated', runId: beta });
    expect(servedRuns.runs[0]!.runId).toBe(better);
  });

  it('a pin that is not a run of the experiment, or cannot load, stops startup with the reason', async () => {
    const { name } = await freshExperiment();
    const unknown = await loadServedRunsPinned(name, 'f'.repeat(32)).catch((caught: unknown) => caught);
    expect((unknown as Error).message).toMatch(
      /--run-id f{32} is not a run of experiment .* \(it has 2 runs\)/,
    );
    const broken = await logServedRun(fx.store, name, {
      name: 'broken',
      f1: 0.1,
      model: fx.modelA,
      brokenModel: true,
    });
    const error = await loadServedRunsPinned(name, broken).catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(
      new RegExp(`--run-id ${broken} \\(status FINISHED\\) cannot be served: model/`),
    );
  });
});

describe('ServedRuns: a model URI (--model-uri)', () => {
  let models = 0;
  const loadTarget = (uri: string, store: TrackingStore = fx.store) => {
    const log = captureLog();
    return ServedRuns.load(store, {
      experiment: 'best',
      modelCacheSize: 4,
      log,
      modelUri: parseModelUri(uri),
    }).then((servedRuns) => ({ servedRuns, log }));
  };

  it('serves the version an alias points at and follows the alias (swap, version change, unchanged)', async () => {
    const { name: experiment, alpha, beta } = await freshExperiment();
    const model = `reload-model-${++models}`;
    const source = (runId: string) => ({ source: `runs:/${runId}/model`, runId });
    await registerModelVersion(fx.store.registry, model, source(beta));
    await registerModelVersion(fx.store.registry, model, source(alpha));
    await registerModelVersion(fx.store.registry, model, source(alpha));
    await fx.store.registry.setAlias(model, 'champion', 1);

    const { servedRuns } = await loadTarget(`models:/${model}@champion`);
    // The alias decides, not f1: beta (0.7) serves although alpha (0.9) is listed first.
    expect(servedRuns.bestRunId).toBe(beta);
    expect(servedRuns.runs.map((run) => run.runId)).toEqual([alpha, beta]);
    expect(servedRuns.current.target).toEqual({
      uri: `models:/${model}@champion`,
      version: expect.objectContaining({ name: model, version: 1, runId: beta }),
    });
    expect(await servedRuns.reload()).toMatchObject({ outcome: 'unchanged', runId: beta });

    await fx.store.registry.setAlias(model, 'champion', 2);
    const swapped = await servedRuns.reload();
    expect(swapped).toMatchObject({ outcome: 'swapped', runId: alpha, previousRunId: beta });
    expect(servedRuns.best.args).toEqual(fx.modelA.args);
    expect(servedRuns.current.target?.version?.version).toBe(2);

    // Another version of the same run: nothing to load, but responses must name the new version.
    await fx.store.registry.setAlias(model, 'champion', 3);
    expect(await servedRuns.reload()).toMatchObject({ outcome: 'updated', runId: alpha });
    expect(servedRuns.current.target?.version?.version).toBe(3);
    expect(experiment).toMatch(/^reload-/);
  });

  it('serves models:/<name>/<version>, @latest and runs:/ URIs', async () => {
    const { alpha, beta } = await freshExperiment();
    const model = `reload-model-${++models}`;
    await registerModelVersion(fx.store.registry, model, { source: `runs:/${alpha}/model`, runId: alpha });
    await registerModelVersion(fx.store.registry, model, { source: `runs:/${beta}/model`, runId: beta });
    expect((await loadTarget(`models:/${model}/1`)).servedRuns.bestRunId).toBe(alpha);
    const latest = (await loadTarget(`models:/${model}@latest`)).servedRuns;
    expect(latest.bestRunId).toBe(beta);
    expect(latest.current.target?.version?.version).toBe(2);
    const byRun = (await loadTarget(`runs:/${alpha}/model`)).servedRuns;
    expect(byRun.bestRunId).toBe(alpha);
    expect(byRun.current.target).toEqual({ uri: `runs:/${alpha}/model`, version: null });
  });

  it('stops startup with the reason: missing model, alias or version, a version without a run, a broken model', async () => {
    const { alpha } = await freshExperiment();
    const model = `reload-model-${++models}`;
    const failure = async (uri: string) => {
      const error = await loadTarget(uri).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StartupError);
      return (error as Error).message;
    };
    expect(await failure(`models:/${model}@champion`)).toMatch(
      new RegExp(
        `^--model-uri models:/${model}@champion \\(file:.*\\): tracking: no registered model named '${model}'`,
      ),
    );
    await registerModelVersion(fx.store.registry, model, { source: 's3://elsewhere/model', runId: null });
    expect(await failure(`models:/${model}@champion`)).toMatch(
      /has no alias 'champion' \(it has no aliases\)/,
    );
    expect(await failure(`models:/${model}/7`)).toMatch(/has no version 7 \(newest: 1\)/);
    expect(await failure(`models:/${model}/1`)).toMatch(
      /version 1 of model '.*' \(s3:\/\/elsewhere\/model\) was not registered from a run/,
    );
    expect(await failure(`runs:/${'f'.repeat(32)}/model`)).toMatch(/run f{32}, which does not exist/);
    const broken = await logServedRun(fx.store, `reload-broken-${models}`, {
      name: 'broken',
      f1: 0.1,
      model: fx.modelA,
      brokenModel: true,
    });
    expect(await failure(`runs:/${broken}/model`)).toMatch(
      new RegExp(`points at run ${broken}, which cannot be served: model/`),
    );
    expect(alpha).toBeTruthy();
  });

  it('keeps the old model when the alias moves to a broken version or cannot be resolved, and says so', async () => {
    const { alpha } = await freshExperiment();
    const broken = await logServedRun(fx.store, `reload-broken-${++models}`, {
      name: 'broken',
      f1: 0.99,
      model: fx.modelA,
      brokenModel: true,
    });
    const model = `reload-model-${models}`;
    await registerModelVersion(fx.store.registry, model, { source: `runs:/${alpha}/model`, runId: alpha });
    await registerModelVersion(fx.store.registry, model, { source: `runs:/${broken}/model`, runId: broken });
    await fx.store.registry.setAlias(model, 'champion', 1);
    const { servedRuns, log } = await loadTarget(`models:/${model}@champion`);

    await fx.store.registry.setAlias(model, 'champion', 2);
    for (let i = 0; i < 3; i++) {
      expect(await servedRuns.reload()).toMatchObject({ outcome: 'failed', runId: alpha });
    }
    expect(servedRuns.bestRunId).toBe(alpha);
    expect(servedRuns.problems).toEqual({
      store: null,
      heldBack: [
        {
          runId: broken,
          kind: 'unloadable',
          reason: expect.stringMatching(/^model\/: /),
          target: `models:/${model}/2`,
        },
      ],
    });
    expect(servedRuns.problems.heldBack[0]!.reason).not.toMatch(/\/tmp|file:/);
    // Logged once, not at every reload.
    expect(
      log.lines.filter((line) => line.msg.includes('points at a run that cannot be loaded')),
    ).toHaveLength(1);

    await fx.store.registry.deleteAlias(model, 'champion');
    expect(await servedRuns.reload()).toMatchObject({ outcome: 'failed', runId: alpha });
    expect(servedRuns.problems.store).toBe(
      `models:/${model}@champion cannot be resolved now (the model, alias, version or run it names does not exist); the model loaded before keeps serving`,
    );

    await fx.store.registry.setAlias(model, 'champion', 1);
    expect(await servedRuns.reload()).toMatchObject({ outcome: 'unchanged', runId: alpha });
    expect(servedRuns.problems).toEqual({ store: null, heldBack: [] });
  });
});

function loadServedRunsPinned(name: string, pinRunId: string): Promise<ServedRuns> {
  return ServedRuns.load(fx.store, { experiment: name, modelCacheSize: 4, log: captureLog(), pinRunId });
}

describe('ServedRuns.reload coalescing', () => {
  it('never runs two reloads at once: calls during one share a single reload queued behind it', async () => {
    const { name } = await freshExperiment();
    let active = 0;
    let maxActive = 0;
    let searches = 0;
    let release!: () => void;
    let gate: Promise<void> | undefined;
    const inner = fx.store;
    const store: TrackingStore = {
      ...instrumentStore(inner),
      searchRuns: async (id, options) => {
        searches++;
        active++;
        maxActive = Math.max(maxActive, active);
        try {
          await gate;
          return await inner.searchRuns(id, options);
        } finally {
          active--;
        }
      },
    };
    const { servedRuns } = await loadServedRuns(name, store);
    searches = 0;
    gate = new Promise<void>((done) => {
      release = done;
    });
    const first = servedRuns.reload();
    await vi.waitFor(() => expect(searches).toBe(1));
    const second = servedRuns.reload();
    const third = servedRuns.reload();
    expect(third).toBe(second);
    expect(second).not.toBe(first);
    let settled = false;
    const idle = servedRuns.settled().then(() => {
      settled = true;
    });
    release();
    const results = await Promise.all([first, second, third]);
    await idle;
    expect(settled).toBe(true);
    expect(results.map((r: ReloadResult) => r.outcome)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    expect(searches).toBe(2);
    expect(maxActive).toBe(1);
    // Once idle, a new call starts a new reload.
    await servedRuns.reload();
    expect(searches).toBe(3);
  });
});

describe('pollReloads', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const result: ReloadResult = { outcome: 'unchanged', runId: 'r', previousRunId: 'r', problems: [] };

  it('reloads every interval, counted from the end of the previous reload, until stopped', async () => {
    vi.useFakeTimers();
    let calls = 0;
    let finish: (() => void) | undefined;
    const reload = () => {
      calls++;
      return new Promise<ReloadResult>((done) => {
        finish = () => done(result);
      });
    };
    const poller = pollReloads(reload, 1_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(1);
    // A slow reload: no second one is started while it runs.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toBe(1);
    finish!();
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    finish!();
    poller.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toBe(2);
  });

  it('keeps polling after a reload that rejects, and does nothing with interval 0', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const poller = pollReloads(() => {
      calls++;
      return Promise.reject(new Error('boom'));
    }, 100);
    await vi.advanceTimersByTimeAsync(350);
    expect(calls).toBe(3);
    poller.stop();

    let off = 0;
    pollReloads(() => {
      off++;
      return Promise.resolve(result);
    }, 0);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(off).toBe(0);
    expect(() => pollReloads(() => Promise.resolve(result), -1)).toThrow(RangeError);
  });
});
