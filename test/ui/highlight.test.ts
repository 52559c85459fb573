import { describe, expect, it } from 'vitest';
import { featurePattern, highlight } from '../../ui/src/highlight.js';

const marked = (text: string, contributions: Parameters<typeof highlight>[1]) =>
  highlight(text, contributions)
    .filter((segment) => segment.weight !== 0)
    .map((segment) => [segment.text, Number(segment.weight.toFixed(3))]);

describe('highlight', () => {
  it('joins back to the text, whatever it is given', () => {
    const text = 'Fine-tuning BERT, for sentiment… ünïcode 😀 text';
    const segments = highlight(text, [
      { feature: 'bert', analyzer: 'word', contribution: 1 },
      { feature: ' sen', analyzer: 'char_wb', contribution: 0.5 },
      { feature: '(', analyzer: 'char', contribution: 1 },
    ]);
    expect(segments.map((segment) => segment.text).join('')).toBe(text);
  });

  it('finds word n-grams case-insensitively as word prefixes (stems), across removed stopwords', () => {
    expect(
      marked('Learning of Neural Networks for images', [
        { feature: 'learn neural', analyzer: 'word', contribution: 0.8 },
        { feature: 'imag', analyzer: 'word', contribution: -0.3 },
      ]),
    ).toEqual([
      ['Learning of Neural', 0.8],
      ['images', -0.3],
    ]);
    // Only at word starts: `earn` is not in `Learning`.
    expect(marked('Learning', [{ feature: 'earn', analyzer: 'word', contribution: 1 }])).toEqual([]);
  });

  it('reads the padding of char_wb n-grams as word boundaries and sums overlapping n-grams', () => {
    expect(
      marked('a transformer transforms', [
        { feature: ' tra', analyzer: 'char_wb', contribution: 0.5 },
        { feature: 'mer ', analyzer: 'char_wb', contribution: 0.25 },
        { feature: 'ran', analyzer: 'char_wb', contribution: 0.1 },
      ]),
    ).toEqual([
      ['t', 0.5],
      ['ra', 0.6],
      ['n', 0.1],
      ['mer', 0.25],
      ['t', 0.5],
      ['ra', 0.6],
      ['n', 0.1],
    ]);
  });

  it('treats regex characters in features literally and ignores blank features', () => {
    expect(featurePattern({ feature: ' ', analyzer: 'char_wb', contribution: 1 })).toBeNull();
    // An inner space stands for any run of non-word characters; the rest is literal.
    expect(marked('c+ (fast)', [{ feature: '+ (', analyzer: 'char', contribution: 1 }])).toEqual([
      ['+ (', 1],
    ]);
    expect(marked('a.b acb', [{ feature: '.', analyzer: 'char', contribution: 1 }])).toEqual([['.', 1]]);
  });
});
