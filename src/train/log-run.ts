/**
 * Logging one training as an MLflow run: params, metrics (final and per-epoch history), the usual
 * MLflow system tags, the artifacts serving needs (`args.json`, `performance.json`, `model/`) and those a
 * person reads (`behavioural.json`, `slices.json`, what the test split got wrong for the inspection
 * page: `confusion_matrix.json`, `test_mistakes.json`, and the training data's probable label errors,
 * `label_issues.json`, when the caller looked for them), the test split's reference profile for drift
 * monitoring (`reference_profile.json`), the behavioural pass rates as metrics, the data
 * files as dataset inputs, and the model as an MLflow 3 logged model (READY, with the params and final
 * metrics, recorded as the run's output; see `logged-model.ts`).
 * The run is marked FINISHED only after every artifact is stored, FAILED if anything throws, and KILLED
 * when the process is interrupted (SIGINT/SIGTERM) while logging, so a half-logged run is never mistaken
 * for a complete one. When the store itself is lost (PostgreSQL down late in logging), marking it FAILED
 * is tried again for a while, and a run still left RUNNING — or one whose process was SIGKILLed — is
 * marked FAILED by the next `train` or `optimize` on its experiment (run-ends.ts); serving never picks
 * RUNNING runs.
 */
import { userInfo } from 'node:os';
import {
  EVALUATION_METRICS,
  EVALUATION_TAGS,
  encodeModel,
  MODEL_FILES,
  MODEL_FORMAT,
  RUN_ARTIFACTS,
  type TrainingArgs,
} from '../model/index.js';
import {
  type DatasetInput,
  getOrCreateExperiment,
  type MetricPoint,
  TrackingError,
  type TrackingStore,
} from '../tracking/store.js';
import type { TrainingLabelIssues } from './label-issues.js';
import { LOGGED_MODEL_NAME, MLMODEL_FILE, mlmodelYaml } from './logged-model.js';
import type { CascadeOutcome, TrainingOutcome } from './pipeline.js';
import { loggingTags, markEnded } from './run-ends.js';

/** Tag naming the model artifact format, so loaders can tell Tagger runs from others at a glance. */
export const MODEL_FORMAT_TAG = 'tagger.model_format';

/** Tag saying why a training logged no label_issues.json although it looked (e.g. too few rows). */
export const LABEL_ISSUES_SKIPPED_TAG = 'tagger.label_issues.skipped';
/** Tag naming the candidate the model choice kept (its table is model_choice.json). */
export const MODEL_CHOICE_TAG = 'tagger.model_choice';

/**
 * An encoder run's encoder as params (`encoder.<field>`: source, sha256 of the ONNX model and of
 * tokenizer.json, pooling, max_tokens, dim; the `encoder` arg itself is the name) and as tags
 * (`tagger.encoder.<field>`, searchable in MLflow); empty for a TF-IDF run.
 */
export function encoderRecords(model: TrainingOutcome['model']): {
  params: Record<string, string>;
  tags: Record<string, string>;
} {
  const spec = model.encoder;
  if (!spec) return { params: {}, tags: {} };
  const params: Record<string, string> = {};
  const tags: Record<string, string> = {};
  for (const [key, value] of Object.entries(spec)) {
    if (key !== 'name') params[`encoder.${key}`] = String(value);
    tags[`tagger.encoder.${key}`] = String(value);
  }
  return { params, tags };
}

