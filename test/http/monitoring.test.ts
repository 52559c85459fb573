/**
 * GET /monitoring and the monitoring gauges of /metrics, through the app: a run trained on part of the
 * sample data and served with monitoring, held-out texts of the same kind (no drift), texts of another
 * domain (drift in the unseen-word share), feedback whose live metrics must equal what training's
 * metrics code computes, and a record store that cannot be opened (predictions unaffected, feedback a
 * 503, drops counted, one warning).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MonitoringData } from '../../src/http/api-types.js';
import { weightedMetrics } from '../../src/model/evaluation/metrics.js';
import { MemoryRecordStore, type RecordStore, RecordStoreError } from '../../src/monitoring/index.js';
import { openTrackingStore, type TrackingStore } from '../../src/tracking/index.js';
import { expectEnvelope, postJson } from '../support/http.js';
import {
  type MonitoredApp,
  monitoredApp,
  OTHER_DOMAIN_TEXTS,
  splitSample,
  trainRun,
} from '../support/monitoring.js';
import { useTempDir } from '../support/temp-dir.js';

const scratch = useTempDir('tagger-monitoring-');
let store: TrackingStore;
let served: MonitoredApp;
/** Sample rows the model never saw: (text, tag). */
let heldOut: { text: string; tag: string }[];

beforeAll(async () => {
  const sample = await splitSample(scratch.path);
  heldOut = sample.heldOut;
  const file = sample.train;
  const uri = `sqlite:///${join(scratch.path, 'mlflow.db')}`;
  await trainRun(uri, { data: file });
  store = await openTrackingStore(uri, { readOnly: true });
  served = await monitoredApp(store, { config: { minPredictions: 40 } });
}, 120_000);

afterAll(async () => {
  await served?.close();
  await store?.close();
});

async function predict(
  on: MonitoredApp,
  texts: string[],
): Promise<{ prediction_id: string; predicted_tag: string }[]> {
  const response = await postJson(on.app, '/predict', { texts: texts.map((text) => ({ text })) });
  expect(response.statusCode).toBe(200);
  await on.monitoring.recorder.settle();
  return response.json().data.predictions;
}

async function figures(on: MonitoredApp) {
  const response = await on.app.inject({ method: 'GET', url: '/monitoring' });
  expect(response.statusCode, response.body).toBe(200);
  const body = expectEnvelope(response, { method: 'GET', url: '/monitoring' });
  return (body.data as MonitoringData).monitoring;
}

const metricLines = async (on: MonitoredApp): Promise<string> =>
  (await on.app.inject({ method: 'GET', url: '/metrics' })).body;

