/**
 * The model choice (src/train/model-choice/choose.ts) on small data sets made here so that each kind wins
 * where its features see what the others cannot: whole words that share every character n-gram (the word
 * SVM, the cheapest to serve, wins the tie), word endings on stems never seen twice (the character
 * n-grams), a dozen long texts per tag (the vote's naive Bayes), a signal only the sentence embeddings
 * carry (the encoder; the cascade when it is tried too: its fast model answers the texts it is sure of);
 * and fastText when the budget leaves room for nothing slower. The budget is honoured and every candidate
 * not tried is named with why.
 */
import { describe, expect, it } from 'vitest';
import { createRng, type EncoderSpec, type LabelledText } from '../../../src/model/index.js';
import { chooseModel, threadCpuMicroseconds } from '../../../src/train/model-choice/choose.js';
import { prepareChoice } from '../../../src/train/model-choice/prepare.js';
import { modelTagsOf } from '../../../src/train/pipeline.js';
import { splitData } from '../../../src/train/splits.js';

const SPEC: EncoderSpec = {
  name: 'synthetic',
  source: 'local:/synthetic',
  model_sha256: 'a'.repeat(64),
  tokenizer_sha256: 'b'.repeat(64),
  pooling: 'mean',
  max_tokens: 64,
  dim: 8,
};

// Each test draws its own data from this generator, reseeded: the data does not depend on the tests' order.
let rng = createRng(3);
const reseed = (seed: number): void => {
  rng = createRng(seed);
};
const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'tu', 'ra', 'so', 'vi', 'be', 'du'];
const word = (syllables = 3): string => Array.from({ length: syllables }, () => pick(SYLLABLES)).join('');

/** Chooses on `data` (its 70/15/15 split), the budget and the candidates as given. */
function choose(
  data: LabelledText[],
  options: {
    embeddings?: Map<string, Float32Array>;
    only?: string[];
    budgetSeconds?: number;
    given?: Record<string, unknown>;
  } = {},
) {
  const preparation = prepareChoice({
    data,
    given: options.given ?? {},
    seed: 1,
    threads: 1,
    extraTexts: [],
    encoder: options.embeddings ? { installed: true } : { installed: false, why: 'no encoder in this test' },
    memoryBudget: 8e9,
    ...(options.only ? { only: options.only } : {}),
    budgetSeconds: options.budgetSeconds ?? 600,
  });
  const split = splitData(data, false, 1);
  const outcome = chooseModel({
    train: split.train,
    validation: split.validation,
    plan: preparation.plan,
    budgetSeconds: preparation.budgetSeconds,
    budgetSource: 'given',
    cleanupGiven: preparation.cleanupGiven,
    startedCpu: threadCpuMicroseconds(),
    cpuClock: threadCpuMicroseconds,
    seed: 1,
    tags: modelTagsOf(data, preparation.plan[0]!.args),
    charsPerText: 40,
    ...(options.embeddings ? { encoder: { spec: SPEC, embeddings: options.embeddings } } : {}),
  });
  return { preparation, outcome, report: outcome.report };
}

const rows = (n: number, tags: number, text: (tag: number, i: number) => string): LabelledText[] =>
  Array.from({ length: n }, (_, i) => ({ text: text(i % tags, i), tag: `tag${i % tags}` }));

