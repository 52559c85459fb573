/** `tagger optimize`: a seeded search over training arguments, each trial scored by cross-validation and logged. */
import type { Command } from 'commander';
import { ownSearchedArgs } from '../model/index.js';
import { checkCanLog } from '../tracking/store.js';
import { DEFAULT_FOLDS } from '../train/cross-validate.js';
import { InterruptedError } from '../train/log-run.js';
import {
  bestTrial,
  type OptimizeResult,
  optimize,
  SearchInterruptedError,
  type Trial,
} from '../train/optimize.js';
import { argsForData } from '../train/pipeline.js';
import { createProgress } from '../train/progress.js';
import { parseCandidates, parseDuration } from './choice-output.js';
import { embedForTraining, encoderArgs, withCascadeFlag, withEncoderFlag } from './embeddings.js';
import {
  artifactRootOption,
  DEFAULT_SEED,
  dataColumnOptions,
  defaultRunName,
  failOrphanedRunsOf,
  parseInteger,
  readArgs,
  readDefinitions,
  readTrainingFiles,
  trackingOption,
  withStore,
} from './inputs.js';
import type { CliIo } from './io.js';
import { chooseBaseArgs, choosesModel } from './model-choice.js';
import { formatMetric, textTable, writeWhole } from './output.js';
import type { TrainFlags } from './train.js';

interface OptimizeFlags extends Omit<TrainFlags, 'runName'> {
  trials: number;
  folds: number;
  cvWorkers?: number;
  output: string;
}

async function optimizeCommand(flags: OptimizeFlags, io: CliIo): Promise<void> {
  const given = withCascadeFlag(withEncoderFlag(await readArgs(flags.args), flags.encoder), flags.cascade);
  const definitions = await readDefinitions(flags);
  const { data, testData, datasets } = await readTrainingFiles(flags);
  const chosen = choosesModel(flags, given.explicit)
    ? await chooseBaseArgs(flags, given, { data, ...(testData ? { testData } : {}), ...definitions }, io)
    : null;
  const args = chosen?.args ?? encoderArgs(argsForData(given.args, data, given.explicit), given.explicit);
  // Once for every trial and fold, before the search starts (a bad encoder is one line); the model
  // choice's embeddings when it computed them.
  const encoder =
    chosen !== null
      ? args.encoder === null
        ? undefined
        : chosen.encoder
      : await embedForTraining(
          args,
          { data, ...(testData ? { testData } : {}), ...definitions },
          io,
          flags.quiet === true,
        );
  const progress = createProgress({
    label: 'optimizing',
    total: flags.trials,
    silent: flags.quiet === true,
    stream: io.stderr,
  });
  let result: OptimizeResult;
  /** Set when a signal stopped the search after some trials: those are reported and kept all the same. */
  let interrupted: SearchInterruptedError | undefined;
  try {
    result = await withStore(
      flags.trackingUri,
      async (store) => {
        await checkCanLog(store, flags.experiment);
        await failOrphanedRunsOf(store, flags.experiment, io);
        try {
          return await optimize(store, {
            data,
            ...(testData ? { testData } : {}),
            ...definitions,
            ...(encoder ? { encoder } : {}),
            args,
            seed: flags.seed,
            trials: flags.trials,
            folds: flags.folds,
            ...(flags.cvWorkers === undefined ? {} : { cvWorkers: flags.cvWorkers }),
            experiment: flags.experiment,
            runNamePrefix: defaultRunName('trial'),
            onTrial: (trial) =>
              progress.update(trial.trial, `cv_f1=${trial.cv.mean.toFixed(4)} ± ${trial.cv.std.toFixed(4)}`),
            catchSignals: true,
            onStopRequested: (signal) =>
              progress.log(
                `tagger: ${signal}: stopping the search; a trial still cross-validating or training finishes that first and is not logged\n`,
              ),
            datasets,
          });
        } finally {
          progress.stop();
        }
      },
      flags.artifactRoot,
      io.stderr,
    );
  } catch (error) {
    if (!(error instanceof SearchInterruptedError)) throw error;
    if (error.trials.length === 0) {
      throw new InterruptedError(
        error.signal,
        `${error.what}; no trial finished, so ${flags.output} was not written`,
      );
    }
    interrupted = error;
    result = { trials: [...error.trials], best: bestTrial(error.trials), parentRunId: error.parentRunId };
  }
  await reportSearch(flags, io, result, interrupted);
  if (interrupted) {
    throw new InterruptedError(
      interrupted.signal,
      `${interrupted.what}. Kept: the ${result.trials.length} logged trial(s) (${flags.json ? 'in the JSON above' : 'the table above'}) and the best of them, trial ${result.best.trial}, saved to ${flags.output}`,
    );
  }
}

