/**
 * The Open Inference Protocol's REST endpoints (KServe V2: what Triton, KServe and Seldon serve and
 * `tritonclient[http]` calls) beside the contract's API: `GET /v2`, `GET /v2/health/live`, `GET
 * /v2/health/ready`, `GET /v2/models/{name}`, `GET /v2/models/{name}/ready`, `POST
 * /v2/models/{name}/infer`, the last three also under `/v2/models/{name}/versions/{version}`. The model
 * `tagger` is the served one (the best run, a registry alias's, or the saved model directory), and in
 * run-based mode a run id names that run (loaded on first use, as /runs/{run_id}/predict does); a model's
 * one version is its run id. The request and response shapes are in ../open-inference.ts.
 *
 * Shared with every other way of asking for predictions: the API keys and scopes, limits, load shedding
 * (protection.ts classes these routes), the Predictor, prediction records (protocol `oip`), metrics and
 * Server-Timing. Errors are the protocol's `{"error": "…"}` (../protocol-errors.ts); a health or readiness
 * answer has an empty body, 200 for true and 400 for false, as the protocol says.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { selectTags } from '../../model/index.js';
import type { ServedModel, ServingState } from '../../served-models/index.js';
import { HttpError } from '../http-error.js';
import {
  EXTENSIONS,
  type InferRequestBody,
  OUTPUT_NAMES,
  type OutputTensor,
  parseInferBody,
  readInferRequest,
  TEXT_INPUT,
  writeInferResponse,
} from '../open-inference.js';
import type { HttpOptions } from '../options.js';
import { installProtocolErrors, ProtocolError, protocolErrorResponses } from '../protocol-errors.js';
import { answer, type PredictOrigin } from '../responses.js';
import { servedNow } from '../served.js';
import { fitTexts } from '../text-limits.js';
import type { TaggerApp } from '../types.js';
import { notReadyReason, type Readiness } from './operations.js';

/** The name of the served model (whichever run serves). */
export const SERVED_MODEL_NAME = 'tagger';
/** The server's name and version in `GET /v2`. */
const SERVER = { name: 'tagger', version: '0.1.0' } as const;

const Parameters = Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]));

const InferRequest = Type.Object(
  {
    id: Type.Optional(Type.String()),
    parameters: Type.Optional(Parameters),
    inputs: Type.Array(
      Type.Object({
        name: Type.String({ description: `The model's one input: \`${TEXT_INPUT}\`` }),
        shape: Type.Array(Type.Integer({ minimum: 0 }), {
          minItems: 1,
          maxItems: 2,
          description: '[n] or [n, 1]: n texts, and as many elements in `data`',
        }),
        datatype: Type.String({ description: '`BYTES`: texts' }),
        parameters: Type.Optional(Parameters),
        data: Type.Optional(
          Type.Array(Type.Unknown(), {
            description: 'The texts (strings), flat or nested by the shape; absent when sent as binary data',
          }),
        ),
      }),
      { minItems: 1 },
    ),
    outputs: Type.Optional(
      Type.Array(Type.Object({ name: Type.String(), parameters: Type.Optional(Parameters) })),
    ),
  },
  {
    title: 'InferenceRequest',
    examples: [
      {
        inputs: [
          {
            name: TEXT_INPUT,
            shape: [1],
            datatype: 'BYTES',
            data: ['Object detection with YOLO on drone images'],
          },
        ],
      },
    ],
  },
);

const MetadataTensor = Type.Object({
  name: Type.String(),
  datatype: Type.String(),
  shape: Type.Array(Type.Integer()),
});

const ModelMetadata = Type.Object(
  {
    name: Type.String(),
    versions: Type.Optional(Type.Array(Type.String())),
    platform: Type.String(),
    inputs: Type.Array(MetadataTensor),
    outputs: Type.Array(MetadataTensor),
    tags: Type.Array(Type.String(), { description: 'The model’s tags, in the order of `probabilities`' }),
    parameters: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  },
  { title: 'ModelMetadataResponse' },
);

const ServerMetadata = Type.Object(
  { name: Type.String(), version: Type.String(), extensions: Type.Array(Type.String()) },
  { title: 'ServerMetadataResponse' },
);

