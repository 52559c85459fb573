/**
 * The member classifiers and the soft vote through trainTagger: predictions, determinism, the saved format
 * (round trip and refusals), honest explanations (each member's score split exactly; the vote described,
 * not split), tags without training rows, calibration with too few rows, multi-label models.
 */
import { describe, expect, it } from 'vitest';
import { type Classifier, parseTrainingArgs } from '../../../../src/model/args.js';
import { decodeModel, encodeModel, MODEL_FORMAT } from '../../../../src/model/artifact.js';
import { MemberTagModel } from '../../../../src/model/classifiers/members/member-model.js';
import { ModelFormatError, ModelInputError } from '../../../../src/model/errors.js';
import { type LabelledText, trainTagger } from '../../../../src/model/tagger.js';
import { linearExplanation, TRAIN, VALIDATION } from '../../fixtures.js';

const SMALL = { min_freq: 2, analyzer: 'char_wb+word', ngram_max_range: 4, oversample: false } as const;
const VOTE = {
  ...SMALL,
  classifier: 'soft_vote',
  calibration_folds: 3,
  members: [
    { classifier: 'linear_svm', calibration: 'sigmoid' },
    { classifier: 'nb_lr' },
    { classifier: 'multinomial_nb', nb_alpha: 0.03, weight: 2 },
  ],
} as const;
const texts = [...VALIDATION.map((r) => r.text), 'deploying a kubernetes model server', '', '🙂 zzzqx'];
// The fixture's topics plus rare tags that fold into `other` (4 rows: enough for 3 calibration folds).
const ROWS: LabelledText[] = [
  ...TRAIN,
  { text: 'robot arm grasping control', tag: 'robotics' },
  { text: 'forecasting sales time series', tag: 'time-series' },
  { text: 'speech recognition of audio clips', tag: 'audio' },
];
const train = (raw: Record<string, unknown>, seed = 7, rows: LabelledText[] = ROWS) =>
  trainTagger(rows, VALIDATION, parseTrainingArgs(raw), { seed });

const CLASSIFIERS: Classifier[] = [
  'linear_svm',
  'logistic_regression',
  'nb_lr',
  'nb_svm',
  'multinomial_nb',
  'complement_nb',
  'soft_vote',
];

