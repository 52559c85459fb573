/**
 * The whole monitoring path with real components: a `tagger serve` process recording into its SQLite
 * tracking database, a real Prometheus (Debian's) scraping it on loopback every second and evaluating
 * deploy/prometheus/tagger.rules.yml (the expressions as shipped; each `for` shortened to 2 s, since the
 * real durations are checked by `promtool test rules`). Texts like the training data raise nothing;
 * texts from another domain drive drift until TaggerInputDrift fires, and wrong feedback until
 * TaggerLiveF1Low does. Every dashboard query is also evaluated by this Prometheus. No request fails.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import type {
  FeedbackData,
  MonitoringData,
  MonitoringReport,
  PredictData,
} from '../../src/http/api-types.js';
import { locateBinary, REPO_ROOT } from '../support/components.js';
import { freePort } from '../support/free-port.js';
import { OTHER_DOMAIN_TEXTS, splitSample, trainRun } from '../support/monitoring.js';
import { killServers, type ServerProcess, spawnServe, spawnServer } from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const prometheusBin = locateBinary(
  'prometheus',
  '/usr/bin/prometheus',
  'install it with `apt-get install prometheus`',
);

const scratch = useTempDir('tagger-e2e-monitoring-');
let trackingUri: string;
let server: ServerProcess;
let prometheus: ChildProcess | undefined;
let prometheusUrl: string;
/** Sample rows the model never saw. */
let heldOut: { text: string; tag: string }[];
const outcomes = { ok: 0, failed: 0 };

async function post<T>(path: string, body: unknown): Promise<{ data: T }> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status >= 500 || (path === '/predict' && response.status !== 200)) outcomes.failed++;
  else outcomes.ok++;
  return (await response.json()) as { data: T };
}

async function figures(): Promise<MonitoringReport> {
  const response = await fetch(`${server.url}/monitoring`);
  return ((await response.json()) as { data: MonitoringData }).data.monitoring;
}

async function predict(texts: string[]): Promise<PredictData['predictions']> {
  const answer = await post<PredictData>('/predict', { texts: texts.map((text) => ({ text })) });
  return answer.data.predictions;
}

/** Prometheus' alerts in a state, by name. */
async function alerts(
  state: 'pending' | 'firing',
): Promise<{ name: string; labels: Record<string, string> }[]> {
  const body = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as {
    data: { alerts: { labels: Record<string, string>; state: string }[] };
  };
  return body.data.alerts
    .filter((alert) => alert.state === state)
    .map((alert) => ({ name: alert.labels.alertname!, labels: alert.labels }));
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((done) => setTimeout(done, 500));
  }
}

beforeAll(async () => {
  if (prometheusBin === null) return;
  const sample = await splitSample(scratch.path);
  heldOut = sample.heldOut;
  const train = sample.train;
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  trackingUri = uri;
  await trainRun(uri, { data: train });
  server = await spawnServer({
    MLFLOW_TRACKING_URI: uri,
    // The default for a SQLite tracking store: the records go into its database.
    TAGGER_RECORD_STORE: '',
    TAGGER_RECORD_FLUSH_MS: '100',
    TAGGER_MONITORING_INTERVAL_MS: '500',
    TAGGER_MONITORING_WINDOW: '200',
    TAGGER_MONITORING_MIN_PREDICTIONS: '40',
    TAGGER_LOG_LEVEL: 'info',
  });

  // The shipped rules, every `for` 2 s.
  const rules = parseYaml(
    await readFile(resolve(REPO_ROOT, 'deploy', 'prometheus', 'tagger.rules.yml'), 'utf8'),
  );
  for (const group of rules.groups) for (const rule of group.rules) rule.for = '2s';
  await writeFile(join(scratch.path, 'rules.yml'), toYaml(rules));
  const target = new URL(server.url).host;
  await writeFile(
    join(scratch.path, 'prometheus.yml'),
    toYaml({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [join(scratch.path, 'rules.yml')],
      scrape_configs: [{ job_name: 'tagger', static_configs: [{ targets: [target] }] }],
    }),
  );
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    prometheusBin,
    [
      `--config.file=${join(scratch.path, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(scratch.path, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  prometheus.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  await until(
    'Prometheus ready',
    async () => {
      if (prometheus!.exitCode !== null) throw new Error(`prometheus exited: ${stderr}`);
      const ready = await fetch(`${prometheusUrl}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
      return ready ? true : undefined;
    },
    30_000,
  );
  // Scraping Tagger.
  await until(
    'the first scrape',
    async () => {
      const body = (await (await fetch(`${prometheusUrl}/api/v1/query?query=up`)).json()) as {
        data: { result: { value: [number, string] }[] };
      };
      return body.data.result[0]?.value[1] === '1' ? true : undefined;
    },
    30_000,
  );
}, 180_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    prometheus.kill('SIGTERM');
    await new Promise((done) => prometheus!.once('exit', done));
  }
  killServers();
});

