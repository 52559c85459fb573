/**
 * /docs (Swagger UI) and /redoc (ReDoc) render the API in headless Chromium with every request staying on
 * 127.0.0.1: any other request is aborted and fails the test.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaggerApp } from '../../src/http/index.js';
import { launchOfflineChromium } from '../support/chromium.js';
import { chromiumPath } from '../support/components.js';
import { runsApp } from '../support/http.js';
import { useServingFixture } from '../support/serving-fixture.js';

const executablePath = chromiumPath();

describe.skipIf(executablePath === null)('documentation pages in a browser', () => {
  const fx = useServingFixture();
  let app: TaggerApp;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    ({ app } = await runsApp(fx.store));
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchOfflineChromium(executablePath!);
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /**
   * Opens a page that records (and blocks) every request that does not go to the test server, and what
   * the console said: errors (a CSP refusal) and failed requests (a 404).
   */
  async function openOffline(
    path: string,
  ): Promise<{ page: Page; external: string[]; local: string[]; console: string[] }> {
    const page = await browser.newPage();
    const external: string[] = [];
    const local: string[] = [];
    const console: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') console.push(message.text());
    });
    page.on('response', (response) => {
      if (response.status() >= 400) console.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    await page.route('**/*', async (route) => {
      const url = new URL(route.request().url());
      if (url.protocol === 'data:' || url.protocol === 'blob:' || url.hostname === '127.0.0.1') {
        local.push(url.pathname);
        await route.continue();
      } else {
        external.push(url.href);
        await route.abort();
      }
    });
    await page.goto(`${base}${path}`);
    return { page, external, local, console };
  }

  it('/docs renders Swagger UI with every endpoint, offline', async () => {
    const { page, external, local } = await openOffline('/docs');
    await page.getByText('/runs/{run_id}/predict').first().waitFor();
    const text = (await page.locator('body').textContent()) ?? '';
    for (const path of ['/predict', '/runs', '/runs/{run_id}', '/performance', '/args', '/args/{param}']) {
      expect(text).toContain(path);
    }
    for (const tag of ['General', 'Runs', 'Model']) expect(text).toContain(tag);
    expect(local).toContain('/docs/json');
    expect(external).toEqual([]);
    await page.close();
  });

  it('/redoc renders ReDoc with every endpoint, offline, from the bundled script, the console quiet', async () => {
    const { page, external, local, console } = await openOffline('/redoc');
    await page.getByText('/runs/{run_id}/predict').first().waitFor({ state: 'attached' });
    const text = (await page.locator('body').textContent()) ?? '';
    for (const summary of [
      'Predict tags with the best run',
      'List the runs, best first',
      'Performance of the best run',
    ]) {
      expect(text).toContain(summary);
    }
    expect(local).toEqual(expect.arrayContaining(['/redoc', '/redoc/redoc.standalone.js', '/openapi.json']));
    expect(external).toEqual([]);
    // Before (issue 42): the CSP's refusal of Redocly's logo on cdn.redoc.ly, and a 404 for /favicon.ico.
    await page.waitForLoadState('networkidle');
    expect(console).toEqual([]);
    await page.close();
  });
});
