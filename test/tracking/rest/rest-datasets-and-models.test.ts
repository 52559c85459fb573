/**
 * The REST adapter's inputs, outputs and logged models against a fake server: the requests MLflow's
 * REST API expects (checked for real in the contract against `mlflow server`), and answers a real
 * server would not send, which must be MALFORMED, never a crash or a wrong value.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RestTrackingStore } from '../../../src/tracking/rest/rest-store.js';
import { expectTrackingError } from '../contract.js';

interface Recorded {
  method: string;
  path: string;
  body: string;
}

const RUN_ID = 'a'.repeat(32);
const MODEL_ID = `m-${'b'.repeat(32)}`;
const modelJson = (info: Record<string, unknown> = {}, data: unknown = {}) => ({
  model: {
    info: {
      model_id: MODEL_ID,
      experiment_id: '7',
      name: 'model',
      artifact_uri: `mlflow-artifacts:/7/models/${MODEL_ID}/artifacts`,
      creation_timestamp_ms: 1_000,
      last_updated_timestamp_ms: '2000',
      status: 'LOGGED_MODEL_READY',
      source_run_id: RUN_ID,
      ...info,
    },
    data,
  },
});
const runJson = (extra: Record<string, unknown>) => ({
  run: {
    info: {
      run_id: RUN_ID,
      experiment_id: '7',
      status: 'FINISHED',
      start_time: 1,
      artifact_uri: `mlflow-artifacts:/7/${RUN_ID}/artifacts`,
    },
    ...extra,
  },
});

let server: Server;
let uri: string;
const requests: Recorded[] = [];
let answer: (request: Recorded, response: ServerResponse) => void = () => undefined;
const reply = (response: ServerResponse, status: number, body: unknown): void => {
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify(body));
};

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const recorded = {
        method: request.method ?? '',
        path: new URL(request.url ?? '/', 'http://fake').pathname,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(recorded);
      answer(recorded, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
let store: RestTrackingStore;
const open = (): RestTrackingStore => {
  store = new RestTrackingStore({ uri, env: {}, maxRetries: 0, timeoutMs: 5_000 });
  return store;
};
afterEach(async () => {
  await store?.close();
  requests.length = 0;
});

describe('REST store: requests for inputs, outputs and logged models', () => {
  it('sends what MLflow 3 expects and reads its answers', async () => {
    answer = (request, response) => {
      if (request.path.endsWith('/logged-models') || request.method === 'PATCH') {
        return reply(
          response,
          200,
          modelJson(
            {},
            {
              params: [{ key: 'lr', value: '0.1' }],
              metrics: [
                { key: 'f1', value: 0.5, timestamp: 1, step: 0 },
                { key: 'f1', value: 0.9, timestamp: 2, step: 0 },
              ],
            },
          ),
        );
      }
      reply(response, 200, {});
    };
    const s = open();
    await s.logInputs(RUN_ID, [
      {
        dataset: {
          name: 'd.csv',
          digest: 'abc',
          sourceType: 'local',
          source: '{}',
          schema: null,
          profile: '{"num_rows": 1}',
        },
        tags: { 'mlflow.data.context': 'training' },
      },
    ]);
    const created = await s.createLoggedModel('7', {
      name: 'model',
      sourceRunId: RUN_ID,
      params: { lr: '0.1' },
    });
    expect(created).toMatchObject({
      status: 'READY',
      lastUpdatedTimestamp: 2_000,
      params: { lr: '0.1' },
      metrics: { f1: 0.9 },
    });
    await s.finalizeLoggedModel(MODEL_ID, 'READY');
    await s.logOutputs(RUN_ID, [{ modelId: MODEL_ID, step: 0 }]);
    await s.logBatch(RUN_ID, {
      metrics: [{ key: 'f1', value: 0.9, timestamp: 3, step: 0, modelId: MODEL_ID }],
    });

    const sent = requests.map((r) => ({ method: r.method, path: r.path, body: JSON.parse(r.body || '{}') }));
    expect(sent).toEqual([
      {
        method: 'POST',
        path: '/api/2.0/mlflow/runs/log-inputs',
        body: {
          run_id: RUN_ID,
          datasets: [
            {
              tags: [{ key: 'mlflow.data.context', value: 'training' }],
              dataset: {
                name: 'd.csv',
                digest: 'abc',
                source_type: 'local',
                source: '{}',
                profile: '{"num_rows": 1}',
              },
            },
          ],
        },
      },
      {
        method: 'POST',
        path: '/api/2.0/mlflow/logged-models',
        body: {
          experiment_id: '7',
          name: 'model',
          source_run_id: RUN_ID,
          params: [{ key: 'lr', value: '0.1' }],
          tags: [],
        },
      },
      {
        method: 'PATCH',
        path: `/api/2.0/mlflow/logged-models/${MODEL_ID}`,
        body: { model_id: MODEL_ID, status: 'LOGGED_MODEL_READY' },
      },
      {
        method: 'POST',
        path: '/api/2.0/mlflow/runs/outputs',
        body: { run_id: RUN_ID, models: [{ model_id: MODEL_ID, step: 0 }] },
      },
      {
        method: 'POST',
        path: '/api/2.0/mlflow/runs/log-batch',
        body: {
          run_id: RUN_ID,
          metrics: [{ key: 'f1', value: 0.9, timestamp: 3, step: 0, model_id: MODEL_ID }],
          params: [],
          tags: [],
        },
      },
    ]);
  });

  it('refuses ids that would change the URL or the search filter before sending anything', async () => {
    const s = open();
    await expectTrackingError(() => s.getLoggedModel('../runs/delete'), 'INVALID_ARGUMENT');
    await expectTrackingError(
      () => s.searchLoggedModels('7', { sourceRunId: "x' OR name = 'y" }),
      'INVALID_ARGUMENT',
    );
    await expectTrackingError(
      () =>
        s.logBatch(RUN_ID, { metrics: [{ key: 'f1', value: 1, timestamp: 1, step: 0, modelId: 'm/../x' }] }),
      'INVALID_ARGUMENT',
    );
    expect(requests).toEqual([]);
  });
});

describe('REST store: answers MLflow would not send are MALFORMED', () => {
  it('a logged model with an unknown status or without an artifact URI', async () => {
    for (const info of [
      { status: 'LOGGED_MODEL_SHINY' },
      { artifact_uri: '' },
      { creation_timestamp_ms: 'soon' },
    ]) {
      answer = (_request, response) => reply(response, 200, modelJson(info));
      await expectTrackingError(() => open().getLoggedModel(MODEL_ID), 'MALFORMED');
      await store.close();
    }
  });

  it('run inputs and outputs of the wrong shape', async () => {
    for (const extra of [
      { inputs: { dataset_inputs: [{ dataset: { name: 1 } }] } },
      {
        inputs: { dataset_inputs: [{ tags: [], dataset: { name: 'd', digest: 'x', source_type: 'local' } }] },
      },
      { outputs: { model_outputs: [{ step: 0 }] } },
    ]) {
      answer = (_request, response) => reply(response, 200, runJson(extra));
      await expectTrackingError(() => open().getRun(RUN_ID), 'MALFORMED');
      await store.close();
    }
  });

  it('a search that repeats its page token', async () => {
    answer = (_request, response) =>
      reply(response, 200, { models: [modelJson().model], next_page_token: 'again' });
    await expectTrackingError(() => open().searchLoggedModels('7'), 'MALFORMED');
  });
});
