/**
 * trainTagger once on the shared dataset (../shared/data/dataset.csv): the default arguments reach a sane
 * weighted f1 on a held-back split. Beside tagger.test.ts, whose tiny corpus checks exact behaviour; a
 * `*.dataset.test.ts` file trains on the shared data, so it is not part of `npm run test:unit`.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAINING_ARGS } from '../../src/model/args.js';
import { evaluate } from '../../src/model/evaluation/evaluate.js';
import { stratifiedSplit } from '../../src/model/split.js';
import { trainTagger } from '../../src/model/tagger.js';
import { sharedDataset } from '../support/components.js';

const datasetPath = sharedDataset('dataset.csv');

describe.skipIf(datasetPath === null)('on the shared dataset (training test)', () => {
  it('default args reach a sane weighted f1 on a held-back split of dataset.csv', () => {
    const rows = (parse(readFileSync(datasetPath!), { columns: true }) as Record<string, string>[]).map(
      (r) => ({
        text: `${r.title} ${r.description}`,
        tag: r.tag!,
      }),
    );
    const [train, val, test] = stratifiedSplit(rows, (r) => r.tag, [0.7, 0.15, 0.15], 42);
    const { model } = trainTagger(train!, val!, DEFAULT_TRAINING_ARGS, { seed: 42 });
    expect(model.tags).toEqual(['computer-vision', 'mlops', 'natural-language-processing', 'other']);
    expect(evaluate(model, test!).overall.f1).toBeGreaterThan(0.8);
  });
});
