/** TfidfVectorizer on hand-checkable corpora, plus fit/transform consistency on random text (sklearn parity is in tfidf-parity.test.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ModelInputError } from '../../../src/model/errors.js';
import { createRng } from '../../../src/model/rng.js';
import { compareCodePoints, TfidfVectorizer } from '../../../src/model/text/tfidf.js';

const rows = (v: TfidfVectorizer, docs: string[]): Record<string, number>[] => {
  const m = v.transform(docs);
  return docs.map((_, r) => {
    const row: Record<string, number> = {};
    for (let p = m.indptr[r]!; p < m.indptr[r + 1]!; p++) row[v.vocabulary[m.indices[p]!]!] = m.data[p]!;
    return row;
  });
};

describe('TfidfVectorizer', () => {
  it('computes smoothed idf and l2-normalised tf-idf by hand (word unigrams)', () => {
    const v = TfidfVectorizer.fit(['ab ab', 'ab cd'], { analyzer: 'word', ngramMin: 1, ngramMax: 1 });
    expect(v.vocabulary).toEqual(['ab', 'cd']);
    const idfCd = Math.log(3 / 2) + 1; // ln((1+n)/(1+df)) + 1 with n=2, df=1
    expect(v.idf[0]).toBeCloseTo(1, 12);
    expect(v.idf[1]).toBeCloseTo(idfCd, 12);
    const [r0, r1] = rows(v, ['ab ab', 'ab cd']);
    expect(r0).toEqual({ ab: 1 });
    const norm = Math.sqrt(1 + idfCd * idfCd);
    expect(r1!.ab).toBeCloseTo(1 / norm, 12);
    expect(r1!.cd).toBeCloseTo(idfCd / norm, 12);
  });

  it('word n-grams join tokens of >= 2 word characters with one space', () => {
    const v = TfidfVectorizer.fit(['a bb, cc_d  ee'], { analyzer: 'word', ngramMin: 2, ngramMax: 3 });
    expect(v.vocabulary).toEqual(['bb cc_d', 'bb cc_d ee', 'cc_d ee']);
  });

  it('char n-grams run over the whole text with whitespace runs collapsed', () => {
    const v = TfidfVectorizer.fit(['ab  c'], { analyzer: 'char', ngramMin: 2, ngramMax: 3 });
    expect(v.vocabulary).toEqual([' c', 'ab', 'ab ', 'b ', 'b c']);
  });

  it('char_wb pads each word with one space and counts a short word once', () => {
    const v = TfidfVectorizer.fit(['ab', 'a'], { analyzer: 'char_wb', ngramMin: 2, ngramMax: 5 });
    // ' ab ' -> n=2: ' a','ab','b '; n=3: ' ab','ab '; n=4: ' ab ' (whole word, then stop). ' a ' -> ' a','a ',' a '.
    expect(v.vocabulary).toEqual([' a', ' a ', ' ab', ' ab ', 'a ', 'ab', 'ab ', 'b ']);
    expect(Object.keys(rows(v, ['a'])[0]!).sort()).toEqual([' a', ' a ', 'a ']);
  });

  it('counts repeated n-grams and ignores unknown ones', () => {
    const v = TfidfVectorizer.fit(['aaa'], { analyzer: 'char', ngramMin: 2, ngramMax: 2 });
    expect(v.vocabulary).toEqual(['aa']);
    expect(rows(v, ['aaaa xyz', 'zzz', ''])).toEqual([{ aa: 1 }, {}, {}]);
  });

  it('sorts the vocabulary by code point, as Python does, not by UTF-16 unit', () => {
    const v = TfidfVectorizer.fit(['\uffff😀 \ufb01x'], { analyzer: 'char', ngramMin: 1, ngramMax: 1 });
    expect(v.vocabulary).toEqual([' ', 'x', '\ufb01', '\uffff', '😀']);
    expect(rows(v, ['😀'])[0]).toEqual({ '😀': 1 });
  });

  it('rebuilds from parts and transforms identically', () => {
    const docs = ['deep learning for text', 'object detection in images', 'text'];
    const a = TfidfVectorizer.fit(docs, { analyzer: 'char_wb', ngramMin: 2, ngramMax: 4 });
    const b = TfidfVectorizer.fromParts(
      { analyzer: 'char_wb', ngramMin: 2, ngramMax: 4 },
      a.vocabulary,
      a.idf,
    );
    expect(b.transform(docs)).toEqual(a.transform(docs));
  });

  it('writes a vector into given arrays at an offset, weighted, and forgets counts never written', () => {
    const v = TfidfVectorizer.fit(['ab cd', 'cd ef'], { analyzer: 'word', ngramMin: 1, ngramMax: 1 });
    const n = v.vectorize('cd cd ab');
    const want = new Map([...v.vectorIndices.subarray(0, n)].map((f, k) => [f, v.vectorValues[k]!]));
    v.countTerms('ef ef ef'); // abandoned: its counts must not reach the next document
    expect(v.countTerms('cd cd ab')).toBe(n);
    const indices = new Int32Array(n + 3);
    const values = new Float64Array(n + 3);
    v.writeVector(indices, values, 3, 100, 0.5);
    for (let k = 3; k < n + 3; k++) expect(values[k]).toBe(want.get(indices[k]! - 100)! * 0.5);
    expect(v.vectorize('ef')).toBe(1); // writeVector cleared the counts
  });

  it('rejects an empty vocabulary and bad n-gram ranges', () => {
    expect(() => TfidfVectorizer.fit(['a', ''], { analyzer: 'word', ngramMin: 1, ngramMax: 1 })).toThrow(
      /empty vocabulary/,
    );
    expect(() => TfidfVectorizer.fit(['abc'], { analyzer: 'char', ngramMin: 3, ngramMax: 2 })).toThrow(
      ModelInputError,
    );
  });
});

describe('TfidfVectorizer fast path', () => {
  // fit() enumerates n-grams as strings in sklearn's order (checked against sklearn by the parity test);
  // transform() re-enumerates them by start position with packed/hashed keys. Both must see the same
  // n-grams with the same counts: a one-document fit has idf 1 everywhere, so its row is count / norm.
  it('counts exactly the n-grams fit() sees, for every analyzer and range', () => {
    const text = fc
      .array(
        fc.constantFrom(
          'a',
          'b',
          'ab',
          'abc',
          'é',
          '😀',
          '_',
          ' ',
          '  ',
          '\t',
          '\u00a0',
          '\u3000',
          '.',
          'x9',
          'longword',
        ),
        {
          maxLength: 12,
        },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('word' as const, 'char' as const, 'char_wb' as const),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 5 }),
        (docs, analyzer, ngramMin, extra) => {
          const options = { analyzer, ngramMin, ngramMax: ngramMin + extra };
          let all: TfidfVectorizer;
          try {
            all = TfidfVectorizer.fit(docs, options);
          } catch {
            return; // no n-grams at all
          }
          const m = all.transform(docs);
          docs.forEach((doc, r) => {
            const got = new Map<string, number>();
            for (let p = m.indptr[r]!; p < m.indptr[r + 1]!; p++) {
              got.set(all.vocabulary[m.indices[p]!]!, m.data[p]! / all.idf[m.indices[p]!]!);
            }
            let single: TfidfVectorizer | null = null;
            try {
              single = TfidfVectorizer.fit([doc], options);
            } catch {
              expect(got.size).toBe(0);
              return;
            }
            expect([...got.keys()].sort()).toEqual([...single.vocabulary].sort());
            const want = single.transform([doc]);
            const total = [...got.values()].reduce((s, v) => s + v, 0);
            const wantTotal = want.data.reduce((s, v) => s + v, 0);
            for (let p = 0; p < want.data.length; p++) {
              const gram = single.vocabulary[want.indices[p]!]!;
              expect(got.get(gram)! / total).toBeCloseTo(want.data[p]! / wantTotal, 9);
            }
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('TfidfVectorizer on long documents', () => {
  // Thousands of n-grams a document: past the n-grams queued before they are counted (512: countQueued),
  // checked against counts made from strings; packed keys (char n-grams of up to 8) and hashed ones.
  const random = createRng(31);
  const lexicon = Array.from({ length: 40 }, () =>
    Array.from({ length: 2 + Math.floor(random() * 11) }, () =>
      String.fromCharCode(97 + Math.floor(random() * 6)),
    ).join(''),
  );
  const doc = Array.from({ length: 1200 }, () => lexicon[Math.floor(random() * lexicon.length)]!).join(' ');
  const words = doc.split(' ');
  const grams = {
    char: (n: number) => Array.from({ length: doc.length - n + 1 }, (_, i) => doc.slice(i, i + n)),
    word: (n: number) =>
      Array.from({ length: words.length - n + 1 }, (_, i) => words.slice(i, i + n).join(' ')),
  };
  it.each([
    ['char', 2, 10],
    ['word', 1, 2],
  ] as const)('%s n-grams %i to %i are counted as their strings are', (analyzer, ngramMin, ngramMax) => {
    const counts = new Map<string, number>();
    for (let n = ngramMin; n <= ngramMax; n++)
      for (const g of grams[analyzer](n)) counts.set(g, (counts.get(g) ?? 0) + 1);
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(2000);
    // One document: every idf is 1, so a feature's value is its count over the counts' norm.
    const v = TfidfVectorizer.fit([doc], { analyzer, ngramMin, ngramMax });
    const norm = Math.sqrt([...counts.values()].reduce((a, c) => a + c * c, 0));
    const n = v.vectorize(doc);
    const got = new Map<string, number>();
    for (let k = 0; k < n; k++) got.set(v.vocabulary[v.vectorIndices[k]!]!, v.vectorValues[k]!);
    expect(got.size).toBe(counts.size);
    for (const [gram, c] of counts) expect(got.get(gram), gram).toBeCloseTo(c / norm, 12);
  });
});

describe('compareCodePoints', () => {
  it('orders supplementary characters after all BMP characters', () => {
    expect(compareCodePoints('\uffff', '😀')).toBeLessThan(0);
    expect('\uffff' < '😀').toBe(false); // JS's own order differs here
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('b', 'ab')).toBeGreaterThan(0);
    expect(compareCodePoints('😀', '😀')).toBe(0);
  });
});
