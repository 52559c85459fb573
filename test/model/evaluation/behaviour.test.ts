/**
 * Behavioural tests: the seeded perturbations, the suite file checks, the runner on a hand-made model
 * whose answers are known; the default suite on models trained on the shared dataset.csv is in
 * behaviour.dataset.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  type BehaviourModel,
  type BehaviourSuite,
  changeCasing,
  changeNames,
  changePunctuation,
  type InvCase,
  PERSON_NAMES,
  parseBehaviourSuite,
  perturbedVariants,
  runBehaviourSuite,
  typo,
} from '../../../src/model/evaluation/behaviour.js';
import { DEFAULT_BEHAVIOUR_SUITE } from '../../../src/model/evaluation/behaviour-suite.js';
import { parseSliceDefinitions } from '../../../src/model/evaluation/slices.js';
import { createRng, ModelInputError } from '../../../src/model/index.js';
import { REPO_ROOT } from '../../support/components.js';

describe('perturbations', () => {
  it('typo swaps two adjacent letters of one word, the same way for the same seed', () => {
    const text = 'Image segmentation with convolutional networks';
    const a = typo(text, createRng(3));
    expect(a).toBe(typo(text, createRng(3)));
    expect(a).not.toBe(text);
    expect(a.length).toBe(text.length);
    // Same letters in the same words, one pair swapped: the sorted letters of each word are unchanged.
    const sorted = (t: string) => t.split(' ').map((w) => [...w].sort().join(''));
    expect(sorted(a)).toEqual(sorted(text));
    const changed = text.split(' ').filter((w, i) => w !== a.split(' ')[i]);
    expect(changed).toHaveLength(1);
    // Different seeds reach different words or positions.
    const seen = new Set(Array.from({ length: 20 }, (_, s) => typo(text, createRng(s))));
    expect(seen.size).toBeGreaterThan(5);
  });

  it('typo leaves a text without a word of four letters as it is', () => {
    expect(typo('a cat ran', createRng(1))).toBe('a cat ran');
    expect(typo('aaaa bbb', createRng(1))).toBe('aaaa bbb');
  });

  it('changeNames replaces every known first name, each name consistently', () => {
    const out = changeNames('Alice and John met; Alice wrote the code.', createRng(5));
    expect(out).not.toContain('Alice');
    expect(out).not.toContain('John');
    const words = out.split(' ');
    expect(words[4]).toBe(words[0]); // "Alice" both times became the same name
    expect(PERSON_NAMES).toContain(words[0]);
    expect(PERSON_NAMES).toContain(words[2]);
    expect(words.slice(1, 2).concat(words.slice(3, 4), words.slice(5))).toEqual([
      'and',
      'met;',
      'wrote',
      'the',
      'code.',
    ]);
    expect(changeNames('No names here.', createRng(5))).toBe('No names here.');
  });

  it('changeCasing and changePunctuation change the text and keep its words', () => {
    const text = 'Text summarization, with pretrained models.';
    const casings = [0, 1, 2].map((i) => changeCasing(text, i));
    expect(new Set(casings).size).toBe(3);
    for (const c of casings) expect(c.toLowerCase()).toBe(text.toLowerCase());
    for (let seed = 0; seed < 10; seed++) {
      const p = changePunctuation(text, createRng(seed));
      expect(p).not.toBe(text);
      expect(p.replace(/[^\w ]/g, '')).toBe(text.replace(/[^\w ]/g, ''));
    }
  });

  it('perturbedVariants is deterministic for (case name, seed) and drops repeats', () => {
    const c: InvCase = {
      kind: 'inv',
      name: 'x',
      text: 'Object detection in images',
      perturbation: 'typos',
      variants: 5,
    };
    expect(perturbedVariants(c, 42)).toEqual(perturbedVariants(c, 42));
    expect(perturbedVariants(c, 42)).not.toEqual(perturbedVariants(c, 7));
    const all = perturbedVariants(c, 42);
    expect(new Set(all).size).toBe(all.length);
    expect(all).not.toContain(c.text);
  });
});

/** Tags by keyword counts, with probabilities that rise with each keyword: answers a test can predict. */
const KEYWORDS: Record<string, RegExp> = {
  nlp: /\btext\b|\blanguage\b/gi,
  vision: /\bimages?\b|\bvideo\b/gi,
};
const keywordModel: BehaviourModel = {
  tags: ['nlp', 'other', 'vision'],
  predict: (texts) =>
    texts.map((text) => {
      const score = { nlp: 1, other: 1.5, vision: 1 } as Record<string, number>;
      for (const [tag, re] of Object.entries(KEYWORDS)) score[tag]! += 2 * (text.match(re)?.length ?? 0);
      const total = Object.values(score).reduce((a, b) => a + b, 0);
      const probabilities = Object.fromEntries(Object.entries(score).map(([t, v]) => [t, v / total]));
      const predicted_tag = Object.entries(score).sort((a, b) => b[1] - a[1])[0]![0];
      return { predicted_tag, probabilities };
    }),
};

