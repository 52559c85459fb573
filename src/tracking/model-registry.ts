/**
 * MLflow's Model Registry as Tagger uses it: registered models, their numbered versions (each pointing
 * at the run that produced it) and aliases (`champion` → version 3) that people move to choose what is
 * served. Every tracking store carries one (`store.registry`), kept where MLflow keeps it for that store:
 * `mlruns/models/` in the file layout, the `registered_models` / `model_versions` /
 * `registered_model_aliases` tables in a database, the `registered-models` API of a tracking server. All
 * three pass the registry cases of the shared contract suite (`test/tracking/contract.ts`).
 *
 * Rules (names, aliases, reserved aliases, version numbering) are MLflow 3.17's
 * (`mlflow/utils/validation.py`, `mlflow/store/model_registry/*`), checked here once for every adapter.
 */
import { TrackingError } from './errors.js';

export interface ModelVersion {
  /** The registered model's name. */
  name: string;
  /** 1, 2, 3, … in creation order; never reused while the model exists. */
  version: number;
  /** The run that produced the version; null when it was registered from elsewhere. */
  runId: string | null;
  /** Where the model is, as registered (`runs:/<run_id>/model` for Tagger's versions). */
  source: string;
  /** MLflow's registration status: `READY` for every version Tagger or MLflow's client creates. */
  status: string;
  /** Epoch milliseconds; null when the store does not say. */
  creationTime: number | null;
}

export interface RegisteredModel {
  name: string;
  /** Alias → version number. */
  aliases: Record<string, number>;
  /** The highest version number; null when the model has no version yet. */
  latestVersion: number | null;
}

export interface ModelRegistry {
  /** The model with its aliases; null when no model has this name. */
  getRegisteredModel(name: string): Promise<RegisteredModel | null>;
  /** Creates an empty registered model; `ALREADY_EXISTS` when the name is taken. */
  createRegisteredModel(name: string): Promise<void>;
  /**
   * Adds the next version of an existing model (`NOT_FOUND` when there is none). Concurrent callers
   * get distinct numbers.
   */
  createModelVersion(name: string, version: { source: string; runId: string | null }): Promise<ModelVersion>;
  /** One version; null when the model or the version does not exist. */
  getModelVersion(name: string, version: number): Promise<ModelVersion | null>;
  /** Points `alias` at an existing version (moving it if it pointed elsewhere); `NOT_FOUND` otherwise. */
  setAlias(name: string, alias: string, version: number): Promise<void>;
  /** Removes an alias; nothing happens when it does not exist (MLflow's behaviour). */
  deleteAlias(name: string, alias: string): Promise<void>;
}

/** MLflow's special alias: the highest version (`models:/name@latest`, `models:/name/latest`). */
export const LATEST_ALIAS = 'latest';
/** MLflow's column width for model names and aliases. */
const MAX_NAME_LENGTH = 256;

const invalid = (message: string): TrackingError =>
  new TrackingError('INVALID_ARGUMENT', `tracking: ${message}`);

/**
 * MLflow's model-name rule: not blank, no `/` or `:` (they would make model URIs ambiguous), no `%`
 * (the file store keeps the name as a folder), and nothing a path would normalise away (`.`, `..`).
 */
export function validateModelName(name: string): void {
  if (typeof name !== 'string' || name.trim() === '')
    throw invalid('a registered model name cannot be empty');
  if (name.length > MAX_NAME_LENGTH) {
    throw invalid(`registered model name is ${name.length} characters long; the limit is ${MAX_NAME_LENGTH}`);
  }
  if (/[/:%\\]/.test(name)) {
    throw invalid(`invalid registered model name '${name}': names cannot contain '/', ':', '%' or '\\'`);
  }
  if (name === '.' || name === '..') throw invalid(`invalid registered model name '${name}'`);
}

/** MLflow's alias rule: letters, digits, `_` and `-`. */
export function validateAlias(alias: string): void {
  if (typeof alias !== 'string' || alias === '') throw invalid('an alias cannot be empty');
  if (alias.length > MAX_NAME_LENGTH || !/^[\w-]+$/.test(alias)) {
    throw invalid(`invalid alias '${alias}': aliases may only contain letters, digits, '_' and '-'`);
  }
}

/** Aliases a person may not set: `latest` (always the newest version) and `v<N>` (reads as a version). */
export function validateSettableAlias(alias: string): void {
  validateAlias(alias);
  if (alias.toLowerCase() === LATEST_ALIAS) {
    throw invalid(`'${alias}' is reserved: it always means the newest version`);
  }
  if (/^[vV]\d+$/.test(alias)) throw invalid(`'${alias}' is reserved: it reads as a version number`);
}

export function validateVersion(version: number): void {
  if (!Number.isSafeInteger(version) || version < 1) {
    throw invalid(`a model version is a whole number ≥ 1, got ${String(version)}`);
  }
}

/**
 * Registers a new version of `name`, creating the registered model first when it does not exist (another
 * process creating it at the same moment is fine).
 * @example await registerModelVersion(store.registry, 'tagger', { source: `runs:/${runId}/model`, runId })
 */
export async function registerModelVersion(
  registry: ModelRegistry,
  name: string,
  version: { source: string; runId: string | null },
): Promise<ModelVersion> {
  validateModelName(name);
  if ((await registry.getRegisteredModel(name)) === null) {
    try {
      await registry.createRegisteredModel(name);
    } catch (error) {
      if (!(error instanceof TrackingError && error.code === 'ALREADY_EXISTS')) throw error;
    }
  }
  return registry.createModelVersion(name, version);
}

/**
 * The version an alias points at (`latest`: the newest version). NOT_FOUND, saying what is missing,
 * when the model, the alias or the version does not exist.
 */
export async function versionByAlias(
  registry: ModelRegistry,
  name: string,
  alias: string,
): Promise<ModelVersion> {
  validateModelName(name);
  validateAlias(alias);
  const model = await registry.getRegisteredModel(name);
  if (model === null) throw new TrackingError('NOT_FOUND', `tracking: no registered model named '${name}'`);
  const number = alias.toLowerCase() === LATEST_ALIAS ? model.latestVersion : model.aliases[alias];
  if (number === undefined || number === null) {
    const known = Object.keys(model.aliases);
    throw new TrackingError(
      'NOT_FOUND',
      alias.toLowerCase() === LATEST_ALIAS
        ? `tracking: model '${name}' has no versions yet`
        : `tracking: model '${name}' has no alias '${alias}' (${known.length === 0 ? 'it has no aliases' : `its aliases: ${known.join(', ')}`})`,
    );
  }
  return requireVersion(registry, name, number);
}

/** The version, or NOT_FOUND naming it. */
export async function requireVersion(
  registry: ModelRegistry,
  name: string,
  version: number,
): Promise<ModelVersion> {
  validateModelName(name);
  validateVersion(version);
  const found = await registry.getModelVersion(name, version);
  if (found === null) {
    const model = await registry.getRegisteredModel(name);
    throw new TrackingError(
      'NOT_FOUND',
      model === null
        ? `tracking: no registered model named '${name}'`
        : `tracking: model '${name}' has no version ${version}${model.latestVersion === null ? ' (it has no versions)' : ` (newest: ${model.latestVersion})`}`,
    );
  }
  return found;
}

/** Aliases of one version, from a model's alias map, sorted. */
export function aliasesOf(model: RegisteredModel, version: number): string[] {
  return Object.entries(model.aliases)
    .filter(([, target]) => target === version)
    .map(([alias]) => alias)
    .sort();
}
