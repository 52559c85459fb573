/**
 * What a model got wrong on its test split, for people to look at: the confusion matrix (counts of true
 * tag × predicted tag) and the misclassified texts, most confident first. Training logs both with the run
 * (`confusion_matrix.json`, `test_mistakes.json`); the inspection page draws them.
 */

/** Counts of test rows by true tag (row) and predicted tag (column), in `labels` order. */
export interface ConfusionMatrix {
  labels: string[];
  matrix: number[][];
}

export interface Mistake {
  /** The test text, cut to MISTAKE_TEXT_CHARS characters (`…` marks a cut). */
  text: string;
  true_tag: string;
  predicted_tag: string;
  /** The predicted tag's probability. */
  confidence: number;
}

export interface TestMistakes {
  /** Misclassified test rows in all. */
  total: number;
  /** The `kept` most confident of them (at most MISTAKES_KEPT): a large test set stays a small artifact. */
  mistakes: Mistake[];
}

export interface TestErrors {
  confusion: ConfusionMatrix;
  mistakes: TestMistakes;
}

/** At most this many mistakes are kept: the most confident ones, which say most about the model. */
export const MISTAKES_KEPT = 1000;
/** Texts of kept mistakes are cut to this many characters (about a page of text each at most). */
export const MISTAKE_TEXT_CHARS = 1000;

const cut = (text: string): string =>
  text.length <= MISTAKE_TEXT_CHARS ? text : `${text.slice(0, MISTAKE_TEXT_CHARS - 1)}…`;

/**
 * The confusion matrix and the mistakes of predictions against true tags. `labels` orders the matrix
 * (the model's tags); a true or predicted tag outside it is appended, so no row is ever lost.
 * @example testErrors(['a b'], ['x'], [{ tag: 'y', confidence: 0.7 }], ['x', 'y']).confusion.matrix // [[0, 1], [0, 0]]
 */
export function testErrors(
  texts: readonly string[],
  trueTags: readonly string[],
  predictions: readonly { tag: string; confidence: number }[],
  labels: readonly string[],
): TestErrors {
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
  // Stable sort: equally confident mistakes keep their test order.
  const kept = wrong
    .sort((a, b) => b.confidence - a.confidence)
    .slice(0, MISTAKES_KEPT)
    .map((mistake) => ({ ...mistake, text: cut(mistake.text) }));
  return { confusion: { labels: order, matrix }, mistakes: { total: wrong.length, mistakes: kept } };
}
