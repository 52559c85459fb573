/**
 * The monitoring assets of deploy/: the alerting rules checked by Prometheus' own `promtool check rules`
 * and unit-tested by `promtool test rules` (Debian's `prometheus` package), the Helm chart's copy of them
 * kept identical, and every metric the rules and the Grafana dashboard query exported by a real app with
 * monitoring (a trained run, predictions, feedback): no panel or alert watches a name Tagger never writes.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { locateBinary, REPO_ROOT } from '../support/components.js';
import { postJson } from '../support/http.js';
import { type MonitoredApp, monitoredApp, trainRun } from '../support/monitoring.js';
import { useTempDir } from '../support/temp-dir.js';

const run = promisify(execFile);
const PROMETHEUS_DIR = resolve(REPO_ROOT, 'deploy', 'prometheus');
const RULES = resolve(PROMETHEUS_DIR, 'tagger.rules.yml');
const DASHBOARD = resolve(REPO_ROOT, 'deploy', 'grafana', 'tagger-monitoring.json');
const promtool = locateBinary(
  'promtool',
  '/usr/bin/promtool',
  'install it with `apt-get install prometheus`',
);

describe.skipIf(promtool === null)('the alerting rules, by promtool', () => {
  it('pass `promtool check rules`', async () => {
    const { stdout } = await run(promtool!, ['check', 'rules', RULES]);
    expect(stdout).toMatch(/SUCCESS: 5 rules found/);
  });

  it('pass their unit tests, `promtool test rules` (every alert before and after its `for`)', async () => {
    const { stdout } = await run(promtool!, ['test', 'rules', 'tagger.rules.test.yml'], {
      cwd: PROMETHEUS_DIR,
    });
    expect(stdout).toMatch(/SUCCESS/);
  });
});

it('the Helm chart installs the very same rules (its copy in files/ is identical)', async () => {
  const chartCopy = resolve(REPO_ROOT, 'deploy', 'helm', 'tagger', 'files', 'tagger.rules.yml');
  expect(await readFile(chartCopy, 'utf8')).toBe(await readFile(RULES, 'utf8'));
});

it('the live-f1 and drift alerts lead to the loop: their runbook is a section of docs/monitoring.md that walks tagger retrain --promote', async () => {
  const rules = parseYaml(await readFile(RULES, 'utf8')) as {
    groups: { rules: { alert?: string; annotations?: { runbook?: string } }[] }[];
  };
  const docs = await readFile(resolve(REPO_ROOT, 'docs', 'monitoring.md'), 'utf8');
  // Each `## ` section by its GitHub anchor: the heading in lower case, punctuation dropped, spaces as hyphens.
  const sections = new Map(
    docs.split(/^(?=## )/m).map((text) => [
      (/^## (.+)$/m.exec(text)?.[1] ?? '')
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, '')
        .replaceAll(' ', '-'),
      text,
    ]),
  );
  for (const name of ['TaggerLiveF1Low', 'TaggerInputDrift']) {
    const rule = rules.groups.flatMap((group) => group.rules).find((r) => r.alert === name);
    const runbook = rule?.annotations?.runbook ?? '';
    const anchor = /^docs\/monitoring\.md#([a-z0-9-]+)/.exec(runbook)?.[1] ?? '';
    expect(runbook, name).toContain('tagger retrain --promote');
    expect(sections.get(anchor), `${name}: ${runbook}`).toMatch(/tagger retrain --promote/);
  }
});

// ---- every queried metric is one Tagger exports -----------------------------------------------------

/** PromQL words that are not metric names: functions, operators, and the label names the queries use. */
const NOT_METRICS = new Set([
  ...['max', 'min', 'sum', 'by', 'rate', 'increase', 'time', 'unless', 'and', 'or'],
  ...['signal', 'tag', 'source', 'sink', 'reason', 'result', 'run_id', 'instance', 'sample'],
]);

/** The identifiers of a PromQL expression outside quotes and range selectors, e.g. `[5m]`. */
function identifiers(expr: string): string[] {
  const bare = expr.replace(/"[^"]*"|'[^']*'/g, '').replace(/\[[^\]]*\]/g, '');
  return [...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)].map((m) => m[0]);
}

/** Metric names of an exposition (histograms with their _bucket, _sum and _count series). */
function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram' || type === 'summary')
      for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
  }
  return names;
}

/** Grafana's reference to the dashboard's data-source variable (a literal `${…}`, not a template string). */
const DATASOURCE_VARIABLE = ['$', '{datasource}'].join('');

interface Panel {
  id: number;
  title: string;
  type: string;
  datasource: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets: { refId: string; expr: string; datasource: { uid: string } }[];
}

const scratch = useTempDir('tagger-prometheus-assets-');
let store: TrackingStore;
let served: MonitoredApp;
let exported: Set<string>;

beforeAll(async () => {
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  await trainRun(uri);
  store = await openTrackingStore(uri, { readOnly: true });
  served = await monitoredApp(store, { config: { minPredictions: 5 } });
  // Predictions, feedback and a refresh, so every family has its series too.
  const texts = [
    'Object detection with YOLO',
    'BERT for NER',
    'Kubeflow pipelines',
    'GANs',
    'Feature stores',
  ];
  const predicted = await postJson(served.app, '/predict', { texts: texts.map((text) => ({ text })) });
  await served.monitoring.recorder.settle();
  const ids = (predicted.json().data.predictions as { prediction_id: string }[]).map((p) => p.prediction_id);
  await postJson(served.app, '/feedback', {
    feedback: ids.map((id) => ({ prediction_id: id, tag: 'mlops' })),
  });
  await served.monitoring.figures();
  exported = exportedNames((await served.app.inject({ method: 'GET', url: '/metrics' })).body);
}, 120_000);

afterAll(async () => {
  await served?.close();
  await store?.close();
});

describe('what the rules and the dashboard query', () => {
  it('every alerting rule names metrics Tagger exports', async () => {
    const rules = parseYaml(await readFile(RULES, 'utf8')) as {
      groups: { rules: { alert: string; expr: string }[] }[];
    };
    const alerts = rules.groups.flatMap((group) => group.rules);
    expect(alerts.map((rule) => rule.alert)).toEqual([
      'TaggerInputDrift',
      'TaggerLiveF1Low',
      'TaggerPredictionRecordsDropped',
      'TaggerNoFeedback',
      'TaggerNoReferenceProfile',
    ]);
    for (const rule of alerts) {
      for (const word of identifiers(rule.expr).filter((w) => !NOT_METRICS.has(w))) {
        expect(exported, `${rule.alert}: ${word}`).toContain(word);
      }
    }
  });

  it('every panel of the Grafana dashboard queries metrics Tagger exports, through the chosen data source', async () => {
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as {
      uid: string;
      panels: Panel[];
      templating: { list: { name: string; type: string }[] };
    };
    expect(dashboard.uid).toBe('tagger-monitoring');
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource' }),
    );
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.datasource.uid, panel.title).toBe(DATASOURCE_VARIABLE);
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets) {
        expect(target.datasource.uid).toBe(DATASOURCE_VARIABLE);
        for (const word of identifiers(target.expr).filter((w) => !NOT_METRICS.has(w))) {
          expect(exported, `${panel.title}: ${word}`).toContain(word);
          queried.add(word);
        }
      }
    }
    // The dashboard shows the live figures, drift and the recorder, not just the request metrics.
    for (const name of [
      'tagger_live_f1',
      'tagger_drift_value',
      'tagger_drift_detected',
      'tagger_prediction_records_dropped_total',
    ]) {
      expect(queried).toContain(name);
    }
  });
});
