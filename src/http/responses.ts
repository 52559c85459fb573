/** Turning served objects into response data, and the error responses each route documents. */
import type { FastifyRequest } from 'fastify';
import {
  kindOfParams,
  limitProbabilities,
  listedProbabilities,
  type Prediction,
  selectTags,
  type TagSelection,
  unusedArgs,
} from '../model/index.js';
import { predictionId } from '../monitoring/ids.js';
import type { Answers, RunSummary, ServedModel, ServingState } from '../served-models/index.js';
import { EXPLAIN_TOP } from './explanation-schemas.js';
import { originFor } from './monitored.js';
import { countPredictions, observerFor, timeRecord } from './observability.js';
import { type CascadeOverload, HTTP_DEFAULTS } from './options.js';
import {
  ErrorEnvelope,
  type ModelVersionRef,
  type PredictionItem,
  type RunRecord,
  ValidationErrorBody,
} from './schemas.js';
import { truncatedTexts } from './text-limits.js';

/** What a predict request asks for beyond the texts (all optional). */
export interface PredictOptions {
  explain?: boolean | undefined;
  top_k?: number | undefined;
  threshold?: number | undefined;
  probabilities?: 'all' | number | undefined;
}

/** Which run answers (null: the served one, or single-model mode), for the prediction records. */
export interface PredictOrigin {
  state: ServingState;
  runId: string | null;
}

/**
 * The protocol a request came in by, which the records and the metrics keep: the contract's API
 * (`tagger`: POST /predict, /runs/{run_id}/predict), the Open Inference Protocol (`oip`: /v2/…/infer) or the
 * Hugging Face text-classification shape (`hf`: /hf/text-classification).
 */
export type Protocol = 'tagger' | 'oip' | 'hf';

/** How one request is answered: whose probabilities, a cascade's overload rule, where it is recorded. */
export interface AnswerRequest {
  /** Whose probabilities the answer lists (listedProbabilities); the records may need more. */
  listed: 'all' | number;
  /** Tags the answer selects from beyond those listed (`top_k`), and whether it thresholds every tag. */
  topK?: number | undefined;
  threshold?: number | undefined;
  origin?: PredictOrigin | undefined;
  overload?: CascadeOverload | undefined;
  protocol: Protocol;
}

/** A request's answers with each text's `prediction_id`, in the order of the texts. */
export interface Answered {
  answers: Answers;
  ids: string[];
}

/**
 * Every protocol's way to an answer: the served model's Predictor (src/served-models/predictor.ts) answers
 * the texts — a TF-IDF model at once, an encoder model after the texts' embeddings (QueueFullError when
 * its encoder's queue is full), a cascade after the embeddings of only the texts its fast model is unsure
 * of —, timed for Server-Timing (queue, encoder, model, record), counted in the metrics (by protocol), and,
 * when the app monitors, each prediction given an id and handed to the recorder (sampled and written off
 * the request path; see src/monitoring/recorder.ts), saying which protocol answered.
 */
export async function answer(
  request: FastifyRequest,
  served: ServedModel,
  texts: readonly string[],
  how: AnswerRequest,
): Promise<Answered> {
  const { origin } = how;
  const monitoring = request.server.taggerMonitoring;
  const recording = origin !== undefined && monitoring?.recording === true;
  const answers = await served.predictor.predict(texts, {
    probabilities: probabilitiesAsked(how, recording),
    overload: how.overload ?? HTTP_DEFAULTS.cascadeOverload,
    observer: observerFor(request),
  });
  const { predictions } = answers;
  const now = Date.now();
  const ids = predictions.map(() => predictionId(now));
  if (recording) {
    timeRecord(request, () =>
      monitoring!.capture(
        originFor(origin.state, origin.runId, served),
        ids,
        texts,
        predictions,
        how.protocol,
      ),
    );
  }
  countPredictions(request, predictions, how.protocol);
  return { answers, ids };
}

/**
 * Whose probabilities the model builds: only those the answer needs (with hundreds of tags, every tag's
 * is most of a prediction's cost), unless the records keep every tag's or `threshold` selects from all of
 * them; `top_k`'s tags are the k most probable, so max(listed, k) holds them.
 */
function probabilitiesAsked(how: AnswerRequest, recording: boolean): 'all' | number {
  const { listed } = how;
  return listed === 'all' || recording || how.threshold !== undefined
    ? 'all'
    : Math.max(listed, how.topK ?? 0);
}

/**
 * One prediction per text, in the order of the texts, each with its `prediction_id` (POST /predict and
 * /runs/{run_id}/predict).
 */
export async function predict(
  request: FastifyRequest,
  served: ServedModel,
  texts: readonly string[],
  options: PredictOptions = {},
  origin?: PredictOrigin,
  overload: CascadeOverload = HTTP_DEFAULTS.cascadeOverload,
): Promise<PredictionItem[]> {
  const tagCount = served.model.tags.length;
  const listed = listedProbabilities(options.probabilities, tagCount);
  const { answers, ids } = await answer(request, served, texts, {
    listed,
    topK: options.top_k,
    threshold: options.threshold,
    origin,
    overload,
    protocol: 'tagger',
  });
  const selection: TagSelection = { topK: options.top_k, threshold: options.threshold };
  const multiLabel = served.model.args.multi_label;
  const cut = truncatedTexts(request);
  const predictions = answers.predictions.map((prediction, i): PredictionItem => {
    const predicted_tags = selectTags(prediction, selection, multiLabel);
    // One object per item, fields set in place: this is the hot path of every predict request.
    const item: PredictionItem = {
      prediction_id: ids[i]!,
      input_text: texts[i]!,
      predicted_tag: prediction.predicted_tag,
      predicted_tags,
      predicted_probabilities: prediction.probabilities,
    };
    // A cascade's stage (the others' predictions have none).
    if (prediction.stage !== undefined) item.stage = prediction.stage;
    // The model knew nothing of the text: its answer is the prior.
    if (prediction.no_known_features === true) item.no_known_features = true;
    if (cut.size > 0 && cut.has(i)) item.truncated = true;
    if (listed === 'all') return item;
    item.predicted_probabilities = listedOf(prediction, listed, predicted_tags);
    const count = Object.keys(item.predicted_probabilities).length;
    // Said only when some tags are left out (`top_k` / `threshold` may have listed them all).
    if (count < tagCount) item.probabilities_listed = { listed: count, of: tagCount };
    return item;
  });
  if (options.explain !== true) return predictions;
  return predictions.map((item, i) => ({ ...item, explanation: answers.explain(i, EXPLAIN_TOP) }));
}

