/**
 * The promotion gates, pure: which runs may go live and why not; and the behavioural gate on runs as
 * training logs them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRng, EVALUATION_METRICS, EVALUATION_TAGS, parseTrainingArgs } from '../../src/model/index.js';
import { DEFAULT_GATES, gateFailure, servingVerdict } from '../../src/served-models/index.js';
import { openTrackingStore } from '../../src/tracking/index.js';
import type { Run } from '../../src/tracking/store.js';
import { readDataset } from '../../src/train/data.js';
import { logTrainingRun } from '../../src/train/log-run.js';
import { trainAndEvaluate } from '../../src/train/pipeline.js';
import { SAMPLE_DATA } from '../support/components.js';

function run(runId: string, tags: Record<string, string>, metrics: Record<string, number> = { f1: 1 }): Run {
  return {
    info: {
      runId,
      experimentId: '1',
      runName: runId,
      userId: '',
      status: 'FINISHED',
      startTime: 1,
      endTime: 2,
      artifactUri: '',
      lifecycleStage: 'active',
    },
    metrics,
    params: {},
    tags,
  };
}

const evaluated = (digest: string, size: number, tags: number) => ({
  [EVALUATION_TAGS.testSetDigest]: digest,
  [EVALUATION_TAGS.testSetSize]: String(size),
  [EVALUATION_TAGS.trainedTags]: String(tags),
});

describe('gateFailure', () => {
  it('passes a run tested on enough rows with several tags, and runs without evaluation tags', () => {
    expect(gateFailure(run('a', evaluated('d1', 200, 4)), DEFAULT_GATES)).toBeNull();
    expect(gateFailure(run('old', {}), DEFAULT_GATES)).toBeNull();
  });

  it('holds back a tiny test split and a one-tag model, saying which setting decides', () => {
    expect(gateFailure(run('tiny', evaluated('d1', 9, 4)), DEFAULT_GATES)).toMatch(
      /test split has 9 rows, fewer than the 30 required \(TAGGER_MIN_TEST_SIZE\)/,
    );
    expect(gateFailure(run('one', evaluated('d1', 200, 1)), DEFAULT_GATES)).toMatch(
      /learnt 1 tag\(s\), fewer than the 2 required \(TAGGER_MIN_TAGS\)/,
    );
    expect(gateFailure(run('tiny', evaluated('d1', 9, 4)), { ...DEFAULT_GATES, minTestSize: 0 })).toBeNull();
  });

  it('holds back a run whose test rows leaked into its training data, by kind or (older runs) by its warning', () => {
    const leak =
      '12 of the 40 test rows (30.0%) have the same text as a training or validation row: the test f1 overstates how the model does on new texts; remove the duplicates';
    const byKind = run('kind', {
      ...evaluated('d1', 200, 4),
      [EVALUATION_TAGS.warnings]: leak,
      [EVALUATION_TAGS.dataChecks]: 'duplicate_rows,test_leak',
    });
    const byWords = run('words', {
      ...evaluated('d1', 200, 4),
      [EVALUATION_TAGS.warnings]: `other\n${leak}`,
    });
    for (const leaking of [byKind, byWords]) {
      expect(gateFailure(leaking, DEFAULT_GATES)).toMatch(
        /test rows leaked into its training data, so its f1 overstates it \(12 of the 40 test rows .*TAGGER_ALLOW_TEST_LEAK=true/,
      );
      expect(gateFailure(leaking, { ...DEFAULT_GATES, allowTestLeak: true })).toBeNull();
    }
    // Other warnings hold nothing back.
    const duplicates = run('dup', {
      ...evaluated('d1', 200, 4),
      [EVALUATION_TAGS.dataChecks]: 'duplicate_rows',
    });
    expect(gateFailure(duplicates, DEFAULT_GATES)).toBeNull();
  });

  it('holds back a retrained run until it is promoted, saying why it was not', () => {
    const tagged = (promotion: string, reason?: string) =>
      run(promotion, {
        ...evaluated('d1', 200, 4),
        [EVALUATION_TAGS.promotion]: promotion,
        ...(reason ? { [EVALUATION_TAGS.promotionReason]: reason } : {}),
      });
    expect(gateFailure(tagged('candidate'), DEFAULT_GATES)).toMatch(
      /retrained candidate that was not promoted/,
    );
    expect(gateFailure(tagged('rejected', 'its test f1 0.91 is not 0.005 above 0.92'), DEFAULT_GATES)).toBe(
      'tagger retrain did not promote it: its test f1 0.91 is not 0.005 above 0.92',
    );
    expect(gateFailure(tagged('promoted'), DEFAULT_GATES)).toBeNull();
  });

  it('servingVerdict: what serve makes of one run among the experiment’s, in f1 order', () => {
    const best = run('best', evaluated('d2', 200, 4), { f1: 0.99 });
    const first = { ...run('first', evaluated('d1', 200, 4), { f1: 0.9 }) };
    first.info = { ...first.info, endTime: 1 };
    const second = run('second', evaluated('d1', 200, 4), { f1: 0.8 });
    second.info = { ...second.info, endTime: 5 };
    best.info = { ...best.info, endTime: 9 };
    const runs = [best, first, second];
    expect(servingVerdict(runs, 'best', DEFAULT_GATES).heldBack).toMatch(/another test set than run first/);
    expect(servingVerdict(runs, 'second', DEFAULT_GATES)).toMatchObject({ heldBack: null, served: first });
  });

  it("holds back a run measured on another test set than the reference run's unless told to allow it", () => {
    const served = run('served', evaluated('d1', 200, 4));
    expect(gateFailure(run('same', evaluated('d1', 200, 4)), DEFAULT_GATES, served)).toBeNull();
    expect(gateFailure(run('other', evaluated('d2', 200, 4)), DEFAULT_GATES, served)).toMatch(
      /another test set than run served's, the experiment's first finished run.*TAGGER_ALLOW_INCOMPARABLE/,
    );
    expect(
      gateFailure(
        run('other', evaluated('d2', 200, 4)),
        { ...DEFAULT_GATES, allowIncomparable: true },
        served,
      ),
    ).toBeNull();
    // Without a digest on either side there is nothing to compare: not held back for that.
    expect(gateFailure(run('old', {}), DEFAULT_GATES, served)).toBeNull();
    expect(gateFailure(run('new', evaluated('d2', 200, 4)), DEFAULT_GATES, run('old', {}))).toBeNull();
  });
});

describe('the behavioural gate', () => {
  const rate = (value: number) => ({ f1: 0.9, [EVALUATION_METRICS.behaviouralPassRate]: value });
  const gates = { ...DEFAULT_GATES, minBehaviouralPassRate: 0.9 };

  it('is off by default, holds back a run under the minimum, and passes runs without the metric', () => {
    expect(gateFailure(run('low', {}, rate(0.1)), DEFAULT_GATES)).toBeNull();
    expect(gateFailure(run('low', {}, rate(0.85)), gates)).toMatch(
      /passed 85\.0% of its behavioural tests, fewer than the 90\.0% required \(TAGGER_MIN_BEHAVIOURAL_PASS_RATE; the run's behavioural\.json lists the failed cases\)/,
    );
    expect(gateFailure(run('ok', {}, rate(0.9)), gates)).toBeNull();
    expect(gateFailure(run('old', {}, { f1: 0.9 }), gates)).toBeNull();
  });

  it('holds back a run that tagger train logged for a model trained on shuffled labels, not a good one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tagger-gates-'));
    const store = await openTrackingStore(join(dir, 'mlruns'));
    try {
      const data = await readDataset(SAMPLE_DATA);
      const tags = data.map((row) => row.tag);
      const rng = createRng(11);
      for (let i = tags.length - 1; i > 0; i--) {
        const j = Math.floor(rng() * (i + 1));
        [tags[i], tags[j]] = [tags[j]!, tags[i]!];
      }
      const args = parseTrainingArgs({ num_epochs: 10 });
      const log = async (name: string, rows: typeof data) =>
        logTrainingRun(store, {
          experiment: 'gates',
          runName: name,
          args,
          seed: 1,
          outcome: trainAndEvaluate({ data: rows, args, seed: 1 }),
          source: 'test',
        });
      const bad = await log(
        'shuffled',
        data.map((row, i) => ({ ...row, tag: tags[i]! })),
      );
      const good = await log('good', data);
      // As serving reads them: the experiment's runs by f1.
      const runs = await store.searchRuns(bad.experimentId);
      const byId = new Map(runs.map((r) => [r.info.runId, r]));
      const badRun = byId.get(bad.runId)!;
      const goodRun = byId.get(good.runId)!;
      expect(badRun.metrics[EVALUATION_METRICS.behaviouralPassRate]).toBeLessThan(0.8);
      expect(gateFailure(badRun, gates)).toMatch(/of its behavioural tests, fewer than the 90\.0% required/);
      expect(goodRun.metrics[EVALUATION_METRICS.behaviouralPassRate]).toBeGreaterThanOrEqual(0.9);
      expect(gateFailure(goodRun, gates)).toBeNull();
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
