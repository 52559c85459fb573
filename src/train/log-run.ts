/**
 * Logging one training as an MLflow run: params, metrics (final and per-epoch history), the usual
 * MLflow system tags, and the artifacts serving needs (`args.json`, `performance.json`, `model/`).
 * The run is marked FINISHED only after every artifact is stored, and FAILED if anything throws, so a
 * half-logged run is never mistaken for a complete one.
 */
import { userInfo } from 'node:os';
import { encodeModel, MODEL_FORMAT, RUN_ARTIFACTS, type TrainingArgs } from '../model/index.js';
import { getOrCreateExperiment, type MetricPoint, type TrackingStore } from '../tracking/store.js';
import type { TrainingOutcome } from './pipeline.js';

/** Tag naming the model artifact format, so loaders can tell Tagger runs from others at a glance. */
export const MODEL_FORMAT_TAG = 'tagger.model_format';

export interface LogRunInput {
  experiment: string;
  runName: string;
  args: TrainingArgs;
  seed: number;
  outcome: TrainingOutcome;
  /** What produced the run, e.g. `tagger train` (tag `mlflow.source.name`). */
  source: string;
  /** Extra params (e.g. data file names) logged next to the training arguments. */
  extraParams?: Record<string, string>;
  /** Extra final metrics (e.g. `val_f1` for hyper-parameter search). */
  extraMetrics?: Record<string, number>;
}

export interface LoggedRun {
  runId: string;
  experimentId: string;
}

/** How a param value is written: strings as they are, everything else as JSON (`true`, `null`, `0.1`). */
export function formatParam(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'unknown';
  }
}

const encoder = new TextEncoder();
const json = (value: unknown): Uint8Array => encoder.encode(`${JSON.stringify(value, null, 2)}\n`);

export async function logTrainingRun(store: TrackingStore, input: LogRunInput): Promise<LoggedRun> {
  const experimentId = await getOrCreateExperiment(store, input.experiment);
  const user = currentUser();
  const run = await store.createRun(experimentId, {
    runName: input.runName,
    userId: user,
    tags: {
      'mlflow.user': user,
      'mlflow.source.name': input.source,
      'mlflow.source.type': 'LOCAL',
      [MODEL_FORMAT_TAG]: MODEL_FORMAT,
    },
  });
  const runId = run.info.runId;
  try {
    const { outcome } = input;
    const now = Date.now();
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(input.args)) params[key] = formatParam(value);
    params.seed = String(input.seed);
    Object.assign(params, input.extraParams);

    const overall = outcome.performance.overall;
    const finals: Record<string, number> = {
      precision: overall.precision,
      recall: overall.recall,
      f1: overall.f1,
      ...input.extraMetrics,
    };
    if (outcome.threshold !== null) finals.threshold = outcome.threshold;
    const metrics: MetricPoint[] = Object.entries(finals).map(([key, value]) => ({
      key,
      value,
      timestamp: now,
      step: 0,
    }));
    for (const epoch of outcome.history) {
      metrics.push({ key: 'train_loss', value: epoch.trainLoss, timestamp: now, step: epoch.epoch });
      metrics.push({ key: 'val_loss', value: epoch.valLoss, timestamp: now, step: epoch.epoch });
    }
    await store.logBatch(runId, { params, metrics });

    await store.logArtifact(runId, RUN_ARTIFACTS.args, json(input.args));
    await store.logArtifact(runId, RUN_ARTIFACTS.performance, json(outcome.performance));
    for (const [name, bytes] of Object.entries(encodeModel(outcome.model))) {
      await store.logArtifact(runId, `${RUN_ARTIFACTS.modelDir}/${name}`, bytes);
    }
    await store.updateRun(runId, { status: 'FINISHED', endTime: Date.now() });
  } catch (error) {
    await store.updateRun(runId, { status: 'FAILED', endTime: Date.now() }).catch(() => undefined);
    throw error;
  }
  return { runId, experimentId };
}
