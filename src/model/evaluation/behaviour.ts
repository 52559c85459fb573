/**
 * Behavioural tests of a trained model, after CheckList (Ribeiro et al., ACL 2020) and tagifai's
 * tests/model/test_behavioral.py. A held-out f1 says how often the model is right on texts like the
 * test split; these cases say whether it is right for reasons a person would accept:
 *
 * - `mft` (minimum functionality): a plain text a tagger must get right, e.g. "MLOps is the next big
 *   wave in machine learning." → mlops.
 * - `inv` (invariance): a perturbation that must not change the answer (typos, other person names,
 *   casing, punctuation); each case is tested on several seeded variants of its text.
 * - `dir` (directional expectation): adding a domain phrase must move the answer toward a tag (its
 *   probability rises, or it becomes the predicted tag).
 *
 * Pure: the perturbations draw from a seeded RNG, so a suite gives the same variants on every run.
 */

import { OTHER_TAG } from '../labels.js';
import { createRng, randomInt } from '../rng.js';
import {
  at,
  integerIn,
  invalid,
  list,
  nonEmptyString,
  oneOf,
  onlyKeys,
  record,
  uniqueNames,
  type Where,
} from './definition-file.js';

export const BEHAVIOUR_KINDS = ['mft', 'inv', 'dir'] as const;
export type BehaviourKind = (typeof BEHAVIOUR_KINDS)[number];

export const PERTURBATIONS = ['typos', 'names', 'casing', 'punctuation'] as const;
export type Perturbation = (typeof PERTURBATIONS)[number];

export const DIRECTIONS = ['increase', 'predicted'] as const;
/** `increase`: the tag's probability rises; `predicted`: the tag becomes the top prediction. */
export type Direction = (typeof DIRECTIONS)[number];

export interface MftCase {
  kind: 'mft';
  name: string;
  text: string;
  expected: string;
}

export interface InvCase {
  kind: 'inv';
  name: string;
  text: string;
  perturbation: Perturbation;
  /** How many perturbed variants of `text` are tested (each must keep the original's tag). */
  variants: number;
  /** When given, the unperturbed text must also be tagged so (else only consistency counts). */
  expected?: string;
}

export interface DirCase {
  kind: 'dir';
  name: string;
  text: string;
  /** Appended to `text` after a space. */
  add: string;
  tag: string;
  expect: Direction;
}

export type BehaviourCase = MftCase | InvCase | DirCase;

export interface BehaviourSuite {
  name: string;
  /** What the suite is for, in a sentence (the default suite says which data it was written for). */
  about?: string;
  /** Seeds the perturbations: the same suite and seed give the same variants. */
  seed: number;
  cases: BehaviourCase[];
}

/**
 * What the suite needs of a model: its tags and predictions with probabilities (a TagModel has both). A
 * multi-label model's minimum-functionality case passes when the expected tag is among its predicted tags.
 */
export interface BehaviourModel {
  readonly tags: readonly string[];
  predict(
    texts: readonly string[],
  ): { predicted_tag: string; predicted_tags?: readonly string[]; probabilities: Record<string, number> }[];
}

export interface CaseResult {
  name: string;
  kind: BehaviourKind;
  text: string;
  /** What had to happen, in words a person reads in the artifact and the summary. */
  expected: string;
  got: string;
  /** null: skipped (see `skipped`), not counted in the pass rates. */
  pass: boolean | null;
  skipped?: string;
  /** Skipped because the case names tags the model does not have: those tags. */
  missing_tags?: string[];
  /** `inv`: each perturbed text and its predicted tag. */
  variants?: { text: string; predicted_tag: string }[];
  /** `dir`: the tag's probability before and after the phrase was added. */
  probability?: { before: number; after: number };
}

export interface KindSummary {
  cases: number;
  passed: number;
  pass_rate: number;
}

export interface BehaviourReport {
  suite: string;
  /** The suite's `about`, when it has one. */
  about?: string;
  /**
   * Set when no case was run because the suite does not fit the model: it names tags (other than
   * `other`, which every model has) and the model has none of them. Says so, with both sets of tags.
   */
  not_applicable?: string;
  seed: number;
  /** Passed / run cases (skipped ones excluded); null when no case could run. */
  pass_rate: number | null;
  passed: number;
  failed: number;
  skipped: number;
  /** Only the kinds with at least one case run. */
  by_kind: Partial<Record<BehaviourKind, KindSummary>>;
  cases: CaseResult[];
}

/** A default for `inv` cases' `variants`: a few draws catch a brittle feature without many predictions. */
export const DEFAULT_VARIANTS = 3;

