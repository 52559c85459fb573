/**
 * The one place the HTTP layer asks "which model answers /predict now?". The served run
 * can be swapped while the process runs (hot reload), so every caller goes through here on each request
 * instead of keeping a reference, and a future change of the served runs' shape touches only this file.
 */
import type { ServedModel, ServedSnapshot, ServingProblems, ServingState } from '../served-models/index.js';
import type { ModelVersionRef } from './schemas.js';

export interface ServedNow {
  /** The served run's id in run-based mode; null in single-model mode. */
  runId: string | null;
  served: ServedModel;
  /** The run's logged f1 (run-based mode), else the model's overall test f1; null when unknown or NaN. */
  f1: number | null;
  /** Run-based mode: an unreadable store, better-ranked runs not served; null in single-model mode. */
  problems: ServingProblems | null;
  /** Registry mode (`--model-uri`): the registered version answering; null otherwise. */
  modelVersion: ModelVersionRef | null;
}

/** The registered version of a snapshot, as responses show it (null unless serving a model URI). */
export function modelVersionOf(snapshot: ServedSnapshot): ModelVersionRef | null {
  const version = snapshot.target?.version;
  return version ? { name: version.name, version: version.version, model_uri: snapshot.target!.uri } : null;
}

export function servedNow(state: ServingState): ServedNow {
  if (state.mode === 'model') {
    return {
      runId: null,
      served: state.model,
      f1: state.model.performance.overall.f1,
      problems: null,
      modelVersion: null,
    };
  }
  // One read of the served runs' current snapshot: a reload swaps it whole, so the run id, its model and
  // its f1 below always belong together.
  const snapshot = state.servedRuns.current;
  const { runs, bestRunId: runId, best: served } = snapshot;
  const logged = runs.find((run) => run.runId === runId)?.metrics.f1;
  const f1 = logged !== undefined && Number.isFinite(logged) ? logged : served.performance.overall.f1;
  return { runId, served, f1, problems: state.servedRuns.problems, modelVersion: modelVersionOf(snapshot) };
}

/** False while the server drains for shutdown (the server's lifecycle; absent in apps built by tests). */
export const takesTraffic = (state: ServingState): boolean => state.lifecycle?.ready ?? true;

/**
 * Readiness problems of the serving state, for people (no store paths): a served cascade without its
 * encoder (`--allow-degraded`), then in run-based mode an unreadable store and the runs held back.
 */
export function servingProblems(state: ServingState): string[] {
  if (state.mode === 'model') {
    const { degraded } = state.model;
    return degraded === undefined ? [] : [degradedProblem('the served model', degraded)];
  }
  const { best, bestRunId } = state.servedRuns.current;
  const degraded = best.degraded === undefined ? [] : [degradedProblem(`run ${bestRunId}`, best.degraded)];
  return [...degraded, ...runProblems(state.servedRuns.problems)];
}

const degradedProblem = (what: string, why: string): string =>
  `${what} is a cascade served by its fast model alone (--allow-degraded): ${why}; the texts its fast model is unsure of get its answer, marked fast_degraded, until the encoder is installed (a reload then opens it; a saved model directory needs a restart)`;

function runProblems({ store, heldBack }: ServingProblems): string[] {
  const lines = heldBack.map((held) =>
    held.target !== undefined
      ? `${held.target} (run ${held.runId}) is what the model URI points at, but it is not served: ${held.reason}; the model loaded before keeps serving`
      : `run ${held.runId} ranks above the served run but is not served: ${held.reason}${held.kind === 'gates' ? '' : ' (its artifacts cannot be loaded)'}`,
  );
  const shown = lines.length > 20 ? [...lines.slice(0, 19), `… and ${lines.length - 19} more runs`] : lines;
  return store === null ? shown : [store, ...shown.slice(0, 20)];
}
