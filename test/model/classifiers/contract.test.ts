/**
 * The classifier contract: one battery over every classifier of every family in the table
 * (src/model/classifiers/families.ts), single- and multi-label (and with sentence embeddings where the
 * family takes them), in the spirit of scikit-learn's `parametrize_with_checks`. It reads the table, so a
 * classifier or family added there is checked without a line here: probabilities in [0, 1] (summing to 1
 * for a single-label model), `decode(encode(m))` predicting and explaining bit for bit as `m`, explanations
 * that add up to the score, every declared hyper-parameter refusing bad values with its name, unknown
 * parameters refused by name, search ranges whose draws pass their own checks, and progress plans whose
 * steps stay within their totals.
 */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CLASSIFIER_FAMILIES,
  type Classifier,
  createRng,
  decodeModel,
  drawFrom,
  type EncoderSpec,
  type Explanation,
  encodeModel,
  isVoteExplanation,
  type LabelledText,
  MEMBER_DEFINITIONS,
  ModelInputError,
  parseTrainingArgs,
  type TagModel,
  type TrainingArgs,
  tagsOf,
  trainTagger,
} from '../../../src/model/index.js';
import { readDataset } from '../../../src/train/data.js';
import { REPO_ROOT } from '../../support/components.js';

/** Small and fast: word unigrams and bigrams, few epochs; tags with fewer than 3 rows folded into `other`. */
const FAST = {
  analyzer: 'word',
  ngram_min_range: 1,
  ngram_max_range: 2,
  num_epochs: 5,
  min_freq: 3,
} as const;
const DIM = 6;
const SPEC: EncoderSpec = {
  name: 'contract',
  source: 'local:/contract',
  model_sha256: 'a'.repeat(64),
  tokenizer_sha256: 'b'.repeat(64),
  pooling: 'mean',
  max_tokens: 128,
  dim: DIM,
};

/** A deterministic stand-in for a sentence embedding (the contract is about the model code, not the encoder). */
const embed = (text: string): Float32Array => {
  const h = createHash('sha256').update(text).digest();
  return Float32Array.from({ length: DIM }, (_, i) => (h[i]! - 128) / 64);
};

/** Whether the classifier's args accept an encoder (its family takes embeddings and it reads them). */
function readsEmbeddings(classifier: Classifier): boolean {
  try {
    parseTrainingArgs({ classifier, encoder: 'synthetic' });
    return true;
  } catch {
    return false;
  }
}

interface Case {
  name: string;
  classifier: Classifier;
  multiLabel: boolean;
  encoder: boolean;
}

const CASES: Case[] = CLASSIFIER_FAMILIES.flatMap((family) =>
  family.classifiers.flatMap((classifier) =>
    [false, true]
      .filter((multiLabel) => !multiLabel || family.learnsSeveralTags(classifier))
      .flatMap((multiLabel) =>
        [false, ...(family.takesEmbeddings && readsEmbeddings(classifier) ? [true] : [])].map((encoder) => ({
          name: `${classifier}${multiLabel ? ', multi-label' : ''}${encoder ? ', with embeddings' : ''}`,
          classifier,
          multiLabel,
          encoder,
        })),
      ),
  ),
);

let single: LabelledText[] = [];
let multi: LabelledText[] = [];
beforeAll(async () => {
  single = (await readDataset(`${REPO_ROOT}/samples/projects.csv`)).slice(0, 150);
  multi = (await readDataset(`${REPO_ROOT}/samples/projects-multilabel.csv`)).slice(0, 150);
});

/** The texts the models are checked on: held-out rows and a few edge cases (empty of known n-grams, odd). */
const probeTexts = (rows: readonly LabelledText[]): string[] => [
  ...rows.slice(120, 140).map((r) => r.text),
  'zzzz qqqq',
  '',
  '🙂 — ¿?',
];

/** Every explanation's exact split: bias + Σ contributions + rest (+ encoder) = score, per linear score. */
function expectAddsUp(explanation: Explanation): void {
  const splits = isVoteExplanation(explanation) ? explanation.vote.members : [explanation];
  for (const split of splits) {
    const sum =
      split.bias +
      split.contributions.reduce((total, c) => total + c.contribution, 0) +
      split.rest +
      ('encoder' in split && typeof split.encoder === 'number' ? split.encoder : 0);
    expect(sum).toBeCloseTo(split.score, 9);
    expect(split.contributions.length).toBeLessThanOrEqual(5);
  }
}

