/**
 * The inspection page with a run whose model was chosen (issue 39), in Debian's Chromium against a real
 * server on 127.0.0.1: the run's view shows how — every candidate with its validation f1, the chosen one
 * marked, the skipped ones with why, the budget and the clean-up — and, where the rows of `other` were
 * few, the balanced score it compared. Same checks as every view: nothing cut off sideways, no serious
 * axe-core violation, nothing loaded from outside 127.0.0.1.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import type { ChoiceReport } from '../../src/train/model-choice/choose.js';
import { launchOfflineChromium } from '../support/chromium.js';
import { chromiumPath, REPO_ROOT } from '../support/components.js';
import { smallChoiceReport } from '../support/model-choice.js';
import { type MonitoredApp, monitoredApp, trainRun } from '../support/monitoring.js';
import { checkPage, openOffline, SCREENSHOTS } from '../support/page-checks.js';

const executablePath = chromiumPath();

let dir: string;
let store: TrackingStore;
let served: MonitoredApp;
let base: string;
let browser: Browser;
const runs: { plain: string; balanced: string; none: string } = { plain: '', balanced: '', none: '' };
const reports: { plain?: ChoiceReport; balanced?: ChoiceReport } = {};

beforeAll(async () => {
  if (executablePath === null) return;
  dir = await mkdtemp(join(tmpdir(), 'tagger-ui-choice-'));
  const uiDir = join(dir, 'ui');
  await build({
    configFile: join(REPO_ROOT, 'ui', 'vite.config.ts'),
    build: { outDir: uiDir, emptyOutDir: true },
    logLevel: 'warn',
  });
  const uri = join(dir, 'mlruns');
  runs.plain = (await trainRun(uri)).runId;
  runs.balanced = (await trainRun(uri)).runId;
  runs.none = (await trainRun(uri)).runId;
  store = await openTrackingStore(uri);
  reports.plain = smallChoiceReport();
  reports.balanced = smallChoiceReport({ others: true });
  for (const key of ['plain', 'balanced'] as const) {
    await store.logArtifact(
      runs[key],
      'model_choice.json',
      new TextEncoder().encode(JSON.stringify(reports[key])),
    );
  }
  served = await monitoredApp(store, { deps: { uiDir } });
  base = await served.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchOfflineChromium(executablePath);
  await mkdir(SCREENSHOTS, { recursive: true });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(executablePath === null)('the inspection page and the model choice', () => {
  it('shows every candidate, the chosen one marked, the skipped ones with why', async () => {
    const report = reports.plain!;
    const { page, external, errors } = await openOffline(
      browser,
      `${base}/ui/#/run/${runs.plain}`,
      1280,
      800,
    );
    const part = page.getByTestId('model-choice');
    await part.waitFor();
    expect(await part.locator('tbody tr').count()).toBe(report.candidates.length);
    const chosen = part.locator('tbody tr.chosen');
    expect(await chosen.locator('th').textContent()).toBe(`${report.chosen}chosen`);
    const f1 = report.candidates.find((c) => c.status === 'chosen')!.validation_f1!;
    expect(await chosen.locator('td').first().textContent()).toBe(f1.toFixed(4));
    const hint = await part.locator('p.hint').textContent();
    expect(hint).toContain(`Kept: ${report.chosen}, by ${report.rule}.`);
    expect(hint).toContain(`compared on ${report.validation_rows.toLocaleString('en-US')} validation rows`);
    const skipped = report.candidates.find((c) => c.status === 'skipped')!;
    expect(await part.locator('tbody tr', { hasText: skipped.name }).textContent()).toContain(
      `skipped: ${skipped.reason}`,
    );
    expect(await part.locator('thead th').allTextContents()).not.toContain('Balanced');
    await checkPage(page, 'model-choice-desktop');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
    const phone = await openOffline(browser, `${base}/ui/#/run/${runs.plain}`, 390, 844);
    await phone.page.getByTestId('model-choice').waitFor();
    await checkPage(phone.page, 'model-choice-phone');
    await phone.page.close();
  }, 120_000);

  it('where the rows of other were few: the balanced score beside the f1, and why', async () => {
    const report = reports.balanced!;
    expect(report.objective).toBe('balanced_other');
    const { page, errors } = await openOffline(browser, `${base}/ui/#/run/${runs.balanced}`, 1280, 800);
    const part = page.getByTestId('model-choice');
    await part.waitFor();
    expect(await part.locator('thead th').allTextContents()).toContain('Balanced');
    expect(await part.locator('p.hint').textContent()).toContain(
      `Only ${report.other_rows} validation rows are other`,
    );
    const balanced = report.candidates.find((c) => c.status === 'chosen')!.validation_balanced!;
    expect(await part.locator('tbody tr.chosen td').nth(1).textContent()).toBe(balanced.toFixed(4));
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('a run whose model was not chosen has no such part', async () => {
    const { page, errors } = await openOffline(browser, `${base}/ui/#/run/${runs.none}`, 1280, 800);
    await page.getByRole('heading', { level: 2 }).first().waitFor();
    await page.waitForLoadState('networkidle');
    expect(await page.getByTestId('model-choice').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