/** A prediction's `listed` most probable tags' probabilities, with those it names always among them. */
export const listedOf = (
  prediction: Prediction,
  listed: number,
  selected: readonly string[],
): Record<string, number> =>
  limitProbabilities(prediction.probabilities, listed, [...prediction.predicted_tags, ...selected]);

/** JSON has no NaN or infinities: they are written as protobuf's JSON mapping (and MLflow) writes them. */
const metricValue = (value: number): number | 'NaN' | 'Infinity' | '-Infinity' =>
  Number.isFinite(value) ? value : Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';

const isoTime = (ms: number | null): string | null =>
  ms !== null && Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : null;

/** A promotion tag as the API states it (any other value a store holds is left out). */
export const isPromotion = (value: string | null): value is 'candidate' | 'promoted' | 'rejected' =>
  value === 'candidate' || value === 'promoted' || value === 'rejected';

/** The params a run logged that its kind does not use (another family's, an absent encoder's …), sorted. */
function unusedParamsOf(params: Readonly<Record<string, string>>): string[] {
  const kind = kindOfParams(params);
  if (kind === null) return [];
  return unusedArgs(kind)
    .filter((key) => Object.hasOwn(params, key))
    .sort();
}

/** The same for a served model's parsed training arguments (GET /args). */
export function unusedArgsOf(args: Readonly<Record<string, unknown>>): string[] {
  if (typeof args.classifier !== 'string') return [];
  const kind = {
    classifier: args.classifier,
    encoder: typeof args.encoder === 'string' ? args.encoder : null,
    cascade: args.cascade === true,
  };
  return unusedArgs(kind)
    .filter((key) => Object.hasOwn(args, key))
    .sort();
}

export function runRecord(
  run: RunSummary,
  serving: {
    servedRunId: string;
    heldBack?: ReadonlyMap<string, string>;
    /** Registry mode: the version that the served run answers as. */
    modelVersion?: ModelVersionRef | null;
    /** MLflow's UI for the store's runs, when it has one. */
    mlflowUiUrl?: string | null;
  },
): RunRecord {
  const held = serving.heldBack?.get(run.runId);
  return {
    run_id: run.runId,
    run_name: run.runName,
    status: run.status,
    start_time: isoTime(run.startTime),
    end_time: isoTime(run.endTime),
    metrics: Object.fromEntries(Object.entries(run.metrics).map(([key, value]) => [key, metricValue(value)])),
    params: { ...run.params },
    unused_params: unusedParamsOf(run.params),
    served: run.runId === serving.servedRunId,
    warnings: [...run.warnings],
    ...(isPromotion(run.promotion) ? { promotion: run.promotion } : {}),
    ...(run.runId === serving.servedRunId && serving.modelVersion
      ? { model_version: serving.modelVersion }
      : {}),
    ...(held === undefined ? {} : { not_served_because: held }),
    ...(serving.mlflowUiUrl
      ? {
          mlflow_url: `${serving.mlflowUiUrl}/#/experiments/${encodeURIComponent(run.experimentId)}/runs/${encodeURIComponent(run.runId)}`,
        }
      : {}),
  };
}

const DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'The body is not valid UTF-8, or the request is malformed',
  401: 'An API key is required (this server has keys configured): send `Authorization: Bearer <key>` or `X-API-Key: <key>`; the response carries `WWW-Authenticate: Bearer`',
  403: 'The API key sent is not valid for this server',
  404: 'Not found (the detail names what)',
  409: 'The run exists but its artifacts are missing or broken',
  415: 'The body is not application/json',
  414: 'A path parameter is longer than 100 characters (no run id or argument name is that long)',
  413: 'A size limit was exceeded (body bytes, number of texts or JSON nesting depth); the detail names the limit',
  422: 'Request validation failed (FastAPI / pydantic v1 shape, no envelope)',
  429: 'Too many requests from this client (API key, else address); `Retry-After` says when to retry',
  500: 'Unexpected failure inside the service (generic detail; logged)',
  503: 'The server is overloaded, or the tracking store could not be reached; retry after `Retry-After` seconds',
  504: "The request did not finish within the server's request timeout (e.g. a slow tracking store)",
};

/** Response schemas of the listed error statuses, for a route's `schema.response`. */
export function errorResponses<const C extends readonly number[]>(...codes: C) {
  const out: Record<number, typeof ErrorEnvelope | typeof ValidationErrorBody> = {};
  for (const code of codes) {
    const schema = code === 422 ? ValidationErrorBody : ErrorEnvelope;
    out[code] = { ...schema, description: DESCRIPTIONS[code] ?? 'Error' } as unknown as typeof schema;
  }
  return out as { [K in C[number]]: K extends 422 ? typeof ValidationErrorBody : typeof ErrorEnvelope };
}