describe('runBehaviourSuite', () => {
  const suite: BehaviourSuite = {
    name: 'unit',
    seed: 1,
    cases: [
      { kind: 'mft', name: 'text', text: 'language models for text', expected: 'nlp' },
      { kind: 'mft', name: 'wrong', text: 'a video of cats', expected: 'nlp' },
      { kind: 'mft', name: 'unknown tag', text: 'kubernetes', expected: 'mlops' },
      // A typo in "text" loses the keyword: not invariant.
      { kind: 'inv', name: 'brittle', text: 'text', perturbation: 'typos', variants: 3 },
      { kind: 'inv', name: 'robust', text: 'VIDEO frames and images', perturbation: 'casing', variants: 3 },
      { kind: 'dir', name: 'up', text: 'a survey', add: 'of images', tag: 'vision', expect: 'increase' },
      {
        kind: 'dir',
        name: 'down',
        text: 'text images',
        add: 'and more text',
        tag: 'vision',
        expect: 'increase',
      },
      { kind: 'dir', name: 'becomes', text: 'a survey', add: 'of text', tag: 'nlp', expect: 'predicted' },
    ],
  };

  it('records each case with what was expected, what the model did and whether it passed', () => {
    const report = runBehaviourSuite(keywordModel, suite);
    const byName = Object.fromEntries(report.cases.map((c) => [c.name, c]));
    expect(byName.text).toMatchObject({ pass: true, expected: 'nlp', got: 'nlp' });
    expect(byName.wrong).toMatchObject({ pass: false, expected: 'nlp', got: 'vision' });
    expect(byName['unknown tag']).toMatchObject({ pass: null });
    expect(byName['unknown tag']!.skipped).toMatch(/has no tag 'mlops'/);
    expect(byName.brittle!.pass).toBe(false);
    expect(byName.brittle!.variants!.some((v) => v.predicted_tag !== 'nlp')).toBe(true);
    expect(byName.robust).toMatchObject({ pass: true });
    expect(byName.robust!.variants).toHaveLength(3);
    expect(byName.up).toMatchObject({ pass: true, text: 'a survey of images' });
    expect(byName.up!.probability!.after).toBeGreaterThan(byName.up!.probability!.before);
    expect(byName.down!.pass).toBe(false);
    expect(byName.becomes!.pass).toBe(true);
  });

  it('rates passed over run cases, overall and per kind, without the skipped ones', () => {
    const report = runBehaviourSuite(keywordModel, suite);
    expect(report).toMatchObject({ passed: 4, failed: 3, skipped: 1 });
    expect(report.pass_rate).toBeCloseTo(4 / 7, 12);
    expect(report.by_kind).toEqual({
      mft: { cases: 2, passed: 1, pass_rate: 0.5 },
      inv: { cases: 2, passed: 1, pass_rate: 0.5 },
      dir: { cases: 3, passed: 2, pass_rate: 2 / 3 },
    });
    // The same suite and model give the same report (seeded perturbations).
    expect(runBehaviourSuite(keywordModel, suite)).toEqual(report);
  });

  it('has no pass rate when no case can run', () => {
    const report = runBehaviourSuite(keywordModel, { ...suite, cases: [suite.cases[2]!] });
    expect(report.pass_rate).toBeNull();
    expect(report.by_kind).toEqual({});
  });

  it('a multi-label model passes a minimum-functionality case when the expected tag is among its tags', () => {
    const multi = {
      tags: ['nlp', 'vision', 'other'],
      predict: (texts: readonly string[]) =>
        texts.map(() => ({
          predicted_tag: 'vision',
          predicted_tags: ['vision', 'nlp'],
          probabilities: { nlp: 0.6, vision: 0.7, other: 0.1 },
        })),
    };
    const report = runBehaviourSuite(multi, { ...suite, cases: [suite.cases[0]!] });
    expect(report.cases[0]).toMatchObject({ pass: true, expected: 'nlp', got: 'vision, nlp' });
  });

  it('an inv case with an expected tag also needs the unperturbed text to get it', () => {
    const c = { kind: 'inv', name: 'e', text: 'VIDEO', perturbation: 'casing', variants: 2 } as const;
    expect(runBehaviourSuite(keywordModel, { ...suite, cases: [{ ...c, expected: 'vision' }] }).passed).toBe(
      1,
    );
    expect(runBehaviourSuite(keywordModel, { ...suite, cases: [{ ...c, expected: 'nlp' }] }).passed).toBe(0);
  });
});

