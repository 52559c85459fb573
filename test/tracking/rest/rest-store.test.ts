/**
 * The REST adapter against a real `mlflow server` (SQLite backend, proxied artifacts): the shared
 * contract suite plus what only this adapter has (clamped infinities, batch chunking, artifact roots
 * that are not proxied, readiness). One server for the whole file.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestTrackingStore } from '../../../src/tracking/rest/rest-store.js';
import { checkCanLog } from '../../../src/tracking/store.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../../support/mlflow-server.js';
import { expectTrackingError, runTrackingStoreContract, uniqueName } from '../contract.js';

const mlflow = venvMlflow();
let serverPromise: Promise<MlflowServer> | undefined;
/** Started on first use and shared by the contract suite and the tests below. */
const server = (): Promise<MlflowServer> => {
  if (!mlflow) throw new Error('mlflow is not installed');
  serverPromise ??= startMlflowServer(mlflow);
  return serverPromise;
};

afterAll(async () => {
  if (serverPromise) await (await serverPromise).stop();
});

if (mlflow) {
  runTrackingStoreContract('REST store against mlflow server', async () => {
    const { uri } = await server();
    // Nothing to clean per suite: experiments have unique names; the server's temp dir goes in afterAll.
    return { store: new RestTrackingStore({ uri, env: {} }), cleanup: async () => {} };
  });
} else {
  it.skip('TrackingStore contract: REST store against mlflow server [skipped: mlflow not installed]', () => {});
}

