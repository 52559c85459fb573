/** cleanText: exact outputs on small inputs, and agreement with the tagifai regex pipeline on random text. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CleanOptions,
  cleanText,
  LEGACY_CLEANUP,
  STOPWORDS,
} from '../../../src/model/text/preprocess.js';

/** tagifai's clean-up, every step on (what models before format 1.8 used). */
const LOWER = { lower: true, stem: false, ...LEGACY_CLEANUP };
/** Every step off but lower-casing (the default). */
const NONE: CleanOptions = {
  lower: true,
  stem: false,
  stopwords: false,
  ascii_only: false,
  strip_urls: false,
};

describe("cleanText with tagifai's clean-up (LEGACY_CLEANUP)", () => {
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
    expect(cleanText('The Model is Great', { ...LOWER, lower: false })).toBe('The Model Great');
  });

  it('Porter-stems when asked', () => {
    expect(cleanText('running generalization models', { ...LOWER, stem: true })).toBe('run gener model');
  });

  it('returns an empty string for text with nothing left', () => {
    expect(cleanText('', LOWER)).toBe('');
    expect(cleanText('😀 !!! the', LOWER)).toBe('');
  });
});

describe('cleanText, step by step', () => {
  it('by default only lower-cases and collapses whitespace: punctuation, stopwords and URLs stay', () => {
    expect(cleanText('  What can   I do?\n', NONE)).toBe('what can i do?');
    expect(cleanText('No!', NONE)).toBe('no!');
    expect(cleanText('see https://x.io/a', NONE)).toBe('see https://x.io/a');
    expect(cleanText('Café déjà', NONE)).toBe('café déjà');
  });

  it('drops stopwords without touching the punctuation around them', () => {
    expect(cleanText('what can you do?', { ...NONE, stopwords: true })).toBe('?');
    expect(cleanText("don't stop, the model!", { ...NONE, stopwords: true })).toBe("' stop, model!"); // "t" is a stopword too;
  });

  it('keeps only ASCII letters and digits with ascii_only, stopwords kept unless asked', () => {
    expect(cleanText('What can I do? déjà', { ...NONE, ascii_only: true })).toBe('what can i do d j');
  });

  it('strips URLs only when asked', () => {
    expect(cleanText('see https://x.io/a now', { ...NONE, strip_urls: true })).toBe('see now');
  });

  it('stems word runs in place, keeping punctuation', () => {
    expect(cleanText('running models, quickly!', { ...NONE, stem: true })).toBe('run model, quickli!');
  });

  it('leaves nothing of a text made only of stopwords when asked to drop them', () => {
    expect(cleanText('what can you do', { ...NONE, stopwords: true })).toBe('');
    expect(cleanText('what can you do', NONE)).toBe('what can you do');
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
        expect(cleanText(text, { ...LOWER, lower: false })).toBe(tagifaiReference(text));
      }),
      { numRuns: 500 },
    );
  });
});
