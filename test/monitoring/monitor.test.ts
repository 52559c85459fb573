/**
 * The monitor's figures of a cascade run (issue 33), from a memory record store: the window's routed share
 * against the training curve's (a drift signal, judged as the others), live f1 of each stage from the
 * random share's labels, and the gauges; a run that is not a cascade has neither. The figures of every run
 * through the API: test/http/monitoring.test.ts.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryRecordStore } from '../../src/monitoring/memory-record-store.js';
import { Monitor, type MonitoredRun } from '../../src/monitoring/monitor.js';
import { StoreHandle } from '../../src/monitoring/store-handle.js';
import { newScope, record } from './contract.js';

const quiet = { info: () => undefined, warn: () => undefined };
const monitors: Monitor[] = [];
afterEach(() => {
  for (const monitor of monitors.splice(0)) monitor.stop();
});

function monitorOf(store: MemoryRecordStore, run: MonitoredRun, registry?: Registry): Monitor {
  const monitor = new Monitor(
    new StoreHandle('memory:', async () => store, quiet),
    {
      windowSeconds: 3600,
      windowPredictions: 10_000,
      feedbackWindowSeconds: 3600,
      feedbackLimit: 10_000,
      intervalMs: 60_000,
      drift: { threshold: 0.2, significance: 0.01, minLive: 50 },
    },
    registry,
  );
  monitors.push(monitor);
  monitor.watch(() => run);
  return monitor;
}

const runOf = (scope: string, cascade: { routed: number; rows: number } | null): MonitoredRun => ({
  scope,
  runId: 'run-a',
  multiLabel: false,
  tags: ['cv', 'nlp', 'other'],
  reference: null,
  referenceProblem: 'no reference in this test',
  test: { precision: 0.9, recall: 0.9, f1: 0.9, num_samples: 100 },
  cascade,
});

/** `n` records answered by `stage`, predicting `predicted`; `truth` given to each as a random-share label. */
async function traffic(
  store: MemoryRecordStore,
  scope: string,
  n: number,
  stage: string,
  predicted: string,
  truth: string,
): Promise<void> {
  const records = Array.from({ length: n }, () =>
    record(scope, { stage, predictedTag: predicted, predictedTags: [predicted] }),
  );
  await store.append(records);
  await store.putFeedback(
    records.map((r) => ({
      predictionId: r.predictionId,
      scope,
      runId: 'run-a',
      tags: [truth],
      receivedMs: Date.now(),
      selection: 'random_share' as const,
    })),
  );
}

describe('monitoring a cascade run', () => {
  it('routes as it was trained to: no drift, and each stage’s live figures', async () => {
    const store = new MemoryRecordStore();
    const scope = newScope();
    // The training curve routed 30 % of 600 rows; live: 70 fast (right), 25 encoder (right), 5 degraded (wrong).
    await traffic(store, scope, 70, 'fast', 'nlp', 'nlp');
    await traffic(store, scope, 25, 'encoder', 'cv', 'cv');
    await traffic(store, scope, 5, 'fast_degraded', 'nlp', 'cv');
    const registry = new Registry();
    const snapshot = (await monitorOf(store, runOf(scope, { routed: 0.3, rows: 600 }), registry).refresh())!;
    expect(snapshot.routing).toMatchObject({
      routed: 0.3,
      expected: 0.3,
      stages: { fast: 70, encoder: 25, fast_degraded: 5 },
    });
    expect(snapshot.routing!.drift).toMatchObject({ drifted: false, live: 100, reference: 600 });
    expect(Object.keys(snapshot.liveByStage)).toEqual(['encoder', 'fast', 'fast_degraded']);
    expect(snapshot.liveByStage.fast).toMatchObject({ f1: 1, num_samples: 70 });
    expect(snapshot.liveByStage.encoder).toMatchObject({ f1: 1, num_samples: 25 });
    expect(snapshot.liveByStage.fast_degraded).toMatchObject({ f1: 0, num_samples: 5 });
    const metrics = await registry.metrics();
    expect(metrics).toContain('tagger_cascade_routed_share{source="live"} 0.3');
    expect(metrics).toContain('tagger_cascade_routed_share{source="training"} 0.3');
    expect(metrics).toContain('tagger_cascade_routing_drift_detected 0');
    expect(metrics).toContain('tagger_live_stage_f1{stage="fast_degraded"} 0');
  });

  it('says when traffic routes far more than the training curve did', async () => {
    const store = new MemoryRecordStore();
    const scope = newScope();
    await traffic(store, scope, 40, 'fast', 'nlp', 'nlp');
    await traffic(store, scope, 160, 'encoder', 'cv', 'cv');
    const snapshot = (await monitorOf(store, runOf(scope, { routed: 0.2, rows: 600 })).refresh())!;
    expect(snapshot.routing).toMatchObject({ routed: 0.8, expected: 0.2 });
    expect(snapshot.routing!.drift.drifted).toBe(true);
    expect(snapshot.routing!.drift.value).toBeGreaterThan(0.2);
  });

  it('has no routing or stage figures for a run that is not a cascade', async () => {
    const store = new MemoryRecordStore();
    const scope = newScope();
    await store.append([record(scope)]);
    const snapshot = (await monitorOf(store, runOf(scope, null)).refresh())!;
    expect(snapshot.routing).toBeNull();
    expect(snapshot.liveByStage).toEqual({});
  });
});
