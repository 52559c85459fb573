/**
 * Registry mode of the real server process (`TAGGER_MODEL_URI=models:/<name>@champion`) on the file
 * layout and on a real MLflow tracking server, with Python MLflow moving the alias while keep-alive
 * clients and autocannon send POST /predict: the server swaps to the new version within a few reload
 * intervals without failing one request, and when the alias moves to a version whose model is broken it
 * keeps serving the old one while /health/ready and /metrics say why. Loopback only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../src/tracking/file/file-store.js';
import { registerModelVersion } from '../../src/tracking/model-registry.js';
import { RestTrackingStore } from '../../src/tracking/rest/rest-store.js';
import type { TrackingStore } from '../../src/tracking/store.js';
import { venvPython } from '../support/components.js';
import { trainModel } from '../support/fixtures.js';
import { type PyModelVersion, pythonRegistry } from '../support/mlflow-registry.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../support/mlflow-server.js';
import {
  KeepAliveLoad,
  killServers,
  logServedRun,
  runAutocannon,
  spawnServer,
} from '../support/serve-process.js';

const python = venvPython();
const mlflow = python ? venvMlflow() : null;
const RELOAD_MS = 300;

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  killServers();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

interface Backend {
  /** What the server and Python are given as MLFLOW_TRACKING_URI. */
  uri: string;
  /** Tagger's own client on the same store. */
  store: TrackingStore;
}

const backends: [string, () => Promise<Backend>][] = [
  [
    'file store',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'tagger-registry-e2e-'));
      const store = await FileTrackingStore.open(join(dir, 'mlruns'));
      cleanups.push(async () => {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      });
      return { uri: store.displayUri, store };
    },
  ],
  [
    'MLflow tracking server',
    async () => {
      const server: MlflowServer = await startMlflowServer(mlflow!);
      const store = new RestTrackingStore({ uri: server.uri, env: {} });
      cleanups.push(async () => {
        await store.close();
        await server.stop();
      });
      return { uri: server.uri, store };
    },
  ],
];

const modelA = trainModel({ analyzer: 'char_wb', ngram_max_range: 4 });
const modelB = trainModel({ analyzer: 'word', ngram_max_range: 2, alpha: 1e-3 });