describe.skipIf(!mlflow)('RestTrackingStore against mlflow server', () => {
  let store: RestTrackingStore;
  let uri: string;
  beforeAll(async () => {
    uri = (await server()).uri;
    store = new RestTrackingStore({ uri, env: {} });
  });
  afterAll(async () => {
    await store?.close();
  });

  /** Creates an experiment through the raw API (the interface has no artifact_location). */
  const createExperimentAt = async (artifactLocation: string): Promise<string> => {
    const response = await fetch(`${uri}/api/2.0/mlflow/experiments/create`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: uniqueName('rest-root'), artifact_location: artifactLocation }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { experiment_id: string }).experiment_id;
  };

  it('waitUntilReady resolves against a running server', async () => {
    await store.waitUntilReady(5_000);
  });

  it('logs ±Infinity as strings; the SQL store clamps them to ±Number.MAX_VALUE', async () => {
    const experimentId = await store.createExperiment(uniqueName('rest-inf'));
    const { info } = await store.createRun(experimentId, { runName: 'inf' });
    await store.logBatch(info.runId, {
      metrics: [
        { key: 'up', value: Number.POSITIVE_INFINITY, timestamp: 1_000, step: 0 },
        { key: 'down', value: Number.NEGATIVE_INFINITY, timestamp: 1_000, step: 0 },
        { key: 'nan', value: Number.NaN, timestamp: 1_000, step: 0 },
      ],
    });
    const run = await store.getRun(info.runId);
    expect(run?.metrics['up']).toBe(Number.MAX_VALUE);
    expect(run?.metrics['down']).toBe(-Number.MAX_VALUE);
    expect(run?.metrics['nan']).toBeNaN();
  });

  it('chunks large batches within MLflow limits (1001 metrics, 201 params, 101 tags)', async () => {
    const experimentId = await store.createExperiment(uniqueName('rest-chunks'));
    const { info } = await store.createRun(experimentId, { runName: 'big' });
    const metrics = Array.from({ length: 1001 }, (_, step) => ({
      key: 'loss',
      value: 1 / (step + 1),
      timestamp: 1_000 + step,
      step,
    }));
    const params = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`p${i}`, String(i)]));
    const tags = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`t${i}`, `v${i}`]));
    await store.logBatch(info.runId, { metrics, params, tags });
    const run = await store.getRun(info.runId);
    expect(Object.keys(run?.params ?? {})).toHaveLength(201);
    expect(run?.params['p200']).toBe('200');
    expect(run?.tags['t100']).toBe('v100');
    expect(run?.metrics['loss']).toBe(1 / 1001);
    const history = await store.getMetricHistory(info.runId, 'loss');
    expect(history).toEqual(metrics);
  });

  it('artifact paths with spaces and non-ASCII names round-trip through the proxy', async () => {
    const experimentId = await store.createExperiment(uniqueName('rest-names'));
    const { info } = await store.createRun(experimentId, { runName: 'names' });
    const content = new TextEncoder().encode('größe');
    await store.logArtifact(info.runId, 'dir with space/ü 1%.txt', content);
    expect(await store.listArtifacts(info.runId, 'dir with space')).toEqual([
      { path: 'dir with space/ü 1%.txt', isDir: false, size: content.byteLength },
    ]);
    expect(new TextDecoder().decode(await store.readArtifact(info.runId, 'dir with space/ü 1%.txt'))).toBe(
      'größe',
    );
    // MLflow refuses '#' in artifact paths (`validate_path_is_safe`).
    await expectTrackingError(() => store.logArtifact(info.runId, 'a#b.txt', content), 'INVALID_ARGUMENT');
    // A folder is not a file.
    await expectTrackingError(() => store.readArtifact(info.runId, 'dir with space'), 'INVALID_ARGUMENT');
  });

  it('reads and writes file:// artifact roots that are on this machine', async () => {
    const root = await mkdtemp(join(tmpdir(), 'tagger-rest-root-'));
    try {
      const experimentId = await createExperimentAt(pathToFileURL(root).href);
      const { info } = await store.createRun(experimentId, { runName: 'local-root' });
      expect(info.artifactUri.startsWith('file://')).toBe(true);
      expect(await store.listArtifacts(info.runId)).toEqual([]);
      await store.logArtifact(info.runId, 'model/a.txt', new TextEncoder().encode('abc'));
      const onDisk = await readFile(join(root, info.runId, 'artifacts', 'model', 'a.txt'), 'utf8');
      expect(onDisk).toBe('abc');
      expect(await store.listArtifacts(info.runId, 'model')).toEqual([
        { path: 'model/a.txt', isDir: false, size: 3 },
      ]);
      expect(new TextDecoder().decode(await store.readArtifact(info.runId, 'model/a.txt'))).toBe('abc');
      const missing = await expectTrackingError(
        () => store.readArtifact(info.runId, 'model/b.txt'),
        'NOT_FOUND',
      );
      expect(missing.message).toContain(`${info.artifactUri}/model/b.txt`);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('names the artifact URI when artifacts live where Tagger cannot reach them (s3://)', async () => {
    const experimentId = await createExperimentAt('s3://tagger-test-bucket/experiments');
    const { info } = await store.createRun(experimentId, { runName: 's3' });
    expect(info.artifactUri.startsWith('s3://tagger-test-bucket/experiments/')).toBe(true);
    for (const call of [
      () => store.readArtifact(info.runId, 'model/x.json'),
      () => store.logArtifact(info.runId, 'x.json', new Uint8Array([1])),
      () => store.listArtifacts(info.runId),
    ]) {
      const error = await expectTrackingError(call, 'UNSUPPORTED');
      expect(error.message).toContain(info.artifactUri);
    }
  });

  it('artifact calls on an unknown run are NOT_FOUND', async () => {
    await expectTrackingError(() => store.readArtifact('0'.repeat(32), 'x.txt'), 'NOT_FOUND');
  });

  it('experiment lookup: deleted experiments are returned with their stage', async () => {
    const name = uniqueName('rest-deleted');
    const id = await store.createExperiment(name);
    const response = await fetch(`${uri}/api/2.0/mlflow/experiments/delete`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ experiment_id: id }),
    });
    expect(response.status).toBe(200);
    const experiment = await store.getExperimentByName(name);
    expect(experiment?.experimentId).toBe(id);
    expect(experiment?.lifecycleStage).toBe('deleted');
  });

  it('checkCanLog: an existing experiment is looked up on the server; a deleted one is refused', async () => {
    const name = uniqueName('rest-can-log');
    await checkCanLog(store, name);
    expect(await store.getExperimentByName(name)).toBeNull();
    const id = await store.createExperiment(name);
    await checkCanLog(store, name);
    await expectTrackingError(() => store.checkWritable('999999999'), 'NOT_FOUND');
    const response = await fetch(`${uri}/api/2.0/mlflow/experiments/delete`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ experiment_id: id }),
    });
    expect(response.status).toBe(200);
    await expectTrackingError(() => checkCanLog(store, name), 'INVALID_ARGUMENT');
  });

  it('waitUntilReady gives a clear UNAVAILABLE error for a port nobody listens on', async () => {
    // The server's port plus one is not ours; pick a closed port instead by starting and stopping a listener.
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const down = new RestTrackingStore({ uri: `http://127.0.0.1:${port}`, env: {} });
    const error = await expectTrackingError(() => down.waitUntilReady(600), 'UNAVAILABLE');
    expect(error.message).toContain(`http://127.0.0.1:${port}`);
    expect(error.message).toContain('ECONNREFUSED');
    await down.close();
  });
});
