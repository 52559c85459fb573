/**
 * The inspection page's Live view (`#/live`) in Debian's Chromium against a real server on 127.0.0.1 with
 * monitoring: the page built from ui/ by Vite, a run trained on part of the sample data. It must show the
 * window and the test split's figures side by side, turn to "drifted" once texts of another domain
 * arrive (it reads GET /monitoring every few seconds), show live metrics once feedback is given, and pass
 * the same checks as the other views: nothing cut off sideways at a phone's width, no serious axe-core
 * violation, nothing loaded from outside 127.0.0.1. Screenshots go beside the other views'.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { launchOfflineChromium } from '../support/chromium.js';
import { chromiumPath, REPO_ROOT } from '../support/components.js';
import {
  type MonitoredApp,
  monitoredApp,
  OTHER_DOMAIN_TEXTS,
  splitSample,
  trainRun,
} from '../support/monitoring.js';
import { checkPage, openOffline, SCREENSHOTS } from '../support/page-checks.js';
import { useTempDir } from '../support/temp-dir.js';

const executablePath = chromiumPath();

const scratch = useTempDir('tagger-ui-live-');
let store: TrackingStore;
let served: MonitoredApp;
let base: string;
let browser: Browser;
let heldOut: { text: string; tag: string }[];

beforeAll(async () => {
  if (executablePath === null) return;
  const uiDir = join(scratch.path, 'ui');
  await build({
    configFile: join(REPO_ROOT, 'ui', 'vite.config.ts'),
    build: { outDir: uiDir, emptyOutDir: true },
    logLevel: 'warn',
  });
  const sample = await splitSample(scratch.path);
  heldOut = sample.heldOut;
  const train = sample.train;
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  await trainRun(uri, { data: train });
  store = await openTrackingStore(uri, { readOnly: true });
  served = await monitoredApp(store, { config: { minPredictions: 40 }, deps: { uiDir } });
  base = await served.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchOfflineChromium(executablePath);
  await mkdir(SCREENSHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await store?.close();
});

async function post(path: string, body: unknown): Promise<{ data: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status, path).toBe(200);
  return (await response.json()) as { data: Record<string, unknown> };
}

async function predict(texts: string[]): Promise<{ prediction_id: string }[]> {
  const answer = await post('/predict', { texts: texts.map((text) => ({ text })) });
  await served.monitoring.recorder.settle();
  return answer.data.predictions as { prediction_id: string }[];
}

const open = (width: number, height: number) => openOffline(browser, `${base}/ui/#/live`, width, height);
const checks = checkPage;

describe.skipIf(executablePath === null)('the Live view', () => {
  it('shows the window beside the test split, with no drift for texts like the training data', async () => {
    await predict(heldOut.map((row) => row.text));
    const { page, external, errors } = await open(1280, 800);
    await page.getByRole('heading', { name: 'Live', exact: true }).waitFor();
    await page.getByText(`latest ${heldOut.length} predictions`).waitFor();
    const row = page.locator('tr[data-signal="unseen_ngrams"]');
    await expect.poll(async () => row.locator('td').last().textContent()).toBe('no');
    expect(await page.locator('[data-live="f1"] dd.sub').textContent()).toMatch(/^test split 0\.\d{3}$/);
    await checks(page, 'live-desktop');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('turns to drifted when texts of another domain arrive, and shows live metrics once labelled', async () => {
    const { page } = await open(1280, 800);
    await page.getByRole('heading', { name: 'Live', exact: true }).waitFor();
    await predict(Array.from({ length: 120 }, (_, i) => OTHER_DOMAIN_TEXTS[i % OTHER_DOMAIN_TEXTS.length]!));
    const row = page.locator('tr[data-signal="unseen_ngrams"]');
    // The view reads the figures again every 5 s.
    await expect.poll(async () => row.locator('td').last().textContent(), { timeout: 15_000 }).toBe('yes');
    expect(await row.getAttribute('class')).toBe('drifted');
    const ids = await predict(heldOut.map((row) => row.text));
    await post('/feedback', {
      feedback: ids.map((p, i) => ({
        prediction_id: p.prediction_id,
        tag: heldOut[i]!.tag,
        selection: 'random_share',
      })),
    });
    await expect
      .poll(async () => page.locator('[data-live="f1"] dd').first().textContent(), { timeout: 15_000 })
      .toMatch(/^0\.\d{3}$|^1$/);
    await checks(page, 'live-drifted-desktop');
    await page.close();
    const phone = await open(390, 844);
    await phone.page.getByRole('heading', { name: 'Live', exact: true }).waitFor();
    await phone.page.locator('tr[data-signal="unseen_ngrams"].drifted').waitFor();
    await checks(phone.page, 'live-drifted-phone');
    await phone.page.close();
  }, 90_000);
});
