/** Slice definitions: the file format, its checks, and what each condition selects. */
import { describe, expect, it } from 'vitest';
import {
  compileSlices,
  DEFAULT_SLICE_DEFINITIONS,
  parseSliceDefinitions,
} from '../../../src/model/evaluation/slices.js';
import { ModelInputError } from '../../../src/model/index.js';

const select = (where: object, rows: [string, string][]): string[] => {
  const [slice] = compileSlices(parseSliceDefinitions({ slices: [{ name: 's', where }] }, 'slices.yaml'));
  return rows.filter(([text, tag]) => slice!.includes(text, tag)).map(([text]) => text);
};

const ROWS: [string, string][] = [
  ['A CNN for text', 'nlp'],
  ['Convolution explained for images and video frames today', 'cv'],
  ['bert', 'nlp'],
  ['  many   spaced    words  ', 'other'],
];

describe('slice conditions', () => {
  it('tag equals, text matches (case-insensitive by default), word counts, and all together', () => {
    expect(select({ tag: 'nlp' }, ROWS)).toEqual(['A CNN for text', 'bert']);
    expect(select({ text_matches: 'cnn|convolution' }, ROWS)).toEqual([
      'A CNN for text',
      'Convolution explained for images and video frames today',
    ]);
    expect(select({ text_matches: 'cnn', case_sensitive: true }, ROWS)).toEqual([]);
    // Words are runs of non-blank characters: surrounding and repeated spaces do not count.
    expect(select({ words_below: 4 }, ROWS)).toEqual(['bert', '  many   spaced    words  ']);
    expect(select({ words_at_least: 4 }, ROWS)).toEqual([
      'A CNN for text',
      'Convolution explained for images and video frames today',
    ]);
    expect(select({ tag: 'nlp', text_matches: 'cnn', words_below: 5 }, ROWS)).toEqual(['A CNN for text']);
  });

  it('the defaults are tagifai nlp_cnn and short_text', () => {
    const [nlpCnn, short] = compileSlices(DEFAULT_SLICE_DEFINITIONS);
    expect(nlpCnn!.name).toBe('nlp_cnn');
    expect(nlpCnn!.includes('Convolutional nets for text', 'natural-language-processing')).toBe(true);
    expect(nlpCnn!.includes('Convolutional nets for images', 'computer-vision')).toBe(false);
    expect(short!.name).toBe('short_text');
    expect(short!.includes('one two three four five six seven', 'x')).toBe(true);
    expect(short!.includes('one two three four five six seven eight', 'x')).toBe(false);
  });
});

describe('parseSliceDefinitions', () => {
  it('round-trips the defaults as a file would give them', () => {
    const raw = JSON.parse(JSON.stringify({ slices: DEFAULT_SLICE_DEFINITIONS })) as unknown;
    expect(parseSliceDefinitions(raw, 'f')).toEqual(DEFAULT_SLICE_DEFINITIONS);
  });

  it('refuses bad files naming the file and the path of the bad value', () => {
    const bad: [unknown, RegExp][] = [
      ['x', /slices.yaml: the file must be a mapping/],
      [{}, /slices.yaml: slices must be a list, got undefined/],
      [{ slices: [{ name: 'a' }] }, /slices\[0\].where must be a mapping/],
      [{ slices: [{ name: 'a', where: {} }] }, /slices\[0\].where needs at least one condition/],
      [{ slices: [{ name: 'a', where: { case_sensitive: true } }] }, /needs at least one condition/],
      [{ slices: [{ name: 'a', where: { tags: 'x' } }] }, /slices\[0\].where.tags is not a known key/],
      [
        { slices: [{ name: 'a', where: { text_matches: '(' } }] },
        /where.text_matches is not a valid regular expression/,
      ],
      [
        { slices: [{ name: 'a', where: { words_below: 0 } }] },
        /where.words_below must be a whole number from 1/,
      ],
      [{ slices: [{ name: 'a', where: { words_below: 2.5 } }] }, /must be a whole number/],
      [{ slices: [{ name: 'a/b', where: { tag: 'x' } }] }, /slices\[0\].name may hold only letters/],
      [
        {
          slices: [
            { name: 'a', where: { tag: 'x' } },
            { name: 'a', where: { tag: 'y' } },
          ],
        },
        /slices\[1\].name repeats the slice name 'a'/,
      ],
    ];
    for (const [raw, message] of bad) {
      expect(() => parseSliceDefinitions(raw, 'slices.yaml')).toThrow(ModelInputError);
      expect(() => parseSliceDefinitions(raw, 'slices.yaml')).toThrow(message);
    }
  });

  it('allows an empty list: no slices at all', () => {
    expect(parseSliceDefinitions({ slices: [] }, 'f')).toEqual([]);
  });
});
