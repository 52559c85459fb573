/**
 * Encoder runs in src/train, with synthetic embeddings (one per text, computed before anything trains):
 * the split, evaluation, behavioural tests and drift reference profile find every text's embedding;
 * cross-validation gives the same numbers serially and in worker threads (which receive the embeddings
 * once); the texts to embed are each distinct text once; the label issues' out-of-fold models take the
 * embeddings too; an encoder search draws SGD trials only. The real encoder is tested in test/encoder and
 * test/cli/encoder.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createRng,
  DEFAULT_BEHAVIOUR_SUITE,
  type LabelledText,
  parseTrainingArgs,
  type TrainEncoder,
} from '../../src/model/index.js';
import { CrossValidator, crossValidateSerial } from '../../src/train/cross-validate.js';
import { readDataset } from '../../src/train/data.js';
import { textsToEmbed } from '../../src/train/embeddings.js';
import { trainingLabelIssues } from '../../src/train/label-issues.js';
import { trainAndEvaluate } from '../../src/train/pipeline.js';
import { sampleArgs } from '../../src/train/search-space.js';
import { SYNTHETIC_ENCODER, syntheticEmbeddings } from '../support/cascade-run.js';
import { SAMPLE_DATA } from '../support/components.js';

const SPEC = SYNTHETIC_ENCODER;
const ARGS = parseTrainingArgs({ encoder: 'synthetic', num_epochs: 4, ngram_max_range: 3 });

/** A pseudo-embedding of every text: seeded by the text, so the same text always gets the same vector. */
const synthetic = (texts: Iterable<string>): TrainEncoder => syntheticEmbeddings(texts, []);

let data: LabelledText[];
beforeAll(async () => {
  data = await readDataset(SAMPLE_DATA);
});

describe('encoder runs in src/train', () => {
  it('lists each text to embed: the data, the test data and the behavioural suite', () => {
    const texts = textsToEmbed({ data, testData: data.slice(0, 3), behaviour: DEFAULT_BEHAVIOUR_SUITE });
    const distinct = new Set(texts);
    for (const row of data) expect(distinct.has(row.text)).toBe(true);
    for (const c of DEFAULT_BEHAVIOUR_SUITE.cases) expect(distinct.has(c.text)).toBe(true);
  });

  it('trains, evaluates and runs the behavioural tests with the embeddings given once', () => {
    const encoder = synthetic(textsToEmbed({ data }));
    const outcome = trainAndEvaluate({ data, args: ARGS, seed: 3, encoder });
    expect(outcome.model.encoder).toEqual(SPEC);
    expect(outcome.performance.overall.f1).toBeGreaterThan(0.5);
    expect(outcome.behaviour.passed + outcome.behaviour.failed).toBeGreaterThan(0);
    // The drift reference profile counts what the model predicted on the test split with the embeddings:
    // each tag as often as its column of the confusion matrix.
    const { labels, matrix } = outcome.confusionAndMistakes.confusion!;
    expect(outcome.reference.rows).toBe(outcome.testSet.size);
    labels.forEach((tag, j) => {
      expect(outcome.reference.predicted_tag[tag] ?? 0).toBe(matrix.reduce((sum, row) => sum + row[j]!, 0));
    });
    expect(() => trainAndEvaluate({ data, args: ARGS, seed: 3 })).toThrow(/no embeddings were given/);
  });

  it('cross-validates the same serially and in worker threads, which get the embeddings once', async () => {
    const encoder = synthetic(data.map((row) => row.text));
    const options = { folds: 3, seed: 5, trainingSeeds: [5, 6], encoder };
    const serial = crossValidateSerial(data, ARGS, options);
    const validator = new CrossValidator(data, { ...options, workers: 2 });
    try {
      const threaded = await validator.run(ARGS);
      expect(threaded.folds).toEqual(serial.folds);
      // A TF-IDF trial in the same pool ignores the embeddings.
      const plain = await validator.run({ ...ARGS, encoder: null });
      expect(plain.folds).toEqual(crossValidateSerial(data, { ...ARGS, encoder: null }, options).folds);
    } finally {
      await validator.close();
    }
  }, 120_000);

  it('looks for label issues with out-of-fold models that take the embeddings', () => {
    const encoder = synthetic(data.map((row) => row.text));
    const found = trainingLabelIssues(data, ARGS, 3, undefined, encoder);
    expect('report' in found, JSON.stringify(found)).toBe(true);
    // Without the embeddings the folds cannot train: said, not thrown.
    const skipped = trainingLabelIssues(data, ARGS, 3);
    expect('skipped' in skipped && skipped.skipped).toMatch(/no embeddings were given/);
  });

  it('searches the classifiers that read embeddings, with encoder_weight in the space', () => {
    const random = createRng(11);
    const trials = Array.from({ length: 40 }, () => sampleArgs(ARGS, random));
    const readers = ['linear_svm', 'logistic_regression'];
    for (const trial of trials) {
      expect(['ovr', 'softmax', ...readers, 'soft_vote']).toContain(trial.classifier);
      expect(trial.encoder).toBe('synthetic');
      if (trial.classifier === 'soft_vote') {
        expect(trial.members!.some((m) => readers.includes(m.classifier))).toBe(true);
      }
    }
    expect(new Set(trials.map((t) => t.classifier)).size).toBeGreaterThan(3);
    expect(new Set(trials.map((t) => t.encoder_weight)).size).toBeGreaterThan(1);
  });
});
