/**
 * The container image, built from the root Containerfile on the locally made base and run with podman
 * as a user would run it in production: read-only root filesystem, its own non-root user, configured by
 * environment only, a tracking store mounted read-only. Prints the image size and the time from
 * `podman run` to a ready server.
 */
import { chmodSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServingFixture, type ServingFixture } from '../support/fixtures.js';
import { type BuiltImage, ensureTaggerImage, podman } from '../support/image.js';
import { freePort, predictBody } from '../support/serve-process.js';

const building = ensureTaggerImage();
let image: BuiltImage;
let fx: ServingFixture;
const containers: string[] = [];

/** The container user (uid 1000) must read the store: open it up for reading, as a mounted volume is. */
function readableByAll(path: string): void {
  const mode = statSync(path).mode;
  chmodSync(path, mode | (statSync(path).isDirectory() ? 0o555 : 0o444));
  if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) readableByAll(join(path, entry));
}

beforeAll(async () => {
  if (building === null) return;
  image = await building;
  fx = await buildServingFixture();
  readableByAll(fx.dir);
}, 900_000);

afterAll(async () => {
  for (const id of containers) await podman(['rm', '--force', '--time', '0', id]).catch(() => undefined);
  await fx?.close();
});

async function untilReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await fetch(`${url}/health/ready`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

describe.skipIf(building === null)('the container image', () => {
  it('serves from a read-only store as a non-root user on a read-only root filesystem, and stops cleanly', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const started = performance.now();
    const id = (
      await podman([
        'run',
        '--detach',
        '--read-only',
        // No systemd here to schedule the periodic check; `podman healthcheck run` runs it below.
        '--health-interval',
        'disable',
        '--env',
        `TAGGER_PORT=${port}`,
        '--env',
        'TAGGER_SHUTDOWN_DELAY_MS=0',
        '--env',
        `MLFLOW_TRACKING_URI=${fx.dir}`,
        // The file store records absolute artifact locations: mount it at the same path.
        '--volume',
        `${fx.dir}:${fx.dir}:ro`,
        image.ref,
      ])
    ).trim();
    containers.push(id);
    await untilReady(url, 120_000);
    const startupSeconds = (performance.now() - started) / 1000;
    const size = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', image.ref])).trim());
    console.log(
      `image ${image.ref}: ${(size / 1e6).toFixed(0)} MB; podman run → ready in ${startupSeconds.toFixed(2)} s` +
        (image.buildSeconds > 0 ? `; built in ${image.buildSeconds.toFixed(0)} s` : '') +
        (image.baseSeconds > 0 ? `; local base made in ${image.baseSeconds.toFixed(0)} s` : ''),
    );

    const predicted = await fetch(`${url}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: predictBody(2),
    });
    expect(predicted.status).toBe(200);
    expect(((await predicted.json()) as { data: { run_id: string } }).data.run_id).toBe(fx.runs.alpha);

    // The inspection page was built into the image and is served from it.
    const page = await fetch(`${url}/ui/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');

    // Not root, by the image's own setting; nothing can be written outside the tmpfs podman mounts.
    expect((await podman(['exec', id, 'id', '-u'])).trim()).toBe('1000');
    expect((await podman(['image', 'inspect', '--format', '{{.Config.User}}', image.ref])).trim()).toBe(
      '1000:1000',
    );
    await expect(podman(['exec', id, 'touch', '/app/written'])).rejects.toThrow(/Read-only file system/);
    // The image's HEALTHCHECK (against /health/ready) passes.
    await podman(['healthcheck', 'run', id]);

    // Production dependencies only, and the compiled server without its sources.
    const modules = (await podman(['exec', id, 'ls', '/app/node_modules'])).split('\n');
    expect(modules).toEqual(expect.arrayContaining(['fastify', 'pino', 'ioredis']));
    for (const dev of ['typescript', 'vitest', 'node', 'tsx', '@biomejs', 'vite', 'preact', 'chart.js']) {
      expect(modules).not.toContain(dev);
    }
    expect((await podman(['exec', id, 'ls', '/app'])).split('\n').filter(Boolean).sort()).toEqual([
      'bin',
      'dist',
      'node_modules',
      'package.json',
    ]);

    // `podman stop` sends SIGTERM to node (PID 1): a graceful shutdown, exit status 0.
    await podman(['stop', '--time', '30', id]);
    expect((await podman(['inspect', '--format', '{{.State.ExitCode}}', id])).trim()).toBe('0');
    expect(await podman(['logs', id])).toMatch(/"msg":"stopped"/);
  }, 300_000);
});
