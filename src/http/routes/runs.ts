/**
 * The run-based endpoints: `GET /runs`, `GET /runs/{run_id}`, `POST /runs/{run_id}/predict`. A run id is
 * looked up among the runs loaded at startup before anything is read for it; an unknown id is a 404.
 */
import type { ServedRuns } from '../../served-models/index.js';
import { envelope } from '../envelope.js';
import type { HttpOptions } from '../options.js';
import { errorResponses, isPromotion, predict, runRecord } from '../responses.js';
import {
  Envelope,
  predictPayload,
  RunIdParams,
  RunPerformanceData,
  RunPredictData,
  RunsData,
  TopQuery,
} from '../schemas.js';
import { modelVersionOf } from '../served.js';
import { truncatePredictTexts } from '../text-limits.js';
import type { TaggerApp } from '../types.js';

export function runRoutes(
  app: TaggerApp,
  current: () => ServedRuns,
  { limits, cascadeOverload }: Pick<HttpOptions, 'limits' | 'cascadeOverload'>,
): void {
  app.get(
    '/runs',
    {
      schema: {
        tags: ['Runs'],
        summary: 'List the runs, best first',
        description:
          'Runs of the served experiment ordered by metric f1, highest first (MLflow order: real values, then NaN, then runs without f1), as loaded at startup. `top` keeps only the first `top` runs.',
        querystring: TopQuery,
        response: { 200: Envelope(RunsData, 'RunsResponse'), ...errorResponses(422, 500) },
      },
    },
    async (request) => {
      const { top } = request.query;
      const servedRuns = current();
      // One snapshot: its runs and its served run belong together.
      const snapshot = servedRuns.current;
      const { runs: all, bestRunId } = snapshot;
      const modelVersion = modelVersionOf(snapshot);
      const heldBack = new Map(servedRuns.problems.heldBack.map((held) => [held.runId, held.reason]));
      const runs = top === undefined ? all : all.slice(0, top);
      return envelope(request, 200, {
        runs: runs.map((run) =>
          runRecord(run, {
            servedRunId: bestRunId,
            heldBack,
            modelVersion,
            mlflowUiUrl: servedRuns.mlflowUiUrl,
          }),
        ),
      });
    },
  );

  app.get(
    '/runs/:run_id',
    {
      schema: {
        tags: ['Runs'],
        summary: 'Performance of one run',
        description:
          "The run's performance report (`overall`, `class`, `slices`), read from its artifacts, with the data checks' warnings of its training (`warnings`) and, for a retrained run, its promotion.",
        params: RunIdParams,
        response: {
          200: Envelope(RunPerformanceData, 'RunResponse'),
          ...errorResponses(404, 409, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const { run_id } = request.params;
      const servedRuns = current();
      const performance = await servedRuns.performance(run_id);
      const run = servedRuns.current.run(run_id);
      return envelope(request, 200, {
        run_id,
        performance,
        warnings: [...run.warnings],
        ...(isPromotion(run.promotion) ? { promotion: run.promotion } : {}),
      });
    },
  );

  app.post(
    '/runs/:run_id/predict',
    {
      preValidation: truncatePredictTexts(limits.textLength),
      schema: {
        tags: ['Runs'],
        summary: "Predict tags with one run's model",
        description:
          'One prediction per submitted text, in order, with the model of the given run (loaded on first use and kept in a bounded cache). The response carries `Server-Timing` (parse, inference and total in ms; for an encoder run also `encoder`, the wait for the texts’ embeddings). A cascade run’s predictions each say which of its two models answered (`stage`).',
        params: RunIdParams,
        body: predictPayload(limits),
        response: {
          200: Envelope(RunPredictData, 'RunPredictResponse'),
          ...errorResponses(400, 404, 409, 413, 415, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const { run_id } = request.params;
      // The run is resolved before the body is used, so an unknown run is a 404 even for a valid body.
      const servedRuns = current();
      const served = await servedRuns.model(run_id);
      const texts = request.body.texts.map((entry) => entry.text);
      return envelope(request, 200, {
        run_id,
        predictions: await predict(
          request,
          served,
          texts,
          request.body,
          { state: { mode: 'runs', servedRuns }, runId: run_id },
          cascadeOverload,
        ),
      });
    },
  );
}
