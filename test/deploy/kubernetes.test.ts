/**
 * The Helm chart (deploy/helm/tagger) and the kustomize manifests (deploy/kustomize), checked offline:
 * Helm's own lint and render (helm-python-sdk: Helm's Go SDK as a library, no binary, no cluster) for
 * several value sets, strict schema validation of every rendered object against Kubernetes 1.30 and 1.37
 * (kubernetes-validate), `kubectl kustomize` where kubectl exists, and the rules that make the objects
 * work together — through deploy/helm/check.py, which users run as `npm run chart:lint` / `chart:render`
 * (tested here too). No cluster runs here: nothing in this file claims the chart was deployed.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { SETTLE_MAX_MS } from '../../src/server/drain.js';
import { REPO_ROOT, venvPython } from '../support/components.js';

const python = venvPython();
const CHART = resolve(REPO_ROOT, 'deploy', 'helm', 'tagger');
const KUBE_VERSIONS = ['1.30.0', '1.37.0'];
const KUBECTL = '/usr/bin/kubectl';
const hasKubectl = existsSync(KUBECTL);
if (!hasKubectl) {
  // The issue asks for kustomize checks "where kubectl exists"; CI machines may not have it.
  process.stderr.write(`[skip] kubectl not found at ${KUBECTL}: the kustomize manifests are not rendered\n`);
}

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered objects of many kinds, checked field by field below
  spec?: Record<string, any>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};
interface SetResult {
  lint: { messages: { severity: number; path: string; error: string }[]; errors: string[] } | null;
  objects: K8sObject[];
  problems: string[];
  render_error: string | null;
}

const TRACKING = { mlflow: { trackingUri: 'http://mlflow.mlops.svc:5000' } };
const SETS: Record<string, unknown> = {
  defaults: TRACKING,
  everything: {
    ...TRACKING,
    mlflow: { ...TRACKING.mlflow, credentialsSecret: 'mlflow-credentials' },
    redis: { bundled: true },
    apiKeys: { keys: ['key-one-1234', 'key-two-5678'] },
    rateLimit: { max: 100, windowMs: 1000 },
    autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 12 },
    shutdown: { delayMs: 8000, graceMs: 20000 },
    image: { repository: 'registry.example.com/tagger', tag: '1.2.3' },
  },
  existing: {
    ...TRACKING,
    redis: { url: 'redis://redis.cache.svc:6379/0' },
    apiKeys: { existingSecret: 'tagger-keys' },
    podDisruptionBudget: { enabled: false },
    workers: 2,
  },
  'no tracking server': {},
  'negative delay': { ...TRACKING, shutdown: { delayMs: -1, graceMs: 1000 } },
  batch: {
    ...TRACKING,
    mlflow: { ...TRACKING.mlflow, credentialsSecret: 'mlflow-credentials' },
    encoders: { volume: { persistentVolumeClaim: { claimName: 'tagger-encoders', readOnly: true } } },
    batch: {
      enabled: true,
      input: 's3://corpus/2026/texts.csv',
      output: 's3://corpus/2026/tags/part-{index}-of-4.csv',
      shards: 4,
      runId: '0123456789abcdef0123456789abcdef',
      s3: { credentialsSecret: 'corpus-s3', endpoint: 'http://minio.storage.svc:9000' },
    },
  },
  'batch without {index}': {
    ...TRACKING,
    batch: { enabled: true, input: 's3://b/in.csv', output: 's3://b/out.csv', shards: 3 },
  },
  'batch without input': { ...TRACKING, batch: { enabled: true, output: 's3://b/part-{index}.csv' } },
  // Retraining on a schedule (issue 32): promoting to a registry alias, with the first run's data on a volume.
  retrain: {
    ...TRACKING,
    mlflow: { ...TRACKING.mlflow, credentialsSecret: 'mlflow-credentials' },
    records: { existingSecret: 'tagger-records' },
    retrain: {
      enabled: true,
      schedule: '30 2 * * 1-5',
      promote: 'models:/tagger@champion',
      minGain: 0.01,
      data: '/data/dataset.csv',
      dataVolume: { persistentVolumeClaim: { claimName: 'tagger-data', readOnly: true } },
    },
  },
  'retrain without records': { ...TRACKING, retrain: { enabled: true } },
  'retrain to a bad target': {
    ...TRACKING,
    records: { existingSecret: 'tagger-records' },
    retrain: { enabled: true, promote: 'runs:/abc/model' },
  },
  // The Prometheus Operator's objects (docs/monitoring.md), with API keys and shared prediction records.
  monitoring: {
    ...TRACKING,
    apiKeys: { existingSecret: 'tagger-keys' },
    records: { existingSecret: 'tagger-records', sampleRate: 0.5 },
    metrics: {
      prometheusRule: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
      serviceMonitor: {
        enabled: true,
        interval: '15s',
        labels: { release: 'kube-prometheus-stack' },
        apiKeySecret: { name: 'tagger-scrape-key', key: 'key' },
      },
    },
  },
  'scraping without a key': {
    ...TRACKING,
    apiKeys: { existingSecret: 'tagger-keys' },
    metrics: { serviceMonitor: { enabled: true } },
  },
};

/** Names of the environment variables Tagger reads: every TAGGER_* and MLFLOW_* its sources mention. */
function variablesTaggerReads(): Set<string> {
  const names = new Set<string>();
  for (const file of [
    'src/server/settings.ts',
    'src/server/config.ts',
    'src/server/cluster.ts',
    'src/tracking/rest/rest-http.ts',
    'src/encoder/resolve.ts',
  ]) {
    const text = readFileSync(resolve(REPO_ROOT, file), 'utf8');
    for (const match of text.matchAll(/\b(TAGGER_[A-Z_]+|MLFLOW_[A-Z_]+)\b/g)) names.add(match[1]!);
  }
  return names;
}

