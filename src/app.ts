/**
 * `createApp(deps)`: the Fastify application with every route, built from its collaborators and never
 * listening (src/server.ts listens; tests use `app.inject`).
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyServerOptions } from 'fastify';
import { installApi, type TaggerApp } from './http/index.js';
import type { ServingState } from './service/index.js';

export interface AppDeps {
  /** What to serve: the run registry (run-based mode) or one loaded model (single-model mode). */
  serving: ServingState;
  /** A pino logger to write to; without one the app does not log (tests). */
  logger?: FastifyBaseLogger;
}

/** Server limits shared by the app and the documentation-only app. */
const SERVER_OPTIONS: FastifyServerOptions = {
  // Large enough for thousands of texts; larger bodies get a 413 envelope.
  bodyLimit: 1024 * 1024,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  return503OnClosing: true,
};

function baseApp(logger: FastifyBaseLogger | undefined): TaggerApp {
  const options: FastifyServerOptions = logger
    ? { ...SERVER_OPTIONS, loggerInstance: logger }
    : SERVER_OPTIONS;
  return Fastify(options).withTypeProvider<TypeBoxTypeProvider>() as unknown as TaggerApp;
}

/**
 * Builds the app; call `await app.ready()` (or `listen`) before use.
 * @example const app = createApp({ serving: { mode: 'runs', registry } }); await app.inject({ url: '/' });
 */
export function createApp(deps: AppDeps): TaggerApp {
  const app = baseApp(deps.logger);
  const { serving } = deps;
  installApi(app, serving.mode, () => serving);
  return app;
}

/**
 * The OpenAPI document of the full contract (run-based mode, every endpoint of both variants), from an
 * app that serves nothing: it is built only to read the generated document.
 */
export async function generateOpenApiDocument(): Promise<Record<string, unknown>> {
  const app = baseApp(undefined);
  installApi(app, 'runs', () => {
    throw new Error('app: the documentation-only app serves no requests');
  });
  await app.ready();
  try {
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
  }
}
