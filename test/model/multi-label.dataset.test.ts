/**
 * A multi-label model on the shared multi-label data (Made With ML's projects.json under ../shared/data):
 * the tag lists are read and a model beats 0.5 micro f1. Beside multi-label.test.ts; a
 * `*.dataset.test.ts` file trains on the shared data, so it is not part of `npm run test:unit`.
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs } from '../../src/model/args.js';
import { evaluateWithErrors } from '../../src/model/evaluation/evaluate.js';
import { type LabelledText, trainTagger } from '../../src/model/tagger.js';
import { readDataset } from '../../src/train/data.js';
import { splitData } from '../../src/train/pipeline.js';
import { sharedDataset } from '../support/components.js';

const projectsPath = sharedDataset('mlops-course_146d00b/projects.json');

describe.skipIf(projectsPath === null)('on the multi-label projects of the course (../shared)', async () => {
  const rows: LabelledText[] = projectsPath === null ? [] : await readDataset(projectsPath);

  it('reads 2032 projects with their tag lists and trains a model that beats 0.5 micro f1', () => {
    expect(rows).toHaveLength(2032);
    expect(rows.filter((row) => row.tags!.length > 1).length).toBeGreaterThan(2000);
    const { train, validation, test } = splitData(rows, false, 7);
    // Test rows of every frequent tag reach the test split (strata by each row's rarest frequent tag).
    expect(test.length).toBeGreaterThan(280);
    const args = parseTrainingArgs({
      multi_label: true,
      threshold: 'tuned',
      min_freq: 100,
      analyzer: 'word',
      ngram_min_range: 1,
      ngram_max_range: 2,
      num_epochs: 15,
      refit: false,
    });
    const { model } = trainTagger(train, validation, args, { seed: 7 });
    const { performance } = evaluateWithErrors(model, test);
    expect(performance.averages!.micro.f1).toBeGreaterThan(0.5);
    expect(performance.class['natural-language-processing']!.f1).toBeGreaterThan(0.6);
  });
});