describe('GET /monitoring', () => {
  it('shows the served run’s window beside its test split, and no drift for texts like the training data', async () => {
    const before = await figures(served);
    expect(before.predictions).toBe(0);
    expect(before.drift.unseen_ngrams).toMatchObject({
      value: null,
      drifted: false,
      reason: expect.stringMatching(/judged from 40/),
    });
    const predictions = await predict(
      served,
      heldOut.map((row) => row.text),
    );
    const now = await figures(served);
    expect(now.run_id).toBe(served.servedRuns.bestRunId);
    expect(now.predictions).toBe(heldOut.length);
    const counted = Object.fromEntries(now.tags.map((t) => [t.tag, t.count]));
    for (const p of predictions) expect(counted[p.predicted_tag]).toBeGreaterThan(0);
    expect(now.tags.reduce((sum, t) => sum + (t.reference ?? 0), 0)).toBeCloseTo(1);
    for (const signal of ['predicted_tag', 'confidence', 'unseen_ngrams', 'text_length']) {
      expect(now.drift[signal as keyof typeof now.drift], signal).toMatchObject({
        threshold: 0.2,
        drifted: false,
        live: heldOut.length,
      });
      expect(typeof now.drift[signal as keyof typeof now.drift].value).toBe('number');
    }
    expect(now.recording).toEqual({ store: 'memory:', sample_rate: 1, text: 'full', retention_days: 30 });
    expect(now.problems).toEqual([]);
    expect(now.history.length).toBeGreaterThanOrEqual(2);
  });

  it('computes live precision, recall and f1 from the random share exactly as training computes its metrics, and says so', async () => {
    const predictions = await predict(
      served,
      heldOut.map((row) => row.text),
    );
    // Every third label is of the random share; the others were chosen by uncertainty or are corrections.
    const selection = (i: number) =>
      i % 3 === 0 ? 'random_share' : i % 3 === 1 ? 'uncertainty' : 'correction';
    const response = await postJson(served.app, '/feedback', {
      feedback: predictions.map((p, i) => ({
        prediction_id: p.prediction_id,
        tag: heldOut[i]!.tag,
        selection: selection(i),
      })),
    });
    expect(response.json().data.accepted).toBe(heldOut.length);
    const now = await figures(served);
    const random = heldOut.map((_, i) => i).filter((i) => selection(i) === 'random_share');
    const expected = weightedMetrics(
      random.map((i) => heldOut[i]!.tag),
      random.map((i) => predictions[i]!.predicted_tag),
    );
    const everything = weightedMetrics(
      heldOut.map((row) => row.tag),
      predictions.map((p) => p.predicted_tag),
    );
    expect(now.feedback).toBe(heldOut.length);
    expect(now.live).toEqual(expected);
    expect(now.live_all).toEqual(everything);
    expect(now.live_basis).toEqual({
      sample: 'random_share',
      num_samples: random.length,
      other_labels: heldOut.length - random.length,
    });
    expect(Object.keys(now.live_class).sort()).toEqual(now.tags.map((t) => t.tag).sort());
    expect(now.last_feedback_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const metrics = await metricLines(served);
    expect(metrics).toContain(`tagger_live_f1 ${expected.f1}`);
    expect(metrics).toContain(`tagger_live_labels{sample="random_share"} ${random.length}`);
    expect(metrics).toContain(`tagger_live_labels{sample="other"} ${heldOut.length - random.length}`);
    expect(metrics).toContain(`tagger_monitoring_window_feedback ${heldOut.length}`);
    expect(metrics).toContain(`tagger_feedback_received_total{result="accepted"} ${heldOut.length}`);
  });

  it('detects drift when texts of another domain arrive, in the report and in the gauges', async () => {
    const texts = Array.from({ length: 120 }, (_, i) => OTHER_DOMAIN_TEXTS[i % OTHER_DOMAIN_TEXTS.length]!);
    await predict(served, texts);
    const now = await figures(served);
    expect(now.drift.unseen_ngrams.drifted).toBe(true);
    expect(now.drift.unseen_ngrams.value).toBeGreaterThan(0.2);
    expect(now.drift.unseen_ngrams.p_value).toBeLessThan(0.01);
    const metrics = await metricLines(served);
    expect(metrics).toContain('tagger_drift_detected{signal="unseen_ngrams"} 1');
    expect(metrics).toMatch(/tagger_drift_value\{signal="unseen_ngrams"\} \d/);
    expect(metrics).toContain('tagger_drift_threshold{signal="unseen_ngrams"} 0.2');
    expect(metrics).toMatch(/tagger_prediction_records_written_total\{sink="store"\} \d+/);
    expect(metrics).toContain('tagger_reference_profile_available 1');
  });
});

describe('a PSI at or above its threshold that is not drift', () => {
  it('says why: the shift is not significant with so few predictions', async () => {
    const few = await monitoredApp(store, { config: { minPredictions: 3 } });
    try {
      await predict(few, OTHER_DOMAIN_TEXTS.slice(0, 4));
      const now = await figures(few);
      const unseen = now.drift.unseen_ngrams;
      expect(unseen.value).toBeGreaterThanOrEqual(unseen.threshold);
      expect(unseen.drifted).toBe(false);
      expect(unseen.reason).toMatch(
        /^PSI \d\.\d{3} reaches the threshold 0\.2, but the shift is not significant: p = [\d.e-]+, and drift needs p < 0\.01; 4 predictions against \d+ test rows are too few to tell it from chance$/,
      );
      // A signal below its threshold needs no reason.
      for (const signal of Object.values(now.drift)) {
        if (signal.value !== null && signal.value < signal.threshold) expect(signal.reason).toBeUndefined();
      }
    } finally {
      await few.close();
    }
  });
});

describe('an unavailable record store', () => {
  it('leaves predictions alone, answers feedback and figures with what it knows, counts drops, warns once', async () => {
    let attempts = 0;
    const broken = await monitoredApp(store, {
      config: { bufferSize: 20, flushMs: 10 },
      openStore: async () => {
        attempts++;
        throw new RecordStoreError('UNAVAILABLE', 'records: the database is down');
      },
    });
    try {
      for (let i = 0; i < 5; i++) {
        const response = await postJson(broken.app, '/predict', {
          texts: heldOut.slice(0, 10).map((row) => ({ text: row.text })),
        });
        expect(response.statusCode).toBe(200);
      }
      await broken.monitoring.recorder.settle(300);
      const feedback = await postJson(broken.app, '/feedback', {
        feedback: [{ prediction_id: '00000000-0000-4000-8000-000000000000', tag: 'mlops' }],
      });
      expect(feedback.statusCode).toBe(503);
      expect(feedback.headers['retry-after']).toBeDefined();
      expect(feedback.json().detail).toMatch(/the database is down; retry later/);
      const now = await figures(broken);
      expect(now.problems.join(' ')).toMatch(/record store is unavailable/);
      const metrics = await metricLines(broken);
      const dropped = Number(
        /tagger_prediction_records_dropped_total\{sink="store",reason="buffer_full"\} (\d+)/.exec(
          metrics,
        )?.[1],
      );
      expect(dropped).toBeGreaterThanOrEqual(30);
      const warnings = broken.log.lines.filter((line) => line.level === 'warn');
      expect(warnings.map((line) => line.msg)).toEqual([
        expect.stringMatching(/record store cannot be opened/),
        expect.stringMatching(/prediction records cannot be written/),
      ]);
      // Opening is retried at most every 10 s, not at every write.
      expect(attempts).toBeLessThanOrEqual(2);
    } finally {
      await broken.close();
    }
  });
});

describe('a record store that cannot be written (locked, disk full)', () => {
  it('says so in /health/ready and /monitoring while it lasts, with its path masked, and no more once writes work', async () => {
    const records = new MemoryRecordStore();
    const state = { full: true };
    // The store opens, but its writes fail as a full disk's do, until told otherwise.
    const full: RecordStore = Object.assign(Object.create(records) as RecordStore, {
      displayUri: 'sqlite:////var/lib/tagger/records.db',
      append: async (batch: Parameters<RecordStore['append']>[0]) => {
        if (state.full)
          throw new RecordStoreError(
            'UNAVAILABLE',
            'records: cannot write prediction records in sqlite:////var/lib/tagger/records.db: database or disk is full',
          );
        return records.append(batch);
      },
    });
    const app = await monitoredApp(store, {
      config: { flushMs: 10, storeDisplayUri: 'sqlite:////var/lib/tagger/records.db' },
      openStore: async () => full,
    });
    try {
      const ready = async () => {
        const response = await app.app.inject({ method: 'GET', url: '/health/ready' });
        expect(response.statusCode).toBe(200);
        return (response.json().data as { problems?: string[] }).problems ?? [];
      };
      expect(await ready()).toEqual([]);
      for (let i = 0; i < 3; i++) {
        const response = await postJson(app.app, '/predict', { texts: [{ text: heldOut[i]!.text }] });
        expect(response.statusCode).toBe(200);
      }
      await app.monitoring.recorder.settle(300);
      const problem =
        /^prediction records cannot be written to the record store sqlite:\/\/\/…\/records\.db since \S+ \(records: cannot write prediction records in sqlite:\/\/\/…\/records\.db: database or disk is full\); \d+ dropped so far/;
      expect(await ready()).toEqual([expect.stringMatching(problem)]);
      const now = await figures(app);
      expect(now.problems).toContainEqual(expect.stringMatching(problem));
      expect(now.recording.store).toBe('sqlite:///…/records.db');
      expect(JSON.stringify(now)).not.toContain('/var/lib/tagger');
      // Space again: the next write succeeds and the problem is gone.
      state.full = false;
      await postJson(app.app, '/predict', { texts: [{ text: heldOut[3]!.text }] });
      expect(await app.monitoring.recorder.settle(10_000)).toBe(true);
      expect(await ready()).toEqual([]);
      expect((await figures(app)).problems.join(' ')).not.toMatch(/cannot be written/);
    } finally {
      await app.close();
    }
  });
});

describe('a record store that writes, but more slowly than predictions arrive (issue 42)', () => {
  it('its drops are a problem in /health/ready and /monitoring, and logged with their count', async () => {
    const records = new MemoryRecordStore();
    let release!: () => void;
    const slow = new Promise<void>((done) => {
      release = done;
    });
    // Every write succeeds, once the store gets to it.
    const slowStore: RecordStore = Object.assign(Object.create(records) as RecordStore, {
      append: async (batch: Parameters<RecordStore['append']>[0]) => {
        await slow;
        return records.append(batch);
      },
    });
    const app = await monitoredApp(store, {
      config: { flushMs: 10, bufferSize: 100 },
      openStore: async () => slowStore,
    });
    try {
      const ready = async () =>
        (
          (await app.app.inject({ method: 'GET', url: '/health/ready' })).json().data as {
            problems?: string[];
          }
        ).problems ?? [];
      expect(await ready()).toEqual([]);
      // 60 texts fill most of the buffer while the store is busy; the next 60 do not fit.
      for (let i = 0; i < 2; i++) {
        const texts = Array.from({ length: 60 }, (_, k) => ({
          text: heldOut[(i * 60 + k) % heldOut.length]!.text,
        }));
        expect((await postJson(app.app, '/predict', { texts })).statusCode).toBe(200);
        await new Promise((done) => setTimeout(done, 50));
      }
      const problem =
        /^prediction records for the record store memory: are being dropped: 60 since \S+Z, the latest at \S+Z \(60 because more were waiting than TAGGER_RECORD_BUFFER allows/;
      expect(await ready()).toEqual([expect.stringMatching(problem)]);
      expect((await figures(app)).problems).toContainEqual(expect.stringMatching(problem));
      expect(app.log.lines.filter((line) => line.level === 'warn').map((line) => line.msg)).toEqual([
        expect.stringMatching(/^prediction records are being dropped/),
      ]);
      release();
      expect(await app.monitoring.recorder.settle(5_000)).toBe(true);
    } finally {
      await app.close();
    }
  });
});
