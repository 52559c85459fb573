/**
 * The inspection page's Review view (`#/review`) and the try-it box's "wrong tag?", in Debian's Chromium
 * against a real server on 127.0.0.1 with monitoring (records in memory): the page built from ui/ by Vite,
 * a run trained on the sample data with a few tags flipped (so it has label issues), and a second run
 * whose test rows leaked into its training data. A person labels by key (1–9), by "another tag…" (0) and
 * skips (s); each answer reaches the record store with the item's selection. Training rows are kept (k)
 * or fixed; a kept row is not listed again. "wrong tag?" stores a correction. The runs list and the run
 * view show the leaking run's data warning. Same checks as the other views: nothing cut off at a phone's
 * width, no serious axe-core violation, nothing loaded from outside 127.0.0.1.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../src/model/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { trainingLabelIssues } from '../../src/train/label-issues.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { trainAndEvaluate } from '../../src/train/pipeline.js';
import { launchOfflineChromium } from '../support/chromium.js';
import { chromiumPath, REPO_ROOT } from '../support/components.js';
import { sampleWithWrongTags } from '../support/label-noise.js';
import { type MonitoredApp, monitoredApp, splitSample } from '../support/monitoring.js';
import { checkPage, openOffline, SCREENSHOTS } from '../support/page-checks.js';
import { useTempDir } from '../support/temp-dir.js';

const executablePath = chromiumPath();

const scratch = useTempDir('tagger-ui-review-');
let store: TrackingStore;
let served: MonitoredApp;
let base: string;
let browser: Browser;
let heldOut: { text: string; tag: string }[];
let leaking: string;

beforeAll(async () => {
  if (executablePath === null) return;
  const uiDir = join(scratch.path, 'ui');
  await build({
    configFile: join(REPO_ROOT, 'ui', 'vite.config.ts'),
    build: { outDir: uiDir, emptyOutDir: true },
    logLevel: 'warn',
  });
  heldOut = (await splitSample(scratch.path)).heldOut;
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  const writer = await openTrackingStore(uri);
  try {
    const rows = await sampleWithWrongTags();
    const args = parseTrainingArgs({});
    const test = rows.slice(0, 60);
    const train = rows.slice(60);
    await logTrainingRun(writer, {
      experiment: 'best',
      runName: 'reviewed',
      args,
      seed: 42,
      outcome: trainAndEvaluate({ data: train, testData: test, args, seed: 42 }),
      source: 'test',
      labelIssues: trainingLabelIssues(train, args, 42),
    });
    leaking = (
      await logTrainingRun(writer, {
        experiment: 'best',
        runName: 'leaking',
        args,
        seed: 42,
        outcome: trainAndEvaluate({ data: [...train, ...test.slice(0, 20)], testData: test, args, seed: 42 }),
        source: 'test',
      })
    ).runId;
  } finally {
    await writer.close();
  }
  store = await openTrackingStore(uri, { readOnly: true });
  served = await monitoredApp(store, { deps: { uiDir } });
  base = await served.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchOfflineChromium(executablePath);
  await mkdir(SCREENSHOTS, { recursive: true });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await store?.close();
});

const open = (path: string, width = 1280, height = 900) =>
  openOffline(browser, `${base}/ui/${path}`, width, height);
const checks = checkPage;

/** Every label stored so far, by prediction id. */
async function labels() {
  const records = await served.monitoring.store.get();
  const rows = await records.labelled({ limit: 10_000 });
  return new Map(rows.map((row) => [row.predictionId, row]));
}

