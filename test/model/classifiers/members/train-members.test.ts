/**
 * The members' training options for large data: Platt's sigmoids from the validation split
 * (`calibration_data: validation`, no calibration folds) kept by the refit, and a refit that keeps the
 * validated fit's vocabulary (`refit_vocabulary: false`).
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../../../src/model/args.js';
import type { MemberTagModel } from '../../../../src/model/classifiers/members/member-model.js';
import type { MemberReport } from '../../../../src/model/tag-model.js';
import { trainTagger } from '../../../../src/model/tagger.js';
import { TRAIN, VALIDATION } from '../../fixtures.js';

const VOTE = {
  min_freq: 2,
  analyzer: 'word',
  members: [{ classifier: 'linear_svm', calibration: 'sigmoid' }, { classifier: 'multinomial_nb' }],
} as const;
const train = (args: Record<string, unknown>, reports: MemberReport[] = []) =>
  trainTagger(TRAIN, VALIDATION, parseTrainingArgs({ ...VOTE, ...args }), {
    seed: 4,
    onMember: (r) => reports.push(r),
  }).model as MemberTagModel;

describe('calibration_data: validation', () => {
  it('fits the sigmoids on the validation split (one fit per member, not 1 + calibration_folds), kept by the refit', () => {
    const reports: MemberReport[] = [];
    const refitted = train({ calibration_data: 'validation' }, reports);
    expect(reports.map((r) => `${r.fit} ${r.classifier} ${r.fits}`)).toEqual([
      'validated linear_svm 1',
      'validated multinomial_nb 1',
      'refit linear_svm 1',
      'refit multinomial_nb 1',
    ]);
    const validated = train({ calibration_data: 'validation', refit: false });
    expect(refitted.members[0]!.calibration).not.toBeNull();
    expect(refitted.members[0]!.calibration).toEqual(validated.members[0]!.calibration);
    expect(refitted.members[1]!.calibration).toBeNull();
    // With folds the sigmoids come from 5 more fits on the training rows: others.
    const folds = train({ refit: false });
    expect(folds.members[0]!.calibration).not.toEqual(validated.members[0]!.calibration);
  });

  it('falls back to folds without a validation split', () => {
    const reports: MemberReport[] = [];
    trainTagger(TRAIN, [], parseTrainingArgs({ ...VOTE, calibration_data: 'validation' }), {
      seed: 4,
      onMember: (r) => reports.push(r),
    });
    expect(reports[0]!.fits).toBe(6);
  });
});

describe('refit_vocabulary', () => {
  it('false: the refit keeps the validated fit vocabulary; true: it fits one on train + validation', () => {
    const vocabulary = (m: MemberTagModel) => [...m.vectorizer.vocabulary];
    const validated = train({ refit: false });
    const kept = train({ refit_vocabulary: false });
    const refitted = train({});
    expect(vocabulary(kept)).toEqual(vocabulary(validated));
    expect(vocabulary(refitted).length).toBeGreaterThan(vocabulary(validated).length);
    expect(kept.predict(['language models'])).not.toEqual(validated.predict(['language models']));
  });
});
