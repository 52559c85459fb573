/** The promotion gates, pure: which runs may go live and why not. */
import { describe, expect, it } from 'vitest';
import { EVALUATION_TAGS } from '../../src/model/index.js';
import { DEFAULT_GATES, gateFailure } from '../../src/service/index.js';
import type { Run } from '../../src/tracking/store.js';

function run(runId: string, tags: Record<string, string>): Run {
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
    metrics: { f1: 1 },
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

  it('on a reload, holds back a run measured on another test set unless told to allow it', () => {
    const served = run('served', evaluated('d1', 200, 4));
    expect(gateFailure(run('same', evaluated('d1', 200, 4)), DEFAULT_GATES, served)).toBeNull();
    expect(gateFailure(run('other', evaluated('d2', 200, 4)), DEFAULT_GATES, served)).toMatch(
      /another test set than the served run served's.*TAGGER_ALLOW_INCOMPARABLE/,
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
