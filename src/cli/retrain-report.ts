/**
 * What `tagger retrain` says beyond the training itself (issue 40): the corrections and rows the test rows
 * kept out of training (a line of the output and a data-check warning of the new run), and which run
 * tagger serve serves now — the one the output names when nothing changed, read from the store, never
 * assumed to be the replaced run (which may itself be held back).
 */
import { readRuns } from '../served-models/candidates.js';
import { servingVerdict } from '../served-models/gates.js';
import { parseModelUri, resolveModelUri } from '../tracking/model-uri.js';
import type { TrackingStore } from '../tracking/store.js';
import type { DataWarning } from '../train/data-checks.js';
import type { MergeSummary } from '../train/merge-corrections.js';
import { servingGates } from './inputs.js';
import type { PromotionTarget } from './retrain-data.js';

/** The output's account of the corrections and rows the test rows kept out of training ('' for none). */
export function keptOutLine(s: MergeSummary): string {
  const near = s.nearTest.feedback + s.nearTest.label_issue;
  return (
    (near > 0
      ? `; ${near} correction(s) kept out as the same text as a test row or a near copy of one (feedback ${s.nearTest.feedback}, fixes ${s.nearTest.label_issue}), so the new run cannot gain by its own test rows`
      : '') +
    (s.dataTestRepeats > 0
      ? `; ${s.dataTestRepeats} of the replaced run's own training rows left out as the same text as a test row`
      : '')
  );
}

/** The run's data-check warning about what the merge kept out for the test rows' sake, or null. */
export function keptOutWarning(s: MergeSummary, parentId: string): DataWarning | null {
  const near = s.nearTest.feedback + s.nearTest.label_issue;
  if (near + s.testCorrections + s.dataTestRepeats === 0) return null;
  const parts = [
    ...(s.testCorrections > 0 ? [`${s.testCorrections} correction(s) of test rows`] : []),
    ...(near > 0
      ? [`${near} correction(s) whose text is the same as a test row's or a near copy of one`]
      : []),
    ...(s.dataTestRepeats > 0
      ? [`${s.dataTestRepeats} training row(s) of run ${parentId} that repeat a test row`]
      : []),
  ];
  return {
    kind: 'corrections_near_test',
    message: `kept out of training so the test rows of run ${parentId} score only texts the model never learnt: ${parts.join(', ')}`,
  };
}

/** Which run tagger serve serves now (the promotion target's), said as the output says it. */
export async function servedNow(
  store: TrackingStore,
  target: PromotionTarget,
  experiment: string,
): Promise<string> {
  try {
    if (target.kind === 'alias') {
      const runId = (await resolveModelUri(store, parseModelUri(target.uri))).runId;
      return `${target.uri} still points at run ${runId}`;
    }
    const read = await readRuns(store, experiment);
    if (!read.ok) return `which run is served cannot be told (${read.reason})`;
    const served = servingVerdict(read.runs, '', servingGates()).served;
    return served === undefined
      ? `no run of experiment '${experiment}' passes the promotion gates, so tagger serve serves none`
      : `run ${served.info.runId} stays served (the best of experiment '${experiment}' that passes the gates)`;
  } catch (error) {
    return `which run is served cannot be told (${(error as Error).message})`;
  }
}
