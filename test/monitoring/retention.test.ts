/**
 * Retention (issue 34, item 9): records are bounded by age and by count. Before, only the age
 * (`TAGGER_RECORD_RETENTION_DAYS`, 30) bounded them, so a busy server's records grew without limit
 * until then (a 10-minute soak at ~600 requests/s: ~835 MB an hour, ~600 GB before anything was
 * deleted); now `TAGGER_RECORD_RETENTION_ROWS` keeps the newest records of the store and deletes the rest
 * at every prune. The stores' own pruning is in the contract (test/monitoring/contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { MemoryRecordStore, Monitoring, PRUNE_EVERY_MS, predictionId } from '../../src/monitoring/index.js';
import { captureLog } from '../support/http.js';
import { testMonitoringConfig } from '../support/monitoring.js';

const origin = {
  scope: '1',
  runId: 'run-a',
  modelVersion: null,
  multiLabel: false,
  tags: ['cv', 'nlp', 'other'],
  vocabulary: null,
};
const prediction = {
  predicted_tag: 'nlp',
  predicted_tags: ['nlp'],
  probabilities: { cv: 0.2, nlp: 0.7, other: 0.1 },
};

/** Monitoring with a row bound over a memory store, holding 30 captured predictions (oldest first). */
async function thirtyRecorded(retentionRows: number) {
  const store = new MemoryRecordStore();
  const monitoring = new Monitoring(testMonitoringConfig({ retentionRows }), {
    log: captureLog(),
    openStore: async () => store,
  });
  const ids = Array.from({ length: 30 }, (_, i) => predictionId(Date.now() - 30 + i));
  monitoring.capture(
    origin,
    ids,
    ids.map(() => 'a text'),
    ids.map(() => prediction),
  );
  expect(await monitoring.recorder.settle()).toBe(true);
  return { store, monitoring, ids };
}

describe('retention', () => {
  it('keeps at most TAGGER_RECORD_RETENTION_ROWS records, the newest, and prunes often enough for a busy server', async () => {
    const { store, monitoring, ids } = await thirtyRecorded(10);
    try {
      expect((await store.find('1', ids)).size).toBe(30);
      expect(await monitoring.prune()).toBe(20);
      expect([...(await store.find('1', ids)).keys()].sort()).toEqual(ids.slice(20));
      // Within the bound nothing goes; records past the age go whatever the bound.
      expect(await monitoring.prune()).toBe(0);
      expect(await monitoring.prune(Date.now() + 31 * 86_400_000)).toBe(10);
    } finally {
      await monitoring.close();
    }
    // Every 5 minutes: 600 predictions/s add 180,000 records between two prunes, not 2 million.
    expect(PRUNE_EVERY_MS).toBeLessThanOrEqual(300_000);
  });

  it('keeps every record when the bound is 0 (only the age bounds them)', async () => {
    const { store, monitoring, ids } = await thirtyRecorded(0);
    try {
      expect(await monitoring.prune()).toBe(0);
      expect((await store.find('1', ids)).size).toBe(30);
    } finally {
      await monitoring.close();
    }
  });
});
