/**
 * `tagger optimize`: trials as nested runs, CV scores, the saved arguments and the table. Commands run in-
 * process (test/support/cli.ts); real files, a real local store.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTrackingStore } from '../../src/tracking/index.js';
import { cliFolder, expectCleanFailure, FAST_ARGS } from '../support/cli.js';
import { SAMPLE_DATA } from '../support/components.js';

const cli = cliFolder();
const tagger = cli.tagger;

describe('tagger optimize', () => {
  it('logs one run per trial and saves the best arguments', async () => {
    const output = join(cli.dir, 'best-args.json');
    const result = await tagger([
      'optimize',
      '--data',
      SAMPLE_DATA,
      '--trials',
      '2',
      '--folds',
      '3',
      '--args',
      FAST_ARGS,
      '--tracking-uri',
      cli.store,
      '--output',
      output,
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout) as {
      best: { run_id: string; args: unknown; val_f1: number; cv_f1_mean: number };
      parent_run_id: string;
      folds: number;
      trials: {
        trial: number;
        run_id: string;
        cv_f1_mean: number;
        cv_f1_std: number;
        cv_f1_folds: number[];
        val_f1: number;
        f1: number;
        args: unknown;
        base_args: boolean;
      }[];
    };
    expect(summary.trials.map((trial) => [trial.trial, trial.base_args])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(summary.trials.map((trial) => trial.run_id)).toContain(summary.best.run_id);
    expect(summary.folds).toBe(3);
    expect(summary.trials.every((trial) => trial.cv_f1_folds.length === 3)).toBe(true);
    expect(summary.best.cv_f1_mean).toBe(Math.max(...summary.trials.map((trial) => trial.cv_f1_mean)));
    const saved = JSON.parse(await readFile(output, 'utf8'));
    expect(saved).toEqual(summary.best.args);
    const tracking = await openTrackingStore(cli.store);
    try {
      const experiment = await tracking.getExperimentByName('optimization');
      const runs = await tracking.searchRuns(experiment?.experimentId ?? '');
      // Two trials nested under one parent run of the search (MLflow's mlflow.parentRunId).
      const parent = runs.find((run) => run.info.runId === summary.parent_run_id)!;
      expect(parent.info.status).toBe('FINISHED');
      expect(parent.metrics.best_val_f1).toBe(summary.best.val_f1);
      expect(parent.metrics.best_cv_f1_mean).toBe(summary.best.cv_f1_mean);
      expect(parent.tags['tagger.best_run_id']).toBe(summary.best.run_id);
      const trials = runs.filter((run) => run.info.runId !== summary.parent_run_id);
      expect(trials).toHaveLength(2);
      expect(trials.every((run) => typeof run.metrics.val_f1 === 'number')).toBe(true);
      // Every trial's model went through the (default) behavioural tests.
      expect(trials.every((run) => typeof run.metrics.behavioural_pass_rate === 'number')).toBe(true);
      expect(trials.every((run) => typeof run.metrics.cv_f1_std === 'number')).toBe(true);
      expect(trials.every((run) => run.tags['mlflow.parentRunId'] === summary.parent_run_id)).toBe(true);
    } finally {
      await tracking.close();
    }
  });

  it('runs the --behaviour suite and the --slices on every trial', async () => {
    const suite = join(cli.dir, 'optimize-suite.json');
    await writeFile(
      suite,
      JSON.stringify({
        cases: [
          { kind: 'mft', name: 'wrong on purpose', text: 'Object detection with YOLO.', expected: 'mlops' },
        ],
      }),
    );
    const slices = join(cli.dir, 'optimize-slices.yaml');
    await writeFile(slices, 'slices:\n  - { name: mlops rows, where: { tag: mlops } }\n');
    const uri = `sqlite:///${join(cli.dir, 'optimize-files.db')}`;
    const result = await tagger([
      'optimize',
      '--data',
      SAMPLE_DATA,
      '--trials',
      '1',
      '--args',
      FAST_ARGS,
      '--tracking-uri',
      uri,
      '--output',
      join(cli.dir, 'files-best.json'),
      '--behaviour',
      suite,
      '--slices',
      slices,
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const runId = (JSON.parse(result.stdout) as { trials: { run_id: string }[] }).trials[0]!.run_id;
    const tracking = await openTrackingStore(uri);
    try {
      const run = (await tracking.getRun(runId))!;
      expect(run.metrics.behavioural_pass_rate).toBe(0);
      const performance = JSON.parse(
        new TextDecoder().decode(await tracking.readArtifact(runId, 'performance.json')),
      ) as { slices: Record<string, unknown> };
      expect(Object.keys(performance.slices)).toEqual(['mlops rows']);
    } finally {
      await tracking.close();
    }
  });

  it('prints a table of the trials, marking the default arguments and the best', async () => {
    const result = await tagger([
      'optimize',
      '--data',
      SAMPLE_DATA,
      '--trials',
      '2',
      '--tracking-uri',
      cli.store,
      '--output',
      join(cli.dir, 'table-args.json'),
      '--quiet',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^trial\s+classifier\s+analyzer\s+ngrams\s+min_df\s+sublinear\s+balancing\s+its arguments\s+cv f1\s+val f1\s+test f1$/,
    );
    // Each trial shows its classifier and that classifier's own arguments (before: SGD's for a soft vote).
    for (const line of lines.slice(1, 3)) {
      const classifier = /^\d+\s+(\S+)/.exec(line)?.[1];
      if (classifier === 'soft_vote')
        expect(line).toMatch(
          /\b(linear_svm|nb_lr|multinomial_nb|logistic_regression|nb_svm|complement_nb)\(/,
        );
      if (classifier !== 'ovr' && classifier !== 'softmax') expect(line).not.toMatch(/learning_rate|power_t/);
    }
    expect(lines[1]).toMatch(/^1\s.*\s0\.\d{4} ± 0\.\d{4}\s.*default arguments/);
    expect(lines[2]).toMatch(/^2\s/);
    expect(lines.slice(1, 3).join('\n')).toMatch(/best/);
    expect(result.stdout).toMatch(/nested under run [0-9a-f]{32}/);
  }, 120_000);

  it('rejects a non-numeric trial count', async () => {
    expectCleanFailure(
      await tagger(['optimize', '--data', SAMPLE_DATA, '--trials', 'many']),
      /--trials must be a whole number/,
    );
  });

  it('rejects fewer than 2 folds', async () => {
    expectCleanFailure(
      await tagger(['optimize', '--data', SAMPLE_DATA, '--trials', '1', '--folds', '1']),
      /--folds must be a whole number ≥ 2/,
    );
  });
});