describe.skipIf(executablePath === null)('the Review view', () => {
  it('labels predictions by key, by another tag and skips, each with its selection', async () => {
    const answer = await fetch(`${base}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ texts: heldOut.slice(0, 30).map((row) => ({ text: row.text })) }),
    });
    expect(answer.status).toBe(200);
    await served.monitoring.recorder.settle();
    const { page, external, errors } = await open('#/review');
    await page.getByRole('heading', { name: 'Review', exact: true }).waitFor();
    const item = page.getByTestId('review-item');
    await item.waitFor();
    await checks(page, 'review');
    // Key 1: the run's first tag.
    const firstText = await item.locator('p.text').textContent();
    await page.keyboard.press('1');
    await expect
      .poll(async () => page.getByTestId('review-note').textContent())
      .toMatch(/^Labelled computer-vision/);
    let stored = [...(await labels()).values()];
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ tags: ['computer-vision'] });
    expect(firstText).toContain(stored[0]!.text!.slice(0, 30));
    expect(['margin', 'random_share']).toContain(stored[0]!.selection);
    // Key 0: another tag, one the run does not know (kept for retraining).
    await page.keyboard.press('0');
    await page.getByLabel('Another tag').fill('robotics');
    await page.getByLabel('Another tag').press('Enter');
    await expect
      .poll(async () => page.getByTestId('review-note').textContent())
      .toMatch(/^Labelled robotics \("robotics" is not a tag of run/);
    // s: skip, nothing stored.
    await page.keyboard.press('s');
    await expect.poll(async () => page.getByTestId('review-note').textContent()).toBe('Skipped.');
    stored = [...(await labels()).values()];
    expect(stored.map((row) => row.tags[0])).toEqual(expect.arrayContaining(['computer-vision', 'robotics']));
    expect(stored).toHaveLength(2);
    // The random share says so on its items (20 % of the 20 listed).
    expect(await page.getByTestId('selection').count()).toBe(1);
    await checks(await (await open('#/review', 375, 800)).page, 'review-phone');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('decides on training rows: keep (not listed again) and fix', async () => {
    const { page, errors } = await open('#/review');
    await page.getByRole('tab', { name: 'Training rows' }).click();
    const item = page.getByTestId('issue-item');
    await item.waitFor();
    const kept = await item.locator('p.text').textContent();
    await page.keyboard.press('k');
    await expect.poll(async () => page.getByTestId('issue-note').textContent()).toMatch(/^Kept /);
    await page.keyboard.press('f');
    await expect.poll(async () => page.getByTestId('issue-note').textContent()).toMatch(/^Fixed to /);
    await checks(page, 'review-issues');
    const scope = served.servedRuns.current.runs[0]!.experimentId;
    const reviews = await served.monitoring.labelReviews(scope);
    expect(reviews.map((review) => review.decision).sort()).toEqual(['fix', 'keep']);
    // Opened again, the kept row is not listed.
    const again = await open('#/review');
    await again.page.getByRole('tab', { name: 'Training rows' }).click();
    await again.page.getByTestId('issue-item').waitFor();
    expect(await again.page.getByTestId('issue-item').locator('p.text').textContent()).not.toBe(kept);
    expect(errors).toEqual([]);
  });
});

describe.skipIf(executablePath === null)('"wrong tag?" and data warnings', () => {
  it('stores a correction from the try-it box', async () => {
    const { page, errors } = await open('#/try');
    await page.getByLabel(/Texts to tag/).fill('Kubernetes operators for model serving at scale');
    await page.getByRole('button', { name: 'Tag' }).click();
    await page.getByTestId('wrong-tag').click();
    await page.getByRole('group', { name: 'The right tag:' }).getByRole('button', { name: 'mlops' }).click();
    await expect
      .poll(async () => page.getByTestId('wrong-tag-note').textContent())
      .toMatch(/^Thanks: mlops is stored for retraining/);
    await checks(page, 'try-wrong-tag');
    const stored = [...(await labels()).values()].find((row) => row.text?.startsWith('Kubernetes operators'));
    expect(stored).toMatchObject({ tags: ['mlops'], selection: 'correction' });
    expect(errors).toEqual([]);
  });

  it('shows a run’s data warnings on the runs list and the run view', async () => {
    const { page, errors } = await open('#/');
    const badge = page.getByTestId('data-warnings');
    await badge.first().waitFor();
    expect(await badge.count()).toBe(1);
    expect(await badge.textContent()).toMatch(/1 data warning: 20 of the 60 test rows/);
    await page.goto(`${base}/ui/#/run/${leaking}`);
    const warnings = page.getByTestId('run-warnings');
    await warnings.waitFor();
    expect(await warnings.textContent()).toMatch(/20 of the 60 test rows \(33\.3%\) have the same text/);
    await expect
      .poll(async () => page.locator('p.warn').first().textContent())
      .toMatch(/Not served: its test rows leaked/);
    await checks(page, 'run-warnings');
    expect(errors).toEqual([]);
  });
});
