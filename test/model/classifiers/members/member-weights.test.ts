/**
 * Member weights stored by what is non-zero (member-weights.ts): the layout chosen by density, scores and
 * single weights equal to the dense model's, naive Bayes' shared terms, Float32 storage, and the saved
 * format's checks of a sparse layout.
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../../../src/model/args.js';
import { decodeModel, encodeModel } from '../../../../src/model/artifact.js';
import type { MemberTagModel } from '../../../../src/model/classifiers/members/member-model.js';
import {
  addMemberScores,
  denseWeights,
  forStorage,
  fromClasses,
  listedEntries,
  type MemberWeights,
  nonZero,
  toDense,
  weightAt,
  withRows,
} from '../../../../src/model/classifiers/members/member-weights.js';
import { createRng } from '../../../../src/model/rng.js';
import { trainTagger } from '../../../../src/model/tagger.js';
import { TRAIN, VALIDATION } from '../../fixtures.js';

/** w[f × K + k] of 6 features and 3 classes, mostly zero. */
const V = 6;
const K = 3;
const dense = Float64Array.from([0, 1.5, 0, 0, 0, 0, -2, 0, 0.25, 0, 0, 0, 0, 0, 0, 3, 0, -1]);
const perClass = (w: Float64Array) =>
  Array.from({ length: K }, (_, k) =>
    nonZero(
      w.filter((_, i) => i % K === k),
      V,
    ),
  );

describe('member weights', () => {
  it('are kept sparse by feature when most are zero and there are many, dense otherwise, with the same weight everywhere', () => {
    const wide = (1 << 20) / K + 1;
    const sparse = fromClasses(perClass(dense), wide);
    expect(sparse.dense).toBeNull();
    expect(sparse.sparse!.values.length).toBe(5);
    expect(toDense(sparse).subarray(0, V * K)).toEqual(dense);
    expect(fromClasses(perClass(dense), V).dense).toEqual(dense);
    const full = Float64Array.from(dense, (w, i) => w + i + 1);
    const stored = fromClasses(perClass(full), V);
    expect(stored.sparse).toBeNull();
    expect(toDense(stored)).toEqual(full);
    for (let f = 0; f < V; f++)
      for (let k = 0; k < K; k++) expect(weightAt(sparse, f, k)).toBe(dense[f * K + k]);
  });

  it('score a text as the dense weights do, bit for bit, shared terms included', () => {
    const indices = [4, 0, 2, 5];
    const values = [0.5, 0.25, 1, 0.75];
    const sparse = fromClasses(perClass(dense), (1 << 20) / K + 1);
    const a = Float64Array.of(0.1, 0.2, 0.3);
    const b = Float64Array.of(0.1, 0.2, 0.3);
    addMemberScores(sparse, indices, values, 0, indices.length, a);
    addMemberScores(denseWeights(dense, V, K), indices, values, 0, indices.length, b);
    expect(a).toEqual(b);
    const perFeature = Float64Array.from({ length: V }, (_, f) => -f / 10);
    const shared = fromClasses(perClass(dense), V, { perFeature, perClass: Float64Array.of(1, 2, 3) });
    expect(shared.perFeature).toBeNull(); // folded into the dense weights of a small model
    const c = new Float64Array(K);
    addMemberScores(shared, indices, null, 0, indices.length, c);
    for (let k = 0; k < K; k++) {
      const expected = indices.reduce((sum, f) => sum + dense[f * K + k]! + perFeature[f]! + (k + 1), 0);
      expect(c[k]).toBeCloseTo(expected, 12);
    }
  });

  it('are kept in Float32 by a model of more than a million weights (what it saves), in Float64 below', () => {
    const big = 1 << 19;
    const sparse = Array.from({ length: 3 }, (_, k) => ({
      features: Int32Array.of(k, big - 1),
      values: Float64Array.of(1, -1),
    }));
    const stored = forStorage(fromClasses(sparse, big, { perFeature: new Float64Array(big).fill(0.1) }));
    expect(stored.sparse!.values).toBeInstanceOf(Float32Array);
    expect(stored.perFeature).toBeInstanceOf(Float32Array);
    expect(weightAt(stored, big - 1, 2)).toBeCloseTo(-0.9, 6);
    const { model } = trainTagger(TRAIN, VALIDATION, parseTrainingArgs({ min_freq: 2 }), { seed: 1 });
    for (const member of (model as MemberTagModel).members)
      expect(member.weights.dense).toBeInstanceOf(Float64Array);
  });
});

