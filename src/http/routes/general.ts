/** `GET /` (health check) and `POST /predict` (the best run, or the single served model). */
import type { ServingState } from '../../service/index.js';
import { envelope } from '../envelope.js';
import { errorResponses, predict } from '../responses.js';
import { Empty, Envelope, PredictData, PredictPayload } from '../schemas.js';
import type { TaggerApp } from '../types.js';

export function generalRoutes(app: TaggerApp, current: () => ServingState): void {
  app.get(
    '/',
    {
      schema: {
        tags: ['General'],
        summary: 'Health check',
        description:
          'Answers once startup has completed (the port opens only then); `data` is an empty object.',
        response: { 200: Envelope(Empty, 'HealthResponse'), ...errorResponses(500) },
      },
    },
    async (request) => envelope(request, 200, {}),
  );

  app.post(
    '/predict',
    {
      schema: {
        tags: ['General'],
        summary: 'Predict tags with the best run',
        description:
          'One prediction per submitted text, in order. Run-based mode answers with the best run and includes its `run_id`; single-model mode answers with the served model and has no `run_id`.',
        body: PredictPayload,
        response: { 200: Envelope(PredictData, 'PredictResponse'), ...errorResponses(415, 422, 500) },
      },
    },
    async (request) => {
      const texts = request.body.texts.map((entry) => entry.text);
      const serving = current();
      if (serving.mode === 'runs') {
        const { registry } = serving;
        return envelope(request, 200, {
          run_id: registry.bestRunId,
          predictions: predict(registry.best, texts),
        });
      }
      return envelope(request, 200, { predictions: predict(serving.model, texts) });
    },
  );
}
