/** Runs `python/mlflow_registry.py` (MLflow's own client on the Model Registry) with the venv's Python. */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { REPO_ROOT } from './components.js';

const SCRIPT = resolve(REPO_ROOT, 'python', 'mlflow_registry.py');

export type RegistryCommand =
  | { action: 'register'; name: string; run_id: string }
  | { action: 'set_alias'; name: string; alias: string; version: number }
  | { action: 'get_by_alias'; name: string; alias: string }
  | { action: 'versions'; name: string };

export interface PyModelVersion {
  version: number;
  run_id: string;
  source: string;
  status?: string;
  aliases?: string[];
}

/** One registry action through Python MLflow on `trackingUri`; rejects with Python's error. */
export function pythonRegistry<T = Record<string, unknown>>(
  python: string,
  trackingUri: string,
  command: RegistryCommand,
): Promise<T> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    MLFLOW_ALLOW_FILE_STORE: 'true',
    PYTHONWARNINGS: 'ignore',
  };
  for (const key of Object.keys(env)) if (key.startsWith('MLFLOW_TRACKING_')) delete env[key];
  return new Promise((done, fail) => {
    const child = execFile(python, [SCRIPT], { env, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) return fail(new Error(`mlflow_registry.py failed: ${error.message}\n${stderr}`));
      let answer: T & { error?: string };
      try {
        answer = JSON.parse(stdout) as T & { error?: string };
      } catch {
        return fail(new Error(`mlflow_registry.py printed no JSON answer:\n${stdout}\n${stderr}`));
      }
      if (answer.error) fail(new Error(`mlflow_registry.py: ${answer.error}`));
      else done(answer);
    });
    child.stdin?.end(JSON.stringify({ tracking_uri: trackingUri, ...command }));
  });
}
