/**
 * Shapes of MLflow REST answers and their conversion to the store's types.
 *
 * MLflow serialises protobuf messages with `message_to_json` (`mlflow/utils/proto_json_utils.py`):
 * snake_case names, int64 as JSON numbers (accepted here as numeric strings too, which is protobuf's
 * canonical JSON), enums by name, empty repeated fields omitted (no `params` key, `{}` for an empty
 * search), non-finite doubles as the strings "NaN", "Infinity", "-Infinity". Unknown keys are ignored
 * (newer servers add fields such as `workspace`); missing required ones are MALFORMED.
 */
import Type, { type Static, type TSchema } from 'typebox';
import type { Validator as CompiledValidator } from 'typebox/compile';
import {
  type Experiment,
  type LifecycleStage,
  type MetricPoint,
  type Run,
  type RunInfo,
  type RunStatus,
  TrackingError,
} from '../store.js';

/** int64 as a JSON number or protobuf's canonical numeric string. */
export const Int64 = Type.Union([Type.Integer(), Type.String({ pattern: '^-?[0-9]+$' })]);
const Double = Type.Union([
  Type.Number(),
  Type.Literal('NaN'),
  Type.Literal('Infinity'),
  Type.Literal('-Infinity'),
]);
const Stage = Type.Union([Type.Literal('active'), Type.Literal('deleted')]);
const Status = Type.Union([
  Type.Literal('RUNNING'),
  Type.Literal('SCHEDULED'),
  Type.Literal('FINISHED'),
  Type.Literal('FAILED'),
  Type.Literal('KILLED'),
]);
export const KeyValue = Type.Object({ key: Type.String(), value: Type.Optional(Type.String()) });
export const MetricJson = Type.Object({
  key: Type.String(),
  value: Double,
  timestamp: Int64,
  step: Type.Optional(Int64),
});

const ExperimentJson = Type.Object({
  // A string, never a number: MLflow's 18-digit ids would lose digits as JSON numbers.
  experiment_id: Type.String({ minLength: 1 }),
  name: Type.String(),
  artifact_location: Type.Optional(Type.String()),
  lifecycle_stage: Type.Optional(Stage),
  creation_time: Type.Optional(Int64),
  last_update_time: Type.Optional(Int64),
});

const RunInfoJson = Type.Object({
  run_id: Type.Optional(Type.String({ minLength: 1 })),
  run_uuid: Type.Optional(Type.String({ minLength: 1 })),
  experiment_id: Type.String({ minLength: 1 }),
  run_name: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
  status: Status,
  start_time: Int64,
  end_time: Type.Optional(Int64),
  artifact_uri: Type.Optional(Type.String()),
  lifecycle_stage: Type.Optional(Stage),
});

const RunJson = Type.Object({
  info: RunInfoJson,
  data: Type.Optional(
    Type.Object({
      metrics: Type.Optional(Type.Array(MetricJson)),
      params: Type.Optional(Type.Array(KeyValue)),
      tags: Type.Optional(Type.Array(KeyValue)),
    }),
  ),
});

const FileInfoJson = Type.Object({
  path: Type.String({ minLength: 1 }),
  is_dir: Type.Optional(Type.Boolean()),
  file_size: Type.Optional(Int64),
});

/**
 * The expected shape of one kind of answer, compiled into a checker on the first answer it checks.
 *
 * `typebox/compile` is loaded then, not with this module: it is ~300 modules (~2.5 MB of V8 heap in a
 * serving process) and this module is loaded by the tracking barrel (`tracking/index.ts`), which every
 * `tagger serve` imports whatever its store; a server reading a SQLite database or an `mlruns` folder never
 * checks a REST answer.
 */
export class Answer<T> {
  #checker: Promise<CompiledValidator> | undefined;

  constructor(readonly schema: TSchema) {}

  /** The compiled checker (compiled once; concurrent first calls share it). */
  checker(): Promise<CompiledValidator> {
    this.#checker ??= import('typebox/compile').then(({ Compile }) => Compile(this.schema));
    return this.#checker;
  }

  /** Only carries `T`, the decoded answer's type. */
  declare readonly type?: T;
}

/** The `Answer` for a TypeBox schema, typed by it. */
export function answer<S extends TSchema>(schema: S): Answer<Static<S>> {
  return new Answer(schema);
}

