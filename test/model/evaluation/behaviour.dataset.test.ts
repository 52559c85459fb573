/**
 * The default behaviour suite on models trained on the shared dataset.csv: a model trained with the
 * default arguments passes, one trained on shuffled labels does not. Beside behaviour.test.ts; a
 * `*.dataset.test.ts` file trains on the shared data, so it is not part of `npm run test:unit`.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runBehaviourSuite } from '../../../src/model/evaluation/behaviour.js';
import { DEFAULT_BEHAVIOUR_SUITE } from '../../../src/model/evaluation/behaviour-suite.js';
import {
  createRng,
  DEFAULT_TRAINING_ARGS,
  type LabelledText,
  stratifiedSplit,
  trainTagger,
} from '../../../src/model/index.js';
import { sharedDataset } from '../../support/components.js';

const datasetPath = sharedDataset('dataset.csv');

describe.skipIf(datasetPath === null)('the default suite on models trained on dataset.csv', () => {
  const rows = (): LabelledText[] =>
    (parse(readFileSync(datasetPath!), { columns: true }) as Record<string, string>[]).map((r) => ({
      text: `${r.title} ${r.description}`,
      tag: r.tag!,
    }));

  it('passes on a model trained with the default arguments', () => {
    const [train, val] = stratifiedSplit(rows(), (r) => r.tag, [0.7, 0.15, 0.15], 42);
    const { model } = trainTagger(train!, val!, DEFAULT_TRAINING_ARGS, { seed: 42 });
    const report = runBehaviourSuite(model, DEFAULT_BEHAVIOUR_SUITE);
    const failed = report.cases.filter((c) => c.pass !== true).map((c) => `${c.name}: ${c.got}`);
    expect(report.skipped).toBe(0);
    // Measured 36/36 (2026-11-25); one case of slack so a harmless change of defaults is not a failure.
    expect(failed.length, failed.join('\n')).toBeLessThanOrEqual(1);
  });

  it('fails on a model trained on shuffled labels', () => {
    const data = rows();
    const tags = data.map((r) => r.tag);
    const rng = createRng(7);
    for (let i = tags.length - 1; i > 0; i--) {
      const j = Math.floor(rng() * (i + 1));
      [tags[i], tags[j]] = [tags[j]!, tags[i]!];
    }
    const shuffled = data.map((r, i) => ({ ...r, tag: tags[i]! }));
    const [train, val] = stratifiedSplit(shuffled, (r) => r.tag, [0.7, 0.15, 0.15], 42);
    const { model } = trainTagger(train!, val!, DEFAULT_TRAINING_ARGS, { seed: 42 });
    const report = runBehaviourSuite(model, DEFAULT_BEHAVIOUR_SUITE);
    expect(report.pass_rate!).toBeLessThan(0.75);
    expect(report.by_kind.mft!.pass_rate).toBeLessThan(0.5);
  });
});
