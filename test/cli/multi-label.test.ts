/**
 * Multi-label data (a tags column) through train, predict and evaluate. Commands run in-process
 * (test/support/cli.ts); real files, a real local store.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../src/tracking/index.js';
import { cliFolder, expectCleanFailure, trainArgv } from '../support/cli.js';
import { REPO_ROOT } from '../support/components.js';

const cli = cliFolder();
const tagger = cli.tagger;

describe('multi-label data (a tags column)', () => {
  const MULTI = join(REPO_ROOT, 'samples', 'projects-multilabel.csv');
  const multiStore = () => join(cli.dir, 'mlruns-multi');

  it('trains a multi-label run, predicts several tags per text and evaluates with micro and macro f1', async () => {
    const train = await tagger(
      trainArgv(multiStore(), ['--json'], { data: MULTI, args: JSON.stringify({ num_epochs: 15 }) }),
    );
    expect(train.code, train.stderr).toBe(0);
    const output = JSON.parse(train.stdout);
    expect(output.metrics.micro_f1).toBeGreaterThan(0.5);
    expect(Object.keys(output.tag_thresholds)).toContain('pytorch');
    const tracking = await openTrackingStore(multiStore());
    try {
      const run = await tracking.getRun(output.run_id);
      expect(run?.params).toMatchObject({ multi_label: 'true', threshold: 'tuned' });
    } finally {
      await tracking.close();
    }

    const predicted = await tagger(
      ['predict', 'Fine-tuning BERT in PyTorch for sentiment analysis of product reviews'],
      { MLFLOW_TRACKING_URI: multiStore() },
    );
    expect(predicted.code, predicted.stderr).toBe(0);
    const [prediction] = JSON.parse(predicted.stdout).predictions;
    expect(prediction.predicted_tags.length).toBeGreaterThan(1);
    expect(prediction.predicted_tag).toBe(prediction.predicted_tags[0]);

    const labelled = join(cli.dir, 'multi-labelled.csv');
    await writeFile(
      labelled,
      'title,description,tags\n' +
        'BERT,sentiment analysis of reviews with a transformer,natural-language-processing|transformers\n' +
        'YOLO,object detection in images with PyTorch,computer-vision|pytorch\n',
    );
    const evaluated = await tagger(['evaluate', '--data', labelled], { MLFLOW_TRACKING_URI: multiStore() });
    expect(evaluated.code, evaluated.stderr).toBe(0);
    expect(evaluated.stdout).toMatch(
      /^overall: precision [\d.]+, recall [\d.]+, f1 [\d.]+ \(weighted; micro f1 [\d.]+, macro f1 [\d.]+\)$/m,
    );
  });

  it('refuses multi_label false for a tags column, before training', async () => {
    expectCleanFailure(
      await tagger(trainArgv(multiStore(), [], { data: MULTI, args: '{"multi_label": false}' })),
      /several tags per text \(a tags column\), but the args set multi_label to false/,
    );
  });
});
