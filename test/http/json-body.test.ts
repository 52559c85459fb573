/** jsonDepthExceeds: the string-skipping scan agrees with a character-at-a-time one on any text. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDepthExceeds } from '../../src/http/json-body.js';

/** One character at a time: in a string, a backslash skips the next character and a quote ends it. */
function depthExceedsByCharacter(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '[' || ch === '{') {
      if (++depth > limit) return true;
    } else if (ch === ']' || ch === '}') depth--;
  }
  return false;
}

describe('jsonDepthExceeds', () => {
  it('counts nesting outside strings only', () => {
    expect(jsonDepthExceeds('[[1]]', 1)).toBe(true);
    expect(jsonDepthExceeds('[[1]]', 2)).toBe(false);
    expect(jsonDepthExceeds('{"a":"[[[[\\"[["}', 1)).toBe(false);
    expect(jsonDepthExceeds('{"a\\\\":[[1]]}', 2)).toBe(true); // the string ends after an escaped backslash
    expect(jsonDepthExceeds('["unterminated [[[', 1)).toBe(false);
  });

  it('agrees with a character-at-a-time scan on random texts', () => {
    const text = fc
      .array(fc.constantFrom('[', ']', '{', '}', '"', '\\', '\\\\', '\\"', 'a', ' ', ':', ','), {
        maxLength: 40,
      })
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 6 }), (body, limit) => {
        expect(jsonDepthExceeds(body, limit)).toBe(depthExceedsByCharacter(body, limit));
      }),
      { numRuns: 2000 },
    );
  });
});
