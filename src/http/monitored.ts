/**
 * What the monitoring layer needs to know about what is served, read from the serving state: the scope
 * of records (the served experiment, or the saved model's directory), where one request's predictions
 * came from (run, registered version, the run's training words) and the run monitoring follows.
 * Origins are cached per snapshot (run-based) or per loaded model, so the predict path does a map lookup,
 * not a search of the run list.
 */
import type { MonitoredRun, Monitoring, RecordOrigin } from '../monitoring/index.js';
import { recordScope, vocabularyOf } from '../monitoring/index.js';
import type { ServedModel, ServingState } from '../served-models/index.js';
import { servedNow } from './served.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's monitoring (records, feedback, live figures); null when the app has none (tests). */
    taggerMonitoring: Monitoring | null;
  }
}

/** The scope of what `state` serves: feedback and figures only ever read records of it. */
export function scopeOf(state: ServingState): string {
  if (state.mode === 'model') return recordScope({ modelDir: state.source });
  const snapshot = state.servedRuns.current;
  const served = snapshot.runs.find((run) => run.runId === snapshot.bestRunId) ?? snapshot.runs[0];
  // The runs listed are one experiment's (the served run's, in registry mode).
  return recordScope({ experimentId: served?.experimentId ?? '' });
}

const origins = new WeakMap<object, Map<string, RecordOrigin>>();

/**
 * Where predictions of `served` (the model of run `runId`, null for the served one) come from. Cached by
 * the snapshot (or model) they were made with, and recomputed if that run's model object changed.
 */
export function originFor(state: ServingState, runId: string | null, served: ServedModel): RecordOrigin {
  const holder: object = state.mode === 'model' ? state.model : state.servedRuns.current;
  let byRun = origins.get(holder);
  if (byRun === undefined) {
    byRun = new Map();
    origins.set(holder, byRun);
  }
  const key = runId ?? '';
  const known = byRun.get(key);
  if (known !== undefined && (known as RecordOrigin & { served?: ServedModel }).served === served)
    return known;
  let modelVersion: string | null = null;
  if (state.mode === 'runs') {
    const now = servedNow(state);
    if (now.runId === runId && now.modelVersion !== null) {
      modelVersion = `${now.modelVersion.name}/${now.modelVersion.version}`;
    }
  }
  const origin: RecordOrigin & { served: ServedModel } = {
    scope: scopeOf(state),
    runId: key,
    modelVersion,
    multiLabel: served.model.args.multi_label,
    tags: served.model.tags,
    vocabulary: vocabularyOf(served.reference),
    served,
  };
  byRun.set(key, origin);
  return origin;
}

/** The run monitoring follows: the one that answers /predict now. */
export function monitoredRun(state: ServingState): MonitoredRun | null {
  let now: ReturnType<typeof servedNow>;
  try {
    now = servedNow(state);
  } catch {
    return null;
  }
  const { served } = now;
  return {
    scope: scopeOf(state),
    runId: now.runId ?? '',
    multiLabel: served.model.args.multi_label,
    tags: served.model.tags,
    reference: served.reference ?? null,
    referenceProblem: served.reference
      ? null
      : (served.referenceProblem ?? 'the served model has no reference profile'),
    test: served.performance.overall,
    cascade: served.predictor.routing,
  };
}
