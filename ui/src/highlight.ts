/**
 * Where an explanation's n-grams are in the text a person typed. The model sees a cleaned text (lower
 * case, stopwords and punctuation removed, maybe stemmed), so its features are found back in the original
 * approximately: word n-grams as words starting with each (stemmed) token, in order, with at most a few
 * removed words between them; char_wb n-grams as substrings, a padding space meaning a word boundary.
 * Every character gets the sum of the contributions of the features found over it. Hand-written: no
 * library maps a linear model's n-grams back to raw text.
 */

import type { Contribution } from '../../src/http/api-types.js';

/** What highlighting needs of an explanation's contribution (the API's, or a test's). */
export type ContributionLike = Pick<Contribution, 'feature' | 'analyzer' | 'contribution'>;

export interface Segment {
  text: string;
  /** Summed contribution over the segment's characters; 0 for text no listed feature covers. */
  weight: number;
}

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const WORD = '[\\p{L}\\p{N}_]';

/** A regex (global, case-insensitive, Unicode) finding a feature in raw text. */
export function featurePattern(feature: ContributionLike): RegExp | null {
  if (feature.analyzer === 'word') {
    const tokens = feature.feature.split(' ').filter(Boolean);
    if (tokens.length === 0) return null;
    // A stemmed token is a word's prefix; up to three dropped words (stopwords) may sit between tokens.
    const words = tokens.map((token) => `(?<!${WORD})${escapeRegex(token)}${WORD}*`);
    return new RegExp(words.join(`(?:[^\\p{L}\\p{N}_]+${WORD}+){0,3}?[^\\p{L}\\p{N}_]+`), 'giu');
  }
  let body = feature.feature;
  let prefix = '';
  let suffix = '';
  if (feature.analyzer === 'char_wb') {
    if (body.startsWith(' ')) {
      prefix = `(?<!${WORD})`;
      body = body.slice(1);
    }
    if (body.endsWith(' ')) {
      suffix = `(?!${WORD})`;
      body = body.slice(0, -1);
    }
  }
  if (body.trim() === '') return null;
  // Inner spaces stand for any run of non-word characters the cleaning collapsed.
  const inner = body.split(' ').map(escapeRegex).join('[^\\p{L}\\p{N}_]+');
  return new RegExp(`${prefix}${inner}${suffix}`, 'giu');
}

/** The text cut into segments of equal summed contribution, in order; joined they give `text` back. */
export function highlight(text: string, contributions: readonly ContributionLike[]): Segment[] {
  const weights = new Float64Array(text.length);
  for (const contribution of contributions) {
    const pattern = featurePattern(contribution);
    if (pattern === null) continue;
    for (const match of text.matchAll(pattern)) {
      const start = match.index ?? 0;
      for (let i = start; i < start + match[0].length; i++) weights[i]! += contribution.contribution;
    }
  }
  const segments: Segment[] = [];
  let start = 0;
  for (let i = 1; i <= text.length; i++) {
    if (i === text.length || weights[i] !== weights[start]) {
      segments.push({ text: text.slice(start, i), weight: weights[start] ?? 0 });
      start = i;
    }
  }
  return segments;
}
