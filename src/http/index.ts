/** Public surface of src/http: installs the whole API (validation, errors, routes, docs) on an app. */
import type { ServingState } from '../service/index.js';
import { registerDocsRoutes, registerOpenApi } from './docs.js';
import { installErrorHandling } from './errors.js';
import { installJsonBodyParser } from './json-body.js';
import { generalRoutes } from './routes/general.js';
import { modelRoutes } from './routes/model.js';
import { runRoutes } from './routes/runs.js';
import type { TaggerApp } from './types.js';
import { validatorCompiler } from './validation.js';

export { API_TITLE, API_VERSION } from './docs.js';
export { HttpError } from './errors.js';
export type { TaggerApp } from './types.js';

/**
 * Installs the API on a fresh app. `mode` decides which routes exist (single-model mode has no /runs);
 * `current` is asked for the serving state on every request, so an app can also be built just to
 * generate the OpenAPI document (scripts/openapi.ts), where nothing is served.
 * @example installApi(app, 'runs', () => serving)
 */
export function installApi(app: TaggerApp, mode: ServingState['mode'], current: () => ServingState): void {
  app.setValidatorCompiler(validatorCompiler);
  installJsonBodyParser(app);
  installErrorHandling(app);
  registerOpenApi(app);
  app.register(async (api: TaggerApp) => {
    generalRoutes(api, current);
    if (mode === 'runs') {
      const registry = () => {
        const state = current();
        if (state.mode !== 'runs')
          throw new Error('http: run routes installed but the app serves a single model');
        return state.registry;
      };
      runRoutes(api, registry);
      modelRoutes(api, () => registry().best);
    } else {
      modelRoutes(api, () => {
        const state = current();
        return state.mode === 'runs' ? state.registry.best : state.model;
      });
    }
  });
  registerDocsRoutes(app);
}
