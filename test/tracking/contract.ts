/**
 * The shared contract every `TrackingStore` adapter must pass (file store, REST store, ...).
 *
 * Rules for this suite, so it can run against any adapter and against a shared server:
 * - it talks to the store only through the `TrackingStore` interface and assumes nothing about where
 *   or how data is kept (artifact URIs, id formats beyond "string", storage layout);
 * - every test creates its own uniquely named experiment, so concurrent runs and leftovers from earlier
 *   runs never interfere;
 * - values avoid adapter-specific lossy corners (e.g. ±Infinity, which MLflow's SQL store clamps to
 *   ±1.8e308); those belong in adapter-specific tests.
 *
 * Usage (from a `*.test.ts` file):
 *   runTrackingStoreContract('file store', async () => ({ store, cleanup }), { skip: { 'name': 'why' } });
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerModelVersion, versionByAlias } from '../../src/tracking/model-registry.js';
import type { ArtifactEntry, Run, TrackingStore } from '../../src/tracking/store.js';
import { getOrCreateExperiment, TrackingError } from '../../src/tracking/store.js';
import { defineOutputsContract } from './contract-datasets-and-models.js';

export interface ContractSubject {
  store: TrackingStore;
  cleanup(): Promise<void>;
}

export interface ContractOptions {
  /** Test name -> reason. Skipped tests are reported with the reason, never silently dropped. */
  skip?: Record<string, string>;
}

/** Names of every test in the suite, so callers can refer to them in `skip` without typos. */
export const CONTRACT_TESTS = [
  'experiments: create, get by name, missing, duplicate',
  'experiments: concurrent creators of one name end with one experiment',
  'checkWritable: a store this process can write passes, and it leaves nothing behind',
  'createRun: RUNNING run with name, start time, user and tags',
  'getRun: unknown run id gives null',
  'logBatch: metric history with steps, params, tags',
  'logBatch: params are immutable, tags are overwritten',
  'getMetricHistory: every value in logging order; unknown key gives []',
  'metrics: latest value is max by (step, timestamp, value)',
  'metrics: NaN values round-trip',
  'updateRun: FINISHED with end time',
  'searchRuns: ordered by latest metric DESC with ties, NaN and missing last',
  'searchRuns: ordered by latest metric ASC keeps NaN and missing last',
  'searchRuns: default order is newest start time first',
  'searchRuns: finishedOnly and experiment isolation',
  'artifacts: nested paths, binary round-trip, one-level listing',
  'artifacts: reading a missing artifact is NOT_FOUND',
  'artifacts: invalid artifact paths are INVALID_ARGUMENT',
  'keys: invalid metric, param and tag keys are INVALID_ARGUMENT',
  'registry: versions numbered in order, aliases set, moved and deleted',
  'registry: missing models, versions and aliases; invalid names and reserved aliases',
  'registry: concurrent registrations of one new model get distinct versions',
] as const;

export type ContractTestName = (typeof CONTRACT_TESTS)[number];

