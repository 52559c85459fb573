/**
 * The Tagger container image for deployment tests. The full suite builds it once, before the tests, in
 * its global setup (image-setup.ts: `npm test`, `npx vitest run test/deploy`), which prints its progress
 * and hands the result over in a status file; a test file waits for that. Run without the global setup
 * (another config), a test file builds it itself (image-build.ts, under the same machine-wide lock).
 */
import { existsSync, readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { locateBinary } from './components.js';
import { type BuiltImage, buildTaggerImage, IMAGE_WAIT_MS } from './image-build.js';

export { BASE_IMAGE, type BuiltImage, IMAGE_WAIT_MS, podman, podmanEnv } from './image-build.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The file the global setup writes the built image (or the build's error) to; '' when it builds none. */
    taggerImageStatus: string;
  }
}

/** Debian's podman (`apt-get install podman buildah runc`); skip with a reason, or fail under CI. */
export function locatePodman(): string | null {
  return locateBinary('podman', '/usr/bin/podman', 'install it with `apt-get install podman buildah runc`');
}

/** What the global setup writes when its build has ended. */
export type ImageStatus = { image: BuiltImage } | { error: string };

async function waitForStatus(file: string): Promise<BuiltImage> {
  const deadline = Date.now() + IMAGE_WAIT_MS;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`no image after ${IMAGE_WAIT_MS / 60_000} minutes (${file})`);
    await new Promise((done) => setTimeout(done, 1_000));
  }
  const status = JSON.parse(readFileSync(file, 'utf8')) as ImageStatus;
  if ('error' in status) throw new Error(`the image build failed (global setup): ${status.error}`);
  return status.image;
}

let built: Promise<BuiltImage> | undefined;

/** The image of the current tree, once built; null when podman is missing outside CI. */
export function ensureTaggerImage(): Promise<BuiltImage> | null {
  if (locatePodman() === null) return null;
  let status = '';
  try {
    status = inject('taggerImageStatus') ?? '';
  } catch {
    status = '';
  }
  built ??= status
    ? waitForStatus(status)
    : buildTaggerImage({ log: (line) => process.stdout.write(`[tagger image] ${line}\n`) });
  return built;
}
