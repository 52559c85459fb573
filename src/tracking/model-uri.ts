/**
 * MLflow model URIs that name something Tagger can serve, and what they resolve to now:
 * - `models:/<name>@<alias>`: the version an alias points at (followed live by the server);
 * - `models:/<name>/<version>` and `models:/<name>/latest`: one version, or the newest;
 * - `runs:/<run_id>/model` (or `runs:/<run_id>`): one run's model.
 * The syntax is MLflow's (`mlflow/store/artifact/utils/models.py`, `_parse_model_uri`); stage names
 * (`models:/name/Production`) are MLflow's deprecated stages and are refused with the alias to use instead.
 */
import {
  type ModelVersion,
  requireVersion,
  validateAlias,
  validateModelName,
  versionByAlias,
} from './model-registry.js';
import { TrackingError, type TrackingStore } from './store.js';

export type ModelUri =
  | { kind: 'alias'; uri: string; name: string; alias: string }
  | { kind: 'version'; uri: string; name: string; version: number }
  | { kind: 'run'; uri: string; runId: string };

/** What a model URI points at now. */
export interface ResolvedModel {
  runId: string;
  /** The registered version behind it; null for a `runs:/` URI. */
  version: ModelVersion | null;
}

const RUN_ID_RE = /^[a-zA-Z0-9][\w-]{0,255}$/;
/** Tagger keeps its model under this run-relative folder (RUN_ARTIFACTS.modelDir). */
const MODEL_PATH = 'model';

const bad = (uri: string, why: string): TrackingError =>
  new TrackingError(
    'INVALID_ARGUMENT',
    `model URI '${uri}' ${why}; use models:/<name>@<alias>, models:/<name>/<version> or runs:/<run_id>/model`,
  );

/**
 * Parses a model URI, refusing what Tagger cannot serve with the form to use instead.
 * @example parseModelUri('models:/tagger@champion') // { kind: 'alias', name: 'tagger', alias: 'champion', … }
 */
export function parseModelUri(uri: string): ModelUri {
  const models = /^models:\/(?!\/)(.*)$/.exec(uri);
  if (models) {
    const rest = models[1]!;
    const at = rest.lastIndexOf('@');
    if (at >= 0) {
      const name = rest.slice(0, at);
      const alias = rest.slice(at + 1);
      checked(uri, () => {
        validateModelName(name);
        validateAlias(alias);
      });
      return { kind: 'alias', uri, name, alias };
    }
    const parts = rest.split('/');
    if (parts.length === 1 && /^m-[0-9a-f]{32}$/.test(rest)) {
      throw bad(uri, 'names a logged model, which has no registered version; register it first');
    }
    if (parts.length !== 2 || parts[1] === '') throw bad(uri, 'does not name a model version or alias');
    const [name, suffix] = parts as [string, string];
    checked(uri, () => validateModelName(name));
    if (suffix.toLowerCase() === 'latest') return { kind: 'alias', uri, name, alias: 'latest' };
    if (!/^\d+$/.test(suffix)) {
      throw bad(
        uri,
        `names the stage '${suffix}'; MLflow's stages are deprecated: point an alias at the version (tagger alias set ${name} <alias> <version>) and serve models:/${name}@<alias>`,
      );
    }
    const version = Number(suffix);
    if (!Number.isSafeInteger(version) || version < 1) throw bad(uri, 'has an invalid version number');
    return { kind: 'version', uri, name, version };
  }
  const runs = /^runs:\/(?!\/)([^/]+)(?:\/(.*))?$/.exec(uri);
  if (runs) {
    const runId = runs[1]!;
    const path = (runs[2] ?? '').replace(/\/+$/, '');
    if (!RUN_ID_RE.test(runId)) throw bad(uri, `has an invalid run id '${runId}'`);
    if (path !== '' && path !== MODEL_PATH) {
      throw bad(uri, `points at '${path}', but Tagger's model is the run's '${MODEL_PATH}' folder`);
    }
    return { kind: 'run', uri, runId };
  }
  throw bad(uri, 'is not a models:/ or runs:/ URI');
}

function checked(uri: string, validate: () => void): void {
  try {
    validate();
  } catch (error) {
    throw bad(uri, `is invalid (${(error as Error).message.replace(/^tracking: /, '')})`);
  }
}

/**
 * The run a model URI points at now, with its registered version. NOT_FOUND when the model, alias or
 * version is missing, or when the version was registered without a run (Tagger serves runs).
 */
export async function resolveModelUri(store: TrackingStore, target: ModelUri): Promise<ResolvedModel> {
  if (target.kind === 'run') return { runId: target.runId, version: null };
  const version =
    target.kind === 'alias'
      ? await versionByAlias(store.registry, target.name, target.alias)
      : await requireVersion(store.registry, target.name, target.version);
  if (version.runId === null || version.runId === '') {
    throw new TrackingError(
      'NOT_FOUND',
      `tracking: version ${version.version} of model '${version.name}' (${version.source}) was not registered from a run; Tagger serves runs, so register a Tagger run (tagger train --register ${version.name})`,
    );
  }
  return { runId: version.runId, version };
}

/** `models:/tagger/3` style label of a version, for logs and responses. */
export const versionLabel = (version: ModelVersion): string => `models:/${version.name}/${version.version}`;
