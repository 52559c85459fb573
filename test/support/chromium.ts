/**
 * Debian's Chromium (`apt-get install chromium`, found by `chromiumPath()` in components.ts), launched
 * through playwright-core so that it stays offline: the browser tests check that a page makes no request
 * beyond 127.0.0.1, so the browser itself must not phone home either (updates, sync, field trials,
 * safe-browsing lists). bench/ui.ts launches it the same way.
 */
import { type Browser, chromium } from 'playwright-core';

/** The flags that keep Chromium from reaching the network on its own, and running as root in a container. */
export const OFFLINE_CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  // Root in a container has no user namespaces for Chromium's sandbox.
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Starts Chromium at `executablePath` with the offline flags and a new, empty profile: Playwright's
 * `launch()` gives every browser its own temporary `--user-data-dir` (and removes it on `close()`); it
 * refuses one passed in the flags. Close the browser in an afterAll.
 */
export function launchOfflineChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, args: [...OFFLINE_CHROMIUM_ARGS] });
}
