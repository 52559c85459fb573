/**
 * The inspection page with a cascade run (issue 33), in Debian's Chromium against a real server on
 * 127.0.0.1: the run's page says τ and why, how the test split was routed and scored stage by stage, and
 * draws the threshold curve; a run that is not a cascade has no such part. Same checks as every view:
 * nothing cut off sideways, no serious axe-core violation, nothing loaded from outside 127.0.0.1.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunCascadeData } from '../../src/http/api-types.js';
import type { CascadeTagModel } from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { logSampleCascade, sampleCascade, syntheticEncoders } from '../support/cascade-run.js';
import { launchOfflineChromium } from '../support/chromium.js';
import { chromiumPath, REPO_ROOT } from '../support/components.js';
import { type MonitoredApp, monitoredApp, trainRun } from '../support/monitoring.js';
import { checkPage, openOffline, SCREENSHOTS } from '../support/page-checks.js';

const executablePath = chromiumPath();

let dir: string;
let store: TrackingStore;
let served: MonitoredApp;
let base: string;
/** A server of the cascade alone (experiment `cascade`), its encoder the synthetic one. */
let cascadeServed: MonitoredApp;
let cascadeBase: string;
let cascadeRunId: string;
let plainRunId: string;
let browser: Browser;

beforeAll(async () => {
  if (executablePath === null) return;
  dir = await mkdtemp(join(tmpdir(), 'tagger-ui-cascade-'));
  const uiDir = join(dir, 'ui');
  await build({
    configFile: join(REPO_ROOT, 'ui', 'vite.config.ts'),
    build: { outDir: uiDir, emptyOutDir: true },
    logLevel: 'warn',
  });
  // A TF-IDF run is served; the cascade (its synthetic encoder is on no machine) is held back, and shown.
  plainRunId = (await trainRun(join(dir, 'mlruns'))).runId;
  cascadeRunId = await logSampleCascade(join(dir, 'mlruns'));
  await logSampleCascade(join(dir, 'mlruns'), 'cascade');
  store = await openTrackingStore(join(dir, 'mlruns'));
  served = await monitoredApp(store, { deps: { uiDir } });
  base = await served.app.listen({ host: '127.0.0.1', port: 0 });
  cascadeServed = await monitoredApp(store, {
    experiment: 'cascade',
    deps: { uiDir },
    config: { minPredictions: 20 },
    encoders: syntheticEncoders(),
  });
  cascadeBase = await cascadeServed.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchOfflineChromium(executablePath);
  await mkdir(SCREENSHOTS, { recursive: true });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await cascadeServed?.close();
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(executablePath === null)('the inspection page with a cascade run', () => {
  it('says τ and why, how the test split was routed, and draws the curve', async () => {
    const curve = (await (await fetch(`${base}/runs/${cascadeRunId}/cascade`)).json()) as {
      data: RunCascadeData;
    };
    const { page, external, errors } = await openOffline(
      browser,
      `${base}/ui/#/run/${cascadeRunId}`,
      1280,
      800,
    );
    const part = page.getByTestId('cascade');
    await part.getByTestId('cascade-choice').waitFor();
    expect(await part.getByTestId('cascade-choice').textContent()).toBe(
      `τ ${curve.data.chosen.threshold}: ${curve.data.reason}.`,
    );
    const test = await part.getByTestId('cascade-test').textContent();
    expect(test).toContain(
      `${(100 * curve.data.test.routed).toFixed(1)} % of the texts went to the encoder model`,
    );
    expect(test).toContain(`of the fast model alone ${curve.data.test.fast_f1.toFixed(4)}`);
    const chart = part.locator('canvas[role="img"]');
    expect(await chart.getAttribute('aria-label')).toContain(`chosen τ ${curve.data.chosen.threshold}`);
    // Drawn: the plot area is laid out (Chart.js wrote it) and the canvas is not blank.
    await expect.poll(() => chart.getAttribute('data-chart-area')).not.toBeNull();
    await checkPage(page, 'cascade-run-desktop');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
    const phone = await openOffline(browser, `${base}/ui/#/run/${cascadeRunId}`, 390, 844);
    await phone.page.getByTestId('cascade-choice').waitFor();
    await checkPage(phone.page, 'cascade-run-phone');
    await phone.page.close();
  }, 120_000);

  it("the Live view of a served cascade: its routing against the training curve, each stage's answers", async () => {
    const texts = (await sampleCascade()).data.map((row) => row.text);
    const answer = await fetch(`${cascadeBase}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ texts: texts.map((text) => ({ text })) }),
    });
    expect(answer.status).toBe(200);
    await cascadeServed.monitoring.recorder.settle();
    const report = (
      (await (await fetch(`${cascadeBase}/monitoring`)).json()) as {
        data: {
          monitoring: { routing: { routed: number; expected: number; stages: Record<string, number> } };
        };
      }
    ).data.monitoring;
    const { page, external, errors } = await openOffline(browser, `${cascadeBase}/ui/#/live`, 1280, 800);
    const routing = page.getByTestId('cascade-routing');
    await routing.waitFor();
    const summary = await routing.getByTestId('routing-summary').textContent();
    expect(summary).toContain(`${(100 * report.routing.routed).toFixed(1)}% of the window routed`);
    expect(summary).toContain(`the training curve routed ${(100 * report.routing.expected).toFixed(1)}%`);
    expect(await routing.locator('tr[data-stage="encoder"] td').first().textContent()).toMatch(
      new RegExp(`^${report.routing.stages.encoder} \\(`),
    );
    await checkPage(page, 'cascade-live-desktop');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('the try-it box says which of a served cascade’s models answered each text', async () => {
    // Three texts the served cascade routes and three it answers itself.
    const all = (await sampleCascade()).data.map((row) => row.text);
    const model = cascadeServed.servedRuns.best.model as CascadeTagModel;
    const unsure = new Set(model.predictFast(all).routed);
    const texts = [
      ...all.filter((_, i) => unsure.has(i)).slice(0, 3),
      ...all.filter((_, i) => !unsure.has(i)).slice(0, 3),
    ];
    expect(texts).toHaveLength(6);
    const routed = [0, 1, 2];
    const { page, errors } = await openOffline(browser, `${cascadeBase}/ui/#/try`, 1280, 800);
    await page.getByLabel(/Texts to tag/).fill(texts.join('\n'));
    await page.getByRole('button', { name: 'Tag' }).click();
    await page
      .locator('.results > li')
      .nth(texts.length - 1)
      .waitFor();
    const stages = await page
      .locator('.results > li')
      .evaluateAll((items) =>
        items.map((item) => item.querySelector('[data-testid="cascade-stage"]')?.textContent ?? ''),
      );
    expect(stages).toEqual(
      texts.map((_, i) =>
        routed.includes(i)
          ? 'Answered by the cascade’s encoder model: the fast model was unsure of this text.'
          : 'Answered by the cascade’s fast model: it was sure enough of this text.',
      ),
    );
    await checkPage(page, 'cascade-try-desktop');
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('shows no cascade part for a run that is not one', async () => {
    const { page, errors } = await openOffline(browser, `${base}/ui/#/run/${plainRunId}`, 1280, 800);
    await page.locator('#label-issues-title').waitFor();
    expect(await page.getByTestId('cascade').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
