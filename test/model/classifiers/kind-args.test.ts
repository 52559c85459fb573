/**
 * Which training arguments a run's kind uses (src/model/classifiers/kind-args.ts): a run records every
 * argument with its default, so the argument tables hid nothing — a vote's listed `ft_*` and SGD's
 * `learning_rate` (issue 42) — and `tagger optimize` printed SGD parameters for a soft vote.
 */
import { describe, expect, it } from 'vitest';
import { kindOfParams, ownSearchedArgs, parseTrainingArgs, unusedArgs } from '../../../src/model/index.js';

const kind = (classifier: string, more: Partial<{ encoder: string | null; cascade: boolean }> = {}) => ({
  classifier,
  encoder: null,
  cascade: false,
  ...more,
});

describe('unusedArgs', () => {
  it("a soft vote uses the shared arguments and its members, no other family's hyper-parameters", () => {
    const unused = unusedArgs(kind('soft_vote'));
    for (const key of ['ft_dim', 'ft_loss', 'learning_rate', 'power_t', 'alpha', 'loss', 'C', 'nb_alpha'])
      expect(unused).toContain(key);
    for (const key of [
      'members',
      'analyzer',
      'ngram_max_range',
      'min_df',
      'threshold',
      'classifier',
      'encoder',
    ])
      expect(unused).not.toContain(key);
    expect(unused).toEqual(expect.arrayContaining(['encoder_weight', 'cascade_threshold']));
  });

  it('a lone member classifier uses its own hyper-parameters only; SGD its own; fastText its ft_*', () => {
    const svm = unusedArgs(kind('linear_svm'));
    expect(svm).not.toContain('C');
    expect(svm).not.toContain('svm_loss');
    expect(svm).toEqual(expect.arrayContaining(['nb_alpha', 'members', 'learning_rate', 'ft_dim']));
    const sgd = unusedArgs(kind('ovr'));
    expect(sgd).not.toContain('learning_rate');
    expect(sgd).toEqual(expect.arrayContaining(['C', 'ft_dim', 'members']));
    const fasttext = unusedArgs(kind('fasttext'));
    expect(fasttext).not.toContain('ft_dim');
    expect(fasttext).toEqual(expect.arrayContaining(['alpha', 'C']));
  });

  it('keeps encoder and cascade arguments for runs that have them; hides nothing of an unknown classifier', () => {
    expect(unusedArgs(kind('ovr', { encoder: 'minilm' }))).not.toContain('encoder_weight');
    expect(unusedArgs(kind('soft_vote', { encoder: 'minilm', cascade: true }))).not.toContain(
      'cascade_tolerance',
    );
    expect(unusedArgs(kind('a-classifier-of-the-future'))).toEqual([]);
  });

  it('reads the kind off MLflow params (strings, JSON for all but plain strings)', () => {
    expect(kindOfParams({ classifier: 'soft_vote', encoder: 'null', cascade: 'false' })).toEqual(
      kind('soft_vote'),
    );
    expect(kindOfParams({ classifier: '"ovr"', encoder: 'minilm', cascade: 'true' })).toEqual(
      kind('ovr', { encoder: 'minilm', cascade: true }),
    );
    expect(kindOfParams({ alpha: '0.1' })).toBeNull();
  });
});

describe('ownSearchedArgs: a trial of tagger optimize', () => {
  it("shows each classifier's own arguments: a vote's members with theirs, SGD's rates, a member's own", () => {
    expect(ownSearchedArgs(parseTrainingArgs({}))).toBe(
      'linear_svm(C=1 squared_hinge sigmoid) + nb_lr(C=1 nb_ratio_alpha=1) + multinomial_nb(nb_alpha=0.01)',
    );
    const sgd = ownSearchedArgs(parseTrainingArgs({ classifier: 'ovr', alpha: 1.23456e-4 }));
    expect(sgd).toMatch(/alpha=0\.000123/);
    expect(sgd).toMatch(/learning_rate=/);
    expect(ownSearchedArgs(parseTrainingArgs({ classifier: 'multinomial_nb', nb_alpha: 0.5 }))).toBe(
      'nb_alpha=0.5',
    );
    expect(ownSearchedArgs(parseTrainingArgs({ classifier: 'fasttext' }))).toMatch(/^ft_dim=\d+ ft_epochs=/);
  });
});