/** A name no other test run (here or on a shared server) will use. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
}

/** Runs `fn` and returns the TrackingError it throws; fails the test if it resolves or throws anything else. */
export async function expectTrackingError(fn: () => Promise<unknown>, code: string): Promise<TrackingError> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a TrackingError ${code}, but the call succeeded`).toBeInstanceOf(TrackingError);
  const error = caught as TrackingError;
  expect(error.code, error.message).toBe(code);
  expect(error.message).toMatch(/^tracking: /);
  return error;
}

const ids = (runs: Run[]): string[] => runs.map((run) => run.info.runId);

export function runTrackingStoreContract(
  name: string,
  factory: () => Promise<ContractSubject>,
  options: ContractOptions = {},
): void {
  const skip = options.skip ?? {};
  for (const key of Object.keys(skip)) {
    if (!(CONTRACT_TESTS as readonly string[]).includes(key)) {
      throw new Error(`runTrackingStoreContract(${name}): unknown test name in skip: '${key}'`);
    }
  }

  describe(`TrackingStore contract: ${name}`, () => {
    let subject: ContractSubject | undefined;
    const store = (): TrackingStore => {
      if (!subject) throw new Error('contract: the store factory did not run (see beforeAll errors)');
      return subject.store;
    };

    beforeAll(async () => {
      subject = await factory();
    });
    afterAll(async () => {
      if (subject) {
        await subject.store.close();
        // close() must be idempotent.
        await subject.store.close();
        await subject.cleanup();
      }
    });

    const test = (testName: ContractTestName, body: () => Promise<void>): void => {
      const reason = skip[testName];
      if (reason !== undefined) {
        it.skip(`${testName} [skipped: ${reason}]`, body);
        return;
      }
      it(testName, body);
    };

    const newExperiment = async (): Promise<string> => store().createExperiment(uniqueName('contract'));

    test('experiments: create, get by name, missing, duplicate', async () => {
      const s = store();
      const experimentName = uniqueName('contract-exp');
      expect(await s.getExperimentByName(experimentName)).toBeNull();

      const id = await s.createExperiment(experimentName);
      expect(typeof id).toBe('string');
      expect(id.length).toBeGreaterThan(0);

      const experiment = await s.getExperimentByName(experimentName);
      expect(experiment).not.toBeNull();
      expect(experiment?.experimentId).toBe(id);
      expect(typeof experiment?.experimentId).toBe('string');
      expect(experiment?.name).toBe(experimentName);
      expect(experiment?.lifecycleStage).toBe('active');
      expect(typeof experiment?.artifactLocation).toBe('string');

      await expectTrackingError(() => s.createExperiment(experimentName), 'ALREADY_EXISTS');

      const other = await s.createExperiment(uniqueName('contract-exp'));
      expect(other).not.toBe(id);
    });

    test('experiments: concurrent creators of one name end with one experiment', async () => {
      const s = store();
      const name = uniqueName('concurrent');
      const ids = await Promise.all(Array.from({ length: 8 }, () => getOrCreateExperiment(s, name)));
      expect(new Set(ids).size, `ids handed out: ${ids.join(', ')}`).toBe(1);
      expect((await s.getExperimentByName(name))?.experimentId).toBe(ids[0]);
    });

    test('checkWritable: a store this process can write passes, and it leaves nothing behind', async () => {
      const s = store();
      const experimentId = await newExperiment();
      await s.checkWritable();
      await s.checkWritable();
      expect(await s.searchRuns(experimentId)).toEqual([]);
    });

    test('createRun: RUNNING run with name, start time, user and tags', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const startTime = 1_700_000_000_123;
      const run = await s.createRun(experimentId, {
        runName: 'contract-run',
        startTime,
        userId: 'contract-user',
        tags: { 'team.name': 'tagger', 'nested/tag': 'yes' },
      });
      expect(typeof run.info.runId).toBe('string');
      expect(run.info.runId.length).toBeGreaterThan(0);
      expect(run.info.experimentId).toBe(experimentId);
      expect(run.info.status).toBe('RUNNING');
      expect(run.info.runName).toBe('contract-run');
      expect(run.info.startTime).toBe(startTime);
      expect(run.info.endTime).toBeNull();
      expect(run.info.userId).toBe('contract-user');
      expect(run.info.lifecycleStage).toBe('active');
      expect(run.tags['mlflow.runName']).toBe('contract-run');
      expect(run.tags['team.name']).toBe('tagger');
      expect(run.tags['nested/tag']).toBe('yes');
      expect(run.metrics).toEqual({});
      expect(run.params).toEqual({});

      const fetched = await s.getRun(run.info.runId);
      expect(fetched?.info).toEqual(run.info);
      expect(fetched?.tags).toEqual(run.tags);

      // Without an explicit start time the store uses "now".
      const before = Date.now();
      const defaulted = await s.createRun(experimentId, { runName: 'now' });
      expect(defaulted.info.startTime).toBeGreaterThanOrEqual(before - 60_000);
      expect(defaulted.info.runId).not.toBe(run.info.runId);
    });

    test('getRun: unknown run id gives null', async () => {
      expect(await store().getRun(randomBytes(16).toString('hex'))).toBeNull();
    });

    test('logBatch: metric history with steps, params, tags', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'batch', startTime: 1_000 });
      await s.logBatch(info.runId, {
        metrics: [
          { key: 'loss', value: 0.9, timestamp: 10_000, step: 0 },
          { key: 'loss', value: 0.5, timestamp: 10_001, step: 1 },
          { key: 'loss', value: 0.25, timestamp: 10_002, step: 2 },
          { key: 'val/f1', value: 0.75, timestamp: 10_003, step: 0 },
        ],
        params: { lr: '0.01', 'model/kind': 'sgd', empty: '' },
        tags: { phase: 'train' },
      });
      const run = await s.getRun(info.runId);
      expect(run?.metrics).toEqual({ loss: 0.25, 'val/f1': 0.75 });
      expect(run?.params).toEqual({ lr: '0.01', 'model/kind': 'sgd', empty: '' });
      expect(run?.tags['phase']).toBe('train');
      expect(run?.tags['mlflow.runName']).toBe('batch');

      // An empty batch is accepted and changes nothing.
      await s.logBatch(info.runId, {});
      expect((await s.getRun(info.runId))?.metrics).toEqual({ loss: 0.25, 'val/f1': 0.75 });
    });

    test('logBatch: params are immutable, tags are overwritten', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'immutable' });
      await s.logBatch(info.runId, { params: { lr: '0.01' }, tags: { stage: 'one' } });
      // Same value again is a no-op.
      await s.logBatch(info.runId, { params: { lr: '0.01' } });
      await expectTrackingError(() => s.logBatch(info.runId, { params: { lr: '0.02' } }), 'INVALID_ARGUMENT');
      await s.logBatch(info.runId, { tags: { stage: 'two' } });
      const run = await s.getRun(info.runId);
      expect(run?.params['lr']).toBe('0.01');
      expect(run?.tags['stage']).toBe('two');
    });

    test('getMetricHistory: every value in logging order; unknown key gives []', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'history' });
      const points = [
        { key: 'f1', value: 0.5, timestamp: 20_000, step: 0 },
        { key: 'f1', value: 0.6, timestamp: 20_010, step: 1 },
      ];
      await s.logBatch(info.runId, { metrics: points });
      await s.logBatch(info.runId, { metrics: [{ key: 'f1', value: 0.7, timestamp: 20_020, step: 2 }] });
      const history = await s.getMetricHistory(info.runId, 'f1');
      expect(history).toEqual([...points, { key: 'f1', value: 0.7, timestamp: 20_020, step: 2 }]);
      expect(await s.getMetricHistory(info.runId, 'never-logged')).toEqual([]);
    });

    test('metrics: latest value is max by (step, timestamp, value)', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'latest' });
      await s.logBatch(info.runId, {
        metrics: [
          // Highest step wins even though logged first and smaller than later values.
          { key: 'a', value: 0.1, timestamp: 1_000, step: 5 },
          { key: 'a', value: 0.9, timestamp: 9_000, step: 4 },
          // Same step: newest timestamp wins, not the last line.
          { key: 'b', value: 0.3, timestamp: 2_000, step: 1 },
          { key: 'b', value: 0.8, timestamp: 1_000, step: 1 },
          // Same step and timestamp: the larger value wins.
          { key: 'c', value: 0.6, timestamp: 3_000, step: 2 },
          { key: 'c', value: 0.4, timestamp: 3_000, step: 2 },
        ],
      });
      const run = await s.getRun(info.runId);
      expect(run?.metrics).toEqual({ a: 0.1, b: 0.3, c: 0.6 });
    });

    test('metrics: NaN values round-trip', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'nan' });
      await s.logBatch(info.runId, {
        metrics: [{ key: 'f1', value: Number.NaN, timestamp: 5_000, step: 0 }],
      });
      const run = await s.getRun(info.runId);
      expect(Number.isNaN(run?.metrics['f1'])).toBe(true);
      const history = await s.getMetricHistory(info.runId, 'f1');
      expect(history).toHaveLength(1);
      expect(Number.isNaN(history[0]?.value)).toBe(true);
    });

    test('updateRun: FINISHED with end time', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'finish', startTime: 1_000 });
      await s.logBatch(info.runId, { params: { kept: 'yes' }, tags: { kept: 'yes' } });
      await s.updateRun(info.runId, { status: 'FINISHED', endTime: 2_000 });
      const run = await s.getRun(info.runId);
      expect(run?.info.status).toBe('FINISHED');
      expect(run?.info.endTime).toBe(2_000);
      expect(run?.info.startTime).toBe(1_000);
      expect(run?.info.runName).toBe('finish');
      // Rewriting the run's metadata keeps its data.
      expect(run?.params).toEqual({ kept: 'yes' });
      expect(run?.tags['kept']).toBe('yes');

      const failed = await s.createRun(experimentId, { runName: 'fail' });
      await s.updateRun(failed.info.runId, { status: 'FAILED', endTime: 3_000 });
      expect((await s.getRun(failed.info.runId))?.info.status).toBe('FAILED');
    });

    /**
     * Runs with known latest f1, start times and expected MLflow order. Run ids are chosen by the store,
     * so the tie on identical start times is resolved by comparing the ids we got back.
     */
    const createRankedRuns = async (s: TrackingStore, experimentId: string) => {
      const specs: { name: string; start: number; f1?: number }[] = [
        { name: 'mid-old', start: 1_000, f1: 0.8 },
        { name: 'best', start: 2_000, f1: 0.9 },
        { name: 'mid-new', start: 3_000, f1: 0.8 },
        { name: 'nan', start: 4_000, f1: Number.NaN },
        { name: 'missing', start: 5_000 },
        { name: 'low', start: 6_000, f1: 0.1 },
        { name: 'tie-a', start: 7_000, f1: 0.5 },
        { name: 'tie-b', start: 7_000, f1: 0.5 },
        { name: 'missing-old', start: 500 },
      ];
      const byName: Record<string, string> = {};
      for (const spec of specs) {
        const { info } = await s.createRun(experimentId, { runName: spec.name, startTime: spec.start });
        byName[spec.name] = info.runId;
        const metrics = [{ key: 'other', value: 1, timestamp: spec.start, step: 0 }];
        if (spec.f1 !== undefined) {
          // An older, higher value proves ordering uses the latest value, not the best one.
          metrics.push({ key: 'f1', value: 0.99, timestamp: spec.start, step: 0 });
          metrics.push({ key: 'f1', value: spec.f1, timestamp: spec.start + 1, step: 1 });
        }
        await s.logBatch(info.runId, { metrics });
        await s.updateRun(info.runId, { status: 'FINISHED', endTime: spec.start + 10 });
      }
      const [tieFirst, tieSecond] = [byName['tie-a']!, byName['tie-b']!].sort();
      return { byName, tieFirst: tieFirst!, tieSecond: tieSecond! };
    };

    test('searchRuns: ordered by latest metric DESC with ties, NaN and missing last', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { byName: r, tieFirst, tieSecond } = await createRankedRuns(s, experimentId);
      const runs = await s.searchRuns(experimentId, { orderByMetric: { key: 'f1', descending: true } });
      expect(ids(runs)).toEqual([
        r['best'],
        r['mid-new'],
        r['mid-old'],
        tieFirst,
        tieSecond,
        r['low'],
        r['nan'],
        r['missing'],
        r['missing-old'],
      ]);
      expect(runs[0]?.metrics['f1']).toBe(0.9);
      expect(runs[0]?.info.runName).toBe('best');
    });

    test('searchRuns: ordered by latest metric ASC keeps NaN and missing last', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { byName: r, tieFirst, tieSecond } = await createRankedRuns(s, experimentId);
      const runs = await s.searchRuns(experimentId, { orderByMetric: { key: 'f1', descending: false } });
      expect(ids(runs)).toEqual([
        r['low'],
        tieFirst,
        tieSecond,
        r['mid-new'],
        r['mid-old'],
        r['best'],
        r['nan'],
        r['missing'],
        r['missing-old'],
      ]);
    });

    test('searchRuns: default order is newest start time first', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const older = await s.createRun(experimentId, { runName: 'older', startTime: 1_000 });
      const newer = await s.createRun(experimentId, { runName: 'newer', startTime: 3_000 });
      const same1 = await s.createRun(experimentId, { runName: 'same1', startTime: 2_000 });
      const same2 = await s.createRun(experimentId, { runName: 'same2', startTime: 2_000 });
      const tie = [same1.info.runId, same2.info.runId].sort();
      const runs = await s.searchRuns(experimentId);
      expect(ids(runs)).toEqual([newer.info.runId, ...tie, older.info.runId]);
      // Every run comes with its data.
      expect(runs.every((run) => run.tags['mlflow.runName'] === run.info.runName)).toBe(true);
    });

    test('searchRuns: finishedOnly and experiment isolation', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const otherExperimentId = await newExperiment();
      const running = await s.createRun(experimentId, { runName: 'running', startTime: 3_000 });
      const finished = await s.createRun(experimentId, { runName: 'finished', startTime: 2_000 });
      const failed = await s.createRun(experimentId, { runName: 'failed', startTime: 1_000 });
      await s.updateRun(finished.info.runId, { status: 'FINISHED', endTime: 2_500 });
      await s.updateRun(failed.info.runId, { status: 'FAILED', endTime: 1_500 });
      const elsewhere = await s.createRun(otherExperimentId, { runName: 'elsewhere', startTime: 4_000 });

      expect(ids(await s.searchRuns(experimentId))).toEqual([
        running.info.runId,
        finished.info.runId,
        failed.info.runId,
      ]);
      expect(ids(await s.searchRuns(experimentId, { finishedOnly: true }))).toEqual([finished.info.runId]);
      expect(ids(await s.searchRuns(otherExperimentId))).toEqual([elsewhere.info.runId]);
      expect(await s.searchRuns(await newExperiment())).toEqual([]);
    });

    test('artifacts: nested paths, binary round-trip, one-level listing', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'artifacts' });
      const binary = Uint8Array.from({ length: 256 }, (_, i) => i);
      const json = new TextEncoder().encode('{"ok":true}\n');
      await s.logArtifact(info.runId, 'model/weights.bin', binary);
      await s.logArtifact(info.runId, 'model/vocab/terms.txt', new TextEncoder().encode('a\nb\n'));
      await s.logArtifact(info.runId, 'args.json', json);
      // Overwriting replaces the content.
      await s.logArtifact(info.runId, 'args.json', new TextEncoder().encode('{"ok":false}'));

      expect(
        Buffer.from(await s.readArtifact(info.runId, 'model/weights.bin')).equals(Buffer.from(binary)),
      ).toBe(true);
      expect(new TextDecoder().decode(await s.readArtifact(info.runId, 'args.json'))).toBe('{"ok":false}');

      const byPath = (entries: ArtifactEntry[]) => [...entries].sort((a, b) => (a.path < b.path ? -1 : 1));
      const root = byPath(await s.listArtifacts(info.runId));
      expect(root.map(({ path, isDir }) => ({ path, isDir }))).toEqual([
        { path: 'args.json', isDir: false },
        { path: 'model', isDir: true },
      ]);
      expect(root[0]?.size).toBe(12);
      expect(byPath(await s.listArtifacts(info.runId, ''))).toEqual(root);

      const model = byPath(await s.listArtifacts(info.runId, 'model'));
      expect(model.map(({ path, isDir }) => ({ path, isDir }))).toEqual([
        { path: 'model/vocab', isDir: true },
        { path: 'model/weights.bin', isDir: false },
      ]);
      expect(model[1]?.size).toBe(256);
      expect(await s.listArtifacts(info.runId, 'nothing-here')).toEqual([]);

      // A run without artifacts lists nothing.
      const bare = await s.createRun(experimentId, { runName: 'bare' });
      expect(await s.listArtifacts(bare.info.runId)).toEqual([]);
    });

    test('artifacts: reading a missing artifact is NOT_FOUND', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'missing-artifact' });
      await s.logArtifact(info.runId, 'present.txt', new TextEncoder().encode('x'));
      const error = await expectTrackingError(() => s.readArtifact(info.runId, 'absent.txt'), 'NOT_FOUND');
      expect(error.message).toContain('absent.txt');
    });

    test('artifacts: invalid artifact paths are INVALID_ARGUMENT', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'bad-artifacts' });
      const content = new TextEncoder().encode('x');
      for (const path of [
        '../escape.txt',
        'a/../../escape.txt',
        '/etc/absolute.txt',
        '',
        'a//b.txt',
        'a/./b.txt',
        'a\\b.txt',
      ]) {
        await expectTrackingError(() => s.logArtifact(info.runId, path, content), 'INVALID_ARGUMENT');
      }
      await expectTrackingError(() => s.readArtifact(info.runId, '../../meta.yaml'), 'INVALID_ARGUMENT');
      await expectTrackingError(() => s.listArtifacts(info.runId, '../..'), 'INVALID_ARGUMENT');
    });

    test('keys: invalid metric, param and tag keys are INVALID_ARGUMENT', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const { info } = await s.createRun(experimentId, { runName: 'bad-keys' });
      const point = (key: string) => ({ key, value: 1, timestamp: 1_000, step: 0 });
      for (const key of ['../escape', 'bad*key', 'a//b', '/abs']) {
        await expectTrackingError(
          () => s.logBatch(info.runId, { metrics: [point(key)] }),
          'INVALID_ARGUMENT',
        );
        await expectTrackingError(
          () => s.logBatch(info.runId, { params: { [key]: 'v' } }),
          'INVALID_ARGUMENT',
        );
        await expectTrackingError(() => s.logBatch(info.runId, { tags: { [key]: 'v' } }), 'INVALID_ARGUMENT');
      }
      // Rejected batches leave nothing behind.
      const run = await s.getRun(info.runId);
      expect(run?.metrics).toEqual({});
      expect(run?.params).toEqual({});
      expect(
        Object.keys(run?.tags ?? {}).filter((key) => key !== 'mlflow.runName' && !key.startsWith('mlflow.')),
      ).toEqual([]);
    });

    test('registry: versions numbered in order, aliases set, moved and deleted', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const first = await s.createRun(experimentId, { runName: 'v1' });
      const second = await s.createRun(experimentId, { runName: 'v2' });
      const name = uniqueName('contract-model');
      expect(await s.registry.getRegisteredModel(name)).toBeNull();

      const v1 = await registerModelVersion(s.registry, name, {
        source: `runs:/${first.info.runId}/model`,
        runId: first.info.runId,
      });
      const v2 = await registerModelVersion(s.registry, name, {
        source: `runs:/${second.info.runId}/model`,
        runId: second.info.runId,
      });
      expect([v1.version, v2.version]).toEqual([1, 2]);
      expect(v2).toMatchObject({
        name,
        runId: second.info.runId,
        source: `runs:/${second.info.runId}/model`,
      });

      const stored = await s.registry.getModelVersion(name, 1);
      expect(stored).toMatchObject({ name, version: 1, runId: first.info.runId, status: 'READY' });
      expect(typeof stored?.creationTime).toBe('number');
      expect(await s.registry.getRegisteredModel(name)).toEqual({ name, aliases: {}, latestVersion: 2 });

      await s.registry.setAlias(name, 'champion', 1);
      await s.registry.setAlias(name, 'challenger', 2);
      expect((await versionByAlias(s.registry, name, 'champion')).runId).toBe(first.info.runId);
      // Moving an alias replaces where it points; `latest` is always the newest version.
      await s.registry.setAlias(name, 'champion', 2);
      expect((await versionByAlias(s.registry, name, 'champion')).version).toBe(2);
      expect((await versionByAlias(s.registry, name, 'latest')).version).toBe(2);
      expect((await s.registry.getRegisteredModel(name))?.aliases).toEqual({ champion: 2, challenger: 2 });

      await s.registry.deleteAlias(name, 'challenger');
      await s.registry.deleteAlias(name, 'challenger');
      expect((await s.registry.getRegisteredModel(name))?.aliases).toEqual({ champion: 2 });
    });

    test('registry: missing models, versions and aliases; invalid names and reserved aliases', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const run = await s.createRun(experimentId, { runName: 'only' });
      const name = uniqueName('contract-model');
      const source = { source: `runs:/${run.info.runId}/model`, runId: run.info.runId };

      await expectTrackingError(() => s.registry.createModelVersion(name, source), 'NOT_FOUND');
      await expectTrackingError(() => s.registry.setAlias(name, 'champion', 1), 'NOT_FOUND');
      await expectTrackingError(() => versionByAlias(s.registry, name, 'champion'), 'NOT_FOUND');
      expect(await s.registry.getModelVersion(name, 1)).toBeNull();

      await s.registry.createRegisteredModel(name);
      await expectTrackingError(() => s.registry.createRegisteredModel(name), 'ALREADY_EXISTS');
      expect(await s.registry.getRegisteredModel(name)).toEqual({ name, aliases: {}, latestVersion: null });
      await expectTrackingError(() => versionByAlias(s.registry, name, 'latest'), 'NOT_FOUND');
      await s.registry.createModelVersion(name, source);
      expect(await s.registry.getModelVersion(name, 2)).toBeNull();
      await expectTrackingError(() => s.registry.setAlias(name, 'champion', 2), 'NOT_FOUND');
      const missing = await expectTrackingError(
        () => versionByAlias(s.registry, name, 'champion'),
        'NOT_FOUND',
      );
      expect(missing.message).toContain("no alias 'champion'");

      for (const bad of ['', '  ', 'a/b', 'a:b', '..']) {
        await expectTrackingError(() => s.registry.createRegisteredModel(bad), 'INVALID_ARGUMENT');
      }
      for (const reserved of ['latest', 'LATEST', 'v1', 'V12']) {
        await expectTrackingError(() => s.registry.setAlias(name, reserved, 1), 'INVALID_ARGUMENT');
      }
      for (const bad of ['', 'a b', 'a/b', 'a.b']) {
        await expectTrackingError(() => s.registry.setAlias(name, bad, 1), 'INVALID_ARGUMENT');
      }
      await expectTrackingError(() => s.registry.setAlias(name, 'champion', 0), 'INVALID_ARGUMENT');
      expect((await s.registry.getRegisteredModel(name))?.aliases).toEqual({});
    });

    test('registry: concurrent registrations of one new model get distinct versions', async () => {
      const s = store();
      const experimentId = await newExperiment();
      const run = await s.createRun(experimentId, { runName: 'many' });
      const name = uniqueName('contract-model');
      const versions = await Promise.all(
        Array.from({ length: 6 }, () =>
          registerModelVersion(s.registry, name, {
            source: `runs:/${run.info.runId}/model`,
            runId: run.info.runId,
          }),
        ),
      );
      expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
      expect((await s.registry.getRegisteredModel(name))?.latestVersion).toBe(6);
    });
    // Dataset inputs, run outputs and MLflow 3 logged models (contract-datasets-and-models.ts).
    defineOutputsContract(store, newExperiment);
  });
}
