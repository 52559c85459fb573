/**
 * The MLflow scoring server of the HTTP benchmark: `mlflow models serve` (uvicorn, 1 worker, local env)
 * for the scikit-learn twin of Tagger's default model (python/mlflow_scoring_model.py: the same soft vote of
 * scikit-learn's members, or SGDClassifier for SGD args), logged with
 * `mlflow.sklearn.log_model` into a file store cached under `.tagger-cache/bench/`.
 */

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { DEFAULT_TRAINING_ARGS, STOPWORDS } from '../src/model/index.js';
import { CACHE_ROOT, type Fixture } from './fixture.js';
import { PYTHON, REPO } from './paths.js';
import { freePort, type Proc, start, waitForPort } from './procs.js';

const SCRIPT = join(REPO, 'python', 'mlflow_scoring_model.py');

/** Environment for MLflow: the venv's tools first on PATH (it starts `uvicorn` by name). */
function mlflowEnv(trackingUri: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('MLFLOW_')) env[key] = value;
  return {
    ...env,
    PATH: `${dirname(PYTHON)}:${process.env.PATH ?? ''}`,
    MLFLOW_TRACKING_URI: trackingUri,
    // MLflow >= 3.13 refuses file stores without it.
    MLFLOW_ALLOW_FILE_STORE: 'true',
    PYTHONUNBUFFERED: '1',
  };
}

export function mlflowAvailable(): boolean {
  return existsSync(PYTHON) && existsSync(join(dirname(PYTHON), 'mlflow'));
}

/** Logs the scikit-learn model once (cached); returns its runs:/ URI and tracking URI. */
export function prepareMlflowModel(
  fixture: Fixture,
  log: (message: string) => void,
): { modelUri: string; trackingUri: string } {
  const spec = { train: fixture.trainRows, args: DEFAULT_TRAINING_ARGS, stopwords: STOPWORDS, seed: 42 };
  const key = createHash('sha256')
    .update(readFileSync(SCRIPT))
    .update(readFileSync(join(REPO, 'python', 'sklearn_linear.py')))
    .update(JSON.stringify(spec))
    .digest('hex')
    .slice(0, 16);
  const dir = join(CACHE_ROOT, `mlflow-${key}`);
  if (!existsSync(join(dir, 'out.json'))) {
    log(`logging the scikit-learn model for the MLflow scoring server in ${relative(REPO, dir)} (cached)`);
    // The store must live where it is served from (MLflow records absolute artifact paths), so it is
    // written in place and counts only once out.json exists.
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const trackingUri = `file://${join(dir, 'mlruns')}`;
    writeFileSync(join(dir, 'in.json'), JSON.stringify({ ...spec, tracking_uri: trackingUri }));
    try {
      execFileSync(PYTHON, [SCRIPT, join(dir, 'in.json'), join(dir, 'out.tmp.json')], {
        env: mlflowEnv(trackingUri),
        stdio: ['ignore', 'ignore', 'inherit'],
        timeout: 300_000,
      });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    renameSync(join(dir, 'out.tmp.json'), join(dir, 'out.json'));
  }
  const out = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as { run_id: string };
  return { modelUri: `runs:/${out.run_id}/model`, trackingUri: `file://${join(dir, 'mlruns')}` };
}

export async function startMlflowServer(
  model: { modelUri: string; trackingUri: string },
  logFile: string,
): Promise<{ proc: Proc; url: string; startupSeconds: number }> {
  const port = await freePort();
  const mlflow = join(dirname(PYTHON), 'mlflow');
  const proc = start(
    'mlflow models serve',
    mlflow,
    [
      'models',
      'serve',
      '-m',
      model.modelUri,
      '--env-manager',
      'local',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
    ],
    { env: mlflowEnv(model.trackingUri), logFile },
  );
  const startupSeconds = await waitForPort(proc, port, 120_000);
  return { proc, url: `http://127.0.0.1:${port}/invocations`, startupSeconds };
}
