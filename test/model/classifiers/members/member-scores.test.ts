/**
 * The member models' fast scoring path (dense rows of frequent sparse features, eight features at a time:
 * member-weights.ts, linear-scores.ts) gives the predictions of the straightforward computation — every
 * weight looked up one by one, each member's sums in text order, its Platt sigmoids or link, the weighted
 * mean — and, bit for bit, those of the same weights kept as lists only (how they are saved). Models of
 * over a million weights (so sparse and Float32, as at real sizes): a three-member vote, a multi-label vote,
 * and one tag beside `other`. Where a member's Float32 rows are added by WebAssembly SIMD (wasm-row-sums.ts),
 * its predictions are also those of the JavaScript loops over the same weights, bit for bit.
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../../../src/model/args.js';
import { decodeModel, encodeModel } from '../../../../src/model/artifact.js';
import { MemberTagModel } from '../../../../src/model/classifiers/members/member-model.js';
import {
  listedEntries,
  type MemberWeights,
  weightAt,
  withoutRowSums,
} from '../../../../src/model/classifiers/members/member-weights.js';
import type { Member } from '../../../../src/model/classifiers/members/train-member.js';
import { createRng, randomInt } from '../../../../src/model/rng.js';
import { type LabelledText, trainTagger } from '../../../../src/model/tagger.js';
import { cleanText } from '../../../../src/model/text/preprocess.js';

/**
 * Rows over `tags` topics: common words every tag uses (their features have weights in every class: the
 * rows), topic words, and `unique` made-up words per row (features of one class: the lists), enough for
 * over a million weights. Multi-label rows take a second tag one time in three.
 */
function rows(
  tags: readonly string[],
  n: number,
  unique: number,
  seed: number,
  multi = false,
): LabelledText[] {
  const random = createRng(seed);
  const common = Array.from({ length: 150 }, (_, i) => `common${i}`);
  return Array.from({ length: n }, (_, r) => {
    const own = [tags[r % tags.length]!];
    if (multi && random() < 1 / 3) {
      const other = tags[randomInt(random, tags.length)]!;
      if (other !== own[0]) own.push(other);
    }
    const words: string[] = [];
    for (let i = 0; i < 12; i++) words.push(common[Math.floor(common.length * random() ** 2)]!);
    for (const tag of own) for (let i = 0; i < 4; i++) words.push(`${tag}${randomInt(random, 8)}`);
    for (let i = 0; i < unique; i++) words.push(`u${Math.floor(random() * 2 ** 40).toString(36)}`);
    const text = words.sort(() => random() - 0.5).join(' ');
    return multi ? { text, tag: own[0]!, tags: own } : { text, tag: own[0]! };
  });
}

const WORDS = {
  min_freq: 2,
  analyzer: 'word',
  ngram_min_range: 1,
  ngram_max_range: 1,
  refit: false,
} as const;
const TAGS = Array.from({ length: 12 }, (_, k) => `topic${String.fromCharCode(97 + k)}`);

interface Case {
  name: string;
  train: LabelledText[];
  validation: LabelledText[];
  args: Record<string, unknown>;
  texts: string[];
  /** Whether some member keeps sparse weights (else every one is dense). */
  sparse: boolean;
}

function makeCase(
  name: string,
  data: LabelledText[],
  validationRows: number,
  args: Record<string, unknown>,
  sparse = true,
): Case {
  const validation = data.slice(0, validationRows);
  const held = rows(TAGS, 60, 3, 99).map((r) => r.text);
  return {
    name,
    train: data.slice(validationRows),
    validation,
    args: { ...WORDS, ...args },
    texts: [...validation.map((r) => r.text), ...held, 'common1 common2 topica3', 'u', ''],
    sparse,
  };
}

const CASES: Case[] = [
  makeCase('a three-member vote (calibrated SVM, NB-LR, multinomial NB)', rows(TAGS, 2600, 40, 1), 300, {
    calibration_folds: 3,
  }),
  makeCase('a multi-label vote', rows(TAGS, 2600, 40, 2, true), 300, {
    multi_label: true,
    calibration_folds: 3,
    members: [{ classifier: 'linear_svm', calibration: 'sigmoid' }, { classifier: 'multinomial_nb' }],
  }),
  // Eleven rare tags of 3 rows each fold into `other`: two trained classes, over half a million words;
  // every member dense (the four-classes-in-registers path).
  makeCase(
    'one tag beside other',
    [...rows(['alpha'], 1400, 420, 3), ...rows(TAGS.slice(1), 33, 420, 4)].sort((a, b) =>
      a.text < b.text ? -1 : 1,
    ),
    150,
    {
      min_freq: 20,
      members: [{ classifier: 'linear_svm', calibration: 'sigmoid' }, { classifier: 'multinomial_nb' }],
      calibration_folds: 2,
    },
    false,
  ),
];

/** A member's probabilities the straightforward way: each weight by weightAt, then its sigmoids or link. */
function plainMemberProbabilities(member: Member, indices: Int32Array, values: Float64Array): Float64Array {
  const K = member.nClasses;
  const s = Float64Array.from(member.bias);
  for (let j = 0; j < indices.length; j++) {
    const v = member.inputs === 'binary' ? 1 : values[j]!;
    for (let k = 0; k < K; k++) s[k]! += weightAt(member.weights, indices[j]!, k) * v;
  }
  const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
  const normalised = (p: Float64Array) => {
    const sum = p.reduce((a, b) => a + b, 0);
    return p.map((x) => x / sum);
  };
  if (member.calibration !== null) {
    const { a, b } = member.calibration;
    const p = s.map((z, k) => 1 / (1 + Math.exp(a[k]! * z + b[k]!)));
    return member.link === 'sigmoid' ? p : normalised(p);
  }
  if (member.link === 'sigmoid') return s.map(sigmoid);
  if (member.link === 'ovr') return normalised(s.map(sigmoid));
  if (member.link === 'softmax') {
    const max = Math.max(...s);
    return normalised(s.map((z) => Math.exp(z - max)));
  }
  throw new Error(`no straightforward form of link ${member.link} here`);
}

