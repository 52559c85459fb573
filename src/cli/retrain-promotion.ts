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

/**
 * Whether to promote: past the margin on the same test rows, no worse on the held-out live labels (when
 * there are enough to judge), no test-leak warning (unless allowed), and no gate of tagger serve
 * in the way; with every reason not to, and what was checked.
 */
export function decide(
  flags: PromotionFlags,
  outcome: Pick<ThreadOutcome, 'performance' | 'dataWarnings'>,
  parentF1: number | undefined,
  live: { parent: number | null; child: number | null; size: number },
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
  } else {
    reasons.push(
      `its f1 on the ${live.size} held-out live labels is worse: ${formatMetric(live.child)} against the served run's ${formatMetric(live.parent)}`,
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
