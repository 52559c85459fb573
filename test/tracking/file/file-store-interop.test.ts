/**
 * Interop with real MLflow (the project venv's mlflow, 3.17.2): runs written by Tagger's file store are
 * read by Python MLflow with the same data and order, and runs logged by Python are read by Tagger the
 * same way. One Python process per scenario (`python/mlflow_interop.py`, JSON in/out).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../../src/tracking/file/file-store.js';
import { venvPython } from '../../support/components.js';
import {
  expectMlflowSeesTaggerRuns,
  expectTaggerSeesPythonRuns,
  logTaggerRuns,
  PYTHON_RUNS,
  type PyAnswer,
  runInteropScript,
} from '../../support/mlflow-interop.js';
import { useTempDir } from '../../support/temp-dir.js';

const python = venvPython();
const runPython = (command: Record<string, unknown>): Promise<PyAnswer> => runInteropScript(python!, command);

describe.skipIf(python === null)('file store interop with Python MLflow', () => {
  const scratch = useTempDir('tagger-interop-');

  it('MLflow reads runs written by Tagger: same params, metrics, history, artifacts and order', async () => {
    const root = join(scratch.path, 'tagger-mlruns');
    const store = await FileTrackingStore.open(root);
    const experimentId = await store.createExperiment('best');
    const specs: { name: string; start: number; f1?: number }[] = [
      { name: 'good', start: 1_000, f1: 0.8 },
      { name: 'best', start: 2_000, f1: 0.9 },
      { name: 'tie-newer', start: 3_000, f1: 0.8 },
      { name: 'nan', start: 4_000, f1: Number.NaN },
      { name: 'no-f1', start: 5_000 },
      { name: 'tie-same-a', start: 6_000, f1: 0.5 },
      { name: 'tie-same-b', start: 6_000, f1: 0.5 },
    ];
    const ids = await logTaggerRuns(store, experimentId, specs);
    // Debris of a crash: a run folder without meta.yaml and stray temp files.
    const experimentDir = join(root, experimentId);
    await mkdir(join(experimentDir, 'f'.repeat(32), 'metrics'), { recursive: true });
    await writeFile(join(experimentDir, 'f'.repeat(32), 'metrics', 'f1'), '1 0.99 0\n');
    await writeFile(join(experimentDir, '.tagger-tmp-1-deadbeef'), 'run_id: half');
    await writeFile(join(root, '.tagger-tmp-1-cafe'), 'half');

    const tagger = await store.searchRuns(experimentId, { orderByMetric: { key: 'f1', descending: true } });
    const answer = await runPython({
      command: 'read',
      tracking_uri: pathToFileURL(root).href,
      experiment_name: 'best',
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
    });

    expect(answer.experiment_id).toBe(experimentId);
    const [tieA, tieB] = [ids['tie-same-a']!, ids['tie-same-b']!].sort();
    expect(answer.order).toEqual([
      ids['best'],
      ids['tie-newer'],
      ids['good'],
      tieA,
      tieB,
      ids['nan'],
      ids['no-f1'],
    ]);
    await expectMlflowSeesTaggerRuns(store, tagger, answer);
    expect(answer.runs[ids['best']!]!.history['f1']).toHaveLength(2);
    expect(answer.runs[ids['nan']!]!.metrics['f1']).toBe('NaN');
    expect(answer.runs[ids['no-f1']!]!.metrics).not.toHaveProperty('f1');
  }, 120_000);

  it('Tagger reads runs logged by Python MLflow: same values, history, artifacts and order', async () => {
    const root = join(scratch.path, 'python-mlruns');
    const answer = await runPython({
      command: 'write',
      tracking_uri: pathToFileURL(root).href,
      experiment_name: 'best',
      order_by: ['metrics.f1 DESC'],
      history_keys: ['f1'],
      artifact_dirs: ['', 'model'],
      runs: PYTHON_RUNS,
    });
    const warnings: string[] = [];
    const store = new FileTrackingStore(root, { onWarning: (message) => warnings.push(message) });
    const experiment = await store.getExperimentByName('best');
    expect(experiment?.experimentId).toBe(answer.experiment_id);
    await expectTaggerSeesPythonRuns(store, answer);
    expect(warnings).toEqual([]);

    // Tagger can keep logging into a Python-created store, and MLflow's layout stays intact for it.
    const added = await store.createRun(answer.experiment_id, { runName: 'tagger-after-python' });
    expect((await store.getRun(added.info.runId))?.info.status).toBe('RUNNING');
  }, 120_000);
});
