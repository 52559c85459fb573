/**
 * The inspection page's views in Chromium, opened and checked alike by the browser tests: a page that may
 * load nothing from outside 127.0.0.1 (anything else is aborted and listed), its errors collected, and
 * after each step a screenshot, no content cut off sideways, and no serious axe-core violation.
 */
import { join } from 'node:path';
import axe from 'axe-core';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { REPO_ROOT } from './components.js';

/* The page's globals as the page.evaluate callbacks use them (test programs have no DOM lib). */
declare const document: { documentElement: { clientWidth: number; scrollWidth: number } };
declare const window: { axe: typeof axe };

/** Where screenshots go: beside the other views'. */
export const SCREENSHOTS = process.env.TAGGER_SCREENSHOT_DIR ?? join(REPO_ROOT, 'test-results', 'ui');

/** Opens `url` in a new page of `width` × `height`; `external` lists what it tried to load from elsewhere. */
export async function openOffline(
  browser: Browser,
  url: string,
  width: number,
  height: number,
): Promise<{ page: Page; external: string[]; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width, height } });
  const external: string[] = [];
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.route('**/*', async (route) => {
    const target = new URL(route.request().url());
    if (target.protocol === 'data:' || target.hostname === '127.0.0.1') await route.continue();
    else {
      external.push(target.href);
      await route.abort();
    }
  });
  await page.goto(url);
  return { page, external, errors };
}

/** A screenshot named `name`, then: nothing cut off sideways, no serious or critical axe-core violation. */
export async function checkPage(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  const width = await page.evaluate(() => [
    document.documentElement.clientWidth,
    document.documentElement.scrollWidth,
  ]);
  expect(width[1], `${name}: the page scrolls sideways`).toBeLessThanOrEqual(width[0]! + 1);
  await page.evaluate(axe.source);
  const result = (await page.evaluate(() =>
    window.axe.run(document as never, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    }),
  )) as axe.AxeResults;
  const serious = result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.help}`);
  expect(serious, name).toEqual([]);
}
