/**
 * The container image, built from the root Containerfile on the locally made base and run with podman
 * as a user would run it in production: read-only root filesystem, its own non-root user, configured by
 * environment only, a tracking store mounted read-only. Prints the image size and the time from
 * `podman run` to a ready server. Also runs the build command the docs give, as written (the build
 * itself is the suite's global setup: test/support/image-setup.ts).
 */
import { execFile } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVE_NODE_FLAGS } from '../../src/server/node-flags.js';
import { REPO_ROOT } from '../support/components.js';
import { sampleTexts } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { BASE_IMAGE, type BuiltImage, ensureTaggerImage, IMAGE_WAIT_MS, podman } from '../support/image.js';
import { predictBody, runAutocannon } from '../support/serve-process.js';
import { useServingFixture } from '../support/serving-fixture.js';

const run = promisify(execFile);
const building = ensureTaggerImage();
let image: BuiltImage;
const fx = useServingFixture({ enabled: building !== null });
const containers: string[] = [];

/** The container user (uid 1000) must read the store: open it up for reading, as a mounted volume is. */
function readableByAll(path: string): void {
  const mode = statSync(path).mode;
  chmodSync(path, mode | (statSync(path).isDirectory() ? 0o555 : 0o444));
  if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) readableByAll(join(path, entry));
}

// The timeout covers waiting for the image, which the build's own time limit ends first if it hangs.
beforeAll(async () => {
  if (building === null) return;
  image = await building;
  readableByAll(fx.dir);
}, IMAGE_WAIT_MS + 300_000);

