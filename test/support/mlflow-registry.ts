/** Runs `python/mlflow_registry.py` (MLflow's own client on the Model Registry) with the venv's Python. */
import { runPythonProbe } from './mlflow-interop.js';

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
  return runPythonProbe<T & { error?: string }>(python, 'mlflow_registry.py', {
    tracking_uri: trackingUri,
    ...command,
  });
}