describe('sparse weights with rows of their frequent features', () => {
  /**
   * Float32 lists of `V` features (as a model keeps them): feature f has an entry in each class with chance
   * 0.9 or 0.1, one value in twenty exactly zero (its feature keeps its list), and a per-class term.
   */
  function sparseWeights(V: number, K: number, seed: number): MemberWeights {
    const rng = createRng(seed);
    const start = new Int32Array(V + 1);
    const classes: number[] = [];
    const values: number[] = [];
    for (let f = 0; f < V; f++) {
      const density = rng() < 0.5 ? 0.9 : 0.1;
      for (let k = 0; k < K; k++) {
        if (rng() >= density) continue;
        classes.push(k);
        values.push(rng() < 0.05 ? 0 : rng() * 2 - 1);
      }
      start[f + 1] = classes.length;
    }
    const sparse = {
      start,
      classes: Int32Array.from(classes),
      values: Float32Array.from(values),
      rowOf: null,
      rows: null,
    };
    const perClass = Float64Array.from({ length: K }, () => rng() - 0.5);
    return { nFeatures: V, nClasses: K, dense: null, sparse, perFeature: null, perClass };
  }

  it.each([1, 2, 3, 5, 8, 50])(
    '%i classes: score every text bit for bit as the lists alone, and give the lists back unchanged',
    (K) => {
      const V = 400;
      const listed = sparseWeights(V, K, K);
      const fast = { ...listed, sparse: withRows(listed.sparse!, K) };
      expect(fast.sparse.rows).not.toBeNull();
      expect(fast.sparse.values.length).toBeGreaterThan(0); // some features keep their lists
      expect(listedEntries(fast.sparse, K)).toEqual(listed.sparse);
      expect(toDense(fast)).toEqual(toDense(listed));
      const rng = createRng(100 + K);
      // Texts of every length up to 30 features: runs of rows of every length between lists.
      for (let n = 0; n <= 30; n++) {
        const indices = Int32Array.from({ length: n }, () => Math.floor(rng() * V));
        const values = Float64Array.from({ length: n }, () => rng());
        for (const inputs of [values, null]) {
          const start = Float64Array.from({ length: K }, () => rng());
          const a = Float64Array.from(start);
          const b = Float64Array.from(start);
          addMemberScores(fast, indices, inputs, 0, n, a);
          addMemberScores(listed, indices, inputs, 0, n, b);
          expect(Array.from(a)).toEqual(Array.from(b));
        }
      }
    },
  );

  it('keep a feature in its list when one of its values is zero (a row could not tell it from no entry)', () => {
    const K = 4;
    const lists = {
      start: Int32Array.of(0, 4, 8),
      classes: Int32Array.of(0, 1, 2, 3, 0, 1, 2, 3),
      values: Float32Array.of(1, 2, 3, 4, 1, 0, 3, 4),
      rowOf: null,
      rows: null,
    };
    const fast = withRows(lists, K);
    expect(Array.from(fast.rowOf!)).toEqual([0, -1]);
    expect(listedEntries(fast, K)).toEqual(lists);
  });
});

describe('a saved member model with sparse weights', () => {
  // Over a million weights (300,000+ words × the 4 tags with rows), so they are stored sparse and in Float32.
  const random = createRng(3);
  const topics = ['alpha', 'beta', 'gamma', 'delta'];
  const rows = Array.from({ length: 3200 }, (_, i) => {
    const tag = topics[i % 4]!;
    const words = Array.from({ length: 100 }, () => `w${Math.floor(random() * 1e9).toString(36)}`);
    return { text: `${tag} ${words.join(' ')}`, tag };
  });
  const args = parseTrainingArgs({
    min_freq: 2,
    analyzer: 'word',
    ngram_min_range: 1,
    ngram_max_range: 1,
    refit: false,
    members: [{ classifier: 'linear_svm' }, { classifier: 'multinomial_nb' }],
  });
  const { model } = trainTagger(rows.slice(0, 3000), rows.slice(3000), args, { seed: 2 });
  const files = encodeModel(model);
  const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));

  it('keeps them in Float32, sparse where most are zero (naive Bayes: a word is in one class), says so, and loads bit for bit', () => {
    expect((model as MemberTagModel).vectorizer.size * 4).toBeGreaterThan(1 << 20);
    expect(
      manifest.members.map(
        (m: { weights: { layout: string; dtype: string } }) => `${m.weights.layout} ${m.weights.dtype}`,
      ),
      // Every row is a support vector here (its random words tell it apart): most SVM weights are not zero.
    ).toEqual(['dense float32', 'sparse float32']);
    expect(manifest.members[1].weights).toMatchObject({ per_class: true, per_feature: false });
    const loaded = decodeModel(files);
    const texts = ['alpha w1', 'gamma', '', rows[3100]!.text];
    expect(loaded.predict(texts)).toEqual(model.predict(texts));
    expect(loaded.predict(texts).map((p) => p.predicted_tag)).toEqual([
      'alpha',
      'gamma',
      expect.any(String),
      rows[3100]!.tag,
    ]);
    // Compared as bytes (a deep equality of megabytes of typed arrays takes minutes).
    const again = encodeModel(loaded);
    for (const name of Object.keys(files)) expect(Buffer.compare(again[name]!, files[name]!), name).toBe(0);
  });

  it('is refused when a layout does not add up', () => {
    const sparse = manifest.members.findIndex(
      (m: { weights: { layout: string } }) => m.weights.layout === 'sparse',
    );
    const edited = (change: (weights: Record<string, unknown>) => void) => {
      const copy = structuredClone(manifest);
      change(copy.members[sparse].weights);
      return { ...files, 'tagger-model.json': new TextEncoder().encode(JSON.stringify(copy)) };
    };
    expect(() => decodeModel(edited((w) => (w.layout = 'diagonal')))).toThrow(/needs "weights"/);
    expect(() => decodeModel(edited((w) => ((w.stored as number) += 1)))).toThrow(/expected \d+ for/);
    expect(() => decodeModel(edited((w) => (w.dtype = 'float64')))).toThrow(/expected \d+ for/);
    expect(() => decodeModel(edited((w) => (w.layout = 'dense')))).toThrow(/dense \(\d+ stored\)/);
  });
});
