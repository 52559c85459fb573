/** Label normalisation: min_freq and accepted tags fold into `other`. */
import { describe, expect, it } from 'vitest';
import { modelTags, normalizeTag } from '../../src/model/labels.js';

describe('modelTags', () => {
  const tags = ['a', 'a', 'a', 'b', 'b', 'c'];

  it('keeps tags with at least min_freq examples, plus other, sorted', () => {
    expect(modelTags(tags, 2, null)).toEqual(['a', 'b', 'other']);
    expect(modelTags(tags, 3, null)).toEqual(['a', 'other']);
    expect(modelTags(tags, 0, null)).toEqual(['a', 'b', 'c', 'other']);
  });

  it('drops tags outside the accepted set', () => {
    expect(modelTags(tags, 1, ['b', 'c'])).toEqual(['b', 'c', 'other']);
  });
});

describe('normalizeTag', () => {
  it('maps unknown tags to other', () => {
    const classes = new Set(['a', 'other']);
    expect(normalizeTag('a', classes)).toBe('a');
    expect(normalizeTag('zzz', classes)).toBe('other');
  });
});
