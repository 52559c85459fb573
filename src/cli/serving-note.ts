/**
 * What `tagger serve` will make of a run just logged, said at the end of `tagger train` (issue 32: a run
 * trained on new data was silently never served, its test rows differing from the experiment's first
 * run's): held back by a promotion gate — with the fix —, served, or outranked by the run served.
 */
import { readRuns } from '../served-models/candidates.js';
import { servingVerdict } from '../served-models/gates.js';
import type { TrackingStore } from '../tracking/store.js';
import { servingGates } from './inputs.js';

export interface ServingNote {
  /** Whether `tagger serve` (and predict, evaluate) would serve the run now. */
  served: boolean;
  /** Why not: the gate that holds it back, or the run that outranks it; null when served. */
  reason: string | null;
  /** What to do about a gate, for people; null when nothing is held back. */
  fix: string | null;
}

/** What to do about the gate that holds a run back (its reason names the gate). */
function fixFor(reason: string, experiment: string): string | null {
  if (reason.includes('another test set')) {
    return `train on new data into an experiment of its own and serve that (tagger train --experiment ${experiment === 'mine' ? 'mine-2' : 'mine'} …, then tagger serve --experiment mine), keep the experiment's test rows with tagger retrain (it tests on the served run's), or set TAGGER_ALLOW_INCOMPARABLE=true to compare f1s on any test set`;
  }
  if (reason.includes('leaked')) return 'remove the training rows that repeat test rows and train again';
  if (reason.includes('test split has')) return 'give it more rows, or a bigger --test-data file';
  return null;
}

export async function servingNote(
  store: TrackingStore,
  experiment: string,
  runId: string,
): Promise<ServingNote> {
  const read = await readRuns(store, experiment);
  if (!read.ok) return { served: false, reason: read.reason, fix: null };
  const verdict = servingVerdict(read.runs, runId, servingGates());
  if (verdict.heldBack !== null) {
    return { served: false, reason: verdict.heldBack, fix: fixFor(verdict.heldBack, experiment) };
  }
  const served = verdict.served;
  if (served !== undefined && served.info.runId !== runId) {
    const f1 = served.metrics.f1;
    return {
      served: false,
      reason: `run ${served.info.runId} stays served: its f1${f1 === undefined ? '' : ` ${f1.toFixed(4)}`} ranks above this run's`,
      fix: null,
    };
  }
  return { served: true, reason: null, fix: null };
}

/** The note as the last line of `tagger train`'s output. */
export function servingLine(note: ServingNote, runId: string, experiment: string): string {
  if (note.served)
    return `tagger serve --experiment ${experiment} serves run ${runId} (the best run that passes the promotion gates).\n`;
  if (note.fix === null) return `Not served: ${note.reason}.\n`;
  return `NOT SERVED: tagger serve --experiment ${experiment} holds run ${runId} back: ${note.reason}. Fix: ${note.fix}.\n`;
}
