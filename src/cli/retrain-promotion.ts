/**
 * The promotion of `tagger retrain`: whether the retrained run replaces the served one (`decide`: past the
 * margin on the same test rows, no worse on the held-out live labels, no test-leak warning, no
 * gate in the way) and making it real (`promote`: the alias moves, or the run's promotion tag), the last
 * step, so nothing is half-promoted. Split from retrain.ts, which trains and logs the run.
 */
import { EVALUATION_TAGS, RUN_ARTIFACTS } from '../model/index.js';
import { readRuns } from '../served-models/candidates.js';
import { servingVerdict } from '../served-models/gates.js';
import { registerModelVersion } from '../tracking/index.js';
import { TrackingError, type TrackingStore } from '../tracking/store.js';
import { servingGates } from './inputs.js';
import { formatMetric } from './output.js';
import type { PromotionTarget } from './retrain-data.js';
import type { ThreadOutcome } from './training-thread.js';

/** The flags of `tagger retrain` the decision reads. */
export interface PromotionFlags {
  /** How far above the served run's test f1 the new run must be. */
  minGain: number;
  /** Held-out live labels needed before they are judged. */
  minLiveLabels: number;
  /** Promote despite a test-leak warning. */
  allowWarnings?: boolean;
}

export interface Decision {
  promote: boolean;
  reasons: string[];
  /** What was checked, for the output. */
  checks: string[];
}

/** Two runs on the same held-out labels: how many only the served run got right, and only the new one. */
export interface PairedLive {
  parentOnly?: number;
  childOnly?: number;
}

/** The paired counts of two runs' per-label results (absent when either is missing). */
export function pairedCounts(
  parent: readonly boolean[] | undefined,
  child: readonly boolean[] | undefined,
): PairedLive {
  if (parent === undefined || child === undefined) return {};
  let parentOnly = 0;
  let childOnly = 0;
  parent.forEach((right, i) => {
    if (right && !child[i]) parentOnly++;
    else if (!right && child[i]) childOnly++;
  });
  return { parentOnly, childOnly };
}

/**
 * The one-sided p-value of the served run being right alone `parentOnly` times of the
 * `parentOnly + childOnly` labels the two runs disagree on, were both equally good: the exact binomial
 * (McNemar's) test of the pairs. Small: the new run is really worse on live labels, not by chance.
 */
export function worseByChance(parentOnly: number, childOnly: number): number {
  const n = parentOnly + childOnly;
  if (n === 0 || parentOnly <= childOnly) return 1;
  // P(X >= parentOnly) for X ~ Binomial(n, 1/2), summed in log space (n can be thousands).
  const logHalf = n * Math.log(0.5);
  let logChoose = 0;
  for (let k = 1; k <= parentOnly; k++) logChoose += Math.log((n - k + 1) / k);
  let p = 0;
  for (let k = parentOnly; k <= n; k++) {
    p += Math.exp(logChoose + logHalf);
    logChoose += Math.log((n - k) / (k + 1));
  }
  return Math.min(1, p);
}

/** Below this p-value the new run is judged worse on the held-out live labels (worseByChance). */
export const LIVE_WORSE_P = 0.05;

/**
 * Whether to promote: past the margin on the same test rows, no worse on the held-out live labels (when
 * there are enough to judge: worse beyond chance, by the paired test of worseByChance, when the labels
 * each run alone got right are given; else any lower f1), no test-leak warning (unless allowed), and no
 * gate of tagger serve in the way; with every reason not to, and what was checked.
 */
