/**
 * The `tagger` command line: parses arguments and hands over to src/train, src/service or the server.
 * It owns only wiring: option parsing, progress output, printing results and mapping errors to a clean
 * message and a non-zero exit status (never a stack trace for bad input).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runServe } from './cluster.js';
import { printableConfig, SERVE_SETTINGS, type ServeFlags } from './config.js';
import { ModelFormatError, ModelInputError, parseTrainingArgs, type TrainingArgs } from './model/index.js';
import { startedByNpm, watchParent } from './parent-watch.js';
import { runServeCommand, StartupError } from './server.js';
import { loadModelForPrediction } from './service/predict-command.js';
import { openTrackingStore, resolveTrackingUri } from './tracking/index.js';
import { checkCanLog, TrackingError, type TrackingStore } from './tracking/store.js';
import { DataError } from './train/data.js';
import { readDataWithInput } from './train/dataset-input.js';
import { InterruptedError, logTrainingRun } from './train/log-run.js';
import { optimize, type Trial } from './train/optimize.js';
import { trainAndEvaluate } from './train/pipeline.js';
import { createProgress } from './train/progress.js';

const DEFAULT_SEED = 42;

/** Errors whose message is already a complete, user-facing explanation. */
const EXPECTED_ERRORS = [
  DataError,
  InterruptedError,
  ModelInputError,
  ModelFormatError,
  TrackingError,
  StartupError,
  RangeError,
];

class UsageError extends Error {}

function parseInteger(name: string, min: number) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim()))
      throw new InvalidArgumentError(`${name} must be a whole number, got '${value}'`);
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed) || parsed < min) {
      throw new InvalidArgumentError(`${name} must be a whole number ≥ ${min}, got '${value}'`);
    }
    return parsed;
  };
}