const InferResponse = Type.Object(
  {
    model_name: Type.String(),
    model_version: Type.Optional(Type.String()),
    id: Type.Optional(Type.String()),
    parameters: Type.Optional(Parameters),
    outputs: Type.Array(
      Type.Object({
        name: Type.String(),
        datatype: Type.String(),
        shape: Type.Array(Type.Integer()),
        parameters: Type.Optional(Parameters),
        data: Type.Optional(Type.Unknown()),
      }),
    ),
  },
  { title: 'InferenceResponse' },
);

const ModelParams = Type.Object({ name: Type.String({ description: '`tagger`, or a run id' }) });
const VersionParams = Type.Object({ name: Type.String(), version: Type.String() });

/** A model of this server by its protocol name, with what the records and the answer say of it. */
interface NamedModel {
  served: ServedModel;
  /** Its version: the run id (run-based mode); undefined for a saved model directory. */
  version: string | undefined;
  origin: PredictOrigin;
}

/**
 * The model a name names: `tagger` the served one, a run id (run-based mode) that run's model; else a 404.
 * With a version, it must be the model's (its run id).
 */
async function modelNamed(state: ServingState, name: string, version?: string): Promise<NamedModel> {
  let named: NamedModel;
  if (name === SERVED_MODEL_NAME) {
    const { runId, served } = servedNow(state);
    named = { served, version: runId ?? undefined, origin: { state, runId } };
  } else if (state.mode === 'runs' && state.servedRuns.current.runs.some((run) => run.runId === name)) {
    named = {
      served: await state.servedRuns.model(name),
      version: name,
      origin: { state, runId: name },
    };
  } else {
    throw new HttpError(
      404,
      `no model '${name}': '${SERVED_MODEL_NAME}' is the served model${state.mode === 'runs' ? ', and a run id (GET /runs) names a run' : ''}`,
    );
  }
  if (version !== undefined && version !== named.version) {
    throw new HttpError(
      404,
      `model '${name}' has no version '${version}'; its version is ${named.version === undefined ? 'not named (a saved model directory): leave it out' : `'${named.version}'`}`,
    );
  }
  return named;
}

function metadataOf(name: string, { served, version }: NamedModel, limits: HttpOptions['limits']) {
  const { model, predictor } = served;
  const tags = model.tags;
  const outputs = OUTPUT_NAMES.filter((output) => output !== 'stage' || predictor.routing !== null).map(
    (output) => ({
      name: output,
      datatype: output === 'probability' || output === 'probabilities' ? 'FP32' : 'BYTES',
      shape: output === 'probabilities' ? [-1, tags.length] : output === 'predicted_tags' ? [-1, -1] : [-1],
    }),
  );
  return {
    name,
    ...(version === undefined ? {} : { versions: [version] }),
    platform: 'tagger',
    inputs: [{ name: TEXT_INPUT, datatype: 'BYTES', shape: [-1] }],
    outputs,
    tags: [...tags],
    parameters: {
      multi_label: model.args.multi_label,
      max_texts: limits.texts,
      max_text_characters: limits.textLength,
      // A longer text is refused (400) unless the request's parameters say `truncate: true`.
      truncate: 'parameters.truncate=true cuts texts over max_text_characters instead of refusing them',
      ...(predictor.encoder === null
        ? {}
        : {
            encoder: predictor.encoder.name,
            // The encoder reads at most this many tokens of a text (the rest is not seen by it).
            encoder_max_tokens: predictor.encoder.max_tokens,
          }),
    },
  };
}

/** The documented answers of a health probe: empty bodies, their status the answer. */
const HEALTH_RESPONSES = {
  200: { description: 'True (an empty body)', type: 'null' },
  400: { description: 'False: not ready (an empty body)', type: 'null' },
} as const;

/** Sends an empty health answer: 200 for true, 400 for false (the protocol's rule). */
const health = (reply: FastifyReply, ok: boolean): FastifyReply => reply.code(ok ? 200 : 400).send();