describe.skipIf(prometheusBin === null)('alerts from a real Prometheus scraping Tagger', () => {
  it('raises no drift for texts like the training data', async () => {
    await predict(heldOut.map((row) => row.text));
    // Several scrapes and rule evaluations with the figures of those predictions.
    await new Promise((done) => setTimeout(done, 6_000));
    expect((await figures()).predictions).toBe(heldOut.length);
    const raised = [...(await alerts('pending')), ...(await alerts('firing'))];
    expect(raised.filter((alert) => alert.name === 'TaggerInputDrift')).toEqual([]);
  }, 60_000);

  it('fires TaggerInputDrift once texts from another domain arrive', async () => {
    const fired = await until(
      'TaggerInputDrift firing',
      async () => {
        await predict(
          Array.from({ length: 20 }, (_, i) => OTHER_DOMAIN_TEXTS[i % OTHER_DOMAIN_TEXTS.length]!),
        );
        const firing = await alerts('firing');
        return firing.find((alert) => alert.name === 'TaggerInputDrift');
      },
      90_000,
    );
    expect(fired.labels).toMatchObject({ severity: 'warning' });
    expect(['unseen_ngrams', 'confidence', 'text_length', 'predicted_tag']).toContain(fired.labels.signal);
    expect((await figures()).drift.unseen_ngrams.drifted).toBe(true);
  }, 120_000);

  it('fires TaggerLiveF1Low when people say the answers are wrong', async () => {
    const predictions = [
      ...(await predict(heldOut.map((row) => row.text))),
      ...(await predict(heldOut.map((row) => row.text))),
    ];
    // Records are written off the request path, every TAGGER_RECORD_FLUSH_MS (100 ms here).
    await new Promise((done) => setTimeout(done, 1_500));
    // Every label names another tag than the one predicted.
    const other = (tag: string) => (tag === 'mlops' ? 'computer-vision' : 'mlops');
    const answer = await post<FeedbackData>('/feedback', {
      // Drawn at random from the traffic (here: all of it), so they count for the live figures.
      feedback: predictions.map((p) => ({
        prediction_id: p.prediction_id,
        tag: other(p.predicted_tag),
        selection: 'random_share',
      })),
    });
    expect(answer.data.rejected).toBe(0);
    expect(answer.data.accepted).toBeGreaterThanOrEqual(50);
    await until(
      'TaggerLiveF1Low firing',
      async () => (await alerts('firing')).find((alert) => alert.name === 'TaggerLiveF1Low'),
      60_000,
    );
  }, 90_000);

  it('evaluates every query of the Grafana dashboard without an error, most with data', async () => {
    const dashboard = JSON.parse(
      await readFile(resolve(REPO_ROOT, 'deploy', 'grafana', 'tagger-monitoring.json'), 'utf8'),
    ) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    let empty = 0;
    let queries = 0;
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets) {
        const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
        const body = (await response.json()) as {
          status: string;
          error?: string;
          data: { result: unknown[] };
        };
        expect(body.status, `${panel.title}: ${expr}: ${body.error}`).toBe('success');
        queries++;
        if (body.data.result.length === 0) empty++;
      }
    }
    // Only what has not happened here may be empty (no records dropped, say).
    expect(empty).toBeLessThan(queries / 4);
  }, 60_000);

  it('failed no request on the way', () => {
    expect(outcomes.failed).toBe(0);
    expect(outcomes.ok).toBeGreaterThan(5);
  });
});

describe.skipIf(prometheusBin === null)('the monitoring metrics of --workers', () => {
  it('are the service’s figures once, whichever worker answers the scrape: gauges by max, counters summed', async () => {
    const port = await freePort();
    const serve = spawnServe(['--port', String(port), '--workers', '2'], {
      env: {
        MLFLOW_TRACKING_URI: trackingUri,
        TAGGER_RELOAD_INTERVAL_MS: '0',
        TAGGER_SHUTDOWN_DELAY_MS: '0',
        TAGGER_RECORD_FLUSH_MS: '100',
        TAGGER_MONITORING_INTERVAL_MS: '300',
        TAGGER_LOG_LEVEL: 'warn',
      },
    });
    try {
      const url = `http://127.0.0.1:${port}`;
      await until(
        'two workers answering',
        async () => ((await fetch(`${url}/health/ready`).catch(() => null))?.ok ? true : undefined),
        60_000,
      );
      const metrics = async () => (await fetch(`${url}/metrics`)).text();
      const value = (text: string, line: RegExp) => Number(line.exec(text)?.[1] ?? Number.NaN);
      // The store already holds the records of the cases above: wait for the workers' first figures,
      // so the 40 below are counted from a known start.
      const windowBefore = await until(
        'the first monitoring figures',
        async () => {
          const figure = value(await metrics(), /^tagger_monitoring_window_predictions (\d+)$/m);
          return Number.isNaN(figure) ? undefined : figure;
        },
        30_000,
      );
      // 40 requests over fresh connections: the primary hands them to both workers.
      for (let i = 0; i < 40; i++) {
        const response = await fetch(`${url}/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', connection: 'close' },
          body: JSON.stringify({ texts: [{ text: heldOut[i % heldOut.length]!.text }] }),
        });
        expect(response.status).toBe(200);
      }
      const text = await until(
        'the 40 predictions in both workers’ figures',
        async () => {
          const scraped = await metrics();
          const window = value(scraped, /^tagger_monitoring_window_predictions (\d+)$/m);
          const written = value(scraped, /^tagger_prediction_records_written_total\{sink="store"\} (\d+)$/m);
          return window >= windowBefore + 40 && written >= 40 ? scraped : undefined;
        },
        30_000,
      );
      // One series per gauge (max over the workers' equal figures), not one per worker or their sum.
      expect(text.match(/^tagger_monitoring_window_predictions /gm)).toHaveLength(1);
      expect(text.match(/^tagger_drift_threshold\{signal="unseen_ngrams"\} /gm)).toHaveLength(1);
      expect(value(text, /^tagger_drift_threshold\{signal="unseen_ngrams"\} ([\d.]+)$/m)).toBe(0.2);
      // Counters summed: both workers' records, 40 of them.
      expect(value(text, /^tagger_prediction_records_written_total\{sink="store"\} (\d+)$/m)).toBe(40);
    } finally {
      await serve.stop();
    }
  }, 120_000);
});
