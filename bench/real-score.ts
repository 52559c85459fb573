/**
 * The one scorer of the `real` benchmark: every system's test predictions against the test file's labels,
 * with src/model's metrics (weighted and macro f1 as scikit-learn averages them; micro f1, which is the
 * accuracy of single-label predictions). CLINC150's out-of-scope rows: a prediction of `out_of_scope` or
 * `other` (Tagger's answer for a text that fits no tag) is the out-of-scope answer, so both are scored as
 * `out_of_scope`, and in-scope accuracy and out-of-scope recall are given as its paper defines them.
 * Several tags per text: each row's tags as the file gives them, those with fewer than 20 training rows
 * (min_freq, for every system alike) counted as `other`.
 */
import { multiLabelMetrics } from '../src/model/evaluation/metrics.js';
import { OUT_OF_SCOPE, type PreparedSet } from './real-data.js';

export interface Scores {
  weightedF1: number;
  macroF1: number;
  /** Single-label: the share of rows predicted right (micro f1). */
  accuracy: number;
  /** Several tags per text. */
  microF1?: number;
  /** CLINC150: in-scope rows predicted right, and out-of-scope rows answered out of scope. */
  inScopeAccuracy?: number;
  outOfScopeRecall?: number;
}

const asSet = (label: string | readonly string[]): string[] =>
  typeof label === 'string' ? [label] : [...new Set(label)].sort();

export function scoreOf(set: PreparedSet, predicted: readonly (string | string[])[]): Scores {
  if (predicted.length !== set.truth.length) {
    throw new Error(`real: ${set.name}: ${predicted.length} predictions for ${set.truth.length} test rows`);
  }
  const outOfScope = (tag: string): string => (tag === 'other' ? OUT_OF_SCOPE : tag);
  const kept = set.keptTags === undefined ? null : new Set(set.keptTags);
  const truth = set.truth.map((label) => {
    if (set.labels === 'out_of_scope') return [outOfScope(label as string)];
    if (kept === null) return asSet(label);
    const tags = asSet(label).filter((tag) => kept.has(tag));
    return tags.length > 0 ? tags : ['other'];
  });
  const guesses = predicted.map((label) =>
    set.labels === 'out_of_scope'
      ? [outOfScope(label as string)]
      : asSet(label).length > 0
        ? asSet(label)
        : ['other'],
  );
  const { averages } = multiLabelMetrics(truth, guesses);
  const scores: Scores = {
    weightedF1: averages.weighted.f1,
    macroF1: averages.macro.f1,
    accuracy: truth.filter((t, i) => t.join('|') === guesses[i]!.join('|')).length / truth.length,
    ...(set.labels === 'multi' ? { microF1: averages.micro.f1 } : {}),
  };
  if (set.labels === 'out_of_scope') {
    const inScope = truth
      .map((t, i) => ({ t: t[0]!, g: guesses[i]![0]! }))
      .filter((r) => r.t !== OUT_OF_SCOPE);
    const oos = truth.map((t, i) => ({ t: t[0]!, g: guesses[i]![0]! })).filter((r) => r.t === OUT_OF_SCOPE);
    scores.inScopeAccuracy = inScope.filter((r) => r.g === r.t).length / Math.max(1, inScope.length);
    scores.outOfScopeRecall = oos.filter((r) => r.g === OUT_OF_SCOPE).length / Math.max(1, oos.length);
  }
  return scores;
}
