/**
 * A behaviour suite on a model of other tags (issue 27, item 13): the default suite is written for
 * dataset.csv's tags, and on a model of someone else's tags it skipped 23 cases one by one and "failed"
 * the rest — 76.9 % for a model of f1 1.0 — because `other`, which every model has, and the invariance
 * cases then test texts of another domain. A suite that names none of the model's tags (but `other`) is
 * now not run at all, and says why; one that shares some still skips case by case, naming the tags.
 */
import { describe, expect, it } from 'vitest';
import type { BehaviourModel } from '../../../src/model/evaluation/behaviour.js';
import { type BehaviourSuite, DEFAULT_BEHAVIOUR_SUITE, runBehaviourSuite } from '../../../src/model/index.js';

/** A model of `tags` that predicts the first of them for everything; counts its predictions. */
function fakeModel(tags: string[]): BehaviourModel & { predictions: number } {
  const model = {
    tags,
    predictions: 0,
    predict(texts: readonly string[]) {
      model.predictions += texts.length;
      return texts.map(() => ({
        predicted_tag: tags[0]!,
        probabilities: Object.fromEntries(tags.map((tag, i) => [tag, i === 0 ? 1 : 0])),
      }));
    },
  };
  return model;
}

describe('a behaviour suite and the tags of the model it runs on', () => {
  it('the default suite says what it is for', () => {
    expect(DEFAULT_BEHAVIOUR_SUITE.about).toMatch(
      /dataset\.csv.*computer-vision, mlops, natural-language-processing, other/,
    );
  });

  it('is not run on a model that has none of its tags but other, and says why', () => {
    const model = fakeModel(['football', 'other', 'tennis']);
    const report = runBehaviourSuite(model, DEFAULT_BEHAVIOUR_SUITE);
    expect(model.predictions).toBe(0);
    expect(report).toMatchObject({
      pass_rate: null,
      passed: 0,
      failed: 0,
      skipped: DEFAULT_BEHAVIOUR_SUITE.cases.length,
      by_kind: {},
      about: DEFAULT_BEHAVIOUR_SUITE.about,
    });
    expect(report.not_applicable).toBe(
      'its cases expect the tags computer-vision, mlops, natural-language-processing, and this model has none of them (its tags: football, other, tennis)',
    );
    expect(report.cases.every((c) => c.pass === null)).toBe(true);
  });

  it('skips case by case, naming the missing tags, on a model that shares some of its tags', () => {
    const report = runBehaviourSuite(
      fakeModel(['natural-language-processing', 'other', 'robotics']),
      DEFAULT_BEHAVIOUR_SUITE,
    );
    expect(report.not_applicable).toBeUndefined();
    expect(report.pass_rate).not.toBeNull();
    const skipped = report.cases.filter((c) => c.pass === null);
    expect(skipped.length).toBe(report.skipped);
    expect(new Set(skipped.flatMap((c) => c.missing_tags ?? []))).toEqual(
      new Set(['computer-vision', 'mlops']),
    );
  });

  it('a suite of invariance cases only, or of other only, runs on any model', () => {
    const suite: BehaviourSuite = {
      name: 'mine',
      seed: 1,
      cases: [
        {
          kind: 'inv',
          name: 'casing',
          text: 'Goal in the last minute.',
          perturbation: 'casing',
          variants: 2,
        },
        { kind: 'mft', name: 'weather', text: 'Rain tomorrow.', expected: 'other' },
      ],
    };
    const report = runBehaviourSuite(fakeModel(['football', 'other']), suite);
    expect(report.not_applicable).toBeUndefined();
    expect(report.skipped).toBe(0);
    expect(report.passed + report.failed).toBe(2);
  });
});
