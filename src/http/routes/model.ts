/**
 * Inspection of the best run (run-based mode) or the served model (single-model mode): `GET /performance`,
 * `GET /args`, `GET /args/{param}`.
 */
import type { ServedModel } from '../../served-models/index.js';
import { envelope } from '../envelope.js';
import { HttpError } from '../errors.js';
import { errorResponses, unusedArgsOf } from '../responses.js';
import { ArgData, ArgsData, Envelope, ParamParams, PerformanceData, PerformanceQuery } from '../schemas.js';
import type { TaggerApp } from '../types.js';

export function modelRoutes(app: TaggerApp, current: () => ServedModel): void {
  app.get(
    '/performance',
    {
      schema: {
        tags: ['Model'],
        summary: 'Performance of the best run',
        description:
          'The whole performance report without `filter`; `filter=overall` gives precision, recall, f1 and num_samples; `filter=class` the metrics of each tag; `filter=slices` the metrics of each data slice; `filter=averages` the micro, macro and weighted averages (404 for a model trained before they were reported).',
        querystring: PerformanceQuery,
        response: { 200: Envelope(PerformanceData, 'PerformanceResponse'), ...errorResponses(404, 422, 500) },
      },
    },
    async (request) => {
      const { filter } = request.query;
      const { performance: report } = current();
      const performance = filter === undefined ? report : report[filter];
      if (performance === undefined) {
        throw new HttpError(
          404,
          `This model's performance report has no ${filter}: it was trained before Tagger reported them; retrain it to get them`,
        );
      }
      return envelope(request, 200, { performance });
    },
  );

  app.get(
    '/args',
    {
      schema: {
        tags: ['Model'],
        summary: 'Training arguments of the best run',
        response: { 200: Envelope(ArgsData, 'ArgsResponse'), ...errorResponses(500) },
      },
    },
    async (request) => {
      const args = current().args;
      return envelope(request, 200, { args: { ...args } as never, unused_args: unusedArgsOf(args) });
    },
  );

  app.get(
    '/args/:param',
    {
      schema: {
        tags: ['Model'],
        summary: 'One training argument of the best run',
        description:
          'An object with one key, the requested name, whose value is that argument. Unknown names are a 404.',
        params: ParamParams,
        response: { 200: Envelope(ArgData, 'ArgResponse'), ...errorResponses(404, 500) },
      },
    },
    async (request) => {
      const { param } = request.params;
      const { args } = current();
      // Own keys only (and a null-prototype object): `constructor` or `__proto__` are not arguments.
      if (!Object.hasOwn(args, param)) {
        throw new HttpError(
          404,
          `${JSON.stringify(param.length > 100 ? `${param.slice(0, 100)}…` : param)} is not a training argument; known arguments: ${Object.keys(args).join(', ')}`,
        );
      }
      return envelope(request, 200, Object.fromEntries([[param, args[param]]]));
    },
  );
}
