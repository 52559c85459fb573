/**
 * Promotion gates: which runs may go live. The contract still serves "the best run of `best` by f1",
 * but an f1 measured on a 9-row test split, on a model that learnt one tag, on another test set than
 * the served run's, or of a model that fails its behavioural tests is no reason to swap. Reads the
 * evaluation tags and metrics training writes (`EVALUATION_TAGS`, `EVALUATION_METRICS`); runs without
 * them (logged by older Tagger versions or by other tools) pass the gates they carry no figure for, so
 * that turning a gate on never leaves a store of older runs with nothing to serve.
 */
import { EVALUATION_METRICS, EVALUATION_TAGS } from '../model/index.js';
import type { Run } from '../tracking/store.js';

export interface PromotionGates {
  /** A run tested on fewer rows is not served (0: no minimum). */
  minTestSize: number;
  /** A run whose model learnt fewer distinct tags is not served. */
  minTags: number;
  /** Swap to a run evaluated on another test set than the served run's (off by default). */
  allowIncomparable: boolean;
  /** A run whose `behavioural_pass_rate` is lower is not served (0: off). */
  minBehaviouralPassRate: number;
}

export const DEFAULT_GATES: PromotionGates = {
  minTestSize: 30,
  minTags: 2,
  allowIncomparable: false,
  minBehaviouralPassRate: 0,
};

function intTag(run: Run, key: string): number | null {
  const text = run.tags[key];
  if (text === undefined || !/^\d+$/.test(text)) return null;
  return Number(text);
}

/**
 * Why `candidate` may not go live, or null when it passes. `served` is the run serving now (on a
 * reload), whose test set the candidate's must match.
 */
export function gateFailure(candidate: Run, gates: PromotionGates, served?: Run): string | null {
  const testSize = intTag(candidate, EVALUATION_TAGS.testSetSize);
  if (testSize !== null && testSize < gates.minTestSize) {
    return `its test split has ${testSize} rows, fewer than the ${gates.minTestSize} required (TAGGER_MIN_TEST_SIZE)`;
  }
  const tags = intTag(candidate, EVALUATION_TAGS.trainedTags);
  if (tags !== null && tags < gates.minTags) {
    return `its model learnt ${tags} tag(s), fewer than the ${gates.minTags} required (TAGGER_MIN_TAGS)`;
  }
  const passRate = candidate.metrics[EVALUATION_METRICS.behaviouralPassRate];
  if (passRate !== undefined && passRate < gates.minBehaviouralPassRate) {
    return `its model passed ${(100 * passRate).toFixed(1)}% of its behavioural tests, fewer than the ${(100 * gates.minBehaviouralPassRate).toFixed(1)}% required (TAGGER_MIN_BEHAVIOURAL_PASS_RATE; the run's behavioural.json lists the failed cases)`;
  }
  if (served !== undefined && !gates.allowIncomparable) {
    const mine = candidate.tags[EVALUATION_TAGS.testSetDigest];
    const theirs = served.tags[EVALUATION_TAGS.testSetDigest];
    // A run without a digest (an older or foreign run) cannot be checked: it is not held back for that.
    if (mine !== undefined && theirs !== undefined && mine !== theirs) {
      return `its f1 was measured on another test set than the served run ${served.info.runId}'s, so the two are not comparable (TAGGER_ALLOW_INCOMPARABLE=true swaps anyway)`;
    }
  }
  return null;
}