describe.each(CASES)('classifier contract: $name', ({ classifier, multiLabel, encoder }) => {
  let model: TagModel;
  let args: TrainingArgs;
  let texts: string[];
  let embeddings: Float32Array[] | undefined;

  beforeAll(() => {
    const rows = multiLabel ? multi : single;
    args = parseTrainingArgs({
      ...FAST,
      classifier,
      multi_label: multiLabel,
      ...(encoder ? { encoder: SPEC.name } : {}),
    });
    const lookup = new Map(rows.map((r) => [r.text, embed(r.text)]));
    model = trainTagger(rows.slice(0, 100), rows.slice(100, 120), args, {
      seed: 11,
      ...(encoder ? { encoder: { spec: SPEC, embeddings: lookup } } : {}),
    }).model;
    texts = probeTexts(rows);
    embeddings = encoder ? texts.map(embed) : undefined;
  });

  it('gives every tag a probability in [0, 1], summing to 1 for a single-label model', () => {
    for (const prediction of model.predict(texts, embeddings)) {
      const probabilities = Object.values(prediction.probabilities);
      expect(Object.keys(prediction.probabilities).sort()).toEqual([...model.tags].sort());
      for (const p of probabilities) expect(p >= 0 && p <= 1).toBe(true);
      if (!multiLabel) expect(probabilities.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
      expect(model.tags).toContain(prediction.predicted_tag);
    }
  });

  it('marks a prediction whose text has no feature the model knows (no_known_features), and only those', () => {
    const unknown = ['', '   ', 'これは日本語のテキストです', '🙂🙂🙂'];
    const known = texts.slice(0, 20);
    const all = [...unknown, ...known];
    const predictions = model.predict(all, encoder ? all.map(embed) : undefined);
    // With embeddings a text always has one feature the model knows: its embedding.
    expect(predictions.slice(0, unknown.length).map((p) => p.no_known_features)).toEqual(
      unknown.map(() => (encoder ? undefined : true)),
    );
    for (const prediction of predictions.slice(unknown.length))
      expect(prediction.no_known_features).toBeUndefined();
    // The answer is the prior: the same for every such text (fastText's hashed character n-grams may still
    // fall into buckets training touched, so its answers to them differ).
    if (!encoder && classifier !== 'fasttext') {
      const priors = predictions.slice(0, unknown.length).map((p) => JSON.stringify(p.probabilities));
      expect(new Set(priors).size).toBe(1);
    }
  });

  it('lists only the n most probable tags (and the predicted ones) when asked, with the same probabilities', () => {
    const all = model.predict(texts, embeddings);
    model.predict(texts, embeddings, { probabilities: 2 }).forEach((top, i) => {
      const full = all[i]!;
      expect(top.predicted_tag).toBe(full.predicted_tag);
      expect(top.predicted_tags).toEqual(full.predicted_tags);
      const ranked = Object.entries(full.probabilities).sort((a, b) => b[1] - a[1]);
      const kept = Object.keys(top.probabilities);
      for (const [tag] of ranked.slice(0, 2)) {
        if (ranked.filter(([, p]) => p === full.probabilities[tag]).length === 1) expect(kept).toContain(tag);
      }
      for (const tag of full.predicted_tags) expect(kept).toContain(tag);
      expect(kept.length).toBeLessThanOrEqual(2 + full.predicted_tags.length);
      for (const tag of kept) expect(top.probabilities[tag]).toBe(full.probabilities[tag]);
    });
  });

  it('predicts and explains bit for bit as itself after decode(encode(model))', () => {
    const copy = decodeModel(encodeModel(model), { withEncoder: encoder });
    expect(copy.predict(texts, embeddings)).toEqual(model.predict(texts, embeddings));
    texts.forEach((text, i) => {
      expect(copy.explain(text, 5, embeddings?.[i])).toEqual(model.explain(text, 5, embeddings?.[i]));
    });
    expect(encodeModel(copy)).toEqual(encodeModel(model));
  });

  it('refits later when asked (deferRefit): the same model as refitting at once, after the validation probabilities', () => {
    const rows = multiLabel ? multi : single;
    const validation = rows.slice(100, 120);
    const lookup = new Map(rows.map((r) => [r.text, embed(r.text)]));
    const deferred = trainTagger(rows.slice(0, 100), validation, args, {
      seed: 11,
      deferRefit: true,
      ...(encoder ? { encoder: { spec: SPEC, embeddings: lookup } } : {}),
    });
    const predicted = deferred.model.predict(
      validation.map((r) => r.text),
      encoder ? validation.map((r) => embed(r.text)) : undefined,
    );
    expect(deferred.validationProbabilities).toHaveLength(validation.length);
    deferred.validationProbabilities!.forEach((p, r) => {
      deferred.model.tags.forEach((tag, k) => {
        expect(p[k]).toBeCloseTo(predicted[r]!.probabilities[tag]!, 12);
      });
    });
    const refitted = deferred.refit!();
    expect(encodeModel(refitted.model)).toEqual(encodeModel(model));
    expect(refitted.validationF1).toBe(deferred.validationF1);
  });

  it('keeps the tags it is given instead of counting them on its training rows (options.tags)', () => {
    const rows = multiLabel ? multi : single;
    const tags = [...new Set([...rows.slice(0, 100).flatMap((r) => tagsOf(r)), 'other'])].sort();
    const lookup = new Map(rows.map((r) => [r.text, embed(r.text)]));
    // Counted on the rows, min_freq 1000 would fold every tag into other.
    const kept = trainTagger(
      rows.slice(0, 100),
      rows.slice(100, 120),
      { ...args, min_freq: 1000 },
      {
        seed: 11,
        tags,
        ...(encoder ? { encoder: { spec: SPEC, embeddings: lookup } } : {}),
      },
    );
    expect(kept.model.tags).toEqual(tags);
  });

  it('explains with scores that add up, for the tag it ranks first', () => {
    texts.forEach((text, i) => {
      const explanation = model.explain(text, 5, embeddings?.[i]);
      expectAddsUp(explanation);
      const [prediction] = model.predict([text], embeddings && [embeddings[i]!]);
      if (!multiLabel && model.threshold === null) expect(explanation.tag).toBe(prediction!.predicted_tag);
    });
  });
});

describe.each(CLASSIFIER_FAMILIES.map((family) => ({ family, name: family.name })))(
  'family contract: $name',
  ({ family }) => {
    const classifier = family.classifiers[0]!;
    const BAD_VALUES: unknown[] = [Number.NaN, -1e12, 1e12, 0.5, 'not-a-value', [], {}, null, true];

    it.each(Object.keys(family.hyperParams))(
      'refuses bad values of its hyper-parameter %s, naming it',
      (key) => {
        let refused = 0;
        for (const value of BAD_VALUES) {
          let error: unknown = null;
          try {
            parseTrainingArgs({ classifier, [key]: value });
          } catch (caught) {
            error = caught;
          }
          if (error === null) continue;
          refused++;
          expect(error).toBeInstanceOf(ModelInputError);
          expect((error as Error).message).toContain(`"${key}"`);
        }
        expect(refused).toBeGreaterThan(0);
      },
    );

    it('refuses an unknown parameter by its name', () => {
      expect(() => parseTrainingArgs({ classifier, not_a_parameter: 1 })).toThrow(/"not_a_parameter"/);
    });

    it('declares search ranges whose draws pass their own checks', () => {
      const random = createRng(5);
      for (const [key, param] of Object.entries(family.hyperParams)) {
        if (param.search === undefined) continue;
        for (let i = 0; i < 200; i++) {
          const drawn = parseTrainingArgs({ classifier, [key]: drawFrom(param.search, random) });
          expect(drawn[key as keyof TrainingArgs]).not.toBeUndefined();
        }
      }
    });

    it('draws, for every search choice, valid args of one of its own classifiers', () => {
      const random = createRng(6);
      const base = parseTrainingArgs({ classifier });
      for (const choice of family.search.choices) {
        for (let i = 0; i < 40; i++) {
          const args = parseTrainingArgs({
            ...base,
            members: null,
            ...family.search.draw(choice, base, random),
          });
          expect(family.classifiers).toContain(args.classifier);
        }
      }
    });

    it('plans progress whose steps stay within its total', () => {
      for (const refit of [false, true]) {
        const args = parseTrainingArgs({ ...FAST, classifier, refit });
        const plan = family.progress(args);
        const steps: number[] = [];
        trainTagger(single.slice(0, 60), single.slice(60, 80), args, {
          seed: 3,
          onEpoch: (r) => steps.push(plan.onEpoch(r).done),
          onRefitEpoch: (r) => steps.push(plan.onRefitEpoch(r).done),
          onMember: (r) => {
            const step = plan.onMember(r);
            if (step !== null) steps.push(step.done);
          },
        });
        expect(steps.length).toBeGreaterThan(0);
        expect(Math.max(...steps)).toBe(plan.total);
        expect(steps.every((done, i) => done >= 1 && done <= plan.total && done >= (steps[i - 1] ?? 0))).toBe(
          true,
        );
      }
    });
  },
);

describe.each(MEMBER_DEFINITIONS.map((definition) => ({ definition, name: definition.name })))(
  'member classifier contract: $name',
  ({ definition }) => {
    const other = MEMBER_DEFINITIONS.find((d) => d !== definition)!.name;
    const vote = (member: Record<string, unknown>) =>
      parseTrainingArgs({ classifier: 'soft_vote', members: [member, { classifier: other }] });

    it('takes exactly its declared hyper-parameters as a vote member, refusing bad values by name', () => {
      expect(vote({ classifier: definition.name }).members![0]).toEqual(
        expect.objectContaining({ classifier: definition.name }),
      );
      for (const key of definition.params) {
        expect(() => vote({ classifier: definition.name, [key]: 'not-a-value' })).toThrow(
          `members[0].${key}`,
        );
      }
      const foreign = ['C', 'svm_loss', 'nb_alpha', 'nb_ratio_alpha', 'nb_svm_beta'].filter(
        (key) => !(definition.params as readonly string[]).includes(key),
      );
      for (const key of foreign) {
        expect(() => vote({ classifier: definition.name, [key]: 1 })).toThrow(`has no "${key}"`);
      }
      expect(() => vote({ classifier: definition.name, bogus: 1 })).toThrow(/unknown key "bogus"/);
    });

    it('has a link for single- and multi-label models and a search rule', () => {
      expect(['ovr', 'softmax']).toContain(definition.link(false));
      expect(definition.link(true)).toBe('sigmoid');
      expect(['draw', 'none']).toContain(definition.searchCalibration.alone);
      expect(['none', 'sigmoid']).toContain(definition.searchCalibration.inVote);
    });
  },
);
