/**
 * The run whose test set f1s are compared on (`referenceRun`): the experiment's first finished run that
 * passes the other gates and records its test set — read from the runs alone, so every process (a server
 * running since the first run, one started now, `tagger predict`) holds back the same runs.
 */
import { describe, expect, it } from 'vitest';
import { EVALUATION_TAGS } from '../../src/model/index.js';
import { DEFAULT_GATES, gateFailure, referenceRun } from '../../src/served-models/index.js';
import type { Run, RunStatus } from '../../src/tracking/store.js';

function run(
  runId: string,
  endTime: number | null,
  tags: Record<string, string>,
  status: RunStatus = 'FINISHED',
): Run {
  return {
    info: {
      runId,
      experimentId: '1',
      runName: runId,
      userId: '',
      status,
      startTime: 1,
      endTime,
      artifactUri: '',
      lifecycleStage: 'active',
    },
    metrics: { f1: 0.5 },
    params: {},
    tags,
  };
}

const on = (digest: string, size = 200, learnt = 4) => ({
  [EVALUATION_TAGS.testSetDigest]: digest,
  [EVALUATION_TAGS.testSetSize]: String(size),
  [EVALUATION_TAGS.trainedTags]: String(learnt),
});

describe('referenceRun', () => {
  it('is the first finished run by end time, whatever order the runs are listed in', () => {
    const first = run('first', 10, on('d1'));
    const later = run('later', 20, on('d2'));
    expect(referenceRun([later, first], DEFAULT_GATES)).toBe(first);
    expect(referenceRun([first, later], DEFAULT_GATES)).toBe(first);
  });

  it('skips runs that are not finished, fail the other gates or record no test set', () => {
    const runs = [
      run('running', 1, on('d0'), 'RUNNING'),
      run('tiny', 2, on('d9', 9)),
      run('one-tag', 3, on('d8', 200, 1)),
      run('older-tagger', 4, {}),
      run('reference', 5, on('d1')),
      run('newer', 6, on('d2')),
    ];
    expect(referenceRun(runs, DEFAULT_GATES)?.info.runId).toBe('reference');
    // With no minimum test size the tiny run counts, and it finished first.
    expect(referenceRun(runs, { ...DEFAULT_GATES, minTestSize: 0 })?.info.runId).toBe('tiny');
  });

  it('breaks ties by run id, and is undefined when no run records a test set', () => {
    expect(referenceRun([run('b', 5, on('d1')), run('a', 5, on('d2'))], DEFAULT_GATES)?.info.runId).toBe('a');
    expect(referenceRun([run('old', 5, {})], DEFAULT_GATES)).toBeUndefined();
  });

  it('holds back, against it, runs measured on another test set — the same for every caller', () => {
    const runs = [run('sample', 10, on('sample')), run('other-data', 20, on('other'))];
    const reference = referenceRun(runs, DEFAULT_GATES);
    expect(gateFailure(runs[1]!, DEFAULT_GATES, reference)).toMatch(/another test set than run sample's/);
    expect(gateFailure(runs[0]!, DEFAULT_GATES, reference)).toBeNull();
  });
});