export interface LogRunInput {
  experiment: string;
  runName: string;
  args: TrainingArgs;
  seed: number;
  outcome: TrainingOutcome;
  /** What produced the run, e.g. `tagger train` (tag `mlflow.source.name`). */
  source: string;
  /** Extra params (e.g. data file names) logged next to the training arguments. */
  extraParams?: Record<string, string>;
  /** Extra final metrics (e.g. `val_f1` for hyper-parameter search). */
  extraMetrics?: Record<string, number>;
  /** Extra metric histories, logged at steps 1, 2, … (e.g. the per-fold f1 of a cross-validation). */
  extraMetricHistory?: Record<string, readonly number[]>;
  /** Extra tags (e.g. `mlflow.parentRunId` for the trials of a search). */
  extraTags?: Record<string, string>;
  /**
   * The data files, logged as the run's dataset inputs (see `dataset-input.ts`); a function when they name
   * the run itself (`tagger retrain` records its merged data as the run's artifacts, `runs:/<id>/…`).
   */
  datasets?: DatasetInput[] | ((runId: string) => DatasetInput[]);
  /** More artifacts (run-relative path, bytes), stored before the run is marked FINISHED. */
  extraArtifacts?: readonly [string, Uint8Array][];
  /**
   * The training data's label issues (`trainingLabelIssues`): logged as `label_issues.json` with the
   * metrics `label_issues` (how many) and `label_issues_seconds`, or, when it could not look, the reason
   * as tag `tagger.label_issues.skipped`.
   */
  labelIssues?: TrainingLabelIssues;
  /** Stops logging when aborted: the run is marked KILLED and the abort reason is thrown. */
  signal?: AbortSignal;
  /** Told when logging failed and the store is unreachable, while marking the run FAILED is retried. */
  onStoreWait?: (message: string) => void;
  /**
   * Turn SIGINT/SIGTERM during logging into an abort (the CLI sets it). Only while logging: a training
   * (synchronous) is still stopped at once by the default handlers, and has no run to clean up yet.
   */
  catchSignals?: boolean;
}

/** The process was asked to stop while a run was being logged; exit with the shell's 128 + signal number. */
export class InterruptedError extends Error {
  override readonly name = 'InterruptedError';
  readonly exitCode: number;
  constructor(
    readonly signal: 'SIGINT' | 'SIGTERM',
    /** What was and was not kept, the message after `interrupted by <signal>; `. */
    readonly what = 'the run being logged was marked KILLED',
  ) {
    super(`interrupted by ${signal}; ${what}`);
    this.exitCode = signal === 'SIGINT' ? 130 : 143;
  }
}

export interface LoggedRun {
  runId: string;
  experimentId: string;
  /** The MLflow 3 logged model holding the trained model (`m-<uuid hex>`). */
  modelId: string;
}

/** A tag name as one segment of an MLflow metric key: letters, digits, `_ - . space :`; others become `_`. */
export function metricKeyPart(name: string): string {
  return name.replace(/[^\w.\- :]/g, '_').slice(0, 200) || '_';
}

/** How a param value is written: strings as they are, everything else as JSON (`true`, `null`, `0.1`). */
export function formatParam(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'unknown';
  }
}

const encoder = new TextEncoder();
const json = (value: unknown): Uint8Array => encoder.encode(`${JSON.stringify(value, null, 2)}\n`);

