/**
 * Promotion gates: which runs may go live. The contract still serves "the best run of `best` by f1",
 * but an f1 measured on a 9-row test split, on a model that learnt one tag, on another test set than
 * the experiment's first finished run's (`referenceRun`), or of a model that fails its behavioural tests
 * is no reason to serve it. The gates read only the store, so every process chooses the same run. Reads the
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
  /** Serve runs whose test rows leaked into their training data (off by default: their f1 overstates them). */
  allowTestLeak: boolean;
}

export const DEFAULT_GATES: PromotionGates = {
  minTestSize: 30,
  minTags: 2,
  allowIncomparable: false,
  minBehaviouralPassRate: 0,
  allowTestLeak: false,
};

/** A run's data-check kinds (tag `tagger.data_checks`). */
export function dataCheckKinds(run: Pick<Run, 'tags'>): string[] {
  const kinds = run.tags[EVALUATION_TAGS.dataChecks];
  return kinds === undefined || kinds === '' ? [] : kinds.split(',');
}

/** A run's data warnings (tag `tagger.warnings`, one per line). */
export function dataWarnings(run: Pick<Run, 'tags'>): string[] {
  const text = run.tags[EVALUATION_TAGS.warnings];
  return text === undefined ? [] : text.split('\n').filter((line) => line.trim() !== '');
}

/**
 * The leak warning of a run whose test rows are also training rows, or null: by its kind, or — runs logged
 * before kinds were — by the warning's words (src/train/duplicates.ts: separateTestRepeats).
 */
export function testLeakWarning(run: Pick<Run, 'tags'>): string | null {
  const warnings = dataWarnings(run);
  const byWords = warnings.find((line) =>
    /test rows .*have the same text as a training or validation row/.test(line),
  );
  if (byWords !== undefined) return byWords;
  return dataCheckKinds(run).includes('test_leak') ? 'its test rows repeat training rows' : null;
}

function intTag(run: Run, key: string): number | null {
  const text = run.tags[key];
  if (text === undefined || !/^\d+$/.test(text)) return null;
  return Number(text);
}

/**
 * Why a run fails the gates that concern it alone (test size, tags learnt, behavioural tests, a leaked
 * test set, a retrained candidate not promoted), or null.
 */
function ownFailure(candidate: Run, gates: PromotionGates): string | null {
  const promotion = candidate.tags[EVALUATION_TAGS.promotion];
  if (promotion === 'candidate') {
    return 'it is a retrained candidate that was not promoted (tagger retrain --promote promotes only a run that beats the served one; its output says why not)';
  }
  if (promotion === 'rejected') {
    const why = candidate.tags[EVALUATION_TAGS.promotionReason];
    return `tagger retrain did not promote it${why ? `: ${why}` : ''}`;
  }
  const testSize = intTag(candidate, EVALUATION_TAGS.testSetSize);
  if (testSize !== null && testSize < gates.minTestSize) {
    return `its test split has ${testSize} rows, fewer than the ${gates.minTestSize} required (TAGGER_MIN_TEST_SIZE)`;
  }
  const tags = intTag(candidate, EVALUATION_TAGS.trainedTags);
  if (tags !== null && tags < gates.minTags) {
    return `its model learnt ${tags} tag(s), fewer than the ${gates.minTags} required (TAGGER_MIN_TAGS)`;
  }
  if (!gates.allowTestLeak) {
    const leak = testLeakWarning(candidate);
    if (leak !== null) {
      return `its test rows leaked into its training data, so its f1 overstates it (${leak}); remove the repeated rows and train again, or set TAGGER_ALLOW_TEST_LEAK=true to serve it anyway`;
    }
  }
  const passRate = candidate.metrics[EVALUATION_METRICS.behaviouralPassRate];
  if (passRate !== undefined && passRate < gates.minBehaviouralPassRate) {
    return `its model passed ${(100 * passRate).toFixed(1)}% of its behavioural tests, fewer than the ${(100 * gates.minBehaviouralPassRate).toFixed(1)}% required (TAGGER_MIN_BEHAVIOURAL_PASS_RATE; the run's behavioural.json lists the failed cases)`;
  }
  return null;
}

const finishedAt = (run: Run): number => run.info.endTime ?? run.info.startTime;

/**
 * The run whose test set f1s are compared on: the experiment's first finished run (by end time) that
 * passes the other gates and records its test set. A property of the store, not of a process — so a
 * server running since the first run, one started now, and `tagger predict` choose the same run — and
 * what a server that had watched the experiment from the start would be comparing with: it swaps only
 * to runs measured on the served run's test set, so that test set is the first run's. Undefined when
 * no run records one (older or foreign runs: nothing to compare).
 */
export function referenceRun(runs: readonly Run[], gates: PromotionGates): Run | undefined {
  let reference: Run | undefined;
  for (const run of runs) {
    if (run.info.status !== 'FINISHED' || run.tags[EVALUATION_TAGS.testSetDigest] === undefined) continue;
    if (ownFailure(run, gates) !== null) continue;
    if (
      reference === undefined ||
      finishedAt(run) < finishedAt(reference) ||
      (finishedAt(run) === finishedAt(reference) && run.info.runId < reference.info.runId)
    ) {
      reference = run;
    }
  }
  return reference;
}

/**
 * Why `candidate` may not go live, or null when it passes. `reference` (see `referenceRun`) is the run
 * whose test set the candidate's must match, unless `allowIncomparable`.
 */
export function gateFailure(candidate: Run, gates: PromotionGates, reference?: Run): string | null {
  const own = ownFailure(candidate, gates);
  if (own !== null) return own;
  if (reference !== undefined && !gates.allowIncomparable) {
    const mine = candidate.tags[EVALUATION_TAGS.testSetDigest];
    const theirs = reference.tags[EVALUATION_TAGS.testSetDigest];
    // A run without a digest (an older or foreign run) cannot be checked: it is not held back for that.
    if (mine !== undefined && theirs !== undefined && mine !== theirs) {
      return `its f1 was measured on another test set than run ${reference.info.runId}'s, the experiment's first finished run, whose test set f1s are compared on (TAGGER_ALLOW_INCOMPARABLE=true takes the best f1 whatever its test set)`;
    }
  }
  return null;
}

/** What `tagger serve` would make of one run of an experiment (read in f1 order), its artifacts aside. */
export interface ServingVerdict {
  /** Why the gates hold it back, or null. */
  heldBack: string | null;
  /** The run that would be served (the first FINISHED run in f1 order that passes the gates). */
  served: Run | undefined;
}

export function servingVerdict(runs: readonly Run[], runId: string, gates: PromotionGates): ServingVerdict {
  const reference = referenceRun(runs, gates);
  const run = runs.find((candidate) => candidate.info.runId === runId);
  const heldBack =
    run === undefined ? 'it is not a run of the experiment' : gateFailure(run, gates, reference);
  const served = runs.find(
    (candidate) => candidate.info.status === 'FINISHED' && gateFailure(candidate, gates, reference) === null,
  );
  return { heldBack, served };
}
