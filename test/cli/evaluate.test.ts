/**
 * `tagger evaluate`: a run scored on new labelled data. Commands run in-process (test/support/cli.ts);
 * real files, a real local store.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliFolder, expectCleanFailure } from '../support/cli.js';

const cli = cliFolder({ trained: true });
const tagger = cli.tagger;

describe('tagger evaluate', () => {
  it('scores the best run on new labelled data, folding tags it does not know into other', async () => {
    const data = join(cli.dir, 'labelled.csv');
    await writeFile(
      data,
      'title,description,tag\n' +
        'BERT,sentiment analysis of reviews,natural-language-processing\n' +
        'YOLO,object detection in images,computer-vision\n' +
        'Qubits,quantum annealing for scheduling,quantum\n' +
        'Kubeflow,pipelines for model serving,mlops\n',
    );
    const json = await tagger(['evaluate', '--data', data, '--json'], { MLFLOW_TRACKING_URI: cli.store });
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.run_id).toMatch(/^[0-9a-f]{32}$/);
    expect(report).toMatchObject({ rows: 4, unknown_tags: { quantum: 1 } });
    expect(report.performance.overall.num_samples).toBe(4);
    const support = Object.values(report.performance.class as Record<string, { num_samples: number }>);
    expect(support.reduce((total, m) => total + m.num_samples, 0)).toBe(4);
    for (const key of ['precision', 'recall', 'f1']) {
      expect(report.performance.overall[key]).toBeGreaterThanOrEqual(0);
      expect(report.performance.overall[key]).toBeLessThanOrEqual(1);
    }

    const text = await tagger(['evaluate', '--data', data], { MLFLOW_TRACKING_URI: cli.store });
    expect(text.stdout).toContain(`Run ${report.run_id} on ${data} (4 rows)`);
    expect(text.stdout).toContain("Tags the model does not know, scored as 'other': quantum (1)");
    expect(text.stdout).toMatch(/^tag +precision +recall +f1 +rows$/m);
    // The slices (nlp_cnn holds no row here) and the default behavioural tests, as training reports them.
    expect(text.stdout).toMatch(/^slice +precision +recall +f1 +rows$/m);
    expect(text.stdout).toMatch(/^nlp_cnn +- +- +- +0$/m);
    expect(text.stdout).toMatch(/^short_text +\d\.\d{4} +\d\.\d{4} +\d\.\d{4} +4$/m);
    expect(text.stdout).toMatch(/^Behavioural tests \(default \(dataset\.csv tags\)\): \d+\/36 passed/m);
    expect(report.behavioural.cases).toHaveLength(36);
    expect(Object.keys(report.performance.slices)).toEqual(['short_text']);
    expectCleanFailure(
      await tagger(['evaluate', '--data', join(cli.dir, 'absent.csv')], { MLFLOW_TRACKING_URI: cli.store }),
      /data: file not found/,
    );
  });
});