function plainProbabilities(model: MemberTagModel, text: string): Float64Array {
  const clean = cleanText(text, model.args);
  const n = model.vectorizer.vectorize(clean);
  const indices = model.vectorizer.vectorIndices.slice(0, n);
  const values = model.vectorizer.vectorValues.slice(0, n);
  const p = new Float64Array(model.tags.length);
  let total = 0;
  for (const member of model.members) {
    const q = plainMemberProbabilities(member, indices, values);
    for (let c = 0; c < q.length; c++) p[model.classes[c]!]! += member.weight * q[c]!;
    total += member.weight;
  }
  return p.map((x) => x / total);
}

/** The same model with its sparse weights as lists only (no rows): how they were scored before. */
function listsOnly(model: MemberTagModel): MemberTagModel {
  const members = model.members.map((m) => {
    const w: MemberWeights = m.weights;
    return {
      ...m,
      weights: { ...w, sparse: w.sparse && listedEntries(w.sparse, w.nClasses), rowSums: null },
    };
  });
  return withMembers(model, members);
}

/** The same model scored by the JavaScript loops only (no WebAssembly). */
function javaScriptOnly(model: MemberTagModel): MemberTagModel {
  return withMembers(
    model,
    model.members.map((m) => ({ ...m, weights: withoutRowSums(m.weights) })),
  );
}

function withMembers(model: MemberTagModel, members: Member[]): MemberTagModel {
  return new MemberTagModel(
    model.tags,
    model.args,
    model.threshold,
    model.vectorizer,
    members,
    model.classes,
    model.tagThresholds,
  );
}

describe.each(CASES)('the fast scoring path of $name', (c) => {
  const { model } = trainTagger(c.train, c.validation, parseTrainingArgs(c.args), { seed: 5 });
  const members = model as MemberTagModel;

  it('is exercised: over a million weights; sparse members with rows of frequent features and lists', () => {
    expect(members.vectorizer.size * members.classes.length).toBeGreaterThan(1 << 20);
    const sparse = members.members.map((m) => m.weights.sparse).filter((s) => s !== null);
    if (!c.sparse) {
      // Two classes: every feature has a weight in one of the two at least, so half or more are not zero.
      expect(members.classes.length).toBe(2);
      expect(sparse).toEqual([]);
      return;
    }
    expect(sparse.some((s) => s.rows !== null && s.rows.length > 0)).toBe(true);
    expect(sparse.some((s) => s.values.length > 0)).toBe(true);
  });

  it('predicts what the straightforward computation does (probabilities within 1e-9, the same tags)', () => {
    const predictions = model.predict(c.texts, undefined, { probabilities: 'all' });
    c.texts.forEach((text, i) => {
      const expected = plainProbabilities(members, text);
      const got = model.tags.map((tag) => predictions[i]!.probabilities[tag]!);
      for (let k = 0; k < got.length; k++) expect(Math.abs(got[k]! - expected[k]!)).toBeLessThan(1e-9);
      const best = expected.indexOf(Math.max(...expected));
      if (!members.multiLabel && (members.threshold === null || expected[best]! >= members.threshold)) {
        expect(predictions[i]!.predicted_tag).toBe(model.tags[best]);
      }
    });
    expect(new Set(predictions.map((p) => p.predicted_tag)).size).toBeGreaterThan(1);
  });

  it('adds Float32 rows of more than four classes by WebAssembly, bit for bit as the JavaScript loops do', () => {
    const wasm = members.members.filter((m) => m.weights.rowSums);
    // Two classes keep their sums in registers (linear-scores.ts); twelve go to WebAssembly.
    if (members.classes.length <= 4) expect(wasm).toEqual([]);
    else expect(wasm.length).toBeGreaterThan(0);
    const again = decodeModel(encodeModel(model)) as MemberTagModel;
    expect(again.members.map((m) => Boolean(m.weights.rowSums))).toEqual(
      members.members.map((m) => Boolean(m.weights.rowSums)),
    );
    const js = JSON.stringify(javaScriptOnly(members).predict(c.texts, undefined, { probabilities: 'all' }));
    expect(JSON.stringify(model.predict(c.texts, undefined, { probabilities: 'all' }))).toBe(js);
    expect(JSON.stringify(again.predict(c.texts, undefined, { probabilities: 'all' }))).toBe(js);
  });

  // A model of dense members has no lists to compare with.
  if (!c.sparse) return;
  it('predicts bit for bit what the weights as lists only predict, and saves and loads them unchanged', () => {
    const lists = listsOnly(members);
    expect(JSON.stringify(model.predict(c.texts))).toBe(JSON.stringify(lists.predict(c.texts)));
    const files = encodeModel(model);
    const again = encodeModel(decodeModel(files));
    const fromLists = encodeModel(lists);
    for (const name of Object.keys(files)) {
      expect(Buffer.compare(again[name]!, files[name]!), name).toBe(0);
      expect(Buffer.compare(fromLists[name]!, files[name]!), name).toBe(0);
    }
    expect(JSON.stringify(decodeModel(files).predict(c.texts))).toBe(JSON.stringify(model.predict(c.texts)));
  });
});
