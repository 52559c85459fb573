/** Public surface of src/service: what the HTTP layer serves and how it is loaded. */
export {
  ARTIFACT_FILES,
  ArtifactFormatError,
  type ArtifactReader,
  loadServedModel,
  parsePerformance,
  readPerformance,
  type ServedMetrics,
  type ServedModel,
  type ServedPerformance,
} from './artifacts.js';
export { SingleFlightLru } from './cache.js';
export { RunLoadError, StartupError, UnknownRunError } from './errors.js';
export { RunRegistry, type RunRegistryOptions, type RunSummary, type ServiceLog } from './registry.js';
export { loadModelDirectory } from './single-model.js';

import type { ServedModel } from './artifacts.js';
import type { RunRegistry } from './registry.js';

/**
 * What one deployment serves: the runs of an experiment (run-based mode: every endpoint of both API
 * variants) or one saved model (single-model mode: no /runs endpoints).
 */
export type ServingState =
  | { readonly mode: 'runs'; readonly registry: RunRegistry }
  | { readonly mode: 'model'; readonly model: ServedModel; readonly source: string };
