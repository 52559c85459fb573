import { describe, expect, it } from 'vitest';
import {
  duplicateKey,
  NEAR_DUPLICATE_SIMILARITY,
  NearDuplicateIndex,
  textSimilarity,
} from '../../../src/model/index.js';
import { jaccard, shingleHashes } from '../../../src/model/text/near-duplicates.js';

/** Short, similar texts of one domain, as an intent data set has them (BANKING77-like). */
const NEIGHBOURS = [
  'How do I top up my card?',
  'How do I top up my account?',
  'How do I top up by bank transfer?',
  'How do I locate my card?',
  'How do I track my card?',
  'Why was my card declined?',
  'Why was my card payment declined?',
  'Can I get a refund?',
  'Can I get a refund for this?',
  'What is the exchange fee?',
  'Where can I rent a car in Singapore?',
  'Where can I rent a car in Boston?',
  'My card has not arrived yet',
  'I want to cancel my transfer',
  'Is there a fee for exchanging currencies?',
  'What are the limits on top ups?',
];

describe('duplicateKey', () => {
  it('drops case, spacing, punctuation, symbols and digits, and reads Unicode compatibly', () => {
    expect(duplicateKey('  Order #12: "Top-up" FAILED!!  ')).toBe('order top up failed');
    expect(duplicateKey('Top up my card.')).toBe(duplicateKey('top up   MY card'));
    expect(duplicateKey('set a timer for 5 minutes')).toBe(duplicateKey('set a timer for 10 minutes'));
    // NFKC: a full-width letter and a ligature are the plain letters.
    expect(duplicateKey('ｆｉnd ﬁles')).toBe('find files');
    expect(duplicateKey('Émile café')).toBe('émile café');
    expect(duplicateKey('12 345 !!')).toBe('');
  });
});

describe('textSimilarity', () => {
  it('is 1 for the same text and the 4-gram Jaccard of the keys otherwise', () => {
    expect(textSimilarity('How do I top up?', 'how do i TOP UP')).toBe(1);
    const a = shingleHashes(duplicateKey('Where do I order a virtual card from?'));
    const b = shingleHashes(duplicateKey('Where do I order a virtual card?'));
    expect(textSimilarity('Where do I order a virtual card from?', 'Where do I order a virtual card?')).toBe(
      jaccard(a, b),
    );
    expect(jaccard(a, b)).toBeGreaterThan(NEAR_DUPLICATE_SIMILARITY);
    // Texts of digits and punctuation only are nobody's copy.
    expect(textSimilarity('123', '123')).toBe(0);
  });

  it('keeps true neighbours apart: same words, another question', () => {
    for (let i = 0; i < NEIGHBOURS.length; i++) {
      for (let j = i + 1; j < NEIGHBOURS.length; j++) {
        expect(
          textSimilarity(NEIGHBOURS[i]!, NEIGHBOURS[j]!),
          `${NEIGHBOURS[i]} / ${NEIGHBOURS[j]}`,
        ).toBeLessThan(NEAR_DUPLICATE_SIMILARITY);
      }
    }
  });
});

describe('NearDuplicateIndex', () => {
  const longTexts = [
    'Transfer learning with transformers for text classification on small data sets.',
    'Object detection with YOLO on drone images, trained on a few thousand frames.',
    'A feature store for machine learning pipelines, with point-in-time joins and a registry.',
    'Fine-tuning BERT for sentiment analysis of product reviews in three languages.',
  ];

  it('finds exact repeats and near copies: "." and " #i" appended, case changed, a word added', () => {
    const index = new NearDuplicateIndex();
    for (const text of [...longTexts, ...NEIGHBOURS]) index.add(text);
    const all = [...longTexts, ...NEIGHBOURS];
    all.forEach((text, id) => {
      for (const copy of [`${text}.`, `${text} #${id}`, text.toUpperCase(), `  ${text.toLowerCase()}  `]) {
        expect(index.match(copy), copy).toEqual({ id, similarity: 1 });
      }
    });
    longTexts.forEach((text, id) => {
      const near = index.match(`${text} Really good.`);
      expect(near?.id, text).toBe(id);
      expect(near!.similarity).toBeGreaterThanOrEqual(NEAR_DUPLICATE_SIMILARITY);
      expect(near!.similarity).toBeLessThan(1);
      // One word misspelt.
      expect(index.match(text.replace('with', 'wiht'))?.id).toBe(id);
    });
  });

  it('does not match true neighbours or unrelated texts', () => {
    const index = new NearDuplicateIndex();
    for (const text of NEIGHBOURS.slice(0, 8)) index.add(text);
    for (const text of NEIGHBOURS.slice(8)) expect(index.match(text), text).toBeNull();
    expect(index.match('How do I top up my savings?')).toBeNull();
    expect(index.match('')).toBeNull();
    expect(index.match('!!! 42')).toBeNull();
  });

  it('answers the most alike of several near copies, the first added among equals', () => {
    const index = new NearDuplicateIndex();
    const base = longTexts[0]!;
    index.add(`${base} And more.`);
    index.add(`${base} More.`);
    index.add(`${base} More.`);
    expect(index.match(base)).toMatchObject({ id: 1 });
    expect(index.match(`${base} more`)).toEqual({ id: 1, similarity: 1 });
    expect(index.size).toBe(3);
  });

  it('finds every pair a brute-force comparison finds on generated near copies', () => {
    // Texts with shared vocabulary, and copies with one word changed, dropped or added.
    const words =
      'card top up transfer fee refund account pin limit cash exchange rate payment pending'.split(' ');
    let state = 7;
    const next = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31;
    };
    const texts = Array.from({ length: 300 }, () =>
      Array.from({ length: 6 + Math.floor(next() * 8) }, () => words[Math.floor(next() * words.length)]).join(
        ' ',
      ),
    );
    const queries = texts.slice(0, 150).map((text) => {
      const parts = text.split(' ');
      parts[Math.floor(next() * parts.length)] = words[Math.floor(next() * words.length)]!;
      return parts.join(' ');
    });
    const index = new NearDuplicateIndex();
    for (const text of texts) index.add(text);
    let near = 0;
    for (const query of queries) {
      const best = Math.max(...texts.map((text) => textSimilarity(query, text)));
      const found = index.match(query);
      if (best >= NEAR_DUPLICATE_SIMILARITY) {
        near++;
        expect(found?.similarity, query).toBe(best);
      } else expect(found, query).toBeNull();
    }
    // Both sides of the threshold were tried.
    expect(near).toBeGreaterThan(20);
    expect(near).toBeLessThan(queries.length - 20);
  });
});
