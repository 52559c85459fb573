/**
 * The Hugging Face text-classification shape (what Hugging Face Inference Endpoints and Text Embeddings
 * Inference answer and `huggingface_hub`'s `InferenceClient.text_classification` calls): `POST
 * /hf/text-classification` with `{"inputs": str | [str, …], "parameters": {"top_k", "function_to_apply",
 * "truncate"}}`, answered with one list of `{label, score}` per text, most probable first — a list of
 * such lists, also for one text: `InferenceClient(model=".../hf/text-classification").text_classification(
 * text)` takes the first list of the answer (measured against huggingface_hub 2.4.0: a flat list for one
 * text would make it return one element, not the list).
 *
 * Scores are the served model's probabilities. `function_to_apply` says how they read, and Tagger does
 * not force a softmax where the model has none: left out, a single-label model's scores are its
 * distribution over the tags (they sum to 1) and a multi-label model's each tag's own probability;
 * `softmax` makes a multi-label model's scores one distribution (each over their sum; a single-label
 * model's are one already), `sigmoid` asks for each tag's own probability, which only a multi-label model
 * has (a single-label one answers 400), and `none` (raw scores) is refused: the models answer
 * probabilities, not logits. `top_k` lists the k most probable (default: every tag up to 20 tags, else
 * the 20 most probable, as POST /predict lists them).
 *
 * Shared with the other protocols: API keys and scopes, limits, load shedding, the Predictor, prediction
 * records (protocol `hf`), metrics and Server-Timing; errors are `{"error": "…"}` (400 for validation).
 */
import Type, { type Static } from 'typebox';
import { listedProbabilities } from '../../model/index.js';
import type { ServingState } from '../../served-models/index.js';
import { HttpError } from '../http-error.js';
import type { HttpOptions } from '../options.js';
import { installProtocolErrors, protocolErrorResponses } from '../protocol-errors.js';
import { answer } from '../responses.js';
import { servedNow } from '../served.js';
import { fitTexts } from '../text-limits.js';
import type { TaggerApp } from '../types.js';

export const FUNCTIONS_TO_APPLY = ['sigmoid', 'softmax', 'none'] as const;

const TextClassificationRequest = Type.Object(
  {
    inputs: Type.Union(
      [Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })],
      {
        description: 'One text, or a list of texts',
      },
    ),
    parameters: Type.Optional(
      Type.Object({
        top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        function_to_apply: Type.Optional(Type.Union(FUNCTIONS_TO_APPLY.map((name) => Type.Literal(name)))),
        truncate: Type.Optional(Type.Boolean()),
      }),
    ),
    // Text Embeddings Inference takes it beside `inputs`.
    truncate: Type.Optional(Type.Boolean()),
  },
  {
    title: 'TextClassificationRequest',
    examples: [{ inputs: 'Object detection with YOLO on drone images', parameters: { top_k: 3 } }],
  },
);
type TextClassificationRequest = Static<typeof TextClassificationRequest>;

const LabelScores = Type.Array(Type.Object({ label: Type.String(), score: Type.Number() }));
const TextClassificationResponse = Type.Array(LabelScores, {
  title: 'TextClassificationResponse',
  description: 'One list per text, in order, each most probable first',
});

export function huggingFaceRoutes(
  app: TaggerApp,
  current: () => ServingState,
  options: Pick<HttpOptions, 'limits' | 'cascadeOverload'>,
): void {
  const { limits } = options;
  app.register(async (hf: TaggerApp) => {
    installProtocolErrors(hf, ['/hf']);
    hf.post(
      '/hf/text-classification',
      {
        schema: {
          tags: ['Hugging Face'],
          summary: 'Tag texts (text-classification)',
          description:
            'The Hugging Face text-classification shape, for `huggingface_hub`’s `InferenceClient(model="http://host:8000/hf/text-classification").text_classification(text)`: `inputs` is one text or a list, the answer one list of `{label, score}` per text (also for one text), most probable first. `parameters.top_k` lists the k most probable tags; `function_to_apply`: left out, the model’s own probabilities (a multi-label model’s each tag’s own), `softmax` one distribution, `sigmoid` each tag’s own (multi-label models only), `none` is refused (no raw scores). `truncate: true` (in `parameters` or beside `inputs`) cuts texts over the limit. The response carries `Server-Timing`.',
          body: TextClassificationRequest,
          response: { 200: TextClassificationResponse, ...protocolErrorResponses(400, 413, 500, 503) },
        },
      },
      async (request) => {
        const body = request.body as TextClassificationRequest;
        const given = typeof body.inputs === 'string' ? [body.inputs] : body.inputs;
        if (given.length > limits.texts) {
          throw new HttpError(
            413,
            `too many texts: ${given.length} given, the limit is ${limits.texts} per request (TAGGER_MAX_TEXTS); split the request`,
          );
        }
        const empty = given.findIndex((text) => text.length === 0);
        if (empty >= 0)
          throw new HttpError(400, `inputs[${empty}] is empty: a text has at least 1 character`);
        const truncate = body.parameters?.truncate ?? body.truncate ?? false;
        const { texts } = fitTexts(
          given,
          limits.textLength,
          truncate,
          (i, limit) =>
            new HttpError(
              400,
              `inputs[${i}] is longer than ${limit} characters (TAGGER_MAX_TEXT_LENGTH); send it shorter, or set parameters.truncate to true to cut it there`,
            ),
        );
        const state = current();
        const { runId, served } = servedNow(state);
        const multiLabel = served.model.args.multi_label;
        const how = body.parameters?.function_to_apply;
        if (how === 'none') {
          throw new HttpError(
            400,
            "function_to_apply 'none' asks for raw scores (logits): Tagger's models answer probabilities; leave it out, or ask for 'softmax'" +
              (multiLabel ? " or 'sigmoid'" : ''),
          );
        }
        if (how === 'sigmoid' && !multiLabel) {
          throw new HttpError(
            400,
            "function_to_apply 'sigmoid' asks for each tag's own probability, which only a multi-label model has: this model is single-label, its probabilities are one distribution (softmax); leave it out or ask for 'softmax'",
          );
        }
        const tagCount = served.model.tags.length;
        const topK = body.parameters?.top_k;
        // A multi-label softmax divides by every tag's probability: it needs them all.
        const normalise = how === 'softmax' && multiLabel;
        const listed = normalise ? 'all' : listedProbabilities(topK, tagCount);
        const { answers } = await answer(request, served, texts, {
          listed,
          origin: { state, runId },
          overload: options.cascadeOverload,
          protocol: 'hf',
        });
        const shown = topK ?? listedProbabilities(undefined, tagCount);
        return answers.predictions.map((prediction) => {
          let entries = Object.entries(prediction.probabilities);
          if (normalise) {
            const sum = entries.reduce((total, [, p]) => total + p, 0);
            if (sum > 0) entries = entries.map(([tag, p]) => [tag, p / sum]);
          }
          // Most probable first; ties in the model's tag order (the record's order; sort is stable).
          entries.sort((a, b) => b[1] - a[1]);
          const k = shown === 'all' ? entries.length : Math.min(shown, entries.length);
          return entries.slice(0, k).map(([label, score]) => ({ label, score }));
        });
      },
    );
  });
}
