/**
 * The `fasttext` family's hyper-parameters, each declared once with its check, default and search range.
 * They are fastText's supervised settings under Tagger's names (`ft_dim` is fastText's `-dim`, …); the
 * defaults are fastText's tutorial settings for many labels, and `ft_buckets` 2^20 becomes fastText's
 * 2,000,000 with the large-data settings (docs/model-decisions.md, the `fasttext` section: the scale
 * benchmark's generated data, never the holdout).
 */
import { choice, type HyperParam, logUniform, num, oneOf } from '../../arg-checks.js';

/**
 * `softmax` (a full softmax over the tags), `hs` (hierarchical softmax: O(log tags) per update), or `auto`:
 * the softmax up to 100 tags, the hierarchical softmax above (train-fasttext.ts's AUTO_HS_ABOVE_TAGS).
 */
export const FASTTEXT_LOSSES = ['auto', 'softmax', 'hs'] as const;
export type FastTextLossArg = (typeof FASTTEXT_LOSSES)[number];

export interface FastTextHyperParams {
  /** Size of every n-gram's embedding and of the text vector (fastText's `-dim`). */
  ft_dim: number;
  /** Passes over the training rows (`-epoch`). */
  ft_epochs: number;
  /** The learning rate at the start; it decreases linearly to 0 over the training (`-lr`). */
  ft_lr: number;
  /** Word n-grams up to this length are features beside the words (`-wordNgrams`; 1: words only). */
  ft_word_ngrams: number;
  /** Character n-grams of each word (with `<` `>` around it) from `ft_minn` to `ft_maxn` characters are features too; `ft_maxn` 0: none. */
  ft_minn: number;
  ft_maxn: number;
  /** How many hashed rows the word and character n-grams share (`-bucket`). */
  ft_buckets: number;
  /** Words seen fewer times than this in the training rows are left out of the dictionary (`-minCount`). */
  ft_min_count: number;
  /**
   * The output layer of a single-label model (`-loss`): `softmax`, `hs` (hierarchical softmax, cheaper
   * with many tags) or `auto` (by the number of tags). A multi-label model is always one-vs-all
   * (`-loss ova`): each tag its own sigmoid.
   */
  ft_loss: FastTextLossArg;
}

export const FASTTEXT_HYPER_PARAMS: {
  readonly [K in keyof FastTextHyperParams]: HyperParam<FastTextHyperParams[K]>;
} = {
  ft_dim: { check: num(2, 1024, { integer: true }), default: 50, search: choice([16, 32, 50, 100]) },
  ft_epochs: { check: num(1, 1000, { integer: true }), default: 25, search: choice([5, 10, 25, 40]) },
  ft_lr: { check: num(0, 10, { minExclusive: true }), default: 0.5, search: logUniform(0.05, 1) },
  ft_word_ngrams: { check: num(1, 5, { integer: true }), default: 2, search: choice([1, 2, 3]) },
  ft_minn: { check: num(1, 16, { integer: true }), default: 3 },
  ft_maxn: { check: num(0, 16, { integer: true }), default: 0, search: choice([0, 4, 5, 6]) },
  ft_buckets: { check: num(1, 1 << 26, { integer: true }), default: 1 << 20 },
  ft_min_count: { check: num(1, 1_000_000, { integer: true }), default: 1 },
  ft_loss: { check: oneOf(FASTTEXT_LOSSES), default: 'auto', search: choice(FASTTEXT_LOSSES) },
};
