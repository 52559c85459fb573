/**
 * The training args of the member classifiers and the soft vote: members inherit the top-level
 * hyper-parameters, are stored filled in, and degenerate configurations are refused with a message that
 * says what to do.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_VOTE_MEMBERS, parseTrainingArgs } from '../../../../src/model/args.js';
import { ModelInputError } from '../../../../src/model/errors.js';

describe('parseTrainingArgs: member classifiers and soft_vote', () => {
  it('fills each member with its own hyper-parameters, inherited from the top level unless it sets them', () => {
    const args = parseTrainingArgs({
      classifier: 'soft_vote',
      C: 3,
      nb_alpha: 0.1,
      members: [
        { classifier: 'linear_svm', calibration: 'sigmoid' },
        { classifier: 'nb_lr', C: 0.5, weight: 2 },
        { classifier: 'multinomial_nb' },
      ],
    });
    expect(args.members).toEqual([
      { classifier: 'linear_svm', weight: 1, C: 3, svm_loss: 'squared_hinge', calibration: 'sigmoid' },
      { classifier: 'nb_lr', weight: 2, C: 0.5, nb_ratio_alpha: 1, calibration: 'none' },
      { classifier: 'multinomial_nb', weight: 1, nb_alpha: 0.1, calibration: 'none' },
    ]);
    // Stored filled in, so parsing the stored args again gives the same members.
    expect(parseTrainingArgs(JSON.parse(JSON.stringify(args)))).toEqual(args);
  });

  it('uses the default members when a soft vote names none, and has no members otherwise', () => {
    const args = parseTrainingArgs({ classifier: 'soft_vote' });
    expect(args.members?.map((m) => m.classifier)).toEqual(DEFAULT_VOTE_MEMBERS.map((m) => m.classifier));
    expect(parseTrainingArgs({ classifier: 'linear_svm' }).members).toBeNull();
    expect(parseTrainingArgs({ classifier: 'nb_lr', members: null }).members).toBeNull();
  });

  it('takes multi-label for every one-vs-rest classifier but softmax', () => {
    for (const classifier of ['linear_svm', 'nb_svm', 'complement_nb', 'soft_vote'] as const) {
      expect(parseTrainingArgs({ classifier, multi_label: true }).multi_label).toBe(true);
    }
    expect(() => parseTrainingArgs({ classifier: 'softmax', multi_label: true })).toThrow(/not "softmax"/);
  });

  it.each([
    [
      { classifier: 'soft_vote', members: [{ classifier: 'linear_svm' }] },
      /needs at least 2 members, got 1; a vote of one is that classifier on its own/,
    ],
    [{ classifier: 'soft_vote', members: [] }, /needs at least 2 members, got 0/],
    [{ classifier: 'soft_vote', members: { classifier: 'nb_lr' } }, /"members" must be an array of members/],
    [
      { classifier: 'linear_svm', members: [{ classifier: 'nb_lr' }, { classifier: 'nb_svm' }] },
      /"members" go with "classifier": "soft_vote"/,
    ],
    [
      { classifier: 'soft_vote', members: [{ classifier: 'soft_vote' }, { classifier: 'nb_lr' }] },
      /"members\[0\].classifier" must be one of linear_svm/,
    ],
    [
      { classifier: 'soft_vote', members: [{ classifier: 'ovr' }, { classifier: 'nb_lr' }] },
      /"members\[0\].classifier" must be one of/,
    ],
    [
      { classifier: 'soft_vote', members: [{ classifier: 'multinomial_nb', C: 1 }, { classifier: 'nb_lr' }] },
      /members\[0\] \(multinomial_nb\) has no "C"; it takes nb_alpha, calibration/,
    ],
    [
      { classifier: 'soft_vote', members: [{ classifier: 'nb_lr', alpha: 1 }, { classifier: 'nb_svm' }] },
      /unknown key "alpha" in members\[0\]/,
    ],
    [
      { classifier: 'soft_vote', members: [{ classifier: 'nb_lr', weight: 0 }, { classifier: 'nb_svm' }] },
      /"members\[0\].weight" must be a number in \(0, 1000\]/,
    ],
    [
      { classifier: 'soft_vote', members: [{ classifier: 'nb_lr', C: -1 }, { classifier: 'nb_svm' }] },
      /"members\[0\].C" must be a number in \(0, 1000000\]/,
    ],
    [{ classifier: 'soft_vote', members: ['nb_lr', 'nb_svm'] }, /"members\[0\]" must be an object/],
    [{ C: 0 }, /"C" must be a number in \(0, 1000000\], got 0/],
    [{ nb_alpha: 0 }, /"nb_alpha" must be a number in \(0, 1000\]/],
    [{ nb_svm_beta: 1.5 }, /"nb_svm_beta" must be a number in \[0, 1\]/],
    [{ svm_loss: 'log_loss' }, /"svm_loss" must be one of squared_hinge, hinge/],
    [{ calibration: 'isotonic' }, /"calibration" must be one of none, sigmoid/],
    [{ calibration_folds: 1 }, /"calibration_folds" must be an integer in \[2, 20\]/],
    [
      { classifier: 'linear_svm', ensemble: 3 },
      /"ensemble" \(3\) averages SGD runs .* "linear_svm" is solved exactly/,
    ],
  ])('refuses %j', (raw, message) => {
    expect(() => parseTrainingArgs(raw)).toThrow(ModelInputError);
    expect(() => parseTrainingArgs(raw)).toThrow(message);
  });
});