describe('parseBehaviourSuite', () => {
  const good = {
    name: 'mine',
    seed: 7,
    cases: [
      { kind: 'mft', name: 'a', text: 'Transformers for NER', expected: 'nlp' },
      { kind: 'inv', name: 'b', text: 'Image segmentation', perturbation: 'typos' },
      { kind: 'dir', name: 'c', text: 'A survey', add: 'of images', tag: 'vision' },
    ],
  };

  it('reads a suite and fills defaults (3 variants, expect: increase)', () => {
    const suite = parseBehaviourSuite(good, 'suite.yaml');
    expect(suite.name).toBe('mine');
    expect(suite.seed).toBe(7);
    expect(suite.cases[1]).toMatchObject({ variants: 3 });
    expect(suite.cases[2]).toMatchObject({ expect: 'increase' });
    expect(parseBehaviourSuite({ cases: good.cases }, 'suite.yaml')).toMatchObject({
      name: 'suite.yaml',
      seed: 42,
    });
  });

  it('refuses bad files naming the file and the path of the bad value', () => {
    const bad: [unknown, RegExp][] = [
      [[], /suite.yaml: the file must be a mapping/],
      [{ cases: [] }, /suite.yaml: cases must hold at least one case/],
      [{ cases: 'x' }, /cases must be a list/],
      [
        { cases: good.cases, extra: 1 },
        /suite.yaml: extra is not a known key; allowed here: name, about, seed, cases/,
      ],
      [
        { cases: [{ ...good.cases[0], kind: 'mtf' }] },
        /cases\[0\].kind must be one of mft, inv, dir, got "mtf"/,
      ],
      [{ cases: [{ ...good.cases[0], text: '' }] }, /cases\[0\].text must be a non-empty string/],
      [{ cases: [{ ...good.cases[0], expect: 'x' }] }, /cases\[0\].expect is not a known key/],
      [
        { cases: [{ ...good.cases[1], perturbation: 'emoji' }] },
        /cases\[0\].perturbation must be one of typos, names/,
      ],
      [
        { cases: [{ ...good.cases[1], variants: 0 }] },
        /cases\[0\].variants must be a whole number from 1 to 100/,
      ],
      [
        { cases: [{ ...good.cases[2], expect: 'down' }] },
        /cases\[0\].expect must be one of increase, predicted/,
      ],
      [{ cases: [good.cases[0], good.cases[0]] }, /cases\[1\].name repeats the case name 'a'/],
      [
        { cases: [{ ...good.cases[1], perturbation: 'names' }] },
        /cases\[0\].text is not changed by the 'names' perturbation \(it swaps these first names: Alice/,
      ],
      [{ cases: [{ ...good.cases[1], text: 'a b c' }] }, /is not changed by the 'typos' perturbation/],
      [{ seed: -1, cases: good.cases }, /seed must be a whole number/],
    ];
    for (const [raw, message] of bad) {
      expect(() => parseBehaviourSuite(raw, 'suite.yaml')).toThrow(ModelInputError);
      expect(() => parseBehaviourSuite(raw, 'suite.yaml')).toThrow(message);
    }
  });

  it('accepts the sample suite file (samples/behaviour.yaml) and the sample slices', () => {
    const read = (name: string) => parseYaml(readFileSync(join(REPO_ROOT, 'samples', name), 'utf8'));
    expect(parseBehaviourSuite(read('behaviour.yaml'), 'behaviour.yaml').cases).toHaveLength(5);
    expect(parseSliceDefinitions(read('slices.yaml'), 'slices.yaml').map((d) => d.name)).toEqual([
      'nlp_cnn',
      'short_text',
      'mentions transformers',
      'long mlops texts',
    ]);
  });

  it('accepts the default suite as a file would give it', () => {
    const raw = JSON.parse(JSON.stringify(DEFAULT_BEHAVIOUR_SUITE)) as unknown;
    expect(parseBehaviourSuite(raw, 'default')).toEqual(DEFAULT_BEHAVIOUR_SUITE);
    const kinds = new Set(DEFAULT_BEHAVIOUR_SUITE.cases.map((c) => c.kind));
    expect([...kinds].sort()).toEqual(['dir', 'inv', 'mft']);
  });
});
