/**
 * What `tagger optimize` searches: the features (analyzer, n-gram range, sublinear tf, min_df), class
 * balancing, and the classifier — each classifier family's choices (SGD; each member classifier alone; a
 * soft vote of 2–4 distinct members), drawn with the ranges the families declare (src/model/classifiers/).
 * With an encoder every trial uses a family that takes embeddings and the weight of the embedding block is
 * searched too. Seeded: the same RNG gives the same trials.
 */
import {
  CLASSIFIER_FAMILIES,
  type ClassifierFamily,
  LOSSES,
  parseTrainingArgs,
  type TrainingArgs,
} from '../model/index.js';

/** The searched features and balancing (the classifiers' own ranges are their families'). */
export const SEARCH_SPACE = {
  analyzer: ['word', 'char', 'char_wb', 'char_wb+word'] as const,
  /**
   * Inclusive n-gram range ends per analyzer: [lowest min, highest min] and [lowest max, highest max]
   * (word n-grams beyond 3 are too sparse to help; `char_wb+word`'s range is its char_wb block's).
   */
  ngramMin: { word: [1, 2], char: [1, 3], char_wb: [1, 3], 'char_wb+word': [1, 3] } as const,
  ngramMax: { word: [1, 3], char: [3, 8], char_wb: [3, 8], 'char_wb+word': [3, 6] } as const,
  sublinearTf: [false, true] as const,
  minDf: [1, 2, 3] as const,
  /** The SGD family's losses, which its trials draw among. */
  loss: LOSSES,
  /**
   * Class balancing: by oversampling (the defaults), by sklearn's `balanced` class weights, or none.
   * (Both together would be balancing twice: `balanced` counts the oversampled rows, which are balanced.)
   */
  balancing: [
    { oversample: true, class_weight: null },
    { oversample: false, class_weight: 'balanced' },
    { oversample: false, class_weight: null },
  ] as const,
  /**
   * With an encoder (`tagger optimize --encoder`), the weight of its embedding block is searched too
   * (log-uniform); the embeddings are computed once for all trials.
   */
  encoderWeight: [0.25, 4] as const,
};

const logUniform = (random: () => number, [low, high]: readonly [number, number]): number =>
  Math.exp(Math.log(low) + random() * (Math.log(high) - Math.log(low)));

/** Rounds to 4 significant digits so logged params stay readable. */
const round = (value: number): number => Number(value.toPrecision(4));

const pick = <T>(random: () => number, values: readonly T[]): T =>
  values[Math.floor(random() * values.length)]!;
const between = (random: () => number, [low, high]: readonly [number, number]): number =>
  low + Math.floor(random() * (high - low + 1));

/** Each choice the search picks among (a family's `sgd`, each member classifier, `soft_vote`) and its family. */
const choicesOf = (families: readonly ClassifierFamily[]) =>
  families.flatMap((family) => family.search.choices.map((choice) => ({ choice, family })));

/** Draws the arguments of one trial from the space, on top of `base` (which fixes everything else). */
export function sampleArgs(base: TrainingArgs, random: () => number): TrainingArgs {
  const analyzer = pick(random, SEARCH_SPACE.analyzer);
  const ngramMax = between(random, SEARCH_SPACE.ngramMax[analyzer]);
  const ngramMin = Math.min(ngramMax, between(random, SEARCH_SPACE.ngramMin[analyzer]));
  const balancing = pick(random, SEARCH_SPACE.balancing);
  // The embeddings need a family that takes them and a choice that reads them; a single such choice is
  // taken without a draw.
  const choices = choicesOf(
    base.encoder === null ? CLASSIFIER_FAMILIES : CLASSIFIER_FAMILIES.filter((f) => f.takesEmbeddings),
  ).filter(({ choice, family }) => family.search.allows?.(choice, base) ?? true);
  const { choice, family } = choices.length === 1 ? choices[0]! : pick(random, choices);
  const features = {
    ...base,
    analyzer,
    ngram_min_range: ngramMin,
    ngram_max_range: ngramMax,
    sublinear_tf: pick(random, SEARCH_SPACE.sublinearTf),
    min_df: pick(random, SEARCH_SPACE.minDf),
    oversample: balancing.oversample,
    class_weight: balancing.class_weight,
    ensemble: 1,
    members: null,
  };
  const drawn = family.search.draw(choice, base, random);
  // Drawn last and only with an encoder, so a TF-IDF search draws the same trials as before.
  const encoder =
    base.encoder === null ? {} : { encoder_weight: round(logUniform(random, SEARCH_SPACE.encoderWeight)) };
  return parseTrainingArgs({ ...features, ...drawn, ...encoder });
}