function runPython(
  command: unknown,
): Promise<{ sets: Record<string, SetResult>; manifests: Record<string, SetResult> }> {
  return new Promise((done, fail) => {
    const child = spawn(python!, [resolve(CHART, '..', 'check.py'), '--json'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
    });
    child.once('exit', (code) => {
      if (code !== 0) fail(new Error(`deploy/helm/check.py exited ${code}: ${err}`));
      else done(JSON.parse(out));
    });
    child.stdin.end(JSON.stringify(command));
  });
}

const kustomize = async (dir: string): Promise<string> =>
  (await promisify(execFile)(KUBECTL, ['kustomize', resolve(REPO_ROOT, 'deploy', 'kustomize', dir)])).stdout;

let result: Awaited<ReturnType<typeof runPython>>;

beforeAll(async () => {
  if (python === null) return;
  const manifests = hasKubectl
    ? { base: await kustomize('base'), production: await kustomize('overlays/production') }
    : {};
  result = await runPython({
    chart: CHART,
    sets: SETS,
    kube_versions: KUBE_VERSIONS,
    manifests,
  });
}, 120_000);

const only = (objects: K8sObject[], kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);
const one = (objects: K8sObject[], kind: string, name?: string): K8sObject => {
  const found = only(objects, kind).filter((o) => name === undefined || o.metadata.name === name);
  expect(found, `one ${kind}${name ? ` ${name}` : ''}`).toHaveLength(1);
  return found[0]!;
};
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}): boolean =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

