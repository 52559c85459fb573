/**
 * The inspection page's files (issue 27): a file that is gone — the page was rebuilt with new asset
 * names under a running server, or never existed — is a 404 that says so, not "405 method GET is not
 * allowed … allowed: GET, HEAD" (item 8); and `/metrics` counts the page's files under one route label,
 * not one per built file (item 15).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createHttpMetrics } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { loadModelDirectory } from '../../src/served-models/index.js';
import { useServingFixture } from '../support/serving-fixture.js';
import { useTempDir } from '../support/temp-dir.js';

const fx = useServingFixture();
const ui = useTempDir('tagger-ui-files-');
let app: TaggerApp;
const metrics = createHttpMetrics({ defaultMetrics: false });

beforeAll(async () => {
  await mkdir(join(ui.path, 'assets'));
  await writeFile(
    join(ui.path, 'index.html'),
    '<!doctype html><title>t</title><script src="assets/app-1.js"></script>',
  );
  await writeFile(join(ui.path, 'assets', 'app-1.js'), 'console.log(1)');
  await writeFile(join(ui.path, 'assets', 'app-1.css'), 'body{}');
  const model = await loadModelDirectory(fx.modelDir);
  app = createApp({ serving: { mode: 'model', model, source: fx.modelDir }, uiDir: ui.path, metrics });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

describe('/ui/ files', () => {
  it('a file removed under the running server is a 404 that says to load the page again', async () => {
    expect((await app.inject({ url: '/ui/assets/app-1.js' })).statusCode).toBe(200);
    await rm(join(ui.path, 'assets', 'app-1.js'));
    const gone = await app.inject({ url: '/ui/assets/app-1.js' });
    expect(gone.statusCode).toBe(404);
    expect(gone.headers.allow).toBeUndefined();
    expect(gone.json().detail).toMatch(
      /the inspection page has no file \/ui\/assets\/app-1\.js; load \/ui\/ again/,
    );
    expect((await app.inject({ method: 'HEAD', url: '/ui/assets/app-1.js' })).statusCode).toBe(404);
  });

  it('a file that never existed is a 404 too, and another method on a file is still a 405', async () => {
    expect((await app.inject({ url: '/ui/assets/app-2.js' })).statusCode).toBe(404);
    const post = await app.inject({ method: 'POST', url: '/ui/assets/app-1.css' });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('/metrics counts every file of the page under one route label, /ui/*', async () => {
    for (const url of ['/ui/', '/ui/index.html', '/ui/assets/app-1.css', '/ui', '/ui/assets/app-9.js']) {
      await app.inject({ url });
    }
    const text = await metrics.exposition();
    const routes = new Set(
      [...text.matchAll(/^tagger_http_requests_total\{[^}]*route="([^"]*)"/gm)].map((match) => match[1]),
    );
    expect([...routes].filter((route) => route!.startsWith('/ui'))).toEqual(['/ui/*']);
  });
});
