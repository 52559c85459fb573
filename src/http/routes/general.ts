/** `GET /` (health check) and `POST /predict` (the best run, or the single served model). */
import type { FastifyReply } from 'fastify';
import type { ServingState } from '../../served-models/index.js';
import { envelope } from '../envelope.js';
import type { HttpOptions } from '../options.js';
import { errorResponses, predict } from '../responses.js';
import { Empty, Envelope, PredictData, predictPayload } from '../schemas.js';
import { servedNow } from '../served.js';
import { truncatePredictTexts } from '../text-limits.js';
import type { TaggerApp } from '../types.js';
import { landingPage, wantsHtml } from '../ui.js';

export function generalRoutes(
  app: TaggerApp,
  current: () => ServingState,
  { limits, cascadeOverload }: Pick<HttpOptions, 'limits' | 'cascadeOverload'>,
): void {
  app.get(
    '/',
    {
      schema: {
        tags: ['General'],
        summary: 'Health check',
        description:
          'Answers once startup has completed (the port opens only then); `data` is an empty object. A browser (an `Accept` header preferring `text/html` to JSON) gets a page linking the inspection page `/ui/` and these docs instead.',
        response: { 200: Envelope(Empty, 'HealthResponse'), ...errorResponses(500) },
      },
    },
    async (request, reply) => {
      // The response schema types JSON only; the landing page is the one HTML answer of this route.
      if (wantsHtml(request))
        return (reply as FastifyReply).type('text/html; charset=utf-8').send(landingPage());
      return envelope(request, 200, {});
    },
  );

  app.post(
    '/predict',
    {
      preValidation: truncatePredictTexts(limits.textLength),
      schema: {
        tags: ['General'],
        summary: 'Predict tags with the best run',
        description:
          'One prediction per submitted text, in order. Run-based mode answers with the best run and includes its `run_id`; single-model mode answers with the served model and has no `run_id`. The response carries `Server-Timing` (parse, inference and total in ms; for an encoder run also `encoder`, the wait for the texts’ embeddings). A cascade run’s predictions each say which of its two models answered (`stage`).',
        body: predictPayload(limits),
        response: {
          200: Envelope(PredictData, 'PredictResponse'),
          ...errorResponses(400, 413, 415, 422, 500),
        },
      },
    },
    async (request) => {
      const texts = request.body.texts.map((entry) => entry.text);
      // One read of the served run, so run_id and the predictions agree even if a reload swaps it.
      const state = current();
      const { runId, served, modelVersion } = servedNow(state);
      const predictions = await predict(
        request,
        served,
        texts,
        request.body,
        { state, runId },
        cascadeOverload,
      );
      if (runId === null) return envelope(request, 200, { predictions });
      return envelope(
        request,
        200,
        modelVersion === null
          ? { run_id: runId, predictions }
          : { run_id: runId, model_version: modelVersion, predictions },
      );
    },
  );
}
