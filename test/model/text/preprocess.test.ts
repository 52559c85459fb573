/** cleanText: exact outputs on small inputs, and agreement with the tagifai regex pipeline on random text. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cleanText, STOPWORDS } from '../../../src/model/text/preprocess.js';

const LOWER = { lower: true, stem: false };

describe('cleanText', () => {
  it('has NLTK English stopwords', () => {
    expect(STOPWORDS).toHaveLength(179);
    expect(STOPWORDS).toContain("wouldn't");
  });

  it('lower-cases, drops stopwords and punctuation, collapses spaces', () => {
    expect(cleanText('The  BERT model, for NLP!!', LOWER)).toBe('bert model nlp');
    expect(cleanText('Self-attention (2017): a review.', LOWER)).toBe('self attention 2017 review');
  });

  it('matches stopwords on word boundaries only', () => {
    expect(cleanText('theory of them', LOWER)).toBe('theory');
    expect(cleanText('isn t', LOWER)).toBe('');
    expect(cleanText("don't stop", LOWER)).toBe('stop');
  });

  it('treats non-ASCII letters as word characters when finding stopwords (as Python does)', () => {
    // "d" is a stopword, but inside "déjà" it is not a word of its own.
    expect(cleanText('déjà vu', LOWER)).toBe('d j vu');
  });

  it('strips URLs entirely', () => {
    expect(cleanText('see https://github.com/x/y-z?q=1 and www.example.com/a now', LOWER)).toBe('see');
    expect(cleanText('code: HTTP://EXAMPLE.COM/Repo', LOWER)).toBe('code');
  });

  it('keeps case and case-sensitive stopwords when lower is false', () => {
    expect(cleanText('The Model is Great', { lower: false, stem: false })).toBe('The Model Great');
  });

  it('Porter-stems when asked', () => {
    expect(cleanText('running generalization models', { lower: true, stem: true })).toBe('run gener model');
  });

  it('returns an empty string for text with nothing left', () => {
    expect(cleanText('', LOWER)).toBe('');
    expect(cleanText('😀 !!! the', LOWER)).toBe('');
  });
});

/** tagifai's clean_text steps after URL removal, transliterated regex for regex (Python `\b` → Unicode lookarounds). */
function tagifaiReference(text: string): string {
  const stop = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${STOPWORDS.join('|')})(?![\\p{L}\\p{N}_])\\s*`, 'gu');
  return text
    .replace(stop, '')
    .replace(/[^A-Za-z0-9]+/g, ' ')
    .replace(/ +/g, ' ')
    .trim();
}

describe('cleanText vs the tagifai regex pipeline', () => {
  it('agrees on random texts built from stopwords, words, punctuation and Unicode', () => {
    const piece = fc.oneof(
      fc.constantFrom(...STOPWORDS),
      fc.constantFrom('model', 'BERT', 'x', 'déjà', 'ﬁne', '_a', 'a_b', '12', 'THE', '😀', '𝐀b'),
      fc.constantFrom(' ', '  ', "'", '-', '.', ',', '\t', '\n', '!', 'é'),
      fc.string({ maxLength: 4 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (parts) => {
        const text = parts.join('');
        expect(cleanText(text, { lower: false, stem: false })).toBe(tagifaiReference(text));
      }),
      { numRuns: 500 },
    );
  });
});
