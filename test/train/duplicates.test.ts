import { describe, expect, it } from 'vitest';
import type { LabelledText } from '../../src/model/index.js';
import {
  MAX_REPEATED_TEST_SHARE,
  separateTestRepeats,
  testCopyFinder,
  withoutTestRepeats,
} from '../../src/train/duplicates.js';

/** A seeded word of 4-8 letters, and texts of 8 such words: unrelated to each other (no shared 4-grams to speak of). */
let state = 11;
const draw = (): number => {
  state = (state * 1103515245 + 12345) % 2 ** 31;
  return state / 2 ** 31;
};
const word = (): string =>
  Array.from({ length: 4 + Math.floor(draw() * 5) }, () =>
    String.fromCharCode(97 + Math.floor(draw() * 26)),
  ).join('');
const texts = Array.from({ length: 1200 }, () => Array.from({ length: 8 }, word).join(' '));
const rows = (from: number, count: number, line = 0): (LabelledText & { line: number })[] =>
  Array.from({ length: count }, (_, k) => ({
    text: texts[from + k]!,
    tag: `t${(from + k) % 3}`,
    line: line + k + 2,
  }));

describe('separateTestRepeats', () => {
  const seen = rows(0, 200);
  it('takes out up to 2 % of test rows that repeat a training text, and says so by line', () => {
    const test = rows(1000, 100, 0);
    // Two repeats with other case, punctuation and a number appended: the same text.
    test[5] = { ...test[5]!, text: `${seen[3]!.text.toUpperCase()}!` };
    test[40] = { ...test[40]!, text: `${seen[77]!.text} #7` };
    const separated = separateTestRepeats(seen, test);
    expect(separated.test).toHaveLength(98);
    expect(separated.removed.map((row) => row.line)).toEqual([7, 42]);
    expect(separated.warnings).toEqual([
      {
        kind: 'test_repeats_removed',
        message:
          '2 of the 100 test rows (2.0%) repeat a training or validation text (case, spacing, punctuation and digits aside) (lines 7 and 42 of the test data): taken out of the test split, which has 98 rows, so its f1 is measured on texts the model never saw (up to 2% of the test rows are taken out; more is a leak that holds the run back)',
      },
    ]);
  });

  it('keeps more than that in the split as a leak the promotion gate holds back', () => {
    const test = rows(1000, 100);
    for (let i = 0; i <= MAX_REPEATED_TEST_SHARE * 100; i++) test[i] = { ...test[i]!, text: seen[i]!.text };
    const separated = separateTestRepeats(seen, test);
    expect(separated.test).toHaveLength(100);
    expect(separated.removed).toEqual([]);
    expect(separated.warnings.map((w) => w.kind)).toEqual(['test_leak']);
    // The words runs logged before data-check kinds are recognised by (src/served-models/gates.ts).
    expect(separated.warnings[0]!.message).toMatch(
      /^3 of the 100 test rows \(3\.0%\) have the same text as a training or validation row/,
    );
  });

  it('counts near copies that stay, and leaves true neighbours and clean splits alone', () => {
    const test = rows(1000, 100);
    test[0] = { ...test[0]!, text: `${seen[10]!.text} and more` };
    // Two letters of one word changed (a typo).
    test[1] = { ...test[1]!, text: `${seen[11]!.text.slice(0, 10)}qq${seen[11]!.text.slice(12)}` };
    const separated = separateTestRepeats(seen, test);
    expect(separated.test).toHaveLength(100);
    expect(separated.nearCopies).toBe(2);
    expect(separated.warnings.map((w) => w.kind)).toEqual(['test_near_copies']);
    expect(separated.warnings[0]!.message).toMatch(/^2 of the 100 test rows \(2\.0%\) are near copies/);
    expect(separateTestRepeats(seen, rows(1000, 100))).toMatchObject({ nearCopies: 0, warnings: [] });
    // Rows given in memory have no lines to name.
    const plain = rows(1000, 100).map(({ text, tag }) => ({ text, tag }));
    plain[9] = { text: seen[1]!.text, tag: 't0' };
    expect(separateTestRepeats(seen, plain).warnings[0]!.message).toMatch(
      /\(case, spacing, punctuation and digits aside\): taken out/,
    );
  });
});

describe('testCopyFinder and withoutTestRepeats', () => {
  const test = [
    { text: 'Transfer learning with transformers for text classification.', tag: 'nlp' },
    { text: 'How do I top up my card?', tag: 'top_up' },
  ];
  it('tells the same texts and near copies of test rows from neighbours', () => {
    const copyOf = testCopyFinder(test);
    expect(copyOf('transfer learning with transformers for text classification')).toBe('same');
    expect(copyOf('Transfer learning with transformers for text classification. #12')).toBe('same');
    expect(copyOf('HOW DO I TOP UP MY CARD')).toBe('same');
    expect(copyOf('Transfer learning with transformers for text classification, in short.')).toBe('near');
    expect(copyOf('How do I top up my account?')).toBeNull();
    expect(copyOf('Transfer learning for image classification.')).toBeNull();
    expect(copyOf('???')).toBeNull();
  });

  it('leaves out rows that are the same text as a test row, not their near copies', () => {
    const rows = [
      { text: 'how do i top up my card', tag: 'x' },
      { text: 'How do I top up my card, please?', tag: 'x' },
      { text: 'Something else entirely', tag: 'y' },
    ];
    const { rows: kept, left } = withoutTestRepeats(rows, test);
    expect(left).toEqual([rows[0]]);
    expect(kept).toEqual([rows[1], rows[2]]);
  });
});
