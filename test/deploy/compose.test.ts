/**
 * The local production stack's files (deploy/compose.yaml, haproxy and nginx configurations) hang
 * together: every service they name exists, the replicas are configured alike and point at the stack's
 * MLflow server and Redis, and haproxy and nginx accept their configurations (`haproxy -c`, `nginx -t`,
 * with the replicas' names replaced by loopback addresses, since nothing resolves them here). The
 * stack itself, with containers, runs in test/deploy/stack.test.ts; `podman-compose up` needs images from
 * registries these machines cannot reach (docs/deploy.md lists them; test/deploy/image.test.ts builds the
 * replicas' image with podman-compose on the local base).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { locateBinary, REPO_ROOT } from '../support/components.js';
import { haproxyConfigFor } from '../support/stack.js';

const run = promisify(execFile);
const DEPLOY = resolve(REPO_ROOT, 'deploy');
type Service = {
  image?: string;
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  environment?: Record<string, string>;
  depends_on?: string[] | Record<string, { condition: string }>;
  volumes?: string[];
  profiles?: string[];
  read_only?: boolean;
};
const compose = parse(readFileSync(resolve(DEPLOY, 'compose.yaml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const replicas = ['tagger-1', 'tagger-2', 'tagger-3'];
const haproxyBin = locateBinary('haproxy', '/usr/sbin/haproxy', 'install it with `apt-get install haproxy`');
const nginxBin = locateBinary('nginx', '/usr/sbin/nginx', 'install it with `apt-get install nginx`');
const podmanCompose = locateBinary(
  'podman-compose',
  '/usr/bin/podman-compose',
  'install it with `apt-get install podman-compose`',
);

describe('deploy/compose.yaml', () => {
  it('runs three identical replicas from the root Containerfile, read-only, on the stack’s MLflow and Redis', () => {
    for (const name of replicas) {
      const service = compose.services[name]!;
      expect(service.build).toEqual(compose.services['tagger-1']!.build);
      expect(service.read_only).toBe(true);
      expect(service.environment).toEqual(compose.services['tagger-1']!.environment);
    }
    expect(compose.services['tagger-1']!.build).toMatchObject({ context: '..', dockerfile: 'Containerfile' });
    const env = compose.services['tagger-1']!.environment!;
    expect(new URL(env.MLFLOW_TRACKING_URI!).hostname).toBe('mlflow');
    expect(new URL(env.TAGGER_REDIS_URL!).hostname).toBe('redis');
    expect(env.TAGGER_WORKERS).toBe('1');
  });

  it('names only services and volumes it defines, and files that exist', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      const needs = Array.isArray(service.depends_on)
        ? service.depends_on
        : Object.keys(service.depends_on ?? {});
      for (const other of needs)
        expect(Object.keys(compose.services), `${name} depends on ${other}`).toContain(other);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('.'))
          readFileSync(resolve(DEPLOY, source.endsWith('samples') ? `${source}/projects.csv` : source));
        else expect(Object.keys(compose.volumes), `${name} mounts volume ${source}`).toContain(source);
      }
      if (service.build) readFileSync(resolve(DEPLOY, service.build.context, service.build.dockerfile));
    }
    // MLflow on PostgreSQL with artifacts proxied to MinIO's S3 API.
    const mlflow = compose.services.mlflow as Service & { command: string[] };
    expect(mlflow.command).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^--backend-store-uri=postgresql\+psycopg2:\/\/.+@postgres:5432\//),
        '--artifacts-destination=s3://mlflow/artifacts',
      ]),
    );
    expect(mlflow.environment!.MLFLOW_S3_ENDPOINT_URL).toBe('http://minio:9000');
  });

  it('builds the replicas on the Containerfile’s base, or on the local base TAGGER_BASE_IMAGE names', async () => {
    // Without a build argument `up --build` could only build on the official Node image, which a machine
    // without a registry cannot pull: the local base of deploy/image/make-local-base.sh was out of reach.
    const containerfileBase = /^ARG BASE=(\S+)$/m.exec(
      readFileSync(resolve(REPO_ROOT, 'Containerfile'), 'utf8'),
    )![1];
    expect(compose.services['tagger-1']!.build!.args).toEqual({
      BASE: `\${TAGGER_BASE_IMAGE:-${containerfileBase}}`,
      // An encoder baked in for encoder runs, when TAGGER_ENCODERS says which (the Containerfile's ARG).
      ENCODERS: `\${TAGGER_ENCODERS:-}`,
    });
    expect(readFileSync(resolve(REPO_ROOT, 'Containerfile'), 'utf8')).toMatch(/^ARG ENCODERS=""$/m);
    if (podmanCompose === null) return;
    // What podman-compose makes of it (--dry-run prints the podman commands without running them).
    const dryRun = async (env: Record<string, string>) =>
      (
        await run(podmanCompose, ['--dry-run', '-f', 'deploy/compose.yaml', 'build', 'tagger-1'], {
          cwd: REPO_ROOT,
          env: { ...process.env, ...env },
        })
      ).stdout;
    const local = 'localhost/tagger-base:node-24.21.0';
    expect(await dryRun({ TAGGER_BASE_IMAGE: local })).toContain(`--build-arg BASE=${local} `);
    const env = { ...process.env };
    delete env.TAGGER_BASE_IMAGE;
    expect(await dryRun(env as Record<string, string>)).toContain(`--build-arg BASE=${containerfileBase} `);
  });

  it('lists in docs/deploy.md, beside its commands, every image the stack pulls', () => {
    const docs = readFileSync(resolve(REPO_ROOT, 'docs', 'deploy.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## A local production stack'), docs.indexOf('\n## Kubernetes'));
    const pulled = new Set<string>();
    for (const service of Object.values(compose.services)) {
      // localhost/…: built by the stack itself (the train job runs the replicas' image).
      if (!service.build && !service.image!.startsWith('localhost/')) pulled.add(service.image!);
    }
    // The bases of the images the stack builds: MLflow's, and Tagger's default one.
    pulled.add(/^FROM (\S+)$/m.exec(readFileSync(resolve(DEPLOY, 'mlflow', 'Containerfile'), 'utf8'))![1]!);
    pulled.add(/^ARG BASE=(\S+)$/m.exec(readFileSync(resolve(REPO_ROOT, 'Containerfile'), 'utf8'))![1]!);
    for (const image of pulled) expect(section, `docs/deploy.md names ${image}`).toContain(image);
    // …before the command that needs them.
    expect(section.indexOf('podman pull')).toBeLessThan(section.indexOf('up -d --build'));
  });

  it.skipIf(haproxyBin === null)(
    'has a haproxy configuration haproxy accepts, with one server per replica',
    async () => {
      const committed = readFileSync(resolve(DEPLOY, 'haproxy', 'haproxy.cfg'), 'utf8');
      expect([...committed.matchAll(/^\s*server\s+(\S+)\s+(\S+):8000 check/gm)].map((m) => m[2])).toEqual(
        replicas,
      );
      const dir = mkdtempSync(join(tmpdir(), 'tagger-haproxy-check-'));
      writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfigFor(18000, [18001, 18002, 18003]));
      const { stdout, stderr } = await run(haproxyBin!, ['-c', '-f', join(dir, 'haproxy.cfg')]);
      expect(`${stdout}${stderr}`).toMatch(/Configuration file is valid/);
    },
  );

  it.skipIf(nginxBin === null)('has an nginx configuration nginx accepts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tagger-nginx-check-'));
    const config = readFileSync(resolve(DEPLOY, 'nginx', 'nginx.conf'), 'utf8')
      .replace(/tagger-(\d):8000/g, (_m, n: string) => `127.0.0.1:1800${n}`)
      .replace('listen 8000;', 'listen 127.0.0.1:18000;')
      .replaceAll('/tmp/', `${dir}/`)
      // The test's stderr may be a socket nginx cannot open by path.
      .replace('error_log /dev/stderr warn;', `error_log ${dir}/error.log warn;`);
    writeFileSync(join(dir, 'nginx.conf'), config);
    const { stderr } = await run(nginxBin!, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')]);
    expect(stderr).toMatch(/test is successful/);
  });
});