export function decide(
  flags: PromotionFlags,
  outcome: Pick<ThreadOutcome, 'performance' | 'dataWarnings'>,
  parentF1: number | undefined,
  live: { parent: number | null; child: number | null; size: number } & PairedLive,
  gate: string | null,
): Decision {
  const reasons: string[] = [];
  const checks: string[] = [];
  const f1 = outcome.performance.overall.f1;
  if (parentF1 === undefined) {
    reasons.push('the replaced run has no f1 to beat');
  } else if (f1 - parentF1 >= flags.minGain - 1e-12) {
    checks.push(
      `test f1 ${formatMetric(f1)} against the served run's ${formatMetric(parentF1)} on the same test rows: ${f1 >= parentF1 ? '+' : ''}${formatMetric(f1 - parentF1)}, margin ${flags.minGain}`,
    );
  } else {
    reasons.push(
      `its test f1 ${formatMetric(f1)} is not ${flags.minGain} above the served run's ${formatMetric(parentF1)} on the same test rows (${f1 >= parentF1 ? '+' : ''}${formatMetric(f1 - parentF1)})`,
    );
  }
  if (live.size < flags.minLiveLabels || live.parent === null || live.child === null) {
    checks.push(
      `live labels not judged: ${live.size} held out of the random share, fewer than --min-live-labels ${flags.minLiveLabels}`,
    );
  } else if (live.child >= live.parent) {
    checks.push(
      `live f1 ${formatMetric(live.child)} is no worse than ${formatMetric(live.parent)} on ${live.size} held-out labels`,
    );
  } else if (
    live.parentOnly !== undefined &&
    live.childOnly !== undefined &&
    worseByChance(live.parentOnly, live.childOnly) >= LIVE_WORSE_P
  ) {
    // A few hundred labels move an f1 by a point or two: lower by chance is not worse.
    checks.push(
      `live f1 ${formatMetric(live.child)} against ${formatMetric(live.parent)} on ${live.size} held-out labels is within chance (the served run alone right on ${live.parentOnly}, the new run alone on ${live.childOnly}: p = ${worseByChance(live.parentOnly, live.childOnly).toFixed(2)}, worse only below ${LIVE_WORSE_P})`,
    );
  } else {
    const paired =
      live.parentOnly === undefined || live.childOnly === undefined
        ? ''
        : ` (the served run alone right on ${live.parentOnly}, the new run alone on ${live.childOnly}: p = ${worseByChance(live.parentOnly, live.childOnly).toFixed(3)})`;
    reasons.push(
      `its f1 on the ${live.size} held-out live labels is worse: ${formatMetric(live.child)} against the served run's ${formatMetric(live.parent)}${paired}`,
    );
  }
  // Repeated rows within the training data no longer block: test rows that repeat a training text are
  // taken out of the test split (or kept out of training by the merge), so they cannot inflate its f1.
  const blocking = outcome.dataWarnings.filter((w) => w.kind === 'test_leak');
  if (blocking.length > 0 && !flags.allowWarnings) {
    reasons.push(
      `its data checks warned: ${blocking.map((w) => w.message).join('; ')} (--allow-warnings promotes anyway)`,
    );
  } else if (blocking.length > 0) {
    checks.push(`data warnings allowed by --allow-warnings: ${blocking.map((w) => w.kind).join(', ')}`);
  } else {
    checks.push('no test-leak warning');
  }
  if (gate !== null) reasons.push(`tagger serve would hold it back: ${gate}`);
  return { promote: reasons.length === 0, reasons, checks };
}

/** Makes the decision real: the alias moves, or the run's promotion tag; last, so nothing is half-done. */
export async function promote(
  store: TrackingStore,
  runId: string,
  target: PromotionTarget,
  experimentName = 'best',
): Promise<string> {
  if (target.kind === 'alias') {
    const version = await registerModelVersion(store.registry, target.name, {
      source: `runs:/${runId}/${RUN_ARTIFACTS.modelDir}`,
      runId,
    });
    try {
      await store.registry.setAlias(target.name, target.alias, version.version);
    } catch (error) {
      throw new TrackingError(
        error instanceof TrackingError ? error.code : 'UNAVAILABLE',
        `retrain: run ${runId} was registered as version ${version.version} of '${target.name}', but the alias '${target.alias}' could not be moved to it (${(error as Error).message}): nothing was promoted; ${target.uri} still points where it did`,
        { cause: error },
      );
    }
    await store.logBatch(runId, { tags: { [EVALUATION_TAGS.promotion]: 'promoted' } });
    return `${target.uri} now points at version ${version.version} (run ${runId})`;
  }
  await store.logBatch(runId, { tags: { [EVALUATION_TAGS.promotion]: 'promoted' } });
  // The experiment's best is the best f1 among the runs that pass the gates: say whether that is it now.
  const run = await store.getRun(runId);
  const read = run === null ? null : await readRuns(store, experimentName);
  const served = read?.ok ? servingVerdict(read.runs, runId, servingGates()).served : undefined;
  if (served === undefined || served.info.runId === runId) {
    return `tagger serve --experiment ${experimentName} serves run ${runId} from its next reload`;
  }
  return `but run ${served.info.runId} still ranks above it by f1 (${served.metrics.f1?.toFixed(4) ?? '?'}), so tagger serve --experiment ${experimentName} keeps serving that one (a margin below 0 promotes runs that are worse)`;
}
