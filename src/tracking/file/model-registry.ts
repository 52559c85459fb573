/**
 * The Model Registry in MLflow's file layout (`mlflow/store/model_registry/file_store.py`, checked
 * against MLflow 3.17.2):
 *
 *   <root>/models/<name>/meta.yaml              registered model (timestamps; aliases mirrored)
 *   <root>/models/<name>/aliases/<alias>        the version number, as text — the source of truth
 *   <root>/models/<name>/version-<n>/meta.yaml  one version (source, run_id, status, …)
 *
 * Folders decide what exists, as in MLflow: a model is its folder, a version its `version-<n>` folder
 * once its meta.yaml is there. Version numbers are claimed with `mkdir` (atomic: two processes never get
 * the same number); every file is written to a temp file and renamed into place.
 */
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite, errno, fsError } from '../local-artifacts.js';
import {
  type ModelRegistry,
  type ModelVersion,
  type RegisteredModel,
  validateAlias,
  validateModelName,
  validateSettableAlias,
  validateVersion,
} from '../model-registry.js';
import { TrackingError } from '../store.js';
import { dumpMeta, malformed, metaInt, metaString, parseMeta } from './formats.js';
import { exists, readText } from './read.js';

const MODELS = 'models';
const META = 'meta.yaml';
const ALIASES = 'aliases';
const VERSION_PREFIX = 'version-';
const WORKSPACE = 'default';

export class FileModelRegistry implements ModelRegistry {
  private readonly models: string;

  constructor(
    root: string,
    private readonly displayUri: string,
  ) {
    this.models = join(root, MODELS);
  }

  private modelDir(name: string): string {
    validateModelName(name);
    return join(this.models, name);
  }

  private notFound(name: string): TrackingError {
    return new TrackingError(
      'NOT_FOUND',
      `tracking: no registered model named '${name}' in ${this.displayUri}`,
    );
  }

  async getRegisteredModel(name: string): Promise<RegisteredModel | null> {
    const dir = this.modelDir(name);
    if (!(await exists(dir))) return null;
    const versions = await this.versionNumbers(dir);
    return { name, aliases: await this.aliases(dir), latestVersion: versions.at(-1) ?? null };
  }

  async createRegisteredModel(name: string): Promise<void> {
    const dir = this.modelDir(name);
    try {
      await mkdir(this.models, { recursive: true });
      await mkdir(dir);
    } catch (error) {
      if (errno(error) === 'EEXIST') {
        throw new TrackingError(
          'ALREADY_EXISTS',
          `tracking: model '${name}' already exists in ${this.displayUri}`,
        );
      }
      throw fsError(error, 'create the registered model folder', dir);
    }
    const now = Date.now();
    await this.writeModelMeta(dir, name, now, now, {});
  }

  async createModelVersion(
    name: string,
    input: { source: string; runId: string | null },
  ): Promise<ModelVersion> {
    const dir = this.modelDir(name);
    if (!(await exists(dir))) throw this.notFound(name);
    let number = ((await this.versionNumbers(dir, true)).at(-1) ?? 0) + 1;
    // Claim the number: mkdir fails for every process but one.
    for (;;) {
      try {
        await mkdir(join(dir, `${VERSION_PREFIX}${number}`));
        break;
      } catch (error) {
        if (errno(error) !== 'EEXIST') throw fsError(error, 'create a model version folder in', dir);
        number += 1;
      }
    }
    const now = Date.now();
    const version: ModelVersion = {
      name,
      version: number,
      runId: input.runId,
      source: input.source,
      status: 'READY',
      creationTime: now,
    };
    await atomicWrite(
      join(dir, `${VERSION_PREFIX}${number}`, META),
      dumpMeta({
        creation_timestamp: now,
        current_stage: 'None',
        deployment_job_state: null,
        description: null,
        last_updated_timestamp: now,
        model_id: null,
        name,
        run_id: input.runId,
        run_link: null,
        source: input.source,
        status: 'READY',
        status_message: null,
        storage_location: input.source,
        user_id: null,
        version: number,
        workspace: WORKSPACE,
      }),
    );
    await this.touchModel(dir, name, now);
    return version;
  }

