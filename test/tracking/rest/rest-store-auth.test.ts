/**
 * The REST adapter against `mlflow server --app-name basic-auth`: credentials from the environment
 * reach tracking and artifact endpoints; wrong or missing ones give clear errors without secrets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestTrackingStore } from '../../../src/tracking/rest/rest-store.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../../support/mlflow-server.js';
import { expectTrackingError, uniqueName } from '../contract.js';

const mlflow = venvMlflow();

describe.skipIf(!mlflow)('RestTrackingStore against mlflow server --app-name basic-auth', () => {
  let server: MlflowServer;
  let admin: { username: string; password: string };
  const stores: RestTrackingStore[] = [];
  const open = (env: NodeJS.ProcessEnv): RestTrackingStore => {
    const store = new RestTrackingStore({ uri: server.uri, env, maxRetries: 0 });
    stores.push(store);
    return store;
  };
  const adminEnv = (): NodeJS.ProcessEnv => ({
    MLFLOW_TRACKING_USERNAME: admin.username,
    MLFLOW_TRACKING_PASSWORD: admin.password,
  });

  beforeAll(async () => {
    server = await startMlflowServer(mlflow!, { basicAuth: true });
    admin = server.admin!;
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    await server?.stop();
  });

  it('the admin credentials work for tracking and artifact calls', async () => {
    const store = open(adminEnv());
    await store.waitUntilReady(5_000);
    const experimentId = await store.createExperiment(uniqueName('auth'));
    const { info } = await store.createRun(experimentId, { runName: 'authed' });
    await store.logBatch(info.runId, { metrics: [{ key: 'f1', value: 0.5, timestamp: 1, step: 0 }] });
    await store.logArtifact(info.runId, 'model/w.txt', new TextEncoder().encode('w'));
    expect(await store.listArtifacts(info.runId)).toEqual([{ path: 'model', isDir: true, size: null }]);
    expect(new TextDecoder().decode(await store.readArtifact(info.runId, 'model/w.txt'))).toBe('w');
    await store.updateRun(info.runId, { status: 'FINISHED', endTime: Date.now() });
    expect((await store.searchRuns(experimentId)).map((r) => r.info.runId)).toEqual([info.runId]);
  });

  it('a wrong password is UNAUTHENTICATED with a message naming the variables, not the password', async () => {
    const wrong = 'not-the-password-9f3k';
    const store = open({ MLFLOW_TRACKING_USERNAME: admin.username, MLFLOW_TRACKING_PASSWORD: wrong });
    const error = await expectTrackingError(() => store.getExperimentByName('anything'), 'UNAUTHENTICATED');
    expect(error.message).toContain('MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD');
    expect(error.message).toContain(server.uri);
    for (const secret of [
      wrong,
      admin.password,
      Buffer.from(`${admin.username}:${wrong}`).toString('base64'),
    ]) {
      expect(error.message).not.toContain(secret);
      expect(String(error.stack)).not.toContain(secret);
    }
  });

  it('no credentials is UNAUTHENTICATED, saying none were sent', async () => {
    // (A Bearer token is not tried here: with `auth_cache_ttl_seconds` set, MLflow 3.17.2's basic-auth
    // app answered it with HTTP 500 instead of 401; the fake-server tests cover Bearer handling.)
    const none = await expectTrackingError(() => open({}).searchRuns('0'), 'UNAUTHENTICATED');
    expect(none.message).toContain('no credentials were sent');
    expect(none.message).toContain('MLFLOW_TRACKING_TOKEN');
  });

  it('an authenticated user without permission gets PERMISSION_DENIED', async () => {
    const adminStore = open(adminEnv());
    const experimentId = await adminStore.createExperiment(uniqueName('auth-owned'));
    const { info } = await adminStore.createRun(experimentId, { runName: 'owned' });

    const reader = { username: uniqueName('reader'), password: 'reader-password-123' };
    const created = await fetch(`${server.uri}/api/2.0/mlflow/users/create`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Basic ${Buffer.from(`${admin.username}:${admin.password}`).toString('base64')}`,
      },
      body: JSON.stringify(reader),
    });
    expect(created.status).toBe(200);

    const store = open({
      MLFLOW_TRACKING_USERNAME: reader.username,
      MLFLOW_TRACKING_PASSWORD: reader.password,
    });
    const error = await expectTrackingError(
      () => store.logBatch(info.runId, { tags: { sneaky: 'yes' } }),
      'PERMISSION_DENIED',
    );
    expect(error.message).not.toContain(reader.password);
    expect((await adminStore.getRun(info.runId))?.tags['sneaky']).toBeUndefined();
  });
});