describe('chooseModel: each kind wins where it sees what the others cannot', () => {
  it('whole words made of the same syllables, the linear SVM left out: the word SVM ties the vote and is cheaper to serve', () => {
    reseed(1);
    const perms = [
      [0, 1, 2, 3],
      [3, 2, 1, 0],
      [1, 3, 0, 2],
      [2, 0, 3, 1],
    ];
    const data = rows(400, 4, (t, i) => {
      const w = perms[t]!.map((k) => SYLLABLES[k]).join('');
      return `${w} ${SYLLABLES[i % 5]}${SYLLABLES[(i * 3) % 5]} ${w}`;
    });
    // The word SVM stands in for the linear SVM where that one is too slow: left out here.
    const { report } = choose(data, { only: ['linear_svm_words', 'soft_vote'] });
    expect(report.chosen).toBe('linear_svm_words');
    const vote = report.candidates.find((c) => c.name === 'soft_vote')!;
    const chosen = report.candidates.find((c) => c.status === 'chosen')!;
    expect(Math.abs(vote.validation_f1! - chosen.validation_f1!)).toBeLessThan(0.01);
    // With the linear SVM in the budget, the word SVM is not tried, and says why.
    const all = choose(data).report;
    expect(all.candidates.find((c) => c.name === 'linear_svm_words')!.reason).toMatch(
      /^linear_svm fits the budget/,
    );
  });

  it('a tag in the word endings of stems never seen twice: the character n-grams', () => {
    reseed(2);
    const endings = ['ology', 'ism', 'itude', 'escence'];
    const data = rows(400, 4, (t) => `${word(2)}${endings[t]} ${word(3)} ${word(2)}`);
    expect(choose(data).report.chosen).toBe('linear_svm');
    const alone = choose(data, { only: ['linear_svm_words'] }).report;
    expect(alone.candidates.find((c) => c.name === 'linear_svm_words')!.validation_f1).toBeLessThan(0.8);
  });

  it('a few dozen long texts per tag: the soft vote (its naive Bayes learns from few rows)', () => {
    reseed(4);
    const topics = Array.from({ length: 12 }, () => Array.from({ length: 30 }, () => word(3)));
    const common = Array.from({ length: 300 }, () => word(2));
    const data = rows(12 * 30, 12, (t) =>
      Array.from({ length: 40 }, () => (rng() < 0.15 ? pick(topics[t]!) : pick(common))).join(' '),
    );
    const { report } = choose(data);
    expect(report.chosen).toBe('soft_vote');
    for (const other of report.candidates.filter((c) => c.status === 'trained')) {
      expect(other.validation_f1!).toBeLessThan(
        report.candidates.find((c) => c.status === 'chosen')!.validation_f1!,
      );
    }
  });

  it('a signal only the sentence embeddings carry: the encoder; with the cascade tried too, the cascade', () => {
    reseed(5);
    const embeddings = new Map<string, Float32Array>();
    const data = rows(400, 4, (t, i) => {
      const text = `${word()} ${word()} ${word()} ${i}`;
      const v = new Float32Array(8).map(() => (rng() - 0.5) * 0.4);
      v[t]! += 2;
      embeddings.set(text, v);
      return text;
    });
    const alone = choose(data, {
      embeddings,
      only: ['linear_svm_words', 'linear_svm', 'soft_vote', 'encoder'],
    });
    expect(alone.report.chosen).toBe('encoder');
    expect(alone.outcome.args.encoder).toBe('minilm');
    expect(alone.report.candidates.find((c) => c.name === 'encoder')!.encoder_predict_us).toBeGreaterThan(0);
    const withCascade = choose(data, { embeddings });
    // The cascade is as good (its encoder model answers what the fast one is unsure of) and answers most
    // texts without the encoder; it ranks before the encoder model alone for serving.
    expect(['cascade', 'encoder']).toContain(withCascade.report.chosen);
    expect(withCascade.report.candidates.find((c) => c.name === 'cascade')!.status).not.toBe('skipped');
  });

  it('fastText when the budget has no room for the slower kinds, each of them named with why', () => {
    reseed(6);
    // Hundreds of tags and texts of ten words: fastText's hierarchical softmax is cheaper to train than
    // one SVM per tag.
    const topics = Array.from({ length: 300 }, () => Array.from({ length: 4 }, () => word(4)));
    const data = rows(300 * 10, 300, (t) =>
      Array.from({ length: 10 }, (_, k) => (k % 2 === 0 ? pick(topics[t]!) : word(2))).join(' '),
    );
    // The clean-up given: no variants compared before the first candidate (they would take the budget).
    const given = { min_freq: 5, stopwords: false };
    // The plan alone, with room for everything: its estimates.
    const { plan } = prepareChoice({
      data,
      given,
      seed: 1,
      threads: 1,
      extraTexts: [],
      encoder: { installed: false, why: 'no encoder in this test' },
      memoryBudget: 8e9,
      budgetSeconds: 10_000,
    });
    const fasttext = plan.find((p) => p.name === 'fasttext')!;
    const cheapestOther = Math.min(
      ...plan.filter((p) => p.name !== 'fasttext').map((p) => p.estimatedSeconds + p.estimatedRefitSeconds),
    );
    // A budget with room for fastText's fit and refit, and for nothing else's.
    const budget = fasttext.estimatedSeconds + fasttext.estimatedRefitSeconds;
    expect(budget).toBeLessThan(cheapestOther);
    const tight = choose(data, { budgetSeconds: budget * 1.05, given });
    expect(tight.report.chosen).toBe('fasttext');
    for (const skipped of tight.report.candidates.filter((c) => c.status === 'skipped')) {
      expect(skipped.reason).toMatch(
        /with its refit, more than the .* left of the .* CPU budget \(--time-budget\)|not installed|no encoder/,
      );
    }
  });
});

describe('chooseModel: what it reports', () => {
  it('the table has every candidate, the chosen one first-class: validation f1, time, predict µs, model size', () => {
    reseed(7);
    const topics = Array.from({ length: 3 }, () => Array.from({ length: 5 }, () => word(3)));
    const { report, outcome } = choose(
      rows(300, 3, (t) => `${pick(topics[t]!)} ${word(2)} ${pick(topics[t]!)}`),
    );
    expect(report.method).toBe('validation_split');
    expect(report.candidates.filter((c) => c.status === 'chosen')).toHaveLength(1);
    for (const c of report.candidates.filter((c) => c.status === 'chosen' || c.status === 'trained')) {
      expect(c.validation_f1).toBeGreaterThan(0.5);
      expect(c.training_seconds).toBeGreaterThan(0);
      expect(c.training_cpu_seconds).toBeGreaterThan(0);
      expect(c.predict_us).toBeGreaterThan(0);
      expect(c.model_bytes).toBeGreaterThan(1000);
    }
    for (const c of report.candidates.filter((c) => c.status === 'skipped')) expect(c.reason).toBeTruthy();
    expect(report.cleanup.tried.map((t) => t.name)).toEqual(['none', 'tagifai']);
    // The chosen model refitted on train + validation, its validation probabilities kept for the label issues.
    expect(outcome.validationProbabilities).toHaveLength(report.validation_rows);
    expect(outcome.trained.model.tags).toEqual(outcome.tags);
    expect(outcome.args.classifier).toBe(
      report.candidates.find((c) => c.status === 'chosen')!.args.classifier ?? 'soft_vote',
    );
  });
});