  async getModelVersion(name: string, version: number): Promise<ModelVersion | null> {
    validateVersion(version);
    const file = join(this.modelDir(name), `${VERSION_PREFIX}${version}`, META);
    const text = await readText(file);
    // A folder without meta.yaml is a version being created (or a crash mid-create): not there yet.
    if (text === null) return null;
    const meta = parseMeta(text, file);
    const recorded = metaInt(meta, 'version', file);
    if (recorded !== null && recorded !== version) {
      throw malformed(file, `records version ${recorded} in the folder of version ${version}`);
    }
    const source = metaString(meta, 'source', file);
    if (source === null) throw malformed(file, "field 'source' is missing");
    return {
      name,
      version,
      runId: metaString(meta, 'run_id', file),
      source,
      status: metaString(meta, 'status', file) ?? 'READY',
      creationTime: metaInt(meta, 'creation_timestamp', file),
    };
  }

  async setAlias(name: string, alias: string, version: number): Promise<void> {
    validateSettableAlias(alias);
    const dir = this.modelDir(name);
    if (!(await exists(dir))) throw this.notFound(name);
    if ((await this.getModelVersion(name, version)) === null) {
      throw new TrackingError(
        'NOT_FOUND',
        `tracking: model '${name}' has no version ${version} in ${this.displayUri}`,
      );
    }
    await atomicWrite(join(dir, ALIASES, alias), String(version), dir);
    await this.touchModel(dir, name, Date.now());
  }

  async deleteAlias(name: string, alias: string): Promise<void> {
    validateAlias(alias);
    const dir = this.modelDir(name);
    if (!(await exists(dir))) throw this.notFound(name);
    try {
      await rm(join(dir, ALIASES, alias), { force: true });
    } catch (error) {
      throw fsError(error, 'remove alias', join(dir, ALIASES, alias));
    }
    await this.touchModel(dir, name, Date.now());
  }

  /** Version numbers with a meta.yaml (or every claimed one, for numbering), ascending. */
  private async versionNumbers(dir: string, claimed = false): Promise<number[]> {
    const numbers: number[] = [];
    for (const entry of await listDir(dir)) {
      const match = /^version-(\d+)$/.exec(entry);
      if (!match) continue;
      if (claimed || (await exists(join(dir, entry, META)))) numbers.push(Number(match[1]));
    }
    return numbers.sort((a, b) => a - b);
  }

  private async aliases(dir: string): Promise<Record<string, number>> {
    const aliases: Record<string, number> = {};
    for (const alias of await listDir(join(dir, ALIASES))) {
      if (alias.startsWith('.')) continue;
      const file = join(dir, ALIASES, alias);
      const text = (await readText(file))?.trim();
      if (text === undefined) continue;
      if (!/^\d+$/.test(text))
        throw malformed(file, `an alias must hold a version number, got '${text.slice(0, 40)}'`);
      aliases[alias] = Number(text);
    }
    return aliases;
  }

  /** Rewrites the model's meta.yaml with a new update time and the aliases mirrored, as MLflow does. */
  private async touchModel(dir: string, name: string, time: number): Promise<void> {
    const file = join(dir, META);
    const text = await readText(file);
    const created =
      text === null ? time : (metaInt(parseMeta(text, file), 'creation_timestamp', file) ?? time);
    await this.writeModelMeta(dir, name, created, time, await this.aliases(dir));
  }

  private async writeModelMeta(
    dir: string,
    name: string,
    created: number,
    updated: number,
    aliases: Record<string, number>,
  ): Promise<void> {
    await atomicWrite(
      join(dir, META),
      dumpMeta({
        aliases: Object.fromEntries(
          Object.entries(aliases).map(([alias, version]) => [alias, String(version)]),
        ),
        creation_timestamp: created,
        deployment_job_id: null,
        deployment_job_state: null,
        description: null,
        last_updated_timestamp: updated,
        name,
        workspace: WORKSPACE,
      }),
    );
  }
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return [];
    throw fsError(error, 'list', dir);
  }
}