export function openInferenceRoutes(
  app: TaggerApp,
  current: () => ServingState,
  options: Pick<HttpOptions, 'limits' | 'cascadeOverload'>,
  readiness: Readiness,
): void {
  const { limits } = options;
  app.register(async (v2: TaggerApp) => {
    installProtocolErrors(v2, ['/v2']);
    // One body parser for JSON and for JSON followed by binary tensor data (tritonclient sends no
    // Content-Type): the header of the binary extension says which.
    v2.removeAllContentTypeParsers();
    v2.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
      try {
        const length = request.headers['inference-header-content-length'];
        done(
          null,
          parseInferBody(body as Buffer, typeof length === 'string' ? length : undefined, limits.jsonDepth),
        );
      } catch (error) {
        done(error as Error, undefined);
      }
    });
    const tags = ['Open Inference Protocol'];

    v2.get(
      '/v2',
      {
        schema: {
          tags,
          summary: 'Server metadata',
          response: { 200: ServerMetadata, ...protocolErrorResponses(500) },
        },
      },
      async () => ({ ...SERVER, extensions: [...EXTENSIONS] }),
    );
    v2.get(
      '/v2/health/live',
      {
        schema: {
          tags,
          summary: 'Server live',
          description: 'An empty 200 while the process answers; never authenticated, rate limited or shed.',
          response: { 200: HEALTH_RESPONSES[200] },
        },
      },
      async (_request, reply) => health(reply, true),
    );
    v2.get(
      '/v2/health/ready',
      {
        schema: {
          tags,
          summary: 'Server ready',
          description:
            'An empty 200 when a model is loaded and the server takes traffic, an empty 400 otherwise (the protocol’s rule: 4xx is false); never authenticated, rate limited or shed.',
          response: HEALTH_RESPONSES,
        },
      },
      async (_request, reply) => health(reply, notReadyReason(current, readiness) === null),
    );

    const metadata = async (request: FastifyRequest<{ Params: { name: string; version?: string } }>) => {
      const { name, version } = request.params;
      return metadataOf(name, await modelNamed(current(), name, version), limits);
    };
    const metadataSchema = (params: typeof ModelParams | typeof VersionParams) => ({
      tags,
      summary: 'Model metadata',
      description:
        'The model’s input (`text`, BYTES [n]), its outputs, its tags (the order of `probabilities`) and its limits (`parameters`). `tagger` is the served model; in run-based mode a run id names that run.',
      params,
      response: { 200: ModelMetadata, ...protocolErrorResponses(404, 409, 503) },
    });
    v2.get('/v2/models/:name', { schema: metadataSchema(ModelParams) }, metadata);
    // The versioned paths are the same endpoints (documented in docs/calling.md, left out of openapi.json).
    v2.get(
      '/v2/models/:name/versions/:version',
      { schema: { ...metadataSchema(VersionParams), hide: true } },
      metadata,
    );

    const ready = async (
      request: FastifyRequest<{ Params: { name: string; version?: string } }>,
      reply: FastifyReply,
    ) => {
      const { name, version } = request.params;
      await modelNamed(current(), name, version);
      return health(reply, notReadyReason(current, readiness) === null);
    };
    const readySchema = (params: typeof ModelParams | typeof VersionParams) => ({
      tags,
      summary: 'Model ready',
      description:
        'An empty 200 when the model can answer now, an empty 400 when the server is not ready; 404 for a model it does not have.',
      params,
      response: { ...HEALTH_RESPONSES, ...protocolErrorResponses(404, 409, 503) },
    });
    v2.get('/v2/models/:name/ready', { schema: readySchema(ModelParams) }, ready);
    v2.get(
      '/v2/models/:name/versions/:version/ready',
      { schema: { ...readySchema(VersionParams), hide: true } },
      ready,
    );

    const infer = async (
      request: FastifyRequest<{ Params: { name: string; version?: string }; Body: InferRequestBody }>,
      reply: FastifyReply,
    ) => {
      const { name, version } = request.params;
      const named = await modelNamed(current(), name, version);
      const { served } = named;
      const call = readInferRequest(request.body, limits, served.predictor.routing !== null);
      const { texts, truncated } = fitTexts(
        call.texts,
        limits.textLength,
        call.truncate,
        (i, limit) =>
          new HttpError(
            400,
            `input '${TEXT_INPUT}' element ${i} is longer than ${limit} characters (TAGGER_MAX_TEXT_LENGTH); send it shorter, or set parameters.truncate to true to cut it there`,
          ),
      );
      const wanted = new Set(call.outputs.map((output) => output.name));
      // `probability` is the predicted tag's: always listed for a single-label model; a multi-label
      // model's `other` (no tag over its threshold) is listed only among every tag's.
      const everyTag =
        wanted.has('probabilities') || (wanted.has('probability') && served.model.args.multi_label);
      const { answers, ids } = await answer(request, served, texts, {
        listed: everyTag ? 'all' : 1,
        topK: wanted.has('predicted_tags') ? call.topK : undefined,
        threshold: wanted.has('predicted_tags') ? call.threshold : undefined,
        origin: named.origin,
        overload: options.cascadeOverload,
        protocol: 'oip',
      });
      const { predictions } = answers;
      const n = predictions.length;
      const modelTags = served.model.tags;
      const multiLabel = served.model.args.multi_label;
      const tensors = call.outputs.map(({ name: output, binary }): OutputTensor => {
        switch (output) {
          case 'predicted_tag':
            return {
              name: output,
              datatype: 'BYTES',
              shape: [n],
              data: predictions.map((p) => p.predicted_tag),
              binary,
            };
          case 'probability':
            return {
              name: output,
              datatype: 'FP32',
              shape: [n],
              data: predictions.map((p) => p.probabilities[p.predicted_tag] ?? 0),
              binary,
            };
          case 'prediction_id':
            return { name: output, datatype: 'BYTES', shape: [n], data: ids, binary };
          case 'stage':
            return {
              name: output,
              datatype: 'BYTES',
              shape: [n],
              data: predictions.map((p) => p.stage ?? ''),
              binary,
            };
          case 'probabilities':
            return {
              name: output,
              datatype: 'FP32',
              shape: [n, modelTags.length],
              data: predictions.flatMap((p) => modelTags.map((tag) => p.probabilities[tag] ?? 0)),
              binary,
            };
          default: {
            const rows = predictions.map((p) =>
              selectTags(p, { topK: call.topK, threshold: call.threshold }, multiLabel),
            );
            const width = call.topK ?? Math.max(0, ...rows.map((row) => row.length));
            return {
              name: output,
              datatype: 'BYTES',
              shape: [n, width],
              data: rows.flatMap((row) => Array.from({ length: width }, (_, k) => row[k] ?? '')),
              binary,
            };
          }
        }
      });
      const written = writeInferResponse(
        {
          model_name: name,
          ...(named.version === undefined ? {} : { model_version: named.version }),
          ...(call.id === undefined ? {} : { id: call.id }),
          ...(truncated.length > 0 ? { parameters: { truncated_texts: truncated.length } } : {}),
        },
        tensors,
      );
      if ('json' in written) return written.json as never;
      return reply
        .type('application/octet-stream')
        .header('inference-header-content-length', String(written.headerLength))
        .send(written.body);
    };
    const inferSchema = (params: typeof ModelParams | typeof VersionParams) => ({
      tags,
      summary: 'Tag texts (inference)',
      description:
        'A BYTES input `text` of shape [n] or [n, 1] (JSON `data`, or binary tensor data after the JSON header with `Inference-Header-Content-Length`); outputs `predicted_tag`, `probability`, `prediction_id` by default, and on request `probabilities` (FP32 [n, tags], the tags of the model metadata in order), `predicted_tags` (BYTES [n, k], padded with empty strings; `parameters.top_k` / `threshold` as POST /predict takes them) and a cascade run’s `stage`. `parameters.truncate: true` cuts texts over the limit instead of refusing them (the answer’s `parameters.truncated_texts` counts them); `binary_data_output` / an output’s `binary_data` asks for binary outputs. The response carries `Server-Timing`.',
      params,
      body: InferRequest,
      response: { 200: InferResponse, ...protocolErrorResponses(400, 404, 409, 413, 500, 503) },
    });
    v2.post('/v2/models/:name/infer', { schema: inferSchema(ModelParams) }, infer);
    v2.post(
      '/v2/models/:name/versions/:version/infer',
      { schema: { ...inferSchema(VersionParams), hide: true } },
      infer,
    );
  });
}

export { ProtocolError };