/** First names swapped by the `names` perturbation (CheckList's "change names"), both genders, several origins. */
export const PERSON_NAMES: readonly string[] = Object.freeze([
  'Alice',
  'Andrew',
  'Anna',
  'Carlos',
  'Chen',
  'David',
  'Emma',
  'Fatima',
  'Hiroshi',
  'James',
  'John',
  'Maria',
  'Mohammed',
  'Olga',
  'Priya',
  'Sarah',
  'Wei',
  'Yuki',
]);

const NAME_RE = new RegExp(`\\b(${PERSON_NAMES.join('|')})\\b`, 'g');
const TYPO_WORD_RE = /\p{L}{4,}/gu;

/**
 * CheckList's `add_typos`: one pair of adjacent letters swapped inside a random word of four or more
 * letters (the first letter stays, so the word stays recognisable to a person).
 * @example typo('Image segmentation', createRng(1)) // e.g. 'Image segmnetation'
 */
export function typo(text: string, rng: () => number): string {
  const words = [...text.matchAll(TYPO_WORD_RE)].filter((m) => {
    const w = m[0];
    for (let i = 1; i + 1 < w.length; i++) if (w[i] !== w[i + 1]) return true;
    return false;
  });
  if (words.length === 0) return text;
  const word = words[randomInt(rng, words.length)]!;
  const w = word[0];
  // Positions whose swap changes the word (two equal letters would swap to the same text).
  const positions: number[] = [];
  for (let i = 1; i + 1 < w.length; i++) if (w[i] !== w[i + 1]) positions.push(i);
  const i = positions[randomInt(rng, positions.length)]!;
  const swapped = w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2);
  return text.slice(0, word.index) + swapped + text.slice(word.index + w.length);
}

/** Every known first name replaced by another one (the same replacement for each occurrence of a name). */
export function changeNames(text: string, rng: () => number): string {
  const replacement = new Map<string, string>();
  return text.replace(NAME_RE, (name: string) => {
    let other = replacement.get(name);
    if (other === undefined) {
      const choices = PERSON_NAMES.filter((n) => n !== name);
      other = choices[randomInt(rng, choices.length)]!;
      replacement.set(name, other);
    }
    return other;
  });
}

const CASINGS = [
  (t: string) => t.toUpperCase(),
  (t: string) => t.toLowerCase(),
  (t: string) => t.replace(/\p{L}+/gu, (w) => w[0]!.toUpperCase() + w.slice(1).toLowerCase()),
] as const;

/** Upper, lower or title case, in turn; the first that changes the text from variant `index` on. */
export function changeCasing(text: string, index: number): string {
  for (let k = 0; k < CASINGS.length; k++) {
    const changed = CASINGS[(index + k) % CASINGS.length]!(text);
    if (changed !== text) return changed;
  }
  return text;
}

/** Trailing punctuation dropped, or a random mark added, or inner commas removed. */
export function changePunctuation(text: string, rng: () => number): string {
  const trimmed = text.trimEnd();
  const stripped = trimmed.replace(/[.!?;:]+$/, '');
  const options = [
    stripped !== trimmed ? stripped : `${trimmed}.`,
    `${stripped}${['!', '?', '...'][randomInt(rng, 3)]!}`,
    text.replace(/,/g, ''),
  ].filter((t) => t !== text);
  return options.length === 0 ? text : options[randomInt(rng, options.length)]!;
}

/** FNV-1a of a string: mixes a case's name into its seed, so reordering a suite keeps each case's variants. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The perturbed texts of an `inv` case, deterministic for the suite's seed; duplicates dropped. */
export function perturbedVariants(c: InvCase, seed: number): string[] {
  const rng = createRng((hash32(c.name) ^ seed) >>> 0);
  const out = new Set<string>();
  for (let i = 0; i < c.variants; i++) {
    const next =
      c.perturbation === 'typos'
        ? typo(c.text, rng)
        : c.perturbation === 'names'
          ? changeNames(c.text, rng)
          : c.perturbation === 'casing'
            ? changeCasing(c.text, i)
            : changePunctuation(c.text, rng);
    if (next !== c.text) out.add(next);
  }
  return [...out];
}

/** Tags a suite names; a case naming a tag the model does not have is skipped, not failed. */
function tagsOf(c: BehaviourCase): string[] {
  if (c.kind === 'mft') return [c.expected];
  if (c.kind === 'dir') return [c.tag];
  return c.expected === undefined ? [] : [c.expected];
}

const round = (p: number): number => Math.round(p * 10_000) / 10_000;