afterAll(async () => {
  for (const id of containers) await podman(['rm', '--force', '--time', '0', id]).catch(() => undefined);
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

/**
 * `podman run`s the image as production would (read-only root, configured by environment, the store
 * mounted read-only), with `limits` (podman options) added; resolves once it is ready.
 */
async function runServing(limits: string[] = []): Promise<{ id: string; url: string }> {
  const port = await freePort();
  const id = (
    await podman([
      'run',
      '--detach',
      '--read-only',
      // No systemd here to schedule the periodic check; `podman healthcheck run` runs it when needed.
      '--health-interval',
      'disable',
      ...limits,
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
  const url = `http://127.0.0.1:${port}`;
  await untilReady(url, 120_000);
  return { id, url };
}

describe.skipIf(building === null)('the container image', () => {
  it('serves from a read-only store as a non-root user on a read-only root filesystem, and stops cleanly', async () => {
    const started = performance.now();
    const { id, url } = await runServing();
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
      'encoders',
      'node_modules',
      'package.json',
    ]);
    // The encoders' folder is empty unless the build baked one in (`--build-arg ENCODERS=minilm`): it is
    // where an encoder volume is mounted (the chart's encoders.volume).
    expect((await podman(['exec', id, 'ls', '-A', '/app/encoders'])).trim()).toBe('');

    // `podman stop` sends SIGTERM to node (PID 1): a graceful shutdown, exit status 0.
    await podman(['stop', '--time', '30', id]);
    expect((await podman(['inspect', '--format', '{{.State.ExitCode}}', id])).trim()).toBe('0');
    expect(await podman(['logs', id])).toMatch(/"msg":"stopped"/);
  }, 300_000);

  it('in a 1-CPU, 256 MB container: one serving process by default, and a mixed load answered in full', async () => {
    const { id, url } = await runServing(['--cpus', '1', '--memory', '256m', '--memory-swap', '256m']);

    // The default worker count read the container's limits: one process, PID 1 (no cluster primary).
    const config = await podman(['exec', id, 'node', 'bin/tagger.js', 'serve', '--print-config']);
    expect(config).toMatch(/unset: 1 \(cores \d+, CPU quota 1, memory limit 256 MiB\)/);
    const processes = (await podman(['top', id, 'pid', 'args'])).trim().split('\n').slice(1);
    expect(processes).toHaveLength(1);
    expect(processes[0]).toMatch(/^\s*1\s+node /);
    // …started by the image's entry point with the serve flags (src/server/node-flags.ts), which bound its memory.
    const argv = (await podman(['exec', id, 'cat', '/proc/1/cmdline'])).split('\0');
    expect(argv).toEqual(expect.arrayContaining([...SERVE_NODE_FLAGS]));

    // Single-text requests over 50 connections, then 1,000-text requests over 4: every one answered 200.
    const texts = sampleTexts().map((row) => row.text);
    const thousand = JSON.stringify({
      texts: Array.from({ length: 1000 }, (_, i) => ({ text: texts[i % texts.length] })),
    });
    const counted: string[] = [];
    for (const [label, connections, body] of [
      ['1 text', 50, predictBody(1)],
      ['1,000 texts', 4, thousand],
    ] as const) {
      const load = runAutocannon(url, connections, body);
      await new Promise((done) => setTimeout(done, 6_000));
      const counts = await load.stop();
      counted.push(`${label}: ${counts.statuses.get(200) ?? 0} answered`);
      expect(counts.sent).toBeGreaterThan(0);
      expect(Object.fromEntries(counts.errors)).toEqual({});
      expect(counts.non2xx).toBe(0);
      expect([...counts.statuses.keys()]).toEqual([200]);
    }

    // Not killed for memory, still the same process, and that process's peak resident memory (VmHWM: the
    // cgroup's own peak would count the page cache the limit reclaims) stayed well inside the limit.
    const state = (
      await podman(['inspect', '--format', '{{.State.Running}} {{.State.OOMKilled}} {{.RestartCount}}', id])
    ).trim();
    expect(state).toBe('true false 0');
    const status = await podman(['exec', id, 'cat', '/proc/1/status']);
    const peakKiB = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]);
    console.log(
      `1 CPU, 256 MB container: ${counted.join('; ')}; serving process peak RSS ${(peakKiB / 1024).toFixed(0)} MiB`,
    );
    expect(peakKiB).toBeGreaterThan(0);
    expect(peakKiB).toBeLessThan(200 * 1024);
  }, 300_000);

  it('builds with the command the docs give for a machine without a registry, as written', async () => {
    // The build of docs/deploy.md and deploy/image/README.md (the same command in both), run in a shell
    // from the repository's root with only the tag changed; the base it names is the one the tests make.
    const commands = ['docs/deploy.md', 'deploy/image/README.md'].map(documentedBuild);
    expect(commands[1]).toBe(commands[0]);
    expect(commands[0]).toContain(`BASE=${BASE_IMAGE} `);
    const tag = `localhost/tagger:docs-${process.pid}`;
    const command = commands[0]!.replace(/ -t tagger \.$/, ` -t ${tag} .`);
    expect(command).toContain(tag);
    const env = { ...process.env };
    delete env.CONTAINERS_CONF; // as a user's shell has it: the command sets it
    const built = await run('bash', ['-c', command], {
      cwd: REPO_ROOT,
      env,
      maxBuffer: 64 * 1024 * 1024,
    }).then(
      () => '',
      (error: { stderr?: string; message: string }) =>
        error.stderr?.trim().split('\n').slice(-5).join('\n') ?? error.message,
    );
    await podman(['rmi', tag]).catch(() => undefined);
    expect(built, `${command}\nfailed`).toBe('');
  }, 300_000);
});

/** The local-base build command in a markdown file (`CONTAINERS_CONF=… podman build …`), lines joined. */
function documentedBuild(file: string): string {
  const lines = readFileSync(resolve(REPO_ROOT, file), 'utf8').split('\n');
  const start = lines.findIndex((line) => /^CONTAINERS_CONF=\S+ podman build /.test(line));
  expect(start, `${file} gives the build command on the local base`).toBeGreaterThan(-1);
  const parts: string[] = [];
  for (let i = start; i < lines.length; i++) {
    const line = lines[i]!.trim();
    parts.push(line.replace(/\\$/, '').trim());
    if (!line.endsWith('\\')) break;
  }
  return parts.join(' ');
}