describe.skipIf(!python || !mlflow)('serve --model-uri follows a Model Registry alias', () => {
  for (const [backendName, open] of backends) {
    it(`${backendName}: alias moved from Python under load → swapped with zero failed requests; moved to a broken version → old model kept and reported`, async () => {
      const { uri, store } = await open();
      const name = `tagger-e2e-${Date.now().toString(36)}`;
      // Runs of an experiment that is not `best`: registry mode serves whatever the alias names.
      const first = await logServedRun(store, 'registry-e2e', { name: 'first', f1: 0.9, model: modelA });
      // A better f1 that is NOT served while the alias says otherwise: the registry decides, not f1.
      const second = await logServedRun(store, 'registry-e2e', { name: 'second', f1: 0.5, model: modelB });
      const broken = await logServedRun(store, 'registry-e2e', {
        name: 'broken',
        f1: 0.99,
        model: modelA,
        brokenModel: true,
      });
      // Versions from both clients: 1 and 3 by Tagger, 2 by Python MLflow.
      const v1 = await registerModelVersion(store.registry, name, {
        source: `runs:/${first}/model`,
        runId: first,
      });
      const v2 = await pythonRegistry<{ version: number }>(python!, uri, {
        action: 'register',
        name,
        run_id: second,
      });
      const v3 = await registerModelVersion(store.registry, name, {
        source: `runs:/${broken}/model`,
        runId: broken,
      });
      expect([v1.version, v2.version, v3.version]).toEqual([1, 2, 3]);
      await pythonRegistry(python!, uri, { action: 'set_alias', name, alias: 'champion', version: 1 });

      const server = await spawnServer({
        MLFLOW_TRACKING_URI: uri,
        TAGGER_MODEL_URI: `models:/${name}@champion`,
        TAGGER_RELOAD_INTERVAL_MS: String(RELOAD_MS),
        TAGGER_WORKERS: '1',
      });
      const load = new KeepAliveLoad(server.url, { connections: 4 }).start();
      const cannon = runAutocannon(server.url, 4);
      try {
        await load.settleMore(100);
        const predict = async () => {
          const response = await fetch(`${server.url}/predict`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ texts: [{ text: 'transformers for named entity recognition' }] }),
          });
          const body = (await response.json()) as {
            data: { run_id: string; model_version?: { name: string; version: number; model_uri: string } };
          };
          return body.data;
        };
        expect(await predict()).toMatchObject({
          run_id: first,
          model_version: { name, version: 1, model_uri: `models:/${name}@champion` },
        });

        // Python moves the alias; the server follows at its next reload.
        await pythonRegistry(python!, uri, { action: 'set_alias', name, alias: 'champion', version: 2 });
        // From the moment Python's call returned (its interpreter start is not the server's delay).
        const moved = Date.now();
        while (!load.outcomes.some((o) => o.runId === second)) {
          expect(Date.now() - moved, 'the alias move was not followed within 20 s').toBeLessThan(20_000);
          await load.settleMore(1);
        }
        const followedMs = Date.now() - moved;
        await load.settleMore(100);
        const firstNewAnswer = Math.min(
          ...load.outcomes.filter((o) => o.runId === second).map((o) => o.settledAt),
        );
        const lastOldSend = Math.max(...load.outcomes.filter((o) => o.runId === first).map((o) => o.sentAt));
        expect(lastOldSend).toBeLessThan(firstNewAnswer);
        expect(await predict()).toMatchObject({ run_id: second, model_version: { version: 2 } });
        const runs = (await (await fetch(`${server.url}/runs`)).json()) as {
          data: { runs: { run_id: string; served: boolean; model_version?: { version: number } }[] };
        };
        expect(runs.data.runs.filter((run) => run.served)).toEqual([
          expect.objectContaining({ run_id: second, model_version: expect.objectContaining({ version: 2 }) }),
        ]);
        expect(runs.data.runs.map((run) => run.run_id).sort()).toEqual([first, second, broken].sort());

        // To a version whose model cannot be loaded: the old model keeps serving, and the server says so.
        await pythonRegistry(python!, uri, { action: 'set_alias', name, alias: 'champion', version: 3 });
        const deadline = Date.now() + 20_000;
        let ready: { status: string; problems?: string[] } | undefined;
        for (;;) {
          ready = ((await (await fetch(`${server.url}/health/ready`)).json()) as { data: typeof ready }).data;
          if ((ready?.problems ?? []).length > 0 || Date.now() > deadline) break;
          await load.settleMore(20);
        }
        expect(ready?.status).toBe('ready');
        expect(ready?.problems).toEqual([expect.stringContaining(`models:/${name}/3 (run ${broken})`)]);
        expect(ready?.problems?.[0]).not.toMatch(/\/tmp|file:|http:/);
        const metrics = await (await fetch(`${server.url}/metrics`)).text();
        expect(metrics).toMatch(/^tagger_runs_held_back\{kind="unloadable"\} 1$/m);
        expect(metrics).toMatch(/^tagger_reloads_total\{outcome="swapped"\} 1$/m);
        expect(metrics).toMatch(/^tagger_reloads_total\{outcome="failed"\} [1-9]/m);
        await load.settleMore(100);
        expect(await predict()).toMatchObject({ run_id: second, model_version: { version: 2 } });
        // Logged once for the broken version, not at every reload.
        await load.settleMore(200);
        const brokenWarnings = server.lines.filter(
          (line) => line.runId === broken && String(line.msg).includes('cannot be loaded'),
        );
        expect(brokenWarnings).toHaveLength(1);

        // Back to a good version: served again, and the problem is gone.
        await pythonRegistry(python!, uri, { action: 'set_alias', name, alias: 'champion', version: 1 });
        while (load.outcomes.at(-1)?.runId !== first) {
          expect(Date.now() - deadline, 'the alias move back was not followed').toBeLessThan(20_000);
          await load.settleMore(1);
        }
        const finalReady = (
          (await (await fetch(`${server.url}/health/ready`)).json()) as { data: typeof ready }
        ).data;
        expect(finalReady?.problems ?? []).toEqual([]);

        const outcomes = await load.stop();
        const counts = await cannon.stop();
        expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
        expect(new Set(outcomes.map((o) => o.runId))).toEqual(new Set([first, second]));
        expect(counts.sent).toBeGreaterThan(0);
        expect(counts.non2xx).toBe(0);
        expect(counts.errors.size).toBe(0);
        process.stdout.write(
          `[registry e2e] ${backendName}: alias move followed in ${followedMs} ms (reload interval ${RELOAD_MS} ms); ${outcomes.length + counts.sent} requests, 0 failed\n`,
        );

        // What Python MLflow reads back from the registry Tagger and Python wrote together.
        const byAlias = await pythonRegistry<PyModelVersion>(python!, uri, {
          action: 'get_by_alias',
          name,
          alias: 'champion',
        });
        expect(byAlias).toMatchObject({
          version: 1,
          run_id: first,
          source: `runs:/${first}/model`,
          status: 'READY',
        });
        const listed = await pythonRegistry<{ versions: PyModelVersion[]; aliases: Record<string, number> }>(
          python!,
          uri,
          { action: 'versions', name },
        );
        expect(listed.versions.map((v) => [v.version, v.run_id])).toEqual([
          [1, first],
          [2, second],
          [3, broken],
        ]);
        expect(listed.aliases).toEqual({ champion: 1 });
      } finally {
        await load.stop();
        await cannon.stop();
        server.child.kill('SIGTERM');
        expect((await server.exited).code).toBe(0);
      }
    }, 240_000);
  }
});
