/**
 * What a model got wrong on its test split, for people to look at: the confusion matrix (counts of true
 * tag × predicted tag) and the misclassified texts, most confident first. Training logs both with the run
 * (`confusion_matrix.json`, `test_mistakes.json`); the inspection page draws them. A multi-label model
 * has no confusion matrix (a text's tags are not one cell): its per-tag counts are in the performance
 * report, and its mistakes are the texts whose predicted tag set differs from the true one.
 */

/** Counts of test rows by true tag (row) and predicted tag (column), in `labels` order. */
export interface ConfusionMatrix {
  labels: string[];
  matrix: number[][];
}

export interface Mistake {
  /** The test text, cut to MISTAKE_TEXT_CHARS characters (`…` marks a cut). */
  text: string;
  /** The true tag; multi-label: the true tags joined by `|`. */
  true_tag: string;
  /** The predicted tag; multi-label: the predicted tags joined by `|` (`other` when there are none). */
  predicted_tag: string;
  /** The predicted tag's probability (multi-label: the most probable predicted tag's, or `other`'s). */
  confidence: number;
  /** Multi-label only: the true tags. */
  true_tags?: string[];
  /** Multi-label only: the predicted tags, most probable first (possibly none). */
  predicted_tags?: string[];
}

export interface TestMistakes {
  /** Present (true) for a multi-label model's mistakes, which come without a confusion matrix. */
  multi_label?: true;
  /** Misclassified test rows in all. */
  total: number;
  /** The `kept` most confident of them (at most MISTAKES_KEPT): a large test set stays a small artifact. */
  mistakes: Mistake[];
}

export interface ConfusionAndMistakes {
  /** Null for a multi-label model (see above). */
  confusion: ConfusionMatrix | null;
  mistakes: TestMistakes;
}

/** At most this many mistakes are kept: the most confident ones, which say most about the model. */
export const MISTAKES_KEPT = 1000;
/** Texts of kept mistakes are cut to this many characters (about a page of text each at most). */
export const MISTAKE_TEXT_CHARS = 1000;

const cut = (text: string): string =>
  text.length <= MISTAKE_TEXT_CHARS ? text : `${text.slice(0, MISTAKE_TEXT_CHARS - 1)}…`;

/** The most confident MISTAKES_KEPT mistakes, texts cut (a stable sort keeps equal ones in test order). */
const keptMistakes = (wrong: Mistake[]): TestMistakes => ({
  total: wrong.length,
  mistakes: wrong
    .sort((a, b) => b.confidence - a.confidence)
    .slice(0, MISTAKES_KEPT)
    .map((mistake) => ({ ...mistake, text: cut(mistake.text) })),
});

/**
 * The mistakes of multi-label predictions: the texts whose predicted tag set is not their true set.
 * `trueTags` are normalised to the model's tags and sorted, as `normalizeTagSet` gives them.
 */
export function multiLabelMistakes(
  texts: readonly string[],
  trueTags: readonly (readonly string[])[],
  predictions: readonly {
    predicted_tag: string;
    predicted_tags: readonly string[];
    probabilities: Readonly<Record<string, number>>;
  }[],
): ConfusionAndMistakes {
  const wrong: Mistake[] = [];
  trueTags.forEach((truth, row) => {
    const predicted = predictions[row]!;
    const same =
      truth.length === predicted.predicted_tags.length &&
      predicted.predicted_tags.every((tag) => truth.includes(tag));
    if (same) return;
    wrong.push({
      text: texts[row]!,
      true_tag: truth.join('|'),
      predicted_tag: predicted.predicted_tags.join('|') || predicted.predicted_tag,
      confidence: predicted.probabilities[predicted.predicted_tag] ?? 0,
      true_tags: [...truth],
      predicted_tags: [...predicted.predicted_tags],
    });
  });
  return { confusion: null, mistakes: { multi_label: true, ...keptMistakes(wrong) } };
}

/**
 * The confusion matrix and the mistakes of predictions against true tags. `labels` orders the matrix
 * (the model's tags); a true or predicted tag outside it is appended, so no row is ever lost.
 * @example confusionAndMistakes(['a b'], ['x'], [{ tag: 'y', confidence: 0.7 }], ['x', 'y']).confusion.matrix // [[0, 1], [0, 0]]
 */
export function confusionAndMistakes(
  texts: readonly string[],
  trueTags: readonly string[],
  predictions: readonly { tag: string; confidence: number }[],
  labels: readonly string[],
): ConfusionAndMistakes {
  const order = [...labels];
  const index = new Map(order.map((label, i) => [label, i]));
  const indexOf = (label: string): number => {
    let found = index.get(label);
    if (found === undefined) {
      found = order.length;
      order.push(label);
      index.set(label, found);
    }
    return found;
  };
  const cells: [number, number][] = [];
  const wrong: Mistake[] = [];
  trueTags.forEach((trueTag, row) => {
    const predicted = predictions[row]!;
    cells.push([indexOf(trueTag), indexOf(predicted.tag)]);
    if (predicted.tag !== trueTag) {
      wrong.push({
        text: texts[row]!,
        true_tag: trueTag,
        predicted_tag: predicted.tag,
        confidence: predicted.confidence,
      });
    }
  });
  const matrix = order.map(() => order.map(() => 0));
  for (const [t, p] of cells) matrix[t]![p]!++;
  return { confusion: { labels: order, matrix }, mistakes: keptMistakes(wrong) };
}
