/**
 * The inspection page with a run of 500 tags (issue 31), in Debian's Chromium against a real server on
 * 127.0.0.1: per-tag metrics a page at a time (sorted, searchable), the confusion matrix over the tags
 * with the most mistakes (a control picks how many) beside the most confused pairs, and the try-it box
 * saying it lists the most probable tags' probabilities. Same checks as every view: nothing cut off
 * sideways, no serious axe-core violation, nothing loaded from outside 127.0.0.1.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LISTED_PROBABILITIES } from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { launchOfflineChromium } from '../support/chromium.js';
import { chromiumPath, REPO_ROOT } from '../support/components.js';
import { logManyTagRun, manyTagRows } from '../support/many-tags.js';
import { type MonitoredApp, monitoredApp } from '../support/monitoring.js';
import { checkPage, openOffline, SCREENSHOTS } from '../support/page-checks.js';

const executablePath = chromiumPath();
const TAGS = 500;
/** The model's tags: the generated ones and `other`. */
const MODEL_TAGS = TAGS + 1;

let dir: string;
let store: TrackingStore;
let served: MonitoredApp;
let base: string;
let runId: string;
/** A second run of the same tags on fewer rows, to compare with. */
let otherRunId: string;
let browser: Browser;

beforeAll(async () => {
  if (executablePath === null) return;
  dir = await mkdtemp(join(tmpdir(), 'tagger-ui-many-tags-'));
  const uiDir = join(dir, 'ui');
  await build({
    configFile: join(REPO_ROOT, 'ui', 'vite.config.ts'),
    build: { outDir: uiDir, emptyOutDir: true },
    logLevel: 'warn',
  });
  runId = await logManyTagRun(join(dir, 'mlruns'), TAGS);
  otherRunId = await logManyTagRun(join(dir, 'mlruns'), TAGS, TAGS * 6);
  store = await openTrackingStore(join(dir, 'mlruns'));
  // With monitoring, as tagger serve runs: the Review view needs recorded predictions.
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

describe.skipIf(executablePath === null)(`the inspection page with ${TAGS} tags`, () => {
  it('pages the per-tag metrics and limits the confusion matrix, with clear controls', async () => {
    const { page, external, errors } = await openOffline(browser, `${base}/ui/#/run/${runId}`, 1280, 800);
    const pager = page.getByTestId('tag-pager');
    await pager.waitFor();
    const perTag = page.locator('section[aria-labelledby="per-tag-title"] tbody tr');
    expect(await perTag.count()).toBe(25);
    expect(await page.getByTestId('tag-page').textContent()).toBe(
      `Tags 1–25 of ${MODEL_TAGS}, lowest f1 first`,
    );
    const firstPage = await perTag.locator('th').allTextContents();
    await pager.getByRole('button', { name: 'Next ›' }).click();
    expect(await page.getByTestId('tag-page').textContent()).toBe(
      `Tags 26–50 of ${MODEL_TAGS}, lowest f1 first`,
    );
    expect(await perTag.locator('th').first().textContent()).not.toBe(firstPage[0]);
    await pager.getByLabel('Find a tag').fill('tag-12');
    // tag-120 … tag-129.
    expect(await page.getByTestId('tag-page').textContent()).toBe(
      `Tags 1–10 of 10 found (${MODEL_TAGS} in all), lowest f1 first`,
    );
    expect((await perTag.locator('th').allTextContents()).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `tag-12${i}`),
    );

    // The matrix: 20 tags by default, 10 when asked; its table has as many columns.
    await page.getByTestId('matrix-limited').waitFor();
    const header = page.locator('table.matrix thead th');
    expect(await header.count()).toBe(21);
    await page.getByLabel('How many tags the matrix shows').selectOption('10');
    expect(await header.count()).toBe(11);
    // The most confused pairs list the mistakes a click filters to.
    const pairs = page.getByTestId('confused-pairs').locator('tbody tr');
    expect(await pairs.count()).toBeGreaterThan(0);
    const [truth, predicted] = await pairs.first().locator('td').allTextContents();
    await pairs.first().getByRole('button').click();
    const mistakes = page.locator('table.mistakes tbody tr');
    expect(await mistakes.count()).toBeGreaterThan(0);
    for (const row of await mistakes.all()) {
      const cells = await row.locator('td').allTextContents();
      expect([cells[1], cells[2]]).toEqual([truth, predicted]);
    }
    await checkPage(page, 'many-tags-run-desktop');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
    const phone = await openOffline(browser, `${base}/ui/#/run/${runId}`, 390, 844);
    await phone.page.getByTestId('matrix-limited').waitFor();
    await checkPage(phone.page, 'many-tags-run-phone');
    await phone.page.close();
  }, 120_000);

  it('compares two runs a page of tags at a time, the largest f1 difference first', async () => {
    const { page, errors } = await openOffline(
      browser,
      `${base}/ui/#/compare/${runId}/${otherRunId}`,
      1280,
      800,
    );
    const pager = page.getByTestId('pager');
    await pager.waitFor();
    expect(await pager.locator('p').textContent()).toBe(
      `Tags 1–25 of ${MODEL_TAGS}, largest f1 difference first`,
    );
    const metrics = page.locator('section[aria-labelledby="compare-metrics"] tbody tr');
    const tagRows = metrics.locator('th', { hasText: /^tag-\d{3} f1$/ });
    expect(await tagRows.count()).toBe(25);
    const differences = (await metrics.locator('td:last-child').allTextContents())
      .slice(-25)
      .map((text) => Math.abs(Number(text)));
    expect(differences).toEqual([...differences].sort((x, y) => y - x));
    await pager.getByRole('button', { name: 'Next ›' }).click();
    expect(await pager.locator('p').textContent()).toBe(
      `Tags 26–50 of ${MODEL_TAGS}, largest f1 difference first`,
    );
    await checkPage(page, 'many-tags-compare-desktop');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('tries a text: the most probable tags, saying how many of how many', async () => {
    const { page, errors } = await openOffline(browser, `${base}/ui/#/try`, 1280, 800);
    await page.getByLabel(/Texts to tag/).fill(manyTagRows(1, TAGS, 5)[0]!.text);
    await page.getByRole('button', { name: 'Tag' }).click();
    await page.getByTestId('probabilities-listed').waitFor();
    expect(await page.getByTestId('probabilities-listed').textContent()).toBe(
      `The ${DEFAULT_LISTED_PROBABILITIES} most probable of the model’s ${MODEL_TAGS} tags.`,
    );
    expect(await page.locator('.results > li meter').count()).toBe(DEFAULT_LISTED_PROBABILITIES);
    // A single-label model's answer, though its listed probabilities do not sum to 1.
    expect(await page.locator('.results > li p.tag .badge').count()).toBe(1);
    await checkPage(page, 'many-tags-try-desktop');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('reviews a prediction with buttons for its likeliest tags, any other by typing', async () => {
    const answer = await fetch(`${base}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ texts: manyTagRows(20, TAGS, 11).map((row) => ({ text: row.text })) }),
    });
    expect(answer.status).toBe(200);
    await served.monitoring.recorder.settle();
    const { page, errors } = await openOffline(browser, `${base}/ui/#/review`, 1280, 900);
    const item = page.getByTestId('review-item');
    await item.waitFor();
    const buttons = item.locator('fieldset.tag-buttons button');
    expect(await buttons.count()).toBe(9);
    // The predicted tag first (marked), then the item's likeliest; the recorded probabilities are all 501.
    expect(await buttons.first().getAttribute('class')).toBe('marked');
    expect(await item.locator('ul.probabilities meter').count()).toBe(DEFAULT_LISTED_PROBABILITIES);
    await item
      .getByText(`The ${DEFAULT_LISTED_PROBABILITIES} most probable of the model’s ${MODEL_TAGS} tags.`)
      .waitFor();
    // Any tag by typing, the model's tags suggested.
    await page.keyboard.press('0');
    expect(await page.locator('#other-tag-suggestions option').count()).toBe(MODEL_TAGS);
    await page.getByLabel('Another tag').fill('tag-321');
    await page.getByLabel('Another tag').press('Enter');
    await expect.poll(async () => page.getByTestId('review-note').textContent()).toMatch(/^Labelled tag-321/);
    await checkPage(page, 'many-tags-review-desktop');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
