/**
 * API documentation, served offline: the OpenAPI document (generated from the route schemas) at
 * /openapi.json, Swagger UI at /docs (its static files ship inside @fastify/swagger-ui) and ReDoc at
 * /redoc (the redoc package's standalone bundle, served by a route: no CDN).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { shareComponentSchemas } from './openapi-components.js';

export const API_TITLE = 'Tagger';
export const API_VERSION = '0.1';
export const API_DESCRIPTION = [
  'Predicts relevant tags for texts with a trained text classifier (TF-IDF n-grams + a linear model)',
  'and exposes the classifier for inspection: its performance, its training arguments and, in run-based',
  'mode, the MLflow runs of the served experiment.',
  '',
  'Every response except validation errors (422) is an envelope: `message`, `method`, `status-code`,',
  '`timestamp`, `url`, and `data` (or `detail` for errors). A deployment started with `--model <dir>`',
  '(single-model mode) serves one saved model and has no `/runs` endpoints.',
  '',
  "Every response carries `X-Request-Id` (the client's, when it is printable ASCII of at most 128",
  'characters, else a generated one). Limits (body size, texts per request, text length, JSON depth,',
  'request time), optional API keys, per-client rate limiting (429) and load shedding (503) are',
  'configured by the deployment; `GET /metrics` serves Prometheus metrics.',
  '',
  'People who would rather look than read: [the inspection page](../ui/) shows the runs, per-tag',
  'quality, the confusion matrix, test-set mistakes and a try-it box with explanations.',
].join('\n');

export const OPENAPI_TAGS = [
  { name: 'General', description: 'Health check and prediction with the best run (or the served model)' },
  { name: 'Runs', description: 'Runs of the served experiment, best f1 first (run-based mode only)' },
  { name: 'Model', description: 'Performance and training arguments of the best run (or the served model)' },
  {
    name: 'Operations',
    description: 'Liveness and readiness probes for orchestrators, and Prometheus metrics',
  },
  {
    name: 'Monitoring',
    description: 'Feedback labels for recorded predictions, and the served run’s live quality and drift',
  },
  {
    name: 'Open Inference Protocol',
    description:
      'KServe V2 REST (what tritonclient, the KServe SDK and Seldon call), beside the contract’s API: model `tagger` is the served one; errors are `{"error": …}` (docs/calling.md)',
  },
  {
    name: 'Hugging Face',
    description:
      'The Hugging Face text-classification shape (huggingface_hub’s InferenceClient.text_classification), beside the contract’s API; errors are `{"error": …}` (docs/calling.md)',
  },
];

/** The API-key security schemes (documented when the server has keys, and in the committed document). */
const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API key as a bearer token: `Authorization: Bearer <key>`. Required on every endpoint except the health checks when the server is started with TAGGER_API_KEYS or TAGGER_API_KEYS_FILE; without a key the answer is 401 (with `WWW-Authenticate: Bearer`), with a wrong key 403.',
  },
  apiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'The same API key in the `X-API-Key` header (used when no Authorization header is sent).',
  },
} as const;

/**
 * ReDoc's page. The CSP keeps the page on this origin. ReDoc's footer always draws Redocly's logo from
 * cdn.redoc.ly (no option turns it off), which the CSP refused with an error in the console: the bundle
 * is served with that URL replaced by an empty image (REDOC_LOGO), and the CSS hides the link. The page
 * names an empty icon, so the browser asks for no /favicon.ico (a 404 in the console before).
 */
const REDOC_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'self'";

const REDOC_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${API_TITLE} API – ReDoc</title>
    <link rel="icon" href="data:," />
    <style>
      body { margin: 0; padding: 0; }
      a[href^="https://redocly.com"] { display: none !important; }
    </style>
  </head>
  <body>
    <redoc spec-url="openapi.json" hide-download-button></redoc>
    <script src="redoc/redoc.standalone.js"></script>
  </body>
</html>
`;

const require = createRequire(import.meta.url);

/** Where ReDoc's bundle draws Redocly's logo from, and the empty image served in its place. */
const REDOC_LOGO_URL = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const REDOC_LOGO = 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E';

/**
 * Registers the OpenAPI generator; must run before any documented route is added. `documentAuth` adds
 * the API-key security schemes (the routes' requirements are added in index.ts).
 */
export function registerOpenApi(app: FastifyInstance, documentAuth: boolean): void {
  app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: API_TITLE, description: API_DESCRIPTION, version: API_VERSION },
      tags: OPENAPI_TAGS,
      ...(documentAuth ? { components: { securitySchemes: SECURITY_SCHEMES } } : {}),
    },
    hideUntagged: true,
    // Schemas several routes use are written once, under components/schemas, and referenced.
    // (Registered with `openapi` options, so the document is always the OpenAPI one.)
    transformObject: (document) =>
      'openapiObject' in document ? shareComponentSchemas(document.openapiObject) : document.swaggerObject,
  });
}

/** Registers /docs, /redoc and /openapi.json. */
export function registerDocsRoutes(app: FastifyInstance): void {
  app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    validatorUrl: false,
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null },
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.get('/redoc', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('content-security-policy', REDOC_CSP).type('text/html; charset=utf-8').send(REDOC_HTML),
  );

  // Read from the file at each request rather than kept: the bundle is 1.1 MB a serving process would
  // otherwise hold for good after one visit, and browsers cache it for a day.
  app.get('/redoc/redoc.standalone.js', { schema: { hide: true } }, async (_request, reply) => {
    const bundle = await readFile(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
    return reply
      .type('application/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=86400')
      .send(bundle.replace(REDOC_LOGO_URL, REDOC_LOGO));
  });
}
