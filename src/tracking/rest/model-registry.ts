/**
 * The Model Registry of an MLflow tracking server (`/api/2.0/mlflow/registered-models/…`,
 * `/model-versions/…`; `mlflow/protos/model_registry.proto`, checked against MLflow 3.17.2). Versions
 * travel as strings in the proto (`"3"`); answers are validated like every other REST answer.
 *
 * Creating a model or a version is not idempotent, so those calls are re-sent only when the server
 * provably did not act on them (see rest-store.ts); setting an alias is, and is retried freely.
 */
import Type from 'typebox';
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
import type { RestCalls } from './rest-http.js';
import { answer, Int64, int64ToNumber } from './rest-json.js';

const VersionNumber = Type.Union([Type.Integer({ minimum: 1 }), Type.String({ pattern: '^[1-9][0-9]*$' })]);
const ModelVersionJson = Type.Object({
  name: Type.String({ minLength: 1 }),
  version: VersionNumber,
  creation_timestamp: Type.Optional(Int64),
  source: Type.Optional(Type.String()),
  run_id: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
});
const RegisteredModelJson = Type.Object({
  name: Type.String({ minLength: 1 }),
  latest_versions: Type.Optional(Type.Array(ModelVersionJson)),
  aliases: Type.Optional(
    Type.Array(Type.Object({ alias: Type.String({ minLength: 1 }), version: VersionNumber })),
  ),
});

const Answers = {
  registeredModel: answer(Type.Object({ registered_model: RegisteredModelJson })),
  modelVersion: answer(Type.Object({ model_version: ModelVersionJson })),
  empty: answer(Type.Object({})),
};

type ModelVersionJson = Type.Static<typeof ModelVersionJson>;

function toModelVersion(json: ModelVersionJson): ModelVersion {
  return {
    name: json.name,
    version: Number(json.version),
    runId: json.run_id === undefined || json.run_id === '' ? null : json.run_id,
    source: json.source ?? '',
    status: json.status ?? 'READY',
    creationTime: json.creation_timestamp === undefined ? null : int64ToNumber(json.creation_timestamp),
  };
}

export class RestModelRegistry implements ModelRegistry {
  constructor(private readonly rest: RestCalls) {}

  async getRegisteredModel(name: string): Promise<RegisteredModel | null> {
    validateModelName(name);
    const answer = await this.rest.callOrNull(
      {
        method: 'GET',
        url: this.rest.api('registered-models/get', { name }),
        idempotent: true,
        what: `get registered model '${name}'`,
      },
      Answers.registeredModel,
    );
    if (answer === null) return null;
    const model = answer.registered_model;
    const aliases: Record<string, number> = {};
    for (const { alias, version } of model.aliases ?? []) aliases[alias] = Number(version);
    // latest_versions holds the newest version of each (deprecated) stage: the newest of them all is theirs.
    const versions = (model.latest_versions ?? []).map((version) => Number(version.version));
    return { name: model.name, aliases, latestVersion: versions.length > 0 ? Math.max(...versions) : null };
  }

  async createRegisteredModel(name: string): Promise<void> {
    validateModelName(name);
    await this.rest.call(
      {
        method: 'POST',
        url: this.rest.api('registered-models/create'),
        json: { name },
        idempotent: false,
        what: `create registered model '${name}'`,
      },
      Answers.registeredModel,
    );
  }

  async createModelVersion(
    name: string,
    input: { source: string; runId: string | null },
  ): Promise<ModelVersion> {
    validateModelName(name);
    const answer = await this.rest.call(
      {
        method: 'POST',
        url: this.rest.api('model-versions/create'),
        json: { name, source: input.source, ...(input.runId === null ? {} : { run_id: input.runId }) },
        idempotent: false,
        what: `create a version of model '${name}'`,
      },
      Answers.modelVersion,
    );
    return toModelVersion(answer.model_version);
  }

  async getModelVersion(name: string, version: number): Promise<ModelVersion | null> {
    validateModelName(name);
    validateVersion(version);
    const answer = await this.rest.callOrNull(
      {
        method: 'GET',
        url: this.rest.api('model-versions/get', { name, version: String(version) }),
        idempotent: true,
        what: `get version ${version} of model '${name}'`,
      },
      Answers.modelVersion,
    );
    if (answer === null) return null;
    const found = toModelVersion(answer.model_version);
    if (found.name !== name || found.version !== version) {
      throw new TrackingError(
        'MALFORMED',
        `tracking: ${this.rest.displayUri} answered version ${found.version} of '${found.name}' when asked for version ${version} of '${name}'`,
      );
    }
    return found;
  }

  async setAlias(name: string, alias: string, version: number): Promise<void> {
    validateModelName(name);
    validateSettableAlias(alias);
    validateVersion(version);
    await this.rest.call(
      {
        method: 'POST',
        url: this.rest.api('registered-models/alias'),
        json: { name, alias, version: String(version) },
        idempotent: true,
        what: `point alias '${alias}' of model '${name}' at version ${version}`,
      },
      Answers.empty,
    );
  }

  async deleteAlias(name: string, alias: string): Promise<void> {
    validateModelName(name);
    validateAlias(alias);
    await this.rest.call(
      {
        method: 'DELETE',
        url: this.rest.api('registered-models/alias'),
        json: { name, alias },
        idempotent: true,
        what: `delete alias '${alias}' of model '${name}'`,
      },
      Answers.empty,
    );
  }
}