describe('member classifiers and soft vote', () => {
  it.each(CLASSIFIERS)(
    '%s: learns the topics, probabilities sum to 1, one report of losses',
    (classifier) => {
      const raw = classifier === 'soft_vote' ? VOTE : { ...SMALL, classifier };
      const trained = train(raw);
      expect(trained.model).toBeInstanceOf(MemberTagModel);
      const predictions = trained.model.predict(texts);
      for (const p of predictions) {
        const sum = Object.values(p.probabilities).reduce((a, b) => a + b, 0);
        expect(sum).toBeCloseTo(1, 12);
        expect(Object.keys(p.probabilities)).toEqual(trained.model.tags);
      }
      expect(predictions.slice(0, 3).map((p) => p.predicted_tag)).toEqual(
        VALIDATION.slice(0, 3).map((r) => r.tag),
      );
      expect(trained.history).toHaveLength(1);
      expect(trained.history[0]).toMatchObject({ epoch: 1, epochs: 1 });
      expect(Number.isFinite(trained.history[0]!.trainLoss)).toBe(true);
      expect(Number.isFinite(trained.history[0]!.valLoss)).toBe(true);
    },
  );

  it('is deterministic for a seed and saves and loads to identical predictions, args and files', () => {
    const a = train(VOTE, 11).model;
    const b = train(VOTE, 11).model;
    const files = encodeModel(a);
    expect(encodeModel(b)).toEqual(files);
    const loaded = decodeModel(files);
    expect(loaded).toBeInstanceOf(MemberTagModel);
    expect(loaded.predict(texts)).toEqual(a.predict(texts));
    expect(loaded.args).toEqual(a.args);
    expect(loaded.explain(texts[0]!, 5)).toEqual(a.explain(texts[0]!, 5));
    expect(encodeModel(loaded)).toEqual(files);
    const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json'])) as Record<
      string,
      unknown
    >;
    expect(manifest.format).toBe(MODEL_FORMAT);
    // Member models came with 1.4, whose files are the same for a model this small (1.6 keeps dense
    // float64 weights below a million of them): one saved then still loads.
    const as14 = {
      ...files,
      'tagger-model.json': new TextEncoder().encode(
        JSON.stringify({ ...manifest, format: 'tagger-model/1.4' }),
      ),
    };
    expect(decodeModel(as14).predict(texts)).toEqual(a.predict(texts));
    expect(manifest.members).toMatchObject([
      {
        classifier: 'linear_svm',
        weight: 1,
        inputs: 'tfidf',
        link: 'ovr',
        calibration: { a: expect.any(Array) },
      },
      { classifier: 'nb_lr', weight: 1, inputs: 'binary', link: 'ovr', calibration: null },
      { classifier: 'multinomial_nb', weight: 2, inputs: 'tfidf', link: 'softmax', calibration: null },
    ]);
  });

  describe('saved format refusals', () => {
    const files = encodeModel(train(VOTE).model);
    const manifest = JSON.parse(new TextDecoder().decode(files['tagger-model.json'])) as Record<
      string,
      unknown
    >;
    const patched = (patch: Record<string, unknown>) => ({
      ...files,
      'tagger-model.json': new TextEncoder().encode(JSON.stringify({ ...manifest, ...patch })),
    });
    const members = manifest.members as Record<string, unknown>[];
    it.each([
      [
        'an older format',
        patched({ format: 'tagger-model/1.3' }),
        /classifier soft_vote needs format tagger-model\/1\.4/,
      ],
      [
        'a member of another classifier',
        patched({ members: [{ ...members[0], classifier: 'nb_svm' }, ...members.slice(1)] }),
        /member 1 must be/,
      ],
      ['a missing member', patched({ members: members.slice(1) }), /members must list the 3 member\(s\)/],
      [
        'a calibration dropped',
        patched({ members: [{ ...members[0], calibration: null }, ...members.slice(1)] }),
        /member 1 \(linear_svm\) must have calibration \{a, b\}/,
      ],
      [
        'trained tags that are not tags',
        patched({ trained_tags: ['zz'] }),
        /trained_tags must be distinct tags of the model/,
      ],
      [
        'truncated weights',
        { ...patched({ weights_bytes: undefined }), 'weights.bin': files['weights.bin']!.slice(0, 800) },
        /has 800 bytes, expected/,
      ],
    ])('refuses %s with a ModelFormatError', (_name, broken, message) => {
      expect(() => decodeModel(broken)).toThrow(ModelFormatError);
      expect(() => decodeModel(broken)).toThrow(message);
    });
  });

  it('explains a lone classifier exactly, and a vote by its members’ exact splits and its rule', () => {
    const lone = train({ ...SMALL, classifier: 'nb_lr' }).model;
    for (const text of texts) {
      const e = linearExplanation(lone.explain(text, 3));
      const shown = e.contributions.reduce((sum, c) => sum + c.contribution, 0);
      expect(e.bias + shown + e.rest).toBeCloseTo(e.score, 10);
      // Binary inputs: every listed value is 1.
      for (const c of e.contributions) expect(c.value).toBe(1);
    }
    const vote = train(VOTE).model;
    for (const [i, text] of texts.entries()) {
      const prediction = vote.predict([text])[0]!;
      const e = vote.explain(text, 4);
      expect(e.tag).toBe(prediction.predicted_tag);
      // No per-feature split of the vote: only the tag, the text's feature count and the members.
      expect(Object.keys(e).sort()).toEqual(['features', 'tag', 'vote']);
      expect(e.vote!.rule).toBe('weighted_mean');
      expect(e.vote!.probability).toBeCloseTo(prediction.probabilities[e.tag]!, 14);
      const members = e.vote!.members;
      expect(members.map((m) => [m.classifier, m.link, m.inputs])).toEqual([
        ['linear_svm', 'platt', 'tfidf'],
        ['nb_lr', 'ovr', 'binary'],
        ['multinomial_nb', 'softmax', 'tfidf'],
      ]);
      const weighted = members.reduce((sum, m) => sum + m.weight * m.probability, 0) / 4;
      expect(weighted).toBeCloseTo(e.vote!.probability, 14);
      for (const m of members) {
        const shown = m.contributions.reduce((sum, c) => sum + c.contribution, 0);
        expect(m.bias + shown + m.rest, `text ${i} ${m.classifier}`).toBeCloseTo(m.score, 10);
        expect(m.contributions.length).toBe(Math.min(4, m.features));
      }
      expect(members[0]!.platt).toEqual({ a: expect.any(Number), b: expect.any(Number) });
    }
  });

  it('gives a tag without training rows probability 0 (NB has no prior for it) and never predicts it', () => {
    const rows = TRAIN.filter((r) => r.tag !== 'reinforcement-learning');
    // Only the three topics are left, each with 6 rows, and min_freq 1 keeps them all: `other` has none.
    for (const classifier of ['multinomial_nb', 'soft_vote'] as const) {
      const raw = classifier === 'soft_vote' ? VOTE : { ...SMALL, classifier };
      // No refit: the validation rows hold a rare tag that would get a class of its own.
      const { model } = train({ ...raw, min_freq: 1, refit: false }, 7, rows);
      expect(model.tags).toContain('other');
      for (const p of model.predict(texts)) {
        expect(p.probabilities.other).toBe(0);
        expect(p.predicted_tag).not.toBe('other');
      }
      expect(decodeModel(encodeModel(model)).predict(texts)).toEqual(model.predict(texts));
    }
  });

  it('calibrates a dual-CD member on a tag with fewer rows than folds; refuses naive Bayes, and too few rows', () => {
    // reinforcement-learning has one row: the fold holding it is scored by an SVM that never saw the tag.
    const svm = train({ ...SMALL, min_freq: 1, classifier: 'linear_svm', calibration: 'sigmoid' }, 7, TRAIN);
    expect(svm.model.tags).toContain('reinforcement-learning');
    const p = svm.model.predict(['reinforcement learning agent plays games'])[0]!;
    expect(p.probabilities['reinforcement-learning']).toBeLessThan(0.5);
    const nb = { ...SMALL, min_freq: 1, classifier: 'multinomial_nb', calibration: 'sigmoid' };
    expect(() => train(nb, 7, TRAIN)).toThrow(ModelInputError);
    expect(() => train(nb, 7, TRAIN)).toThrow(
      /calibrating naive Bayes on 5 folds \(calibration_folds\) leaves fold \d no training row with tag "reinforcement-learning", and naive Bayes cannot score a tag it has no rows of/,
    );
    const few = {
      ...SMALL,
      min_freq: 1,
      classifier: 'linear_svm',
      calibration: 'sigmoid',
      calibration_folds: 20,
    };
    expect(() => train(few, 7, TRAIN.slice(0, 12))).toThrow(
      /scores every training row out of fold on 20 folds \(calibration_folds\), but there are only 12 training rows/,
    );
  });

  it('trains multi-label: each tag its own probability and threshold', () => {
    const withExtra = (rows: LabelledText[]) =>
      rows.map((row, i) => {
        const tags = i % 2 === 0 ? [row.tag, 'extra'] : [row.tag];
        return { text: row.text, tag: tags.join('|'), tags };
      });
    const trained = trainTagger(
      withExtra(ROWS),
      withExtra(VALIDATION),
      parseTrainingArgs({ ...VOTE, multi_label: true, threshold: 'tuned', calibration_folds: 2 }),
      { seed: 3 },
    );
    const { model } = trained;
    expect(model.tagThresholds).toHaveLength(model.tags.length);
    const p = model.predict(texts);
    const sums = p.map((q) => Object.values(q.probabilities).reduce((a, b) => a + b, 0));
    expect(sums.some((s) => Math.abs(s - 1) > 1e-6)).toBe(true);
    expect(decodeModel(encodeModel(model)).predict(texts)).toEqual(p);
    expect(model.explain(texts[0]!, 3).vote!.members).toHaveLength(3);
  });

  it('refuses multi-label training when a tag is on every row', () => {
    const rows = TRAIN.map((row) => ({ text: row.text, tag: `${row.tag}|all`, tags: [row.tag, 'all'] }));
    expect(() =>
      trainTagger(rows, [], parseTrainingArgs({ ...SMALL, classifier: 'nb_lr', multi_label: true }), {
        seed: 1,
      }),
    ).toThrow(/tag "all" is on every training row/);
  });
});
