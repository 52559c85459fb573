/**
 * A real model choice's report (src/train/model-choice/choose.ts) on a small data set made here, for the
 * tests that serve or show one: three tags whose words say them apart, and with `others` a few texts of
 * `other` that mix two tags' words, so the choice compares on the balanced score.
 */
import { createRng, type LabelledText } from '../../src/model/index.js';
import {
  type ChoiceReport,
  chooseModel,
  threadCpuMicroseconds,
} from '../../src/train/model-choice/choose.js';
import { prepareChoice } from '../../src/train/model-choice/prepare.js';
import { modelTagsOf } from '../../src/train/pipeline.js';
import { splitData } from '../../src/train/splits.js';

export function smallChoiceReport(options: { others?: boolean } = {}): ChoiceReport {
  const rng = createRng(9);
  const words = Array.from({ length: 3 }, (_, t) => Array.from({ length: 5 }, (_, i) => `w${t}x${i}`));
  const pick = (t: number) => words[t]![Math.floor(rng() * 5)]!;
  const rows = options.others ? 2_400 : 240;
  const data: LabelledText[] = Array.from({ length: rows }, (_, i) =>
    options.others && i % 25 === 0
      ? { text: `${pick(i % 3)} filler ${pick((i + 1) % 3)}`, tag: 'other' }
      : { text: `${pick(i % 3)} filler ${pick(i % 3)}`, tag: `t${i % 3}` },
  );
  const preparation = prepareChoice({
    data,
    given: {},
    seed: 1,
    threads: 1,
    extraTexts: [],
    encoder: { installed: false, why: 'not in this test' },
    memoryBudget: 8e9,
    only: ['linear_svm_words', 'linear_svm'],
  });
  const split = splitData(data, false, 1);
  return chooseModel({
    train: split.train,
    validation: split.validation,
    plan: preparation.plan,
    budgetSeconds: preparation.budgetSeconds,
    budgetSource: preparation.budgetSource,
    startedCpu: threadCpuMicroseconds(),
    cpuClock: threadCpuMicroseconds,
    seed: 1,
    tags: modelTagsOf(data, preparation.plan[0]!.args),
    charsPerText: 20,
  }).report;
}
