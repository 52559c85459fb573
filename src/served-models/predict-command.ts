/**
 * Model loading for `tagger predict`: the same choice of run as `tagger serve` (the best loadable run
 * of the experiment that passes the same promotion gates, via ServedRuns: the gates read only the
 * store, so the CLI and a running server agree), a given run, or a saved model directory.
 */
import type { TagModel } from '../model/index.js';
import { openTrackingStore } from '../tracking/index.js';
import { loadServedModel } from './artifacts.js';
import type { HeldRun } from './candidates.js';
import type { EncoderProvider } from './encoders.js';
import { StartupError, withStoreHint } from './errors.js';
import type { PromotionGates } from './gates.js';
import type { Predictor } from './predictor.js';
import { ServedRuns } from './served-runs.js';
import { artifactSize } from './served-snapshot.js';
import { loadModelDirectory } from './single-model.js';

export interface PredictionSource {
  /** A saved model directory (a run's artifacts folder); wins over the store options. */
  modelDir?: string;
  /** A run of the store; by default the best loadable run of `experiment`. */
  runId?: string;
  experiment: string;
  trackingUri: string;
  /** The promotion gates, as `tagger serve` is configured (default DEFAULT_GATES). */
  gates?: PromotionGates;
  /** Opens an encoder run's encoder; without it encoder runs are not used (held back, as by a server). */
  encoders?: EncoderProvider;
}

export interface LoadedForPrediction {
  /** The run the model comes from, or null for a model directory. */
  runId: string | null;
  model: TagModel;
  /** How it answers texts (an encoder run's with its encoder, opened by `source.encoders`). */
  predictor: Predictor;
  /** Runs that rank above the one used but are not used, and why (as `tagger serve` holds them back). */
  heldBack: readonly HeldRun[];
}

const quiet = { info: () => undefined, warn: () => undefined };

export async function loadModelForPrediction(source: PredictionSource): Promise<LoadedForPrediction> {
  if (source.modelDir !== undefined) {
    const served = await loadModelDirectory(source.modelDir, source.encoders);
    return { runId: null, model: served.model, predictor: served.predictor, heldBack: [] };
  }
  // Predicting only reads: a store on a read-only volume works, and a wrong URI creates nothing.
  const store = await openTrackingStore(source.trackingUri, { readOnly: true }).catch((error: unknown) => {
    throw withStoreHint(error);
  });
  try {
    if (source.runId === undefined) {
      const servedRuns = await ServedRuns.load(store, {
        experiment: source.experiment,
        modelCacheSize: 1,
        log: quiet,
        ...(source.gates ? { gates: source.gates } : {}),
        encoders: source.encoders,
      });
      return {
        runId: servedRuns.bestRunId,
        model: servedRuns.best.model,
        predictor: servedRuns.best.predictor,
        heldBack: servedRuns.problems.heldBack,
      };
    }
    const runId = source.runId;
    const run = await store.getRun(runId);
    if (run === null)
      throw new StartupError(
        `run ${runId} not found in ${store.displayUri}; \`tagger serve\` and GET /runs list the runs`,
      );
    try {
      const read = Object.assign((path: string) => store.readArtifact(runId, path), {
        size: (path: string) => artifactSize(store, runId, path),
      });
      const served = await loadServedModel(read, { encoders: source.encoders });
      return { runId, model: served.model, predictor: served.predictor, heldBack: [] };
    } catch (error) {
      throw new StartupError(`run ${runId} cannot be used for predictions: ${(error as Error).message}`, {
        cause: error,
      });
    }
  } finally {
    await store.close();
  }
}
