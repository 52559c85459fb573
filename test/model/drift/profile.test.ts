/**
 * The reference profile (src/model/drift/profile.ts): the words it counts, the bins, a profile built from a
 * trained model's test predictions, and the checks that keep a broken artifact from being used.
 */

import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  binOf,
  buildReferenceProfile,
  hashVocabulary,
  parseReferenceProfile,
  profileWords,
  unseenShare,
  unseenShareHashed,
  VOCABULARY_LIMIT,
  vocabularyOf,
} from '../../../src/model/drift/profile.js';
import type { Prediction } from '../../../src/model/tagger.js';
import { SAMPLE_DATA } from '../../support/components.js';

const prediction = (tag: string, probabilities: Record<string, number>): Prediction => ({
  predicted_tag: tag,
  predicted_tags: [tag],
  probabilities,
});

describe('the words of the unseen-word signal', () => {
  it('lower-cases, keeps 2+ word characters, drops stopwords', () => {
    expect(profileWords('The BERT model, a Transformer for NLP: x 2 3D')).toEqual([
      'bert',
      'model',
      'transformer',
      'nlp',
      '3d',
    ]);
    expect(profileWords('Überblick über Modelle')).toEqual(['überblick', 'über', 'modelle']);
  });

  it('counts the share of words never seen in training; a text without words is wholly unseen', () => {
    const vocabulary = new Set(vocabularyOf(['Transformers for text classification']));
    expect(unseenShare('text classification with pasta', vocabulary)).toBeCloseTo(1 / 3);
    expect(unseenShare('?!', vocabulary)).toBe(1);
  });

  it('the hashed fast path gives the exact answer (every sample text against half the others’ words)', () => {
    const rows = parse(readFileSync(SAMPLE_DATA, 'utf8'), { columns: true }) as Record<string, string>[];
    const texts = rows.map((row) => `${row.title} ${row.description}`);
    const words = vocabularyOf(texts.filter((_, i) => i % 2 === 0));
    const exact = new Set(words);
    const hashed = hashVocabulary(words);
    const extra = ['Ünïcode Überblick of BERT', 'under_score snake_case x1 ', '', '!!', 'THE AND OF'];
    for (const text of [...texts, ...extra]) {
      expect(unseenShareHashed(text, hashed, exact), text).toBe(unseenShare(text, exact));
    }
  });

  it('keeps at most VOCABULARY_LIMIT words, the most frequent, sorted', () => {
    const texts = Array.from({ length: VOCABULARY_LIMIT + 10 }, (_, i) => `w${i}x`);
    texts.push('common common common');
    const vocabulary = vocabularyOf(texts);
    expect(vocabulary).toHaveLength(VOCABULARY_LIMIT);
    expect(vocabulary).toContain('common');
    expect([...vocabulary].sort()).toEqual(vocabulary);
  });
});

describe('binOf', () => {
  it('puts a value in the bin of its lower edge; below the first and beyond the last are the ends', () => {
    const lower = [0, 16, 32, 64];
    expect([-1, 0, 15, 16, 31.5, 64, 1e9].map((v) => binOf(v, lower))).toEqual([0, 0, 0, 1, 1, 3, 3]);
    expect(binOf(1, [0, 0.1, 0.2, 0.9])).toBe(3);
  });
});

describe('buildReferenceProfile', () => {
  const profile = buildReferenceProfile({
    trainTexts: ['neural networks for vision', 'pipelines and deployment'],
    testTexts: ['vision networks', 'cooking recipes and pasta'],
    testPredictions: [
      prediction('cv', { cv: 0.85, mlops: 0.15 }),
      prediction('mlops', { cv: 0.45, mlops: 0.55 }),
    ],
    tags: ['cv', 'mlops', 'other'],
    multiLabel: false,
  });

  it('counts every model tag, confidences, unseen shares and lengths of the test split', () => {
    expect(profile.rows).toBe(2);
    expect(profile.predicted_tag).toEqual({ cv: 1, mlops: 1, other: 0 });
    expect(profile.confidence.counts[8]).toBe(1);
    expect(profile.confidence.counts[5]).toBe(1);
    // "vision networks": nothing unseen; "cooking recipes pasta": all of it.
    expect(profile.unseen_ngrams.counts[0]).toBe(1);
    expect(profile.unseen_ngrams.counts[9]).toBe(1);
    expect(profile.text_length.counts.reduce((a, b) => a + b, 0)).toBe(2);
    expect(profile.vocabulary).toEqual(['deployment', 'networks', 'neural', 'pipelines', 'vision']);
  });

  it('round-trips through JSON and the parser', () => {
    expect(parseReferenceProfile(JSON.parse(JSON.stringify(profile)))).toEqual(profile);
  });

  it.each([
    [null, /must be a JSON object/],
    [{ format: 'tagger-reference/9' }, /not tagger-reference\/1/],
    [{ ...profile, rows: -1 }, /rows/],
    [{ ...profile, predicted_tag: { cv: 'x' } }, /predicted_tag/],
    [{ ...profile, confidence: { lower: [0, 1], counts: [1] } }, /one count per bin/],
    [{ ...profile, confidence: { lower: [0.5, 0.1], counts: [1, 1] } }, /increasing/],
    [{ ...profile, text_length: { lower: [0], counts: [1.5] } }, /whole numbers/],
    [{ ...profile, vocabulary: [1] }, /vocabulary/],
  ])('refuses a broken profile: %j', (raw, message) => {
    expect(() => parseReferenceProfile(raw)).toThrow(message);
  });
});