function runCase(model: BehaviourModel, c: BehaviourCase, seed: number): CaseResult {
  const base = { name: c.name, kind: c.kind, text: c.text };
  const unknown = tagsOf(c).filter((tag) => !model.tags.includes(tag));
  if (unknown.length > 0) {
    return {
      ...base,
      expected: unknown.join(', '),
      got: '',
      pass: null,
      skipped: `the model has no tag ${unknown.map((t) => `'${t}'`).join(', ')} (its tags: ${model.tags.join(', ')})`,
      missing_tags: unknown,
    };
  }
  if (c.kind === 'mft') {
    const [p] = model.predict([c.text]);
    const got =
      p!.predicted_tags && p!.predicted_tags.length > 1 ? p!.predicted_tags.join(', ') : p!.predicted_tag;
    const pass = p!.predicted_tag === c.expected || (p!.predicted_tags ?? []).includes(c.expected);
    return { ...base, expected: c.expected, got, pass };
  }
  if (c.kind === 'inv') {
    const texts = perturbedVariants(c, seed);
    const [original, ...rest] = model.predict([c.text, ...texts]);
    const tag = original!.predicted_tag;
    const variants = texts.map((text, i) => ({ text, predicted_tag: rest[i]!.predicted_tag }));
    const changed = variants.filter((v) => v.predicted_tag !== tag);
    const rightOriginal = c.expected === undefined || tag === c.expected;
    return {
      ...base,
      expected:
        c.expected === undefined
          ? `the same tag for every ${c.perturbation} variant`
          : `${c.expected} for the text and every ${c.perturbation} variant`,
      got:
        changed.length === 0
          ? `${tag} for all ${variants.length + 1}`
          : `${tag}, but ${changed.map((v) => v.predicted_tag).join(', ')} for ${changed.length} variant(s)`,
      pass: rightOriginal && changed.length === 0,
      variants,
    };
  }
  const [before, after] = model.predict([c.text, `${c.text} ${c.add}`]);
  const pBefore = before!.probabilities[c.tag] ?? 0;
  const pAfter = after!.probabilities[c.tag] ?? 0;
  const pass = c.expect === 'increase' ? pAfter > pBefore : after!.predicted_tag === c.tag;
  return {
    ...base,
    text: `${c.text} ${c.add}`,
    expected:
      c.expect === 'increase'
        ? `p(${c.tag}) rises when '${c.add}' is added`
        : `${c.tag} once '${c.add}' is added`,
    got: `p(${c.tag}) ${round(pBefore)} → ${round(pAfter)}, predicted ${after!.predicted_tag}`,
    pass,
    probability: { before: pBefore, after: pAfter },
  };
}

/**
 * Every text the suite can ask a model to predict (each case's text, its perturbed variants, the text with
 * its added phrase), whatever the model's tags: what an encoder model needs embeddings for beforehand.
 */
export function behaviourTexts(suite: BehaviourSuite): string[] {
  const texts = suite.cases.flatMap((c) =>
    c.kind === 'mft'
      ? [c.text]
      : c.kind === 'inv'
        ? [c.text, ...perturbedVariants(c, suite.seed)]
        : [c.text, `${c.text} ${c.add}`],
  );
  return [...new Set(texts)];
}

/**
 * Why the suite does not fit the model, or null when it does: a suite that names tags — other than
 * `other`, which every model has — and none of them is the model's was written for other data. Its
 * `other` and invariance cases would then test texts of another domain, and its pass rate would say
 * nothing about this model (the default suite passed 10 of 13 such cases for a model of f1 1.0).
 */
export function suiteMismatch(model: BehaviourModel, suite: BehaviourSuite): string | null {
  const named = [...new Set(suite.cases.flatMap(tagsOf))].filter((tag) => tag !== OTHER_TAG).sort();
  if (named.length === 0 || named.some((tag) => model.tags.includes(tag))) return null;
  return `its cases expect the tags ${named.join(', ')}, and this model has none of them (its tags: ${model.tags.join(', ')})`;
}

/**
 * Runs every case of the suite on the model. A case naming a tag the model lacks is skipped; a suite
 * that does not fit the model at all (`suiteMismatch`) runs no case.
 */
