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
  nonZero,
  toDense,
  weightAt,
} from '../../../../src/model/classifiers/members/member-weights.js';
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
  it('are kept sparse by feature when most are zero, dense otherwise, with the same weight everywhere', () => {
    const sparse = fromClasses(perClass(dense), V);
    expect(sparse.dense).toBeNull();
    expect(sparse.sparse!.values.length).toBe(5);
    expect(toDense(sparse)).toEqual(dense);
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
    const sparse = fromClasses(perClass(dense), V);
    const a = Float64Array.of(0.1, 0.2, 0.3);
    const b = Float64Array.of(0.1, 0.2, 0.3);
    addMemberScores(sparse, indices, values, 0, indices.length, a);
    addMemberScores(denseWeights(dense, V, K), indices, values, 0, indices.length, b);
    expect(a).toEqual(b);
    const perFeature = Float64Array.from({ length: V }, (_, f) => -f / 10);
    const shared = fromClasses(perClass(dense), V, { perFeature, perClass: Float64Array.of(1, 2, 3) });
    const c = new Float64Array(K);
    addMemberScores(shared, indices, null, 0, indices.length, c);
    for (let k = 0; k < K; k++) {
      const expected = indices.reduce((sum, f) => sum + dense[f * K + k]! + perFeature[f]! + (k + 1), 0);
      expect(c[k]).toBeCloseTo(expected, 12);
    }
  });

  it('are kept in Float32 by a trained model (what it saves), Float64 only as loaded from older formats', () => {
    const stored = forStorage(fromClasses(perClass(dense), V, { perFeature: new Float64Array(V).fill(0.1) }));
    expect(stored.sparse!.values).toBeInstanceOf(Float32Array);
    expect(stored.perFeature).toBeInstanceOf(Float32Array);
    const { model } = trainTagger(TRAIN, VALIDATION, parseTrainingArgs({ min_freq: 2 }), { seed: 1 });
    for (const member of (model as MemberTagModel).members) {
      const values = member.weights.dense ?? member.weights.sparse!.values;
      expect(values).toBeInstanceOf(Float32Array);
    }
  });
});

describe('a saved member model with sparse weights', () => {
  const { model } = trainTagger(TRAIN, VALIDATION, parseTrainingArgs({ min_freq: 2, analyzer: 'word' }), {
    seed: 2,
  });
  const files = encodeModel(model);
  const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json']));

  it('says how each member stores its weights, and loads bit for bit', () => {
    const layouts = manifest.members.map((m: { weights: { layout: string } }) => m.weights.layout);
    expect(layouts).toContain('sparse');
    expect(manifest.members.every((m: { weights: { dtype: string } }) => m.weights.dtype === 'float32')).toBe(
      true,
    );
    const loaded = decodeModel(files);
    const texts = ['language models', 'images', '', 'kubernetes'];
    expect(loaded.predict(texts)).toEqual(model.predict(texts));
    expect(encodeModel(loaded)).toEqual(files);
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