/** Saves the best arguments and prints the trials (or the `--json` summary); `interrupted`: the search was stopped. */
async function reportSearch(
  flags: OptimizeFlags,
  io: CliIo,
  result: OptimizeResult,
  interrupted: SearchInterruptedError | undefined,
): Promise<void> {
  // Whole or not at all: an interruption never leaves a half-written file of arguments.
  await writeWhole(flags.output, `${JSON.stringify(result.best.args, null, 2)}\n`);
  const trials = result.trials.map((trial) => ({
    trial: trial.trial,
    run_id: trial.runId,
    cv_f1_mean: trial.cv.mean,
    cv_f1_std: trial.cv.std,
    cv_f1_folds: trial.cv.folds,
    val_f1: trial.validationF1,
    f1: trial.testF1,
    args: trial.args,
    // Trial 1 trains with the base arguments: the model choice's pick, --args, or the defaults (--no-model-choice).
    base_args: trial.trial === 1,
  }));
  const summary = {
    best: {
      run_id: result.best.runId,
      trial: result.best.trial,
      cv_f1_mean: result.best.cv.mean,
      cv_f1_std: result.best.cv.std,
      val_f1: result.best.validationF1,
      f1: result.best.testF1,
      args: result.best.args,
    },
    parent_run_id: result.parentRunId,
    folds: flags.folds,
    trials,
    experiment: flags.experiment,
    output: flags.output,
    // The search was stopped by a signal: the trials above are those logged before it.
    ...(interrupted ? { interrupted: interrupted.signal, trials_planned: flags.trials } : {}),
  };
  if (flags.json) {
    io.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  io.stdout.write(`${trialTable(result.trials, result.best.trial, flags.args !== undefined)}\n`);
  io.stdout.write(
    `${interrupted ? `Interrupted after ${result.trials.length} of ${flags.trials} trials; best of those` : `Best of ${result.trials.length} trials`} by ${flags.folds}-fold cross-validated f1: trial ${result.best.trial} (run ${result.best.runId}), ` +
      `CV f1 ${formatMetric(result.best.cv.mean)} ± ${formatMetric(result.best.cv.std)}, test f1 ${formatMetric(result.best.testF1)}; ` +
      `the trials are nested under run ${result.parentRunId}${interrupted ? ' (marked KILLED)' : ''}.\n` +
      `Best arguments saved to ${flags.output}; train with them: tagger train --data ${flags.data} --args ${flags.output}\n`,
  );
}

/**
 * The trials as a table: the searched arguments, the CV f1 (mean ± std over the folds, what ranks them),
 * validation and test f1; the base and best marked.
 */
function trialTable(trials: readonly Trial[], best: number, givenArgs: boolean): string {
  // The features every kind shares, then the classifier and its own arguments (before issue 42: SGD's
  // loss, learning_rate, power_t and alpha for every trial, a soft vote's too).
  const header = [
    'trial',
    'classifier',
    'analyzer',
    'ngrams',
    'min_df',
    'sublinear',
    'balancing',
    'its arguments',
    'cv f1',
    'val f1',
    'test f1',
    '',
  ];
  const rows = trials.map((trial) => [
    String(trial.trial),
    trial.args.classifier,
    trial.args.analyzer,
    `${trial.args.ngram_min_range}-${trial.args.ngram_max_range}`,
    String(trial.args.min_df),
    String(trial.args.sublinear_tf),
    trial.args.class_weight === 'balanced' ? 'class_weight' : trial.args.oversample ? 'oversample' : 'none',
    ownSearchedArgs(trial.args) || '-',
    `${formatMetric(trial.cv.mean)} ± ${formatMetric(trial.cv.std)}`,
    formatMetric(trial.validationF1),
    formatMetric(trial.testF1),
    [
      trial.trial === 1 ? (givenArgs ? 'your --args' : 'default arguments') : '',
      trial.trial === best ? 'best' : '',
    ]
      .filter(Boolean)
      .join(', '),
  ]);
  return textTable(header, rows).join('\n');
}

export function registerOptimize(program: Command, io: CliIo): void {
  const optimize = program
    .command('optimize')
    .description('Search hyper-parameters; each trial is a logged run; saves the best arguments')
    .requiredOption('--data <csv>', 'training data CSV');
  dataColumnOptions(optimize)
    .requiredOption('--trials <n>', 'number of trials', parseInteger('--trials', 1))
    .option(
      '--folds <k>',
      'stratified cross-validation folds each trial is scored by',
      parseInteger('--folds', 2),
      DEFAULT_FOLDS,
    )
    .option(
      '--cv-workers <n>',
      'threads the folds train in (default: the cores; 1: no threads; same scores either way)',
      parseInteger('--cv-workers', 1),
    )
    .option('--test-data <csv>', 'separate test CSV (reported, never used to choose)')
    .option(
      '--args <json>',
      'base training arguments (JSON file or inline object); without arguments that name the model, the base is what the model choice picks, as tagger train picks it',
    )
    .option(
      '--no-model-choice',
      'start the search from the default arguments instead of the model choice’s pick',
    )
    .option('--time-budget <duration>', "the model choice's CPU budget, as for tagger train", parseDuration)
    .option('--candidates <names>', "the model choice's candidates, as for tagger train", parseCandidates)
    .option(
      '--encoder <name|dir>',
      'every trial adds this sentence encoder (minilm, a directory, a Hugging Face id) and the search also varies encoder_weight; embeddings are computed once',
    )
    .option(
      '--cascade',
      "every trial is a cascade run (needs --encoder): trials are ranked by their encoder stage's CV f1, and each is trained and logged as a cascade",
    )
    .option('--experiment <name>', 'experiment for the trial runs', 'optimization')
    .addOption(trackingOption())
    .addOption(artifactRootOption())
    .option('--seed <n>', 'random seed', parseInteger('--seed', 0), DEFAULT_SEED)
    .option('--output <file>', 'where to save the best arguments', 'best-args.json')
    .option('--behaviour <file>', 'behavioural test suite run on every trial (as for train)')
    .option('--slices <file>', 'slice definitions for every trial (as for train)')
    .option('--json', 'print a JSON summary on stdout')
    .option('--quiet', 'no progress output')
    .action((flags: OptimizeFlags) => optimizeCommand(flags, io));
}