export async function logTrainingRun(store: TrackingStore, input: LogRunInput): Promise<LoggedRun> {
  const controller = new AbortController();
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => controller.abort(new InterruptedError(signal));
  const forward = (): void => controller.abort(input.signal?.reason);
  input.signal?.addEventListener('abort', forward, { once: true });
  if (input.signal?.aborted) forward();
  if (input.catchSignals) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  try {
    return await logRun(store, input, controller.signal);
  } finally {
    input.signal?.removeEventListener('abort', forward);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

async function logRun(store: TrackingStore, input: LogRunInput, signal: AbortSignal): Promise<LoggedRun> {
  signal.throwIfAborted();
  const experimentId = await getOrCreateExperiment(store, input.experiment);
  signal.throwIfAborted();
  const user = currentUser();
  const encoderRecord = encoderRecords(input.outcome.model);
  const run = await store.createRun(experimentId, {
    runName: input.runName,
    // The run started when the training did (MLflow shows its duration from here to the end time).
    startTime: input.outcome.startedAt,
    userId: user,
    tags: {
      'mlflow.user': user,
      'mlflow.source.name': input.source,
      'mlflow.source.type': 'LOCAL',
      [MODEL_FORMAT_TAG]: MODEL_FORMAT,
      // Which process logs it: a run it leaves RUNNING is found by the next train (run-ends.ts).
      ...loggingTags(),
      ...encoderRecord.tags,
      ...input.extraTags,
      [EVALUATION_TAGS.testSetDigest]: input.outcome.testSet.digest,
      [EVALUATION_TAGS.testSetSize]: String(input.outcome.testSet.size),
      [EVALUATION_TAGS.trainedTags]: String(input.outcome.trainedTags),
      // MLflow caps tag values at 8,000 characters.
      ...(input.outcome.warnings.length > 0
        ? { [EVALUATION_TAGS.warnings]: input.outcome.warnings.join('\n').slice(0, 8_000) }
        : {}),
      ...(input.outcome.dataWarnings.length > 0
        ? {
            [EVALUATION_TAGS.dataChecks]: [...new Set(input.outcome.dataWarnings.map((w) => w.kind))].join(
              ',',
            ),
          }
        : {}),
      ...(input.labelIssues !== undefined && 'skipped' in input.labelIssues
        ? { [LABEL_ISSUES_SKIPPED_TAG]: input.labelIssues.skipped.slice(0, 8_000) }
        : {}),
      ...(input.outcome.choice === undefined ? {} : { [MODEL_CHOICE_TAG]: input.outcome.choice.chosen }),
    },
  });
  const runId = run.info.runId;
  let modelId: string | undefined;
  try {
    const { outcome } = input;
    const datasets = typeof input.datasets === 'function' ? input.datasets(runId) : input.datasets;
    if (datasets !== undefined && datasets.length > 0) {
      signal.throwIfAborted();
      await store.logInputs(runId, datasets);
    }
    const now = Date.now();
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(input.args)) params[key] = formatParam(value);
    params.seed = String(input.seed);
    if (input.outcome.cascade !== undefined) Object.assign(params, cascadeParams(input.outcome.cascade));
    Object.assign(params, encoderRecord.params, input.extraParams);

    // The logged model first (PENDING), so the final metrics can carry its id, as MLflow 3 links them.
    signal.throwIfAborted();
    const model = await store.createLoggedModel(experimentId, {
      name: LOGGED_MODEL_NAME,
      sourceRunId: runId,
      params,
      tags: {
        'mlflow.user': user,
        'mlflow.source.name': input.source,
        'mlflow.source.type': 'LOCAL',
        [MODEL_FORMAT_TAG]: MODEL_FORMAT,
        ...encoderRecord.tags,
      },
    });
    modelId = model.modelId;
    signal.throwIfAborted();
    await store.logOutputs(runId, [{ modelId, step: 0 }]);

    const overall = outcome.performance.overall;
    const finals: Record<string, number> = {
      precision: overall.precision,
      recall: overall.recall,
      f1: overall.f1,
      training_seconds: outcome.trainingSeconds,
      ...input.extraMetrics,
    };
    if (outcome.threshold !== null) finals.threshold = outcome.threshold;
    if (outcome.cascade !== undefined) Object.assign(finals, cascadeMetrics(outcome.cascade));
    const labelIssues = input.labelIssues;
    if (labelIssues !== undefined && 'report' in labelIssues) {
      finals.label_issues = labelIssues.report.found;
      finals.label_issues_seconds = labelIssues.seconds;
    }
    // The other two averages beside the weighted one (f1); for multi-label runs micro f1 is the usual headline.
    const averages = outcome.performance.averages;
    if (averages !== undefined) {
      finals.micro_f1 = averages.micro.f1;
      finals.macro_f1 = averages.macro.f1;
    }
    // A metric, not a tag, so MLflow can sort and filter runs by it and the promotion gate can read it.
    const behaviour = outcome.behaviour;
    if (behaviour.pass_rate !== null) {
      finals[EVALUATION_METRICS.behaviouralPassRate] = behaviour.pass_rate;
      for (const [kind, summary] of Object.entries(behaviour.by_kind)) {
        finals[`${EVALUATION_METRICS.behaviouralPassRate}.${kind}`] = summary.pass_rate;
      }
    }
    // Per tag, so runs can be compared tag by tag in MLflow (`tag.<name>.f1`).
    for (const [tag, metrics] of Object.entries(outcome.performance.class)) {
      const key = `tag.${metricKeyPart(tag)}`;
      finals[`${key}.precision`] = metrics.precision;
      finals[`${key}.recall`] = metrics.recall;
      finals[`${key}.f1`] = metrics.f1;
    }
    // Multi-label: each tag's probability threshold, chosen on the validation split.
    outcome.model.tagThresholds?.forEach((threshold, k) => {
      finals[`tag.${metricKeyPart(outcome.model.tags[k]!)}.threshold`] = threshold;
    });
    const metrics: MetricPoint[] = Object.entries(finals).map(([key, value]) => ({
      key,
      value,
      timestamp: now,
      step: 0,
      modelId: model.modelId,
    }));
    // The saved model's training loss (the refit's, when there was one), with the times epochs ended;
    // the validation loss is the validated fit's (the refit has no validation split).
    const saved = outcome.refitHistory.length > 0 ? outcome.refitHistory : outcome.history;
    for (const epoch of saved) {
      metrics.push({ key: 'train_loss', value: epoch.trainLoss, timestamp: epoch.time, step: epoch.epoch });
    }
    for (const epoch of outcome.history) {
      metrics.push({ key: 'val_loss', value: epoch.valLoss, timestamp: epoch.time, step: epoch.epoch });
    }
    for (const [key, values] of Object.entries(input.extraMetricHistory ?? {})) {
      values.forEach((value, index) => {
        metrics.push({ key, value, timestamp: now, step: index + 1 });
      });
    }
    signal.throwIfAborted();
    await store.logBatch(runId, { params, metrics });

    const modelFiles = Object.entries(encodeModel(outcome.model));
    const artifacts: [string, Uint8Array][] = [
      [RUN_ARTIFACTS.args, json(input.args)],
      [RUN_ARTIFACTS.performance, json(outcome.performance)],
      ...(outcome.confusionAndMistakes.confusion === null
        ? []
        : [[RUN_ARTIFACTS.confusion, json(outcome.confusionAndMistakes.confusion)] as [string, Uint8Array]]),
      [RUN_ARTIFACTS.mistakes, json(outcome.confusionAndMistakes.mistakes)],
      [RUN_ARTIFACTS.behavioural, json(outcome.behaviour)],
      ...(labelIssues !== undefined && 'report' in labelIssues
        ? [[RUN_ARTIFACTS.labelIssues, json(labelIssues.report)] as [string, Uint8Array]]
        : []),
      ...(outcome.cascade === undefined
        ? []
        : [
            [RUN_ARTIFACTS.cascadeCurve, json(cascadeCurveArtifact(outcome.cascade))] as [string, Uint8Array],
          ]),
      ...(outcome.choice === undefined
        ? []
        : [[RUN_ARTIFACTS.modelChoice, json(outcome.choice)] as [string, Uint8Array]]),
      // Compact: the vocabulary makes it the largest JSON artifact, and no person reads it.
      [RUN_ARTIFACTS.referenceProfile, encoder.encode(`${JSON.stringify(outcome.reference)}\n`)],
      [
        RUN_ARTIFACTS.slices,
        json({
          slices: outcome.slices.definitions.map((d) => ({ ...d, rows: outcome.slices.rows[d.name] ?? 0 })),
        }),
      ],
      ...modelFiles.map(([name, bytes]): [string, Uint8Array] => [
        `${RUN_ARTIFACTS.modelDir}/${name}`,
        bytes,
      ]),
      ...(input.extraArtifacts ?? []),
    ];
    for (const [path, bytes] of artifacts) {
      signal.throwIfAborted();
      await store.logArtifact(runId, path, bytes);
    }
    const mlmodel = mlmodelYaml({
      modelId: model.modelId,
      runId,
      artifactLocation: model.artifactLocation,
      format: MODEL_FORMAT,
      manifest: MODEL_FILES.find((name) => name.endsWith('.json')) ?? MODEL_FILES[0] ?? '',
      created: new Date(),
      encoder: outcome.model.encoder ? { ...outcome.model.encoder } : null,
    });
    for (const [path, bytes] of [...modelFiles, [MLMODEL_FILE, encoder.encode(mlmodel)] as const]) {
      signal.throwIfAborted();
      await store.logLoggedModelArtifact(model.modelId, path, bytes);
    }
    signal.throwIfAborted();
    await store.finalizeLoggedModel(model.modelId, 'READY');
    // Last, and only with every artifact stored: from here on the run may be served.
    signal.throwIfAborted();
    await store.updateRun(runId, { status: 'FINISHED', endTime: Date.now() });
  } catch (error) {
    const status = signal.aborted ? 'KILLED' : 'FAILED';
    // MLflow's state for a model whose files did not all arrive; the run says why it stopped.
    if (modelId !== undefined)
      await store.finalizeLoggedModel(modelId, 'UPLOAD_FAILED').catch(() => undefined);
    // The store may be what failed: tried again while it is unreachable (not after a signal).
    const ended = await markEnded(store, runId, status, {
      signal,
      onWait: (waitMs) =>
        input.onStoreWait?.(
          `logging run ${runId} failed and the tracking store is unreachable; trying to mark the run ${status} for up to ${waitMs / 1000} s`,
        ),
    });
    if (!ended && !(error instanceof InterruptedError)) {
      const message = error instanceof Error ? error.message : String(error);
      throw new TrackingError(
        error instanceof TrackingError ? error.code : 'UNAVAILABLE',
        `${message}; run ${runId} could not be marked ${status} either (the store stayed unreachable), so it shows as RUNNING until the next tagger train or optimize on experiment '${input.experiment}' marks it FAILED`,
        { cause: error },
      );
    }
    if (error instanceof InterruptedError && signal.aborted) {
      // Say which run, and what became of what it had stored.
      throw new InterruptedError(
        error.signal,
        `the run being logged was marked KILLED (run ${runId}: what it stored before the signal stays with it; serving never picks a KILLED run)`,
      );
    }
    throw error;
  }
  return { runId, experimentId, modelId };
}

/**
 * What a cascade run's params say was chosen and why (`cascade.*`; the `cascade*` args are params already):
 * τ, the rule, the reason, and the fast stage's classifier (the run's `classifier` is the encoder stage's).
 */
export function cascadeParams(cascade: CascadeOutcome): Record<string, string> {
  return {
    'cascade.threshold': String(cascade.choice.point.threshold),
    'cascade.rule': cascade.choice.rule.kind,
    // MLflow caps param values at 6,000 characters; the reason is one sentence.
    'cascade.reason': cascade.choice.reason.slice(0, 6_000),
    'cascade.fast_classifier': cascade.fastClassifier,
  };
}

/** A cascade run's figures as metrics: the CV point chosen, each stage alone by CV and on the test split. */
export function cascadeMetrics(cascade: CascadeOutcome): Record<string, number> {
  return {
    'cascade.routed_cv': cascade.choice.point.routed,
    'cascade.f1_cv': cascade.choice.point.f1,
    'cascade.fast_f1_cv': cascade.curve.fast_f1,
    'cascade.encoder_f1_cv': cascade.curve.encoder_f1,
    'cascade.routed_test': cascade.test.routed,
    'cascade.fast_f1_test': cascade.test.fast_f1,
    'cascade.encoder_f1_test': cascade.test.encoder_f1,
  };
}

/** cascade_curve.json: the curve, the rule and its choice, and the test split's figures. */
export function cascadeCurveArtifact(cascade: CascadeOutcome): Record<string, unknown> {
  return {
    rule: cascade.choice.rule,
    reason: cascade.choice.reason,
    chosen: cascade.choice.point,
    cv: { rows: cascade.curve.rows, fast_f1: cascade.curve.fast_f1, encoder_f1: cascade.curve.encoder_f1 },
    test: cascade.test,
    points: cascade.curve.points,
  };
}

/**
 * The label issues of a run already logged (and FINISHED): `label_issues.json` with the metrics
 * `label_issues` and `label_issues_seconds`, or the reason none were looked for as the tag
 * `tagger.label_issues.skipped`. Logged after the run, so a search that fails or is stopped never costs
 * the model.
 */
export async function logLabelIssues(
  store: TrackingStore,
  runId: string,
  found: TrainingLabelIssues,
): Promise<void> {
  if ('skipped' in found) {
    await store.logBatch(runId, { tags: { [LABEL_ISSUES_SKIPPED_TAG]: found.skipped.slice(0, 8_000) } });
    return;
  }
  await store.logArtifact(runId, RUN_ARTIFACTS.labelIssues, json(found.report));
  const timestamp = Date.now();
  await store.logBatch(runId, {
    metrics: [
      { key: 'label_issues', value: found.report.found, timestamp, step: 0 },
      { key: 'label_issues_seconds', value: found.seconds, timestamp, step: 0 },
    ],
  });
}