export function runBehaviourSuite(model: BehaviourModel, suite: BehaviourSuite): BehaviourReport {
  const mismatch = suiteMismatch(model, suite);
  if (mismatch !== null) {
    return {
      suite: suite.name,
      ...(suite.about === undefined ? {} : { about: suite.about }),
      not_applicable: mismatch,
      seed: suite.seed,
      pass_rate: null,
      passed: 0,
      failed: 0,
      skipped: suite.cases.length,
      by_kind: {},
      cases: suite.cases.map((c) => ({
        name: c.name,
        kind: c.kind,
        text: c.text,
        expected: tagsOf(c).join(', '),
        got: '',
        pass: null,
        skipped: `the suite does not fit the model: ${mismatch}`,
      })),
    };
  }
  const cases = suite.cases.map((c) => runCase(model, c, suite.seed));
  const ran = cases.filter((r) => r.pass !== null);
  const passed = ran.filter((r) => r.pass === true).length;
  const byKind: Partial<Record<BehaviourKind, KindSummary>> = {};
  for (const kind of BEHAVIOUR_KINDS) {
    const mine = ran.filter((r) => r.kind === kind);
    if (mine.length === 0) continue;
    const ok = mine.filter((r) => r.pass === true).length;
    byKind[kind] = { cases: mine.length, passed: ok, pass_rate: ok / mine.length };
  }
  return {
    suite: suite.name,
    ...(suite.about === undefined ? {} : { about: suite.about }),
    seed: suite.seed,
    pass_rate: ran.length === 0 ? null : passed / ran.length,
    passed,
    failed: ran.length - passed,
    skipped: cases.length - ran.length,
    by_kind: byKind,
    cases,
  };
}

const CASE_KEYS: Record<BehaviourKind, readonly string[]> = {
  mft: ['kind', 'name', 'text', 'expected'],
  inv: ['kind', 'name', 'text', 'perturbation', 'variants', 'expected'],
  dir: ['kind', 'name', 'text', 'add', 'tag', 'expect'],
};

function parseCase(raw: unknown, where: Where, seed: number): BehaviourCase {
  const value = record(raw, where);
  const kind = oneOf(value.kind, BEHAVIOUR_KINDS, at(where, 'kind'));
  onlyKeys(value, CASE_KEYS[kind], where);
  const name = nonEmptyString(value.name, at(where, 'name'));
  const text = nonEmptyString(value.text, at(where, 'text'));
  if (kind === 'mft')
    return { kind, name, text, expected: nonEmptyString(value.expected, at(where, 'expected')) };
  if (kind === 'dir') {
    return {
      kind,
      name,
      text,
      add: nonEmptyString(value.add, at(where, 'add')),
      tag: nonEmptyString(value.tag, at(where, 'tag')),
      expect: value.expect === undefined ? 'increase' : oneOf(value.expect, DIRECTIONS, at(where, 'expect')),
    };
  }
  const c: InvCase = {
    kind,
    name,
    text,
    perturbation: oneOf(value.perturbation, PERTURBATIONS, at(where, 'perturbation')),
    variants:
      value.variants === undefined
        ? DEFAULT_VARIANTS
        : integerIn(value.variants, 1, 100, at(where, 'variants')),
    ...(value.expected === undefined
      ? {}
      : { expected: nonEmptyString(value.expected, at(where, 'expected')) }),
  };
  // A perturbation that cannot change the text would make the case pass without testing anything.
  if (perturbedVariants(c, seed).length === 0) {
    const hint =
      c.perturbation === 'names'
        ? ` (it swaps these first names: ${PERSON_NAMES.join(', ')})`
        : c.perturbation === 'typos'
          ? ' (it needs a word of four or more letters)'
          : '';
    throw invalid(at(where, 'text'), `is not changed by the '${c.perturbation}' perturbation${hint}`);
  }
  return c;
}

/**
 * A suite from a parsed JSON/YAML file: `{ name?, about?, seed?, cases: [...] }` (see src/model/README.md).
 * @throws ModelInputError naming the file and the bad value's path.
 */
export function parseBehaviourSuite(raw: unknown, source: string): BehaviourSuite {
  const root: Where = { source, path: '' };
  const value = record(raw, root);
  onlyKeys(value, ['name', 'about', 'seed', 'cases'], root);
  const seed = value.seed === undefined ? 42 : integerIn(value.seed, 0, 0xffffffff, at(root, 'seed'));
  const rawCases = list(value.cases, at(root, 'cases'));
  if (rawCases.length === 0) throw invalid(at(root, 'cases'), 'must hold at least one case');
  const cases = rawCases.map((c, i) => parseCase(c, at(at(root, 'cases'), i), seed));
  uniqueNames(
    cases.map((c) => c.name),
    at(root, 'cases'),
    'case',
  );
  return {
    name: value.name === undefined ? source : nonEmptyString(value.name, at(root, 'name')),
    ...(value.about === undefined ? {} : { about: nonEmptyString(value.about, at(root, 'about')) }),
    seed,
    cases,
  };
}
