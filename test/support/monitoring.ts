/**
 * Fixtures for the monitoring tests: a run trained and logged the real way (so it has its reference
 * profile) into a SQLite tracking database, an app serving it with monitoring wired as `tagger serve`
 * wires it, the settings at test scale, and texts from another domain than the sample data's machine
 * learning projects (to drive drift).
 */

import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { type AppDeps, createApp, createHttpMetrics, type HttpMetrics } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { parseTrainingArgs } from '../../src/model/index.js';
import { MONITORING_DEFAULTS, Monitoring, type MonitoringConfig } from '../../src/monitoring/index.js';
import { type EncoderProvider, ServedRuns } from '../../src/served-models/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { readDataset } from '../../src/train/data.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { trainAndEvaluate } from '../../src/train/pipeline.js';
import { SAMPLE_DATA } from './components.js';
import { captureLog } from './http.js';

/**
 * The sample data split for live-traffic tests: its first 200 rows written to `dir/train.csv` (what the
 * run is trained on), the rest returned as (text, tag) pairs the model never saw.
 */
export async function splitSample(
  dir: string,
): Promise<{ train: string; heldOut: { text: string; tag: string }[] }> {
  const rows = parse(readFileSync(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[];
  const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
  const train = join(dir, 'train.csv');
  await writeFile(
    train,
    `title,description,tag\n${rows
      .slice(0, 200)
      .map((row) => [row.title!, row.description!, row.tag!].map(quote).join(','))
      .join('\n')}\n`,
  );
  const heldOut = rows.slice(200).map((row) => ({ text: `${row.title} ${row.description}`, tag: row.tag! }));
  return { train, heldOut };
}

/** Trains one quick run on `data` (default the sample projects) into experiment `experiment` of `trackingUri`. */
export async function trainRun(
  trackingUri: string,
  options: { experiment?: string; data?: string; args?: Record<string, unknown> } = {},
): Promise<{ runId: string; experimentId: string }> {
  const store = await openTrackingStore(trackingUri);
  try {
    const rows = await readDataset(options.data ?? SAMPLE_DATA);
    const args = parseTrainingArgs({ num_epochs: 3, ngram_max_range: 4, ...options.args });
    const outcome = trainAndEvaluate({ data: rows, args, seed: 42 });
    const logged = await logTrainingRun(store, {
      experiment: options.experiment ?? 'best',
      runName: 'monitored',
      args,
      seed: 42,
      outcome,
      source: 'test',
    });
    return { runId: logged.runId, experimentId: logged.experimentId };
  } finally {
    await store.close();
  }
}

/** Monitoring settings at test scale: everything fast and small, records in memory unless given. */
export function testMonitoringConfig(overrides: Partial<MonitoringConfig> = {}): MonitoringConfig {
  return {
    ...MONITORING_DEFAULTS,
    storeUri: 'memory:',
    storeDisplayUri: 'memory:',
    sinkUrl: null,
    flushMs: 50,
    intervalMs: 0,
    minPredictions: 50,
    ...overrides,
  };
}

export interface MonitoredApp {
  app: TaggerApp;
  servedRuns: ServedRuns;
  monitoring: Monitoring;
  metrics: HttpMetrics;
  log: ReturnType<typeof captureLog>;
  close(): Promise<void>;
}

/** An app serving experiment `experiment` of `store`, with monitoring (its gauges in the app's /metrics). */
export async function monitoredApp(
  store: TrackingStore,
  options: {
    experiment?: string;
    config?: Partial<MonitoringConfig>;
    deps?: Omit<AppDeps, 'serving' | 'metrics' | 'monitoring'>;
    openStore?: ConstructorParameters<typeof Monitoring>[1]['openStore'];
    /** Opens the encoders of encoder and cascade runs (without it they are held back). */
    encoders?: EncoderProvider;
  } = {},
): Promise<MonitoredApp> {
  const log = captureLog();
  const servedRuns = await ServedRuns.load(store, {
    experiment: options.experiment ?? 'best',
    modelCacheSize: 2,
    log,
    ...(options.encoders ? { encoders: options.encoders } : {}),
  });
  const metrics = createHttpMetrics({ defaultMetrics: false });
  const monitoring = new Monitoring(testMonitoringConfig(options.config), {
    log,
    registry: metrics.registry,
    ...(options.openStore ? { openStore: options.openStore } : {}),
  });
  const app = createApp({ ...options.deps, serving: { mode: 'runs', servedRuns }, metrics, monitoring });
  await app.ready();
  return {
    app,
    servedRuns,
    monitoring,
    metrics,
    log,
    close: async () => {
      await app.close();
      await monitoring.close();
    },
  };
}

/** Texts far from machine-learning projects: what a tagger of ML projects has never seen. */
export const OTHER_DOMAIN_TEXTS = [
  'Slow-cooked beef stew with carrots, onions and red wine, simmered for three hours',
  'Grandmother’s apple pie recipe: butter crust, cinnamon, brown sugar and a lattice top',
  'The striker scored twice in the second half as the home side won the derby',
  'Tenant rights when the landlord refuses to return the security deposit',
  'Pruning roses in late winter keeps the bushes healthy and flowering',
  'A walking tour of the old harbour, the cathedral and the fish market',
  'How to knit a scarf with chunky wool on circular needles',
  'Marathon training plan: long runs on Sundays, intervals on Wednesdays',
  'Sourdough starter feeding schedule and the best flour for crusty loaves',
  'The orchestra opened the season with Brahms and a new violin concerto',
  'Repainting a wooden fence: sanding, primer and two coats of stain',
  'Wedding toast tips for the best man: keep it short and kind',
];
