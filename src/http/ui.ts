/**
 * The inspection page: `/ui/` serves the page built from `ui/` by `npm run build` (dist/ui: index.html
 * and hashed assets, nothing from a CDN). Like /docs it is public unless TAGGER_PROTECT_DOCS is set; the
 * data it shows comes from the API, which asks for a key when keys are configured. `GET /` answers a
 * browser (which prefers text/html) with links to the page and the docs; API clients keep the contract's
 * JSON health check.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import negotiator from '@fastify/accept-negotiator';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './http-error.js';

/** dist/ui of this package, from src/http (tests, tsx) and from dist/http (built) alike. */
export const DEFAULT_UI_DIR = fileURLToPath(new URL('../../dist/ui/', import.meta.url));

/** Everything from this server; Chart.js sets inline styles on its canvas, hence 'unsafe-inline' for styles. */
const UI_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'self'; base-uri 'self'; form-action 'self'";

const LANDING_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tagger</title></head>
<body style="font: 16px/1.5 system-ui, sans-serif; margin: 2rem">
<h1>Tagger</h1>
<p>The service is up. This address answers API clients with a JSON health check.</p>
<ul>
<li><a href="ui/">Inspect the model</a>: runs, per-tag quality, confusion, mistakes, and a try-it box</li>
<li><a href="docs">API documentation</a> (Swagger UI) · <a href="redoc">ReDoc</a> · <a href="openapi.json">openapi.json</a></li>
</ul>
</body></html>
`;

/** True when the client prefers an HTML page to JSON (a browser's Accept header); `*\/*` means JSON. */
export function wantsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (accept === undefined) return false;
  return negotiator.negotiate(accept, ['application/json', 'text/html']) === 'text/html';
}

/** The landing page a browser gets at `/`. */
export const landingPage = (): string => LANDING_HTML;

/** Registers /ui/ (the built page) — or, when the page was not built, an answer that says so. */
export function registerUiRoutes(app: FastifyInstance, dir: string = DEFAULT_UI_DIR): void {
  if (!existsSync(join(dir, 'index.html'))) {
    const notBuilt = async (): Promise<never> => {
      throw new HttpError(
        404,
        'the inspection page is not built in this installation: run `npm run build` (it builds dist/ui)',
      );
    };
    app.get('/ui', { schema: { hide: true } }, notBuilt);
    app.get('/ui/*', { schema: { hide: true } }, notBuilt);
    return;
  }
  app.register(fastifyStatic, {
    root: dir,
    prefix: '/ui/',
    // One route per built file: anything else under /ui/ is the API's own 404.
    wildcard: false,
    redirect: true,
    decorateReply: false,
    schemaHide: true,
    index: ['index.html'],
    setHeaders(reply, path) {
      reply.header('content-security-policy', UI_CSP);
      reply.header('x-content-type-options', 'nosniff');
      // Assets have content hashes in their names; the page itself must be fetched fresh after an upgrade.
      reply.header(
        'cache-control',
        path.endsWith('.html') ? 'no-cache' : 'public, max-age=31536000, immutable',
      );
    },
  });
}
