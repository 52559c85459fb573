/**
 * Prediction records beside MLflow's tables, with MLflow itself: a SQLite tracking database holding
 * Tagger's runs and Tagger's record tables is read by MLflow's Python client (the runs, in order) and
 * upgraded by `mlflow db upgrade` (MLflow's migrations leave tables they do not know alone), and the
 * records are still there afterwards.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { openRecordStore } from '../../src/monitoring/open.js';
import { SqlTrackingStore } from '../../src/tracking/sql/sql-store.js';
import { getOrCreateExperiment } from '../../src/tracking/store.js';
import { venvPython } from '../support/components.js';
import { logTaggerRuns } from '../support/mlflow-interop.js';
import { useTempDir } from '../support/temp-dir.js';
import { newScope, record } from './contract.js';

const run = promisify(execFile);
const python = venvPython();

const scratch = useTempDir('tagger-records-mlflow-');

/** The environment of a Python MLflow call: no inherited tracking settings. */
function pythonEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONWARNINGS: 'ignore' };
  for (const key of Object.keys(env)) if (key.startsWith('MLFLOW_')) delete env[key];
  return env;
}

describe.skipIf(python === null)('records beside MLflow’s tables, read and upgraded by MLflow', () => {
  it('leaves the database MLflow’s: its client lists the runs, `mlflow db upgrade` succeeds, records stay', async () => {
    const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
    const tracking = await SqlTrackingStore.open(uri, 'mlflow.db');
    const experimentId = await getOrCreateExperiment(tracking, 'best');
    const ids = await logTaggerRuns(tracking, experimentId, [
      { name: 'a', start: 1_000, f1: 0.7 },
      { name: 'b', start: 2_000, f1: 0.9 },
    ]);
    await tracking.close();

    const scope = newScope();
    const recorded = [record(scope), record(scope)];
    const records = await openRecordStore(uri);
    await records.append(recorded);
    await records.putFeedback([
      { predictionId: recorded[0]!.predictionId, scope, runId: 'run-a', tags: ['cv'], receivedMs: 1 },
    ]);
    await records.close();

    const script = [
      'import json, mlflow',
      `mlflow.set_tracking_uri(${JSON.stringify(uri)})`,
      'runs = mlflow.search_runs(experiment_names=["best"], order_by=["metrics.f1 DESC"], output_format="list")',
      'print(json.dumps([r.info.run_name for r in runs]))',
    ].join('\n');
    const { stdout } = await run(python!, ['-c', script], {
      env: pythonEnv(),
      cwd: scratch.path,
      timeout: 120_000,
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual(['b', 'a']);
    expect(Object.keys(ids).sort()).toEqual(['a', 'b']);

    const mlflowCli = join(dirname(python!), 'mlflow');
    await run(mlflowCli, ['db', 'upgrade', uri], { env: pythonEnv(), cwd: scratch.path, timeout: 120_000 });

    const after = await openRecordStore(uri, { readOnly: true });
    try {
      expect(
        (
          await after.find(
            scope,
            recorded.map((r) => r.predictionId),
          )
        ).size,
      ).toBe(2);
      expect(await after.labelled({ scope, limit: 10 })).toHaveLength(1);
    } finally {
      await after.close();
    }
  }, 180_000);
});
