/** Public surface of src/served-models: what the HTTP layer serves and how it is loaded. */

/** Paths in what the API shows, masked as credentials are (the HTTP layer imports no tracking code). */
export { maskPaths } from '../tracking/redact.js';
export {
  ArtifactFormatError,
  type ArtifactReader,
  type LoadOptions,
  loadServedModel,
  type ModelLoading,
  parsePerformance,
  readPerformance,
  type ServedMetrics,
  type ServedModel,
  type ServedPerformance,
} from './artifacts.js';
export {
  type BatcherObserver,
  type BatcherOptions,
  DynamicBatcher,
  QueueFullError,
  RequestTooLargeError,
  type SubmitOptions,
} from './batcher.js';
export { SingleFlightLru } from './cache.js';
export type { HeldRun, ServingProblems } from './candidates.js';
export type { ServedCascadeCurve, ServedCurvePoint } from './cascade-curve.js';
export {
  DEFAULT_ENCODER_SETTINGS,
  type EmbedCall,
  type Embedder,
  type EncoderLease,
  EncoderLoadError,
  type EncoderObserver,
  EncoderPool,
  type EncoderProvider,
  type EncoderSettings,
  EncoderUnavailableError,
} from './encoders.js';
export {
  MISSING_STORE_HINT,
  NotLoggedError,
  RunLoadError,
  StartupError,
  UnknownRunError,
  withStoreHint,
} from './errors.js';
export {
  DEFAULT_GATES,
  dataCheckKinds,
  dataWarnings,
  gateFailure,
  type PromotionGates,
  referenceRun,
  type ServingVerdict,
  servingVerdict,
  testLeakWarning,
} from './gates.js';
export {
  HISTORY_METRICS,
  type ServedConfusion,
  type ServedHistory,
  type ServedLabelIssue,
  type ServedLabelIssues,
  type ServedMistake,
  type ServedMistakes,
} from './inspection.js';
export { ServingLifecycle } from './lifecycle.js';
export type { ServiceLog } from './log.js';
export { pollReloads, type ReloadPoller } from './poller.js';
export {
  type Answers,
  type CascadeDegradation,
  type CascadeOverload,
  type PredictionObserver,
  type PredictionRequest,
  type Predictor,
  predictorFor,
} from './predictor.js';
export {
  type ReloadOutcome,
  type ReloadResult,
  ServedRuns,
  type ServedRunsOptions,
} from './served-runs.js';
export { type RunSummary, ServedSnapshot, type ServedTarget } from './served-snapshot.js';
export { loadModelDirectory } from './single-model.js';

import type { ServedModel } from './artifacts.js';
import type { ServingLifecycle } from './lifecycle.js';
import type { ServedRuns } from './served-runs.js';

/**
 * What one deployment serves: the runs of an experiment (run-based mode: every endpoint of both API
 * variants) or one saved model (single-model mode: no /runs endpoints). In run-based mode read
 * `servedRuns.current` once per request: reloads replace that snapshot as a whole.
 *
 * `lifecycle` is set by the server (absent in apps built by tests): `lifecycle.ready` turns false when a
 * graceful shutdown starts, for the readiness endpoint; treat a missing lifecycle as ready.
 */
export type ServingState =
  | { readonly mode: 'runs'; readonly servedRuns: ServedRuns; readonly lifecycle?: ServingLifecycle }
  | {
      readonly mode: 'model';
      readonly model: ServedModel;
      readonly source: string;
      readonly lifecycle?: ServingLifecycle;
    };