describe('chooseModel: few rows of other (texts that fit no tag)', () => {
  // Six topics; `other` texts mix words of two topics, so the model is unsure of them, as it is of texts
  // that fit no tag.
  const data = (otherShare: number): LabelledText[] => {
    reseed(9);
    const topics = Array.from({ length: 6 }, () => Array.from({ length: 8 }, () => word(3)));
    return Array.from({ length: 2400 }, (_, i) => {
      if (rng() < otherShare) {
        const [a, b] = [pick(topics), pick(topics)];
        return { text: `${pick(a)} ${word(2)} ${pick(b)}`, tag: 'other' };
      }
      const t = i % 6;
      return { text: `${pick(topics[t]!)} ${word(2)} ${pick(topics[t]!)}`, tag: `tag${t}` };
    });
  };

  it('at most 5 % of the validation rows: compared on the argmax f1, the threshold placed for the balanced score', () => {
    const rows = data(0.04);
    const embeddings = new Map(rows.map((row) => [row.text, Float32Array.from({ length: 8 }, () => rng())]));
    const { report, outcome } = choose(rows, { only: ['linear_svm', 'cascade'], embeddings });
    expect(report.objective).toBe('balanced_other');
    expect(report.other_rows).toBeGreaterThanOrEqual(10);
    expect(report.other_rows).toBeLessThanOrEqual(0.05 * report.validation_rows);
    expect(report.rule).toMatch(/^the best weighted f1 of the argmax answers \(only \d+ rows are other/);
    const chosen = report.candidates.find((c) => c.status === 'chosen')!;
    expect(chosen.validation_balanced).toBeGreaterThan(0.5);
    expect(chosen.threshold).toBeGreaterThan(0);
    expect(outcome.args.threshold).toBe('balanced');
    // What was compared is the argmax f1; the balanced score is of the answers with the threshold.
    expect(chosen.validation_f1).toBe(chosen.validation_f1_argmax);
    const cascade = report.candidates.find((c) => c.name === 'cascade')!;
    expect(cascade.status).toBe('skipped');
    expect(cascade.reason).toMatch(/rows of `other` are few .* a cascade does not take/);
  });

  it('more than 5 %: other is a tag like the rest, the weighted f1 decides', () => {
    const { report } = choose(data(0.12), { only: ['linear_svm'] });
    expect(report.objective).toBe('weighted_f1');
    expect(report.rule).toMatch(/^the best weighted f1/);
    expect(report.candidates[0]!.validation_balanced).toBeUndefined();
  });
});

describe('chooseModel: several tags per text', () => {
  it('compares the candidates on the weighted f1 of their per-tag thresholds, and refits the chosen one with them', () => {
    reseed(11);
    const topics = Array.from({ length: 5 }, () => Array.from({ length: 6 }, () => word(3)));
    const data: LabelledText[] = Array.from({ length: 600 }, (_, i) => {
      const first = i % 5;
      const second = rng() < 0.4 ? (first + 1 + Math.floor(rng() * 4)) % 5 : null;
      const tags = [`tag${first}`, ...(second === null ? [] : [`tag${second}`])].sort();
      const words = tags.map((tag) => pick(topics[Number(tag.slice(3))]!));
      return { text: `${words.join(' ')} ${word(2)} ${pick(words)}`, tag: tags.join('|'), tags };
    });
    const { report, outcome } = choose(data, { only: ['linear_svm_words', 'linear_svm', 'soft_vote'] });
    expect(report.objective).toBe('weighted_f1');
    expect(report.other_rows).toBe(0);
    const trained = report.candidates.filter((c) => c.status === 'chosen' || c.status === 'trained');
    expect(trained.map((c) => c.name).sort()).toEqual(['linear_svm', 'linear_svm_words', 'soft_vote']);
    for (const c of trained) {
      expect(c.validation_f1).toBeGreaterThan(0.7);
      // Multi-label runs take per-tag thresholds, never the single-label fallback.
      expect(c.threshold).toBeUndefined();
      expect(c.validation_f1_argmax).toBeUndefined();
    }
    expect(outcome.args.multi_label).toBe(true);
    expect(outcome.trained.tagThresholds).toHaveLength(outcome.tags.length);
  });
});
