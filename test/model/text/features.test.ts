/** Feature extraction: sublinear_tf and the `char_wb+word` union on hand-checkable corpora (sklearn parity is in tfidf-parity.test.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FeatureUnion, fitVectorizer, UNION_BLOCK_WEIGHT } from '../../../src/model/text/features.js';
import { TfidfVectorizer } from '../../../src/model/text/tfidf.js';

type Vec = { vocabulary: readonly string[]; transform: TfidfVectorizer['transform'] };
const rows = (v: Vec, docs: string[]): Record<string, number>[] => {
  const m = v.transform(docs);
  return docs.map((_, r) => {
    const row: Record<string, number> = {};
    for (let p = m.indptr[r]!; p < m.indptr[r + 1]!; p++) row[v.vocabulary[m.indices[p]!]!] = m.data[p]!;
    return row;
  });
};

describe('sublinear_tf', () => {
  it('weights a count c as 1 + ln(c) before idf and the l2 norm (word unigrams by hand)', () => {
    const docs = ['ab ab ab cd', 'cd'];
    const plain = TfidfVectorizer.fit(docs, { analyzer: 'word', ngramMin: 1, ngramMax: 1 });
    const sub = TfidfVectorizer.fit(docs, { analyzer: 'word', ngramMin: 1, ngramMax: 1, sublinearTf: true });
    expect(sub.vocabulary).toEqual(['ab', 'cd']);
    expect(Array.from(sub.idf)).toEqual(Array.from(plain.idf)); // idf does not depend on tf
    const idfAb = Math.log(3 / 2) + 1; // n = 2, df(ab) = 1
    const idfCd = 1; // df(cd) = 2
    const tfAb = 1 + Math.log(3);
    const norm = Math.hypot(tfAb * idfAb, idfCd);
    const [r0, r1] = rows(sub, docs);
    expect(r0!.ab).toBeCloseTo((tfAb * idfAb) / norm, 12);
    expect(r0!.cd).toBeCloseTo(idfCd / norm, 12);
    expect(r1).toEqual({ cd: 1 });
    // Without sublinear_tf the same document weighs ab three times.
    const [p0] = rows(plain, docs);
    expect(p0!.ab).toBeCloseTo((3 * idfAb) / Math.hypot(3 * idfAb, 1), 12);
  });

  it('changes nothing when every count is 1', () => {
    const docs = ['ab cd', 'cd ef'];
    const opts = { analyzer: 'word', ngramMin: 1, ngramMax: 1 } as const;
    expect(TfidfVectorizer.fit(docs, { ...opts, sublinearTf: true }).transform(docs)).toEqual(
      TfidfVectorizer.fit(docs, opts).transform(docs),
    );
  });

  it('round-trips through fromParts with the option kept', () => {
    const docs = ['aaaa bb', 'bb bb aa'];
    const opts = { analyzer: 'char_wb', ngramMin: 2, ngramMax: 3, sublinearTf: true } as const;
    const a = TfidfVectorizer.fit(docs, opts);
    const b = TfidfVectorizer.fromParts(opts, a.vocabulary, a.idf);
    expect(b.sublinearTf).toBe(true);
    expect(b.transform(docs)).toEqual(a.transform(docs));
  });
});

describe('char_wb+word feature union', () => {
  it('stacks a char_wb block and a word 1..2 block, each unit-norm and scaled by 1/√2 (by hand)', () => {
    // One document, so every idf is 1: each block's values are count / ||counts||.
    const union = fitVectorizer(['ab ab'], {
      analyzer: 'char_wb+word',
      ngram_max_range: 2,
      sublinear_tf: false,
    });
    expect(union).toBeInstanceOf(FeatureUnion);
    // char_wb 2..2 of " ab " (twice): " a", "ab", "b " → counts 2, 2, 2; words: "ab" ×2, bigram "ab ab" ×1.
    expect(union.vocabulary).toEqual([' a', 'ab', 'b ', 'ab', 'ab ab']);
    expect(union.size).toBe(5);
    const m = union.transform(['ab ab']);
    expect(Array.from(m.indices)).toEqual([0, 1, 2, 3, 4]);
    const w = UNION_BLOCK_WEIGHT;
    const expected = [
      w / Math.sqrt(3),
      w / Math.sqrt(3),
      w / Math.sqrt(3),
      (w * 2) / Math.sqrt(5),
      w / Math.sqrt(5),
    ];
    m.data.forEach((v, i) => {
      expect(v).toBeCloseTo(expected[i]!, 12);
    });
    // Both blocks present → the whole row has unit norm.
    expect(Math.hypot(...m.data)).toBeCloseTo(1, 12);
  });

  it('keeps a document with no word tokens at norm 1/√2 (its word block is empty), as sklearn does', () => {
    const union = fitVectorizer(['ab cd', 'x y'], {
      analyzer: 'char_wb+word',
      ngram_max_range: 3,
      sublinear_tf: false,
    });
    const m = union.transform(['x y']);
    const charFeatures = (union as FeatureUnion).parts[0]!.size;
    expect(m.indptr[1]).toBeGreaterThan(0);
    expect(Array.from(m.indices).every((i) => i < charFeatures)).toBe(true);
    expect(Math.hypot(...m.data)).toBeCloseTo(UNION_BLOCK_WEIGHT, 12);
  });

  it('vectorize() matches transform() for random text (same features and values)', () => {
    const docs = ['the cat sat', 'on the mat mat', 'dogs and cats'];
    const union = fitVectorizer(docs, { analyzer: 'char_wb+word', ngram_max_range: 4, sublinear_tf: true });
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (doc) => {
        const m = union.transform([doc]);
        const n = union.vectorize(doc);
        const got = new Map<number, number>();
        for (let k = 0; k < n; k++) got.set(union.vectorIndices[k]!, union.vectorValues[k]!);
        expect(n).toBe(m.indptr[1]);
        for (let p = 0; p < n; p++) expect(got.get(m.indices[p]!)).toBe(m.data[p]);
      }),
      { numRuns: 100 },
    );
  });
});