export const Answers = {
  getExperiment: answer(Type.Object({ experiment: ExperimentJson })),
  createExperiment: answer(Type.Object({ experiment_id: Type.String({ minLength: 1 }) })),
  getRun: answer(Type.Object({ run: RunJson })),
  searchRuns: answer(
    Type.Object({ runs: Type.Optional(Type.Array(RunJson)), next_page_token: Type.Optional(Type.String()) }),
  ),
  metricHistory: answer(
    Type.Object({
      metrics: Type.Optional(Type.Array(MetricJson)),
      next_page_token: Type.Optional(Type.String()),
    }),
  ),
  updateRun: answer(Type.Object({ run_info: Type.Optional(RunInfoJson) })),
  /** Proxied listing (`/mlflow-artifacts/artifacts?path=`): basenames. */
  listArtifacts: answer(Type.Object({ files: Type.Optional(Type.Array(FileInfoJson)) })),
  /** Tracking listing (`/mlflow/artifacts/list?run_id=`): run-relative paths. */
  listRunArtifacts: answer(
    Type.Object({
      root_uri: Type.Optional(Type.String()),
      files: Type.Optional(Type.Array(FileInfoJson)),
      next_page_token: Type.Optional(Type.String()),
    }),
  ),
  empty: answer(Type.Object({})),
};

export type ExperimentJson = Static<typeof ExperimentJson>;
export type RunJson = Static<typeof RunJson>;
export type MetricJson = Static<typeof MetricJson>;
export type FileInfoJson = Static<typeof FileInfoJson>;

/** Parses and validates a JSON answer; MALFORMED with the first offending field otherwise. */
export async function decodeAnswer<T>(
  expected: Answer<T>,
  body: Uint8Array,
  describe: () => string,
): Promise<T> {
  let parsed: unknown;
  const text = Buffer.from(body).toString('utf8');
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new TrackingError(
      'MALFORMED',
      `tracking: ${describe()} answered with ${body.byteLength === 0 ? 'an empty body' : 'invalid JSON'} ` +
        `(${body.byteLength} bytes) where MLflow sends JSON; check that the URI points at an MLflow tracking server`,
    );
  }
  const validator = await expected.checker();
  if (validator.Check(parsed)) return parsed as T;
  const first = validator.Errors(parsed)[0];
  const where = first ? `${first.instancePath || '/'} ${first.message}` : 'unexpected shape';
  throw new TrackingError(
    'MALFORMED',
    `tracking: ${describe()} answered with an unexpected JSON shape (${where}); is the server an MLflow 2.x/3.x tracking server?`,
  );
}

export function int64ToNumber(value: number | string): number {
  return typeof value === 'number' ? value : Number(value);
}

export function parseDouble(value: number | 'NaN' | 'Infinity' | '-Infinity'): number {
  if (typeof value === 'number') return value;
  if (value === 'NaN') return Number.NaN;
  return value === 'Infinity' ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
}

/** `JSON.stringify(NaN)` is `null`, which MLflow rejects; protobuf JSON spells non-finite doubles out. */
export function encodeDouble(value: number): number | string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
  return value;
}

export function toExperiment(json: ExperimentJson): Experiment {
  return {
    experimentId: json.experiment_id,
    name: json.name,
    artifactLocation: json.artifact_location ?? '',
    lifecycleStage: (json.lifecycle_stage ?? 'active') as LifecycleStage,
    creationTime: json.creation_time === undefined ? null : int64ToNumber(json.creation_time),
    lastUpdateTime: json.last_update_time === undefined ? null : int64ToNumber(json.last_update_time),
  };
}

export function toMetricPoint(json: MetricJson): MetricPoint {
  return {
    key: json.key,
    value: parseDouble(json.value),
    timestamp: int64ToNumber(json.timestamp),
    step: json.step === undefined ? 0 : int64ToNumber(json.step),
  };
}

export function toRunInfo(info: RunJson['info'], tags: Record<string, string>): RunInfo {
  const runId = info.run_id ?? info.run_uuid;
  if (runId === undefined) {
    throw new TrackingError('MALFORMED', 'tracking: the server sent a run without run_id or run_uuid');
  }
  return {
    runId,
    experimentId: info.experiment_id,
    // Servers before 1.x kept the name only in the tag.
    runName: info.run_name ?? tags['mlflow.runName'] ?? '',
    userId: info.user_id ?? '',
    status: info.status as RunStatus,
    startTime: int64ToNumber(info.start_time),
    endTime: info.end_time === undefined ? null : int64ToNumber(info.end_time),
    artifactUri: info.artifact_uri ?? '',
    lifecycleStage: (info.lifecycle_stage ?? 'active') as LifecycleStage,
  };
}

export function toRun(json: RunJson): Run {
  // Object.fromEntries defines own properties, so a key such as `__proto__` cannot alter the prototype.
  const tags: Record<string, string> = Object.fromEntries(
    (json.data?.tags ?? []).map((t) => [t.key, t.value ?? '']),
  );
  const params: Record<string, string> = Object.fromEntries(
    (json.data?.params ?? []).map((p) => [p.key, p.value ?? '']),
  );
  // `data.metrics` already holds the latest value per key (MLflow's rule, computed by the server).
  const metrics: Record<string, number> = Object.fromEntries(
    (json.data?.metrics ?? []).map((m) => [m.key, parseDouble(m.value)]),
  );
  return { info: toRunInfo(json.info, tags), metrics, params, tags };
}
