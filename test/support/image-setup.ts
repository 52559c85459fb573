/**
 * vitest global setup of the full suite (vitest.config.ts; not of `npm run test:unit`): builds the
 * Tagger image once for every deployment test that needs it, printing its progress (`[tagger image] …`),
 * when the run includes such a test and podman is installed. The build starts at once and runs in the
 * background while the other test files run; the deployment tests wait for it (test/support/image.ts)
 * through a status file whose path is provided as `taggerImageStatus`. A test's hook timeout no longer
 * covers the build: the build has its own time limit, after which podman is stopped and the machine-wide
 * lock released (image-build.ts).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildTaggerImage } from './image-build.js';

/** The test files that run the image. */
const NEEDS_IMAGE = ['test/deploy/image.test.ts', 'test/deploy/stack.test.ts'];

const log = (line: string): void => {
  process.stdout.write(`[tagger image] ${line}\n`);
};

/** The test files this run selected (vitest's CLI filters, as it applies them). */
async function selectedFiles(project: TestProject): Promise<string[]> {
  // The file filters given on the command line (`vitest run test/deploy`); not in vitest's typings.
  const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
  return (await project.globTestFiles(filters)).testFiles;
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  project.provide('taggerImageStatus', '');
  // Without podman the deployment tests skip (or, under CI, fail) with their own reason.
  if (!existsSync('/usr/bin/podman')) return undefined;
  const files = await selectedFiles(project);
  if (!files.some((file) => NEEDS_IMAGE.some((needs) => file.endsWith(needs)))) return undefined;

  const dir = mkdtempSync(join(tmpdir(), 'tagger-image-status-'));
  const status = join(dir, 'status.json');
  project.provide('taggerImageStatus', status);
  const controller = new AbortController();
  const started = performance.now();
  log('the deployment tests need the image: building it in the background while other tests run');
  const building = buildTaggerImage({ log, signal: controller.signal }).then(
    (image) => {
      log(`ready: ${image.ref} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
      writeFileSync(status, JSON.stringify({ image }));
    },
    (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      log(`failed: ${message}`);
      writeFileSync(status, JSON.stringify({ error: message }));
    },
  );
  return async () => {
    // A run that ends before the build did (interrupted, or no test waited) stops it.
    controller.abort(new Error('the test run ended'));
    await building;
    rmSync(dir, { recursive: true, force: true });
  };
}