/** The rules that make a Deployment, its ConfigMap, Service, PDB and HPA work together. */
function checkServing(objects: K8sObject[], deploymentName: string): void {
  const deployment = one(objects, 'Deployment', deploymentName);
  const pod = deployment.spec!.template;
  const container = pod.spec.containers.find((c: { name: string }) => c.name === 'tagger');
  const configMapName = container.envFrom.find((e: { configMapRef?: { name: string } }) => e.configMapRef)
    .configMapRef.name;
  const config = one(objects, 'ConfigMap', configMapName).data!;
  const env: Record<string, string> = { ...config };
  for (const entry of container.env ?? []) env[entry.name] = entry.value;

  // Only variables Tagger reads, with values its configuration accepts.
  const known = variablesTaggerReads();
  for (const name of Object.keys(env)) expect(known, `${name} is read by Tagger`).toContain(name);
  expect(env.TAGGER_HOST).toBe('0.0.0.0');
  const port = Number(env.TAGGER_PORT);
  expect(container.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([port]);

  // Probes on the paths the server has; readiness on /health/ready (503 while draining).
  const probePort = (probe: { httpGet: { port: string | number } }) =>
    probe.httpGet.port === 'http' ? port : probe.httpGet.port;
  expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
  for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
    expect(['/health/live', '/health/ready']).toContain(probe.httpGet.path);
    expect(probePort(probe)).toBe(port);
  }
  // Kubernetes waits longer than the server's own shutdown: the delay, until no client connects (at most
  // SETTLE_MAX_MS), then the drain.
  const shutdownMs =
    Number(env.TAGGER_SHUTDOWN_DELAY_MS ?? 5000) +
    SETTLE_MAX_MS +
    Number(env.TAGGER_SHUTDOWN_GRACE_MS ?? 10000);
  expect(pod.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(shutdownMs);
  // Hardened: no root, nothing written to the image's filesystem, no capabilities.
  expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
  expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
  expect(container.securityContext.allowPrivilegeEscalation).toBe(false);
  expect(container.securityContext.capabilities.drop).toEqual(['ALL']);
  expect(container.resources.limits.memory).toBeDefined();

  // The Service and the PDB select exactly the Tagger pods.
  const podLabels = pod.metadata.labels as Record<string, string>;
  expect(matches(deployment.spec!.selector.matchLabels, podLabels)).toBe(true);
  const service = only(objects, 'Service').find((s) => matches(s.spec!.selector, podLabels));
  expect(service, 'a Service selecting the pods').toBeDefined();
  expect(service!.spec!.ports[0].targetPort).toBe('http');
  for (const other of only(objects, 'Deployment').filter((d) => d !== deployment)) {
    expect(matches(service!.spec!.selector, other.spec!.template.metadata.labels)).toBe(false);
  }
  for (const pdb of only(objects, 'PodDisruptionBudget')) {
    expect(pdb.spec!.selector.matchLabels).toEqual(deployment.spec!.selector.matchLabels);
  }
  for (const hpa of only(objects, 'HorizontalPodAutoscaler')) {
    expect(hpa.spec!.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
    expect(deployment.spec!.replicas).toBeUndefined(); // the HPA owns the count
  }
}

describe.skipIf(python === null)('the Helm chart', () => {
  it.each(['defaults', 'everything', 'existing', 'monitoring'])(
    'lints, renders and validates strictly against Kubernetes 1.30 and 1.37: %s',
    (name) => {
      const set = result.sets[name]!;
      expect(set.render_error).toBeNull();
      expect(set.lint!.errors).toEqual([]);
      expect(set.lint!.messages.filter((m) => m.severity >= 2)).toEqual([]);
      expect(set.problems).toEqual([]);
      checkServing(set.objects, 'tagger');
    },
  );

  it('keeps API keys in a Secret mounted as a file, never in the ConfigMap or the environment', () => {
    const { objects } = result.sets.everything!;
    const secret = one(objects, 'Secret', 'tagger-api-keys');
    expect(secret.stringData!.keys!.split('\n').filter(Boolean)).toEqual(['key-one-1234', 'key-two-5678']);
    for (const config of only(objects, 'ConfigMap')) expect(JSON.stringify(config)).not.toContain('key-one');
    const deployment = one(objects, 'Deployment', 'tagger');
    expect(JSON.stringify(deployment)).not.toContain('key-one');
    const container = deployment.spec!.template.spec.containers[0];
    const file = container.env.find((e: { name: string }) => e.name === 'TAGGER_API_KEYS_FILE').value;
    const mount = container.volumeMounts.find((m: { name: string }) => m.name === 'api-keys');
    expect(file.startsWith(`${mount.mountPath}/`)).toBe(true);
    // A changed key or setting rolls the pods.
    expect(Object.keys(deployment.spec!.template.metadata.annotations)).toEqual(
      expect.arrayContaining(['checksum/config', 'checksum/api-keys']),
    );
  });

  it('points every replica at one Redis for the shared rate limit, bundled or existing', () => {
    const bundled = result.sets.everything!.objects;
    const redisService = one(bundled, 'Service', 'tagger-redis');
    const config = one(bundled, 'ConfigMap', 'tagger').data!;
    expect(config.TAGGER_REDIS_URL).toBe(`redis://${redisService.metadata.name}:6379/0`);
    expect(config.TAGGER_RATE_LIMIT_MAX).toBe('100');
    expect(one(result.sets.existing!.objects, 'ConfigMap', 'tagger').data!.TAGGER_REDIS_URL).toBe(
      'redis://redis.cache.svc:6379/0',
    );
    expect(only(result.sets.defaults!.objects, 'ConfigMap')[0]!.data!.TAGGER_REDIS_URL).toBeUndefined();
  });

  it('installs the alerting rules of deploy/prometheus as a PrometheusRule, unchanged, when asked', () => {
    const { objects } = result.sets.monitoring!;
    const rule = one(objects, 'PrometheusRule', 'tagger');
    expect(rule.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    const rules = parseYaml(
      readFileSync(resolve(REPO_ROOT, 'deploy', 'prometheus', 'tagger.rules.yml'), 'utf8'),
    );
    expect(rule.spec).toEqual(rules);
    // Off by default: a cluster without the Prometheus Operator's CRDs would refuse the objects.
    expect(only(result.sets.defaults!.objects, 'PrometheusRule')).toEqual([]);
    expect(only(result.sets.defaults!.objects, 'ServiceMonitor')).toEqual([]);
  });

  it('scrapes every pod through the Service with a ServiceMonitor, sending a key when keys are on', () => {
    const { objects } = result.sets.monitoring!;
    const monitor = one(objects, 'ServiceMonitor', 'tagger');
    const service = one(objects, 'Service', 'tagger');
    expect(matches(monitor.spec!.selector.matchLabels, service.metadata.labels)).toBe(true);
    expect(monitor.spec!.namespaceSelector).toEqual({ matchNames: ['tagger'] });
    expect(monitor.spec!.endpoints).toEqual([
      {
        port: service.spec!.ports[0].name,
        path: '/metrics',
        interval: '15s',
        scrapeTimeout: '10s',
        authorization: { type: 'Bearer', credentials: { name: 'tagger-scrape-key', key: 'key' } },
      },
    ]);
    expect(result.sets['scraping without a key']!.render_error).toMatch(
      /metrics\.serviceMonitor\.apiKeySecret/,
    );
  });

  it('keeps prediction records in memory per pod, or in the database of a Secret the pods share', () => {
    expect(one(result.sets.defaults!.objects, 'ConfigMap', 'tagger').data!.TAGGER_RECORD_STORE).toBe(
      'memory:',
    );
    const { objects } = result.sets.monitoring!;
    const config = one(objects, 'ConfigMap', 'tagger').data!;
    expect(config.TAGGER_RECORD_STORE).toBeUndefined();
    expect(config.TAGGER_RECORD_SAMPLE_RATE).toBe('0.5');
    const container = one(objects, 'Deployment', 'tagger').spec!.template.spec.containers[0];
    expect(container.envFrom).toContainEqual({ secretRef: { name: 'tagger-records' } });
  });

  it('refuses values that cannot work, naming them', () => {
    expect(result.sets['no tracking server']!.render_error).toMatch(/mlflow\.trackingUri is required/);
    expect(result.sets['negative delay']!.render_error).toMatch(/delayMs/);
  });
});

describe.skipIf(python === null)('npm run chart:lint and chart:render (the same checks, for users)', () => {
  const npmRun = (args: string[]) =>
    spawnSync('npm', ['run', '--silent', ...args], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: {
        ...process.env,
        PATH: `${resolve(REPO_ROOT, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`,
      },
      timeout: 60_000,
    });

  it('lints and validates the chart with the values given, and fails naming what is wrong', () => {
    const ok = npmRun([
      'chart:lint',
      '--',
      '--set',
      'mlflow.trackingUri=http://mlflow:5000',
      '--set',
      'redis.bundled=true',
    ]);
    expect(ok.status, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/render: \d+ objects \(.*Deployment\/tagger.*Deployment\/tagger-redis/);
    expect(ok.stdout).toMatch(/Kubernetes 1\.30\.0, 1\.37\.0: ok/);
    const missing = npmRun(['chart:lint']);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toMatch(/mlflow\.trackingUri is required/);
  });

  it('renders the manifests as `helm template` prints them', () => {
    const rendered = npmRun(['chart:render', '--', '--set', 'mlflow.trackingUri=http://mlflow:5000']);
    expect(rendered.status, rendered.stderr).toBe(0);
    const objects = parseAllDocuments(rendered.stdout).map((doc) => doc.toJS() as K8sObject);
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Service',
    ]);
    expect(one(objects, 'ConfigMap').data!.MLFLOW_TRACKING_URI).toBe('http://mlflow:5000');
  });
});

describe.skipIf(python === null || !hasKubectl)('the kustomize manifests', () => {
  it.each(['base', 'production'])('render with kubectl and validate strictly: %s', (name) => {
    const { objects, problems } = result.manifests[name]!;
    expect(problems).toEqual([]);
    const deployment = one(objects, 'Deployment');
    checkServing(objects, deployment.metadata.name);
  });
});

describe.skipIf(python === null)('the retrain CronJob (retrain.enabled)', () => {
  it('lints, renders and validates strictly; runs tagger retrain --promote on the schedule, one at a time', () => {
    const set = result.sets.retrain!;
    expect(set.render_error).toBeNull();
    expect(set.lint!.errors).toEqual([]);
    expect(set.lint!.messages.filter((m) => m.severity >= 2)).toEqual([]);
    expect(set.problems).toEqual([]);
    expect(only(result.sets.defaults!.objects, 'CronJob')).toEqual([]);
    const cron = one(set.objects, 'CronJob');
    expect(cron.spec).toMatchObject({ schedule: '30 2 * * 1-5', concurrencyPolicy: 'Forbid' });
    const job = cron.spec!.jobTemplate.spec;
    expect(job.backoffLimit).toBe(0);
    const pod = job.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    const [container] = pod.containers;
    expect(container.command).toEqual(['node', 'bin/tagger.js']);
    expect(container.args).toEqual([
      'retrain',
      '--experiment',
      'best',
      '--promote',
      'models:/tagger@champion',
      '--min-gain',
      '0.01',
      '--min-live-labels',
      '20',
      '--data',
      '/data/dataset.csv',
      '--quiet',
    ]);
    const env = Object.fromEntries(
      container.env.map((e: { name: string; value?: string }) => [e.name, e.value]),
    );
    expect(env.MLFLOW_TRACKING_URI).toBe(TRACKING.mlflow.trackingUri);
    const known = variablesTaggerReads();
    for (const name of Object.keys(env)) expect(known, `${name} is read by Tagger`).toContain(name);
    // The record store (feedback, decisions, the lease) and the tracking server's credentials, from Secrets.
    expect(container.envFrom.map((e: { secretRef: { name: string } }) => e.secretRef.name)).toEqual([
      'tagger-records',
      'mlflow-credentials',
    ]);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(container.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(['/tmp', '/data']);
    expect(container.resources.limits.memory).toBeDefined();
  });

  it('refuses a retrain without the shared record store, or to a target that is not an alias', () => {
    expect(result.sets['retrain without records']!.render_error).toMatch(
      /retrain needs the shared record store/,
    );
    expect(result.sets['retrain to a bad target']!.render_error).toMatch(
      /retrain\.promote|does not match pattern|promote/,
    );
  });
});

describe.skipIf(python === null)('the batch Job (batch.enabled)', () => {
  it('lints, renders and validates strictly, beside a serving Deployment that mounts the encoders', () => {
    const set = result.sets.batch!;
    expect(set.render_error).toBeNull();
    expect(set.lint!.errors).toEqual([]);
    expect(set.lint!.messages.filter((m) => m.severity >= 2)).toEqual([]);
    expect(set.problems).toEqual([]);
    checkServing(set.objects, 'tagger');
    const container = one(set.objects, 'Deployment', 'tagger').spec!.template.spec.containers[0];
    const dir = container.env.find((e: { name: string }) => e.name === 'TAGGER_ENCODERS_DIR').value;
    expect(container.volumeMounts.find((m: { name: string }) => m.name === 'encoders')).toMatchObject({
      mountPath: dir,
      readOnly: true,
    });
    expect(only(result.sets.defaults!.objects, 'Job')).toEqual([]);
  });

  it('runs n pods, pod i tagging shard i/n of one input into its own part', () => {
    const job = one(result.sets.batch!.objects, 'Job');
    expect(job.spec).toMatchObject({ completionMode: 'Indexed', completions: 4, parallelism: 4 });
    expect(job.spec!.backoffLimitPerIndex).toBeGreaterThan(0);
    const pod = job.spec!.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    const [container] = pod.containers;
    expect(container.command).toEqual(['node', 'bin/tagger.js']);
    const env = Object.fromEntries(
      container.env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [
        e.name,
        e.value ?? e.valueFrom,
      ]),
    );
    // The pod's index, from the annotation the Job controller sets on each pod.
    expect(env.TAGGER_SHARD_INDEX).toEqual({
      fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" },
    });
    expect(env.MLFLOW_TRACKING_URI).toBe(TRACKING.mlflow.trackingUri);
    expect(env.AWS_ENDPOINT_URL_S3).toBe('http://minio.storage.svc:9000');
    // Kubernetes expands $(NAME) in args only for variables the container defines.
    const args: string[] = container.args;
    for (const [, name] of args.join(' ').matchAll(/\$\(([A-Z_]+)\)/g)) expect(env).toHaveProperty(name!);
    const parts = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const argv = args.map((arg) => arg.replaceAll('$(TAGGER_SHARD_INDEX)', String(i)));
      const flag = (name: string) => argv[argv.indexOf(name) + 1];
      expect(argv[0]).toBe('predict');
      expect(flag('--input')).toBe('s3://corpus/2026/texts.csv');
      expect(flag('--shard')).toBe(`${i}/4`);
      expect(flag('--run-id')).toBe('0123456789abcdef0123456789abcdef');
      parts.add(flag('--output')!);
    }
    expect([...parts]).toEqual([0, 1, 2, 3].map((i) => `s3://corpus/2026/tags/part-${i}-of-4.csv`));
    // Credentials from Secrets, never values; every other variable one Tagger (or the AWS SDK) reads.
    expect(container.envFrom.map((e: { secretRef: { name: string } }) => e.secretRef.name)).toEqual([
      'mlflow-credentials',
      'corpus-s3',
    ]);
    const known = variablesTaggerReads();
    for (const name of Object.keys(env).filter((n) => n !== 'TAGGER_SHARD_INDEX' && !n.startsWith('AWS_'))) {
      expect(known, `${name} is read by Tagger`).toContain(name);
    }
    // Hardened like the server, with the encoders and a /tmp for an s3:// part before its upload.
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(container.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual([
      '/tmp',
      '/app/encoders',
    ]);
    expect(container.resources.limits.memory).toBeDefined();
  });

  it('refuses a batch whose parts would overwrite each other, or without an input', () => {
    expect(result.sets['batch without {index}']!.render_error).toMatch(
      /batch\.output must contain \{index\}/,
    );
    expect(result.sets['batch without input']!.render_error).toMatch(/batch\.input is required/);
  });
});