/** `--args` takes inline JSON (starting with `{`) or the path of a JSON file. */
async function readArgs(value: string | undefined): Promise<TrainingArgs> {
  if (value === undefined) return parseTrainingArgs({});
  let text = value;
  let source = 'the --args value';
  if (!value.trimStart().startsWith('{')) {
    source = value;
    try {
      text = await readFile(value, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new UsageError(
        code === 'ENOENT'
          ? `--args: file not found: ${value}`
          : `--args: cannot read ${value}: ${(error as Error).message}`,
      );
    }
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--args: ${source} is not valid JSON: ${(error as Error).message}`);
  }
  return parseTrainingArgs(raw);
}

function defaultRunName(prefix: string): string {
  return `${prefix}-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')}`;
}

async function withStore<T>(
  trackingUri: string | undefined,
  work: (store: TrackingStore) => Promise<T>,
  artifactRoot?: string,
): Promise<T> {
  const store = await openTrackingStore(
    resolveTrackingUri(trackingUri, process.env),
    artifactRoot !== undefined && artifactRoot !== '' ? { artifactRoot } : {},
  );
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

const formatMetric = (value: number): string => (Number.isFinite(value) ? value.toFixed(4) : String(value));

interface TrainFlags {
  data: string;
  testData?: string;
  args?: string;
  experiment: string;
  trackingUri?: string;
  artifactRoot?: string;
  runName?: string;
  seed: number;
  json?: boolean;
  quiet?: boolean;
}

/** The data files, each read once: rows to train on and the dataset inputs the runs record. */
async function readTrainingFiles(flags: { data: string; testData?: string }) {
  const train = await readDataWithInput(flags.data, 'training');
  const test = flags.testData === undefined ? undefined : await readDataWithInput(flags.testData, 'testing');
  return {
    data: train.rows,
    testData: test?.rows,
    datasets: test ? [train.input, test.input] : [train.input],
  };
}

async function trainCommand(flags: TrainFlags): Promise<void> {
  const args = await readArgs(flags.args);
  const { data, testData, datasets } = await readTrainingFiles(flags);
  const { outcome, logged, runName } = await withStore(
    flags.trackingUri,
    async (store) => {
      // Before training, not after it: a store or experiment it cannot write would cost the whole training.
      await checkCanLog(store, flags.experiment);
      const progress = createProgress({
        label: 'training',
        // With refit the epochs run twice: the validated fit, then the fit on train + validation.
        total: args.num_epochs * (args.refit ? 2 : 1),
        silent: flags.quiet === true,
      });
      let outcome: ReturnType<typeof trainAndEvaluate>;
      try {
        outcome = trainAndEvaluate({
          data,
          ...(testData ? { testData } : {}),
          args,
          seed: flags.seed,
          onEpoch: (report) =>
            progress.update(
              report.epoch,
              `train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
            ),
          onRefitEpoch: (report) =>
            progress.update(
              report.epochs + report.epoch,
              `refit on train+validation, train_loss=${report.trainLoss.toFixed(4)}`,
            ),
        });
      } finally {
        progress.stop();
      }
      const runName = flags.runName ?? defaultRunName('train');
      const logged = await logTrainingRun(store, {
        experiment: flags.experiment,
        runName,
        args,
        seed: flags.seed,
        outcome,
        source: 'tagger train',
        extraParams: { data: flags.data, ...(flags.testData ? { test_data: flags.testData } : {}) },
        datasets,
        catchSignals: true,
      });
      return { outcome, logged, runName };
    },
    flags.artifactRoot,
  );
  const { precision, recall, f1 } = outcome.performance.overall;
  // Loud on purpose: such a run logs a perfect-looking f1 that means nothing.
  for (const warning of outcome.warnings) process.stderr.write(`tagger: WARNING: ${warning}\n`);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        run_id: logged.runId,
        run_name: runName,
        experiment: flags.experiment,
        experiment_id: logged.experimentId,
        metrics: { precision, recall, f1 },
        threshold: outcome.threshold,
        sizes: outcome.sizes,
        test_set: outcome.testSet,
        warnings: outcome.warnings,
      })}\n`,
    );
    return;
  }
  process.stdout.write(
    `Logged run ${logged.runId} (${runName}) to experiment '${flags.experiment}'.\n` +
      `Test split (${outcome.sizes.test} rows): precision ${formatMetric(precision)}, recall ${formatMetric(recall)}, f1 ${formatMetric(f1)}\n`,
  );
}

interface OptimizeFlags extends Omit<TrainFlags, 'runName'> {
  trials: number;
  output: string;
}

async function optimizeCommand(flags: OptimizeFlags): Promise<void> {
  const args = await readArgs(flags.args);
  const { data, testData, datasets } = await readTrainingFiles(flags);
  const progress = createProgress({ label: 'optimizing', total: flags.trials, silent: flags.quiet === true });
  const result = await withStore(
    flags.trackingUri,
    async (store) => {
      await checkCanLog(store, flags.experiment);
      try {
        return await optimize(store, {
          data,
          ...(testData ? { testData } : {}),
          args,
          seed: flags.seed,
          trials: flags.trials,
          experiment: flags.experiment,
          runNamePrefix: defaultRunName('trial'),
          onTrial: (trial) => progress.update(trial.trial, `val_f1=${trial.validationF1.toFixed(4)}`),
          catchSignals: true,
          datasets,
        });
      } finally {
        progress.stop();
      }
    },
    flags.artifactRoot,
  );
  await writeFile(flags.output, `${JSON.stringify(result.best.args, null, 2)}\n`);
  const trials = result.trials.map((trial) => ({
    trial: trial.trial,
    run_id: trial.runId,
    val_f1: trial.validationF1,
    f1: trial.testF1,
    args: trial.args,
    // Trial 1 trains with the base arguments (the defaults unless --args is given).
    base_args: trial.trial === 1,
  }));
  const summary = {
    best: {
      run_id: result.best.runId,
      trial: result.best.trial,
      val_f1: result.best.validationF1,
      f1: result.best.testF1,
      args: result.best.args,
    },
    parent_run_id: result.parentRunId,
    trials,
    experiment: flags.experiment,
    output: flags.output,
  };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  process.stdout.write(`${trialTable(result.trials, result.best.trial, flags.args !== undefined)}\n`);
  process.stdout.write(
    `Best of ${result.trials.length} trials: trial ${result.best.trial} (run ${result.best.runId}), ` +
      `validation f1 ${formatMetric(result.best.validationF1)}, test f1 ${formatMetric(result.best.testF1)}; ` +
      `the trials are nested under run ${result.parentRunId}.\n` +
      `Best arguments saved to ${flags.output}; train with them: tagger train --data ${flags.data} --args ${flags.output}\n`,
  );
}

/** The trials as a table: the searched arguments, validation and test f1; the base and best marked. */
function trialTable(trials: readonly Trial[], best: number, givenArgs: boolean): string {
  const header = [
    'trial',
    'analyzer',
    'ngram_max',
    'learning_rate',
    'power_t',
    'alpha',
    'val f1',
    'test f1',
    '',
  ];
  const rows = trials.map((trial) => [
    String(trial.trial),
    trial.args.analyzer,
    String(trial.args.ngram_max_range),
    String(trial.args.learning_rate),
    String(trial.args.power_t),
    String(trial.args.alpha),
    formatMetric(trial.validationF1),
    formatMetric(trial.testF1),
    [
      trial.trial === 1 ? (givenArgs ? 'your --args' : 'default arguments') : '',
      trial.trial === best ? 'best' : '',
    ]
      .filter(Boolean)
      .join(', '),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

interface PredictFlags {
  runId?: string;
  experiment: string;
  trackingUri?: string;
  model?: string;
}

async function predictCommand(texts: string[], flags: PredictFlags): Promise<void> {
  if (texts.length === 0)
    throw new UsageError('predict: give at least one text, e.g. tagger predict "Transformers for NER"');
  const empty = texts.findIndex((text) => text.trim() === '');
  if (empty >= 0) throw new UsageError(`predict: text ${empty + 1} is empty`);
  const loaded = await loadModelForPrediction({
    ...(flags.model === undefined ? {} : { modelDir: flags.model }),
    ...(flags.runId === undefined ? {} : { runId: flags.runId }),
    experiment: flags.experiment,
    trackingUri: resolveTrackingUri(flags.trackingUri, process.env),
  });
  const predictions = loaded.model.predict(texts).map((prediction, index) => ({
    input_text: texts[index],
    predicted_tag: prediction.predicted_tag,
    predicted_probabilities: prediction.probabilities,
  }));
  process.stdout.write(`${JSON.stringify({ run_id: loaded.runId, predictions }, null, 2)}\n`);
}

export function buildProgram(): Command {
  const program = new Command('tagger')
    .description('Train, inspect and serve text-tagging models tracked as MLflow runs.')
    .showHelpAfterError('(run with --help for usage)');

  // Only commands that may create an experiment take it: the location is recorded on the experiment.
  const artifactRootOption = () =>
    new Option(
      '--artifact-root <dir>',
      'database stores (sqlite:, postgresql:): where new experiments keep artifacts (default: mlruns beside a SQLite file, ./mlruns for PostgreSQL); replicas need it on a shared mount',
    ).env('TAGGER_ARTIFACT_ROOT');

  const trackingOption = () =>
    new Option(
      '--tracking-uri <uri>',
      'MLflow tracking URI: sqlite:///file.db (default sqlite:///mlflow.db), postgresql://…, http(s)://server or a folder (mlruns layout)',
    ).env('MLFLOW_TRACKING_URI');

  program
    .command('train')
    .description('Train a tagger on a CSV (title, description, tag) and log it as an MLflow run')
    .requiredOption('--data <csv>', 'training data CSV')
    .option('--test-data <csv>', 'separate test CSV; without it the data is split 70/15/15 (stratified)')
    .option(
      '--args <json>',
      'training arguments: a JSON file or inline JSON object (unset keys keep defaults)',
    )
    .option('--experiment <name>', 'experiment to log the run to', 'best')
    .addOption(trackingOption())
    .addOption(artifactRootOption())
    .option('--run-name <name>', 'run name (default: train-<timestamp>)')
    .option(
      '--seed <n>',
      'random seed for splits, shuffling and oversampling',
      parseInteger('--seed', 0),
      DEFAULT_SEED,
    )
    .option('--json', 'print one JSON object with run_id, experiment and metrics on stdout')
    .option('--quiet', 'no progress output')
    .action((flags: TrainFlags) => trainCommand(flags));

  program
    .command('optimize')
    .description('Search hyper-parameters; each trial is a logged run; saves the best arguments')
    .requiredOption('--data <csv>', 'training data CSV')
    .requiredOption('--trials <n>', 'number of trials', parseInteger('--trials', 1))
    .option('--test-data <csv>', 'separate test CSV (reported, never used to choose)')
    .option('--args <json>', 'base training arguments (JSON file or inline object)')
    .option('--experiment <name>', 'experiment for the trial runs', 'optimization')
    .addOption(trackingOption())
    .addOption(artifactRootOption())
    .option('--seed <n>', 'random seed', parseInteger('--seed', 0), DEFAULT_SEED)
    .option('--output <file>', 'where to save the best arguments', 'best-args.json')
    .option('--json', 'print a JSON summary on stdout')
    .option('--quiet', 'no progress output')
    .action((flags: OptimizeFlags) => optimizeCommand(flags));

  program
    .command('predict')
    .description(
      'Predict tags for texts with the best run of an experiment, a given run, or a model directory',
    )
    .argument('<text...>', 'texts to tag')
    .option('--run-id <id>', 'use this run instead of the best one')
    .option('--experiment <name>', 'experiment whose best run is used', 'best')
    .option('--model <dir>', 'use a saved model directory instead of a tracking store')
    .addOption(trackingOption())
    .action((texts: string[], flags: PredictFlags) => predictCommand(texts, flags));

  const serve = program
    .command('serve')
    .description(
      'Serve the prediction API (best run of an experiment, or one saved model with --model). Every setting can also come from its environment variable or a config file; flags win, then variables, then the file (docs/configuration.md).',
    )
    .option(
      '--print-config',
      'print every setting, its value and where it came from (secrets masked), and exit without serving',
    );
  // Generated from the one settings table; no `.env()`: src/config.ts reads the variables itself, so a
  // bad value is blamed on where it really came from.
  for (const setting of SERVE_SETTINGS) {
    const fallback = setting.default === null ? '' : `; default ${setting.default}`;
    serve.addOption(
      new Option(`${setting.flag} ${setting.arg}`, `${setting.help} (env ${setting.env}${fallback})`),
    );
  }
  serve.action(async (flags: ServeFlags & { printConfig?: boolean }) => {
    if (flags.printConfig) {
      process.stdout.write(printableConfig(flags, process.env));
      return;
    }
    // Started by npm, the server stops when npm does, even though npm's signal never reaches it.
    const stopWatching = startedByNpm(process.env)
      ? watchParent(() => process.kill(process.pid, 'SIGTERM'))
      : undefined;
    try {
      await runServe(flags, process.env, () => runServeCommand(flags, process.env), explain);
    } finally {
      stopWatching?.();
    }
  });

  return program;
}

function explain(error: unknown): string {
  if (error instanceof UsageError || EXPECTED_ERRORS.some((kind) => error instanceof kind)) {
    return (error as Error).message;
  }
  const detail = process.env.TAGGER_DEBUG
    ? `\n${(error as Error)?.stack ?? String(error)}`
    : ' (set TAGGER_DEBUG=1 for details)';
  return `unexpected error: ${error instanceof Error ? error.message : String(error)}${detail}`;
}

export async function main(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    process.stderr.write(`tagger: ${explain(error)}\n`);
    return error instanceof InterruptedError ? error.exitCode : 1;
  }
}

const exitCode = await main(process.argv.slice(2));
process.exitCode = exitCode;
