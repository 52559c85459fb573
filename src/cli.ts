/**
 * The `tagger` command line: parses arguments and hands over to src/train, src/service or the server.
 * It owns only wiring: option parsing, progress output, printing results and mapping errors to a clean
 * message and a non-zero exit status (never a stack trace for bad input).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import {
  type BehaviourReport,
  compileSlices,
  DEFAULT_BEHAVIOUR_SUITE,
  DEFAULT_SLICE_DEFINITIONS,
  type Explanation,
  evaluate,
  ModelFormatError,
  ModelInputError,
  OTHER_TAG,
  parseBehaviourSuite,
  parseSliceDefinitions,
  parseTrainingArgs,
  RUN_ARTIFACTS,
  runBehaviourSuite,
  type TrainingArgs,
  tagsOf,
} from './model/index.js';
import { runServe } from './serve/cluster.js';
import { printableConfig, SERVE_SETTINGS, type ServeFlags } from './serve/config.js';
import { startedByNpm, watchParent } from './serve/parent-watch.js';
import { runServeCommand, StartupError } from './serve/server.js';
import { BatchInputError, type TagFileResult, tagFile } from './service/batch-predict.js';
import { loadModelForPrediction } from './service/predict-command.js';
import {
  openTrackingStore,
  registerModelVersion,
  resolveTrackingUri,
  validateAlias,
  validateModelName,
  validateSettableAlias,
} from './tracking/index.js';
import { checkCanLog, TrackingError, type TrackingStore } from './tracking/store.js';
import { DEFAULT_FOLDS } from './train/cross-validate.js';
import { DataError, readDataset } from './train/data.js';
import { readDataWithInput } from './train/dataset-input.js';
import { InterruptedError, logTrainingRun } from './train/log-run.js';
import { optimize, type Trial } from './train/optimize.js';
import { argsForData, trainAndEvaluate } from './train/pipeline.js';
import { createProgress } from './train/progress.js';

const DEFAULT_SEED = 42;

/** Errors whose message is already a complete, user-facing explanation. */
const EXPECTED_ERRORS = [
  BatchInputError,
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
/**
 * The training args of `--args` (inline JSON or a file), and the names it sets itself (the data decides
 * some of the others: see argsForData).
 */
async function readArgs(value: string | undefined): Promise<{ args: TrainingArgs; explicit: Set<string> }> {
  if (value === undefined) return { args: parseTrainingArgs({}), explicit: new Set() };
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
  const args = parseTrainingArgs(raw);
  // parseTrainingArgs accepted it, so raw is an object (or null / undefined for the defaults).
  return { args, explicit: new Set(Object.keys(raw ?? {})) };
}

/** A hand-written definition file (`--behaviour`, `--slices`): YAML or JSON (YAML reads JSON too). */
async function readDefinitionFile(flag: string, path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT'
        ? `${flag}: file not found: ${path}`
        : `${flag}: cannot read ${path}: ${(error as Error).message}`,
    );
  }
  try {
    return parseYaml(text);
  } catch (error) {
    throw new UsageError(`${flag}: ${path} is not valid YAML or JSON: ${(error as Error).message}`);
  }
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

/** A plain-text table: the header, then the rows; columns two spaces apart, `rightAligned` padded left. */
function textTable(header: string[], rows: string[][], rightAligned: readonly number[] = []): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) =>
        rightAligned.includes(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  return [header, ...rows].map(line);
}

/** The model `--model`, `--run-id` or the experiment's best run names, for predict and evaluate. */
function loadModelOfFlags(flags: {
  model?: string;
  runId?: string;
  experiment: string;
  trackingUri?: string;
}): ReturnType<typeof loadModelForPrediction> {
  return loadModelForPrediction({
    ...(flags.model === undefined ? {} : { modelDir: flags.model }),
    ...(flags.runId === undefined ? {} : { runId: flags.runId }),
    experiment: flags.experiment,
    trackingUri: resolveTrackingUri(flags.trackingUri, process.env),
  });
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
  /** Register the trained run as a new version of this registered model. */
  register?: string;
  /** A behaviour suite file replacing the default suite. */
  behaviour?: string;
  /** A slice definitions file replacing the default slices. */
  slices?: string;
}

/**
 * The `--behaviour` suite and `--slices` definitions, read and checked before the data and the training:
 * a typo in a hand-written file should cost nothing. Absent flags give nothing (the defaults apply).
 */
async function readDefinitions(flags: { behaviour?: string; slices?: string }) {
  return {
    ...(flags.behaviour === undefined
      ? {}
      : {
          behaviour: parseBehaviourSuite(
            await readDefinitionFile('--behaviour', flags.behaviour),
            flags.behaviour,
          ),
        }),
    ...(flags.slices === undefined
      ? {}
      : { slices: parseSliceDefinitions(await readDefinitionFile('--slices', flags.slices), flags.slices) }),
  };
}

/** The behavioural tests in a few lines: the rate, per kind, and the failed or skipped cases by name. */
function behaviourSummary(report: BehaviourReport): string {
  if (report.pass_rate === null) {
    return `Behavioural tests (${report.suite}): none could run; all ${report.skipped} case(s) name tags the model does not have\n`;
  }
  const kinds = Object.entries(report.by_kind)
    .map(([kind, k]) => `${kind} ${k.passed}/${k.cases}`)
    .join(', ');
  const lines = [
    `Behavioural tests (${report.suite}): ${report.passed}/${report.passed + report.failed} passed (${(100 * report.pass_rate).toFixed(1)}%; ${kinds})` +
      (report.skipped > 0 ? `, ${report.skipped} skipped` : ''),
  ];
  for (const c of report.cases) {
    if (c.pass === false) lines.push(`  FAILED ${c.kind} '${c.name}': expected ${c.expected}; got ${c.got}`);
    else if (c.pass === null) lines.push(`  skipped ${c.kind} '${c.name}': ${c.skipped ?? ''}`);
  }
  return `${lines.join('\n')}\n`;
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
  // A bad model name is found before training, not after it.
  if (flags.register !== undefined) validateModelName(flags.register);
  const given = await readArgs(flags.args);
  const { behaviour, slices } = await readDefinitions(flags);
  const { data, testData, datasets } = await readTrainingFiles(flags);
  const args = argsForData(given.args, data, given.explicit);
  const { outcome, logged, runName, registered } = await withStore(
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
          ...(behaviour ? { behaviour } : {}),
          ...(slices ? { slices } : {}),
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
        extraParams: {
          data: flags.data,
          ...(flags.testData ? { test_data: flags.testData } : {}),
          ...(flags.behaviour ? { behaviour: flags.behaviour } : {}),
          ...(flags.slices ? { slices: flags.slices } : {}),
        },
        datasets,
        catchSignals: true,
      });
      const registered =
        flags.register === undefined
          ? null
          : await registerModelVersion(store.registry, flags.register, {
              source: `runs:/${logged.runId}/${RUN_ARTIFACTS.modelDir}`,
              runId: logged.runId,
            }).catch((error: unknown) => {
              throw new TrackingError(
                error instanceof TrackingError ? error.code : 'UNAVAILABLE',
                `run ${logged.runId} was logged, but registering it as a version of model '${flags.register}' failed: ${(error as Error).message}; register it later with the MLflow client (runs:/${logged.runId}/${RUN_ARTIFACTS.modelDir})`,
                { cause: error },
              );
            });
      return { outcome, logged, runName, registered };
    },
    flags.artifactRoot,
  );
  const { precision, recall, f1 } = outcome.performance.overall;
  const averages = outcome.performance.averages;
  const otherAverages = averages ? { micro_f1: averages.micro.f1, macro_f1: averages.macro.f1 } : {};
  // Loud on purpose: such a run logs a perfect-looking f1 that means nothing.
  for (const warning of outcome.warnings) process.stderr.write(`tagger: WARNING: ${warning}\n`);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        run_id: logged.runId,
        run_name: runName,
        experiment: flags.experiment,
        experiment_id: logged.experimentId,
        metrics: { precision, recall, f1, ...otherAverages },
        threshold: outcome.threshold,
        ...(outcome.model.tagThresholds === null
          ? {}
          : {
              tag_thresholds: Object.fromEntries(
                outcome.model.tags.map((tag, k) => [tag, outcome.model.tagThresholds![k]]),
              ),
            }),
        sizes: outcome.sizes,
        test_set: outcome.testSet,
        warnings: outcome.warnings,
        behavioural: {
          suite: outcome.behaviour.suite,
          pass_rate: outcome.behaviour.pass_rate,
          passed: outcome.behaviour.passed,
          failed: outcome.behaviour.failed,
          skipped: outcome.behaviour.skipped,
          by_kind: outcome.behaviour.by_kind,
        },
        slices: outcome.slices.rows,
        ...(registered ? { registered_model: { name: registered.name, version: registered.version } } : {}),
      })}\n`,
    );
    return;
  }
  process.stdout.write(
    `Logged run ${logged.runId} (${runName}) to experiment '${flags.experiment}'.\n` +
      `Test split (${outcome.sizes.test} rows): precision ${formatMetric(precision)}, recall ${formatMetric(recall)}, f1 ${formatMetric(f1)}` +
      (averages && outcome.model.args.multi_label
        ? ` (weighted; micro f1 ${formatMetric(averages.micro.f1)}, macro f1 ${formatMetric(averages.macro.f1)}; several tags per text)`
        : '') +
      '\n',
  );
  const sliceParts = Object.entries(outcome.slices.rows).map(([name, rows]) => {
    const m = outcome.performance.slices[name];
    return m === undefined
      ? `${name} (no rows; left out)`
      : `${name} (${rows} rows) f1 ${formatMetric(m.f1)}`;
  });
  if (sliceParts.length > 0) process.stdout.write(`Slices: ${sliceParts.join(', ')}\n`);
  process.stdout.write(behaviourSummary(outcome.behaviour));
  if (registered) {
    process.stdout.write(
      `Registered as version ${registered.version} of model '${registered.name}' (models:/${registered.name}/${registered.version}); ` +
        `serve it by alias: tagger alias set ${registered.name} champion ${registered.version}, then tagger serve --model-uri models:/${registered.name}@champion\n`,
    );
  }
}

interface AliasFlags {
  trackingUri?: string;
  json?: boolean;
}

async function aliasSetCommand(
  name: string,
  alias: string,
  version: number,
  flags: AliasFlags,
): Promise<void> {
  validateModelName(name);
  validateSettableAlias(alias);
  const moved = await withStore(flags.trackingUri, async (store) => {
    const before = (await store.registry.getRegisteredModel(name))?.aliases[alias] ?? null;
    await store.registry.setAlias(name, alias, version);
    const target = await store.registry.getModelVersion(name, version);
    return { before, runId: target?.runId ?? null };
  });
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ name, alias, version, previous_version: moved.before, run_id: moved.runId })}\n`,
    );
    return;
  }
  const from =
    moved.before === null ? '' : moved.before === version ? ' (unchanged)' : ` (was version ${moved.before})`;
  process.stdout.write(
    `models:/${name}@${alias} → version ${version}${from}, run ${moved.runId ?? '(none)'}; servers following it swap at their next reload.\n`,
  );
}

async function aliasDeleteCommand(name: string, alias: string, flags: AliasFlags): Promise<void> {
  validateModelName(name);
  validateAlias(alias);
  await withStore(flags.trackingUri, (store) => store.registry.deleteAlias(name, alias));
  if (!flags.json) process.stdout.write(`Deleted alias '${alias}' of model '${name}'.\n`);
  else process.stdout.write(`${JSON.stringify({ name, alias, deleted: true })}\n`);
}

async function aliasListCommand(name: string, flags: AliasFlags): Promise<void> {
  validateModelName(name);
  const model = await withStore(flags.trackingUri, (store) => store.registry.getRegisteredModel(name));
  if (model === null) throw new TrackingError('NOT_FOUND', `tracking: no registered model named '${name}'`);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ name, aliases: model.aliases, latest_version: model.latestVersion })}\n`,
    );
    return;
  }
  const entries = Object.entries(model.aliases).sort(([a], [b]) => a.localeCompare(b));
  const lines = entries.map(([alias, version]) => `${alias}\tversion ${version}`);
  process.stdout.write(
    `${[...lines, `(latest: ${model.latestVersion === null ? 'no versions' : `version ${model.latestVersion}`})`].join('\n')}\n`,
  );
}

interface OptimizeFlags extends Omit<TrainFlags, 'runName'> {
  trials: number;
  folds: number;
  cvWorkers?: number;
  output: string;
}

async function optimizeCommand(flags: OptimizeFlags): Promise<void> {
  const given = await readArgs(flags.args);
  const definitions = await readDefinitions(flags);
  const { data, testData, datasets } = await readTrainingFiles(flags);
  const args = argsForData(given.args, data, given.explicit);
  const progress = createProgress({ label: 'optimizing', total: flags.trials, silent: flags.quiet === true });
  const result = await withStore(
    flags.trackingUri,
    async (store) => {
      await checkCanLog(store, flags.experiment);
      try {
        return await optimize(store, {
          data,
          ...(testData ? { testData } : {}),
          ...definitions,
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
            process.stderr.write(
              `\ntagger: ${signal}: stopping the search; a trial still cross-validating or training finishes that first and is not logged\n`,
            ),
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
    cv_f1_mean: trial.cv.mean,
    cv_f1_std: trial.cv.std,
    cv_f1_folds: trial.cv.folds,
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
  };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  process.stdout.write(`${trialTable(result.trials, result.best.trial, flags.args !== undefined)}\n`);
  process.stdout.write(
    `Best of ${result.trials.length} trials by ${flags.folds}-fold cross-validated f1: trial ${result.best.trial} (run ${result.best.runId}), ` +
      `CV f1 ${formatMetric(result.best.cv.mean)} ± ${formatMetric(result.best.cv.std)}, test f1 ${formatMetric(result.best.testF1)}; ` +
      `the trials are nested under run ${result.parentRunId}.\n` +
      `Best arguments saved to ${flags.output}; train with them: tagger train --data ${flags.data} --args ${flags.output}\n`,
  );
}

/**
 * The trials as a table: the searched arguments, the CV f1 (mean ± std over the folds, what ranks them),
 * validation and test f1; the base and best marked.
 */
function trialTable(trials: readonly Trial[], best: number, givenArgs: boolean): string {
  const header = [
    'trial',
    'analyzer',
    'ngrams',
    'min_df',
    'sublinear',
    'loss',
    'balancing',
    'learning_rate',
    'power_t',
    'alpha',
    'cv f1',
    'val f1',
    'test f1',
    '',
  ];
  const rows = trials.map((trial) => [
    String(trial.trial),
    trial.args.analyzer,
    `${trial.args.ngram_min_range}-${trial.args.ngram_max_range}`,
    String(trial.args.min_df),
    String(trial.args.sublinear_tf),
    trial.args.loss,
    trial.args.class_weight === 'balanced' ? 'class_weight' : trial.args.oversample ? 'oversample' : 'none',
    String(trial.args.learning_rate),
    String(trial.args.power_t),
    String(trial.args.alpha),
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

interface PredictFlags {
  runId?: string;
  experiment: string;
  trackingUri?: string;
  model?: string;
  explain?: boolean;
  input?: string;
  output?: string;
  textColumn?: string;
  quiet?: boolean;
}

interface EvaluateFlags {
  data: string;
  runId?: string;
  experiment: string;
  trackingUri?: string;
  model?: string;
  json?: boolean;
  behaviour?: string;
  slices?: string;
}

/** `tagger evaluate`: a saved model or run scored on new labelled data, with training's report. */
async function evaluateCommand(flags: EvaluateFlags): Promise<void> {
  const definitions = await readDefinitions(flags);
  const data = await readDataset(flags.data);
  const loaded = await loadModelOfFlags(flags);
  const classes = new Set(loaded.model.tags);
  const unknown: Record<string, number> = {};
  for (const row of data) {
    for (const tag of tagsOf(row)) if (!classes.has(tag)) unknown[tag] = (unknown[tag] ?? 0) + 1;
  }
  const sliceDefinitions = definitions.slices ?? DEFAULT_SLICE_DEFINITIONS;
  const performance = evaluate(loaded.model, data, compileSlices(sliceDefinitions));
  const behaviour = runBehaviourSuite(loaded.model, definitions.behaviour ?? DEFAULT_BEHAVIOUR_SUITE);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ run_id: loaded.runId, data: flags.data, rows: data.length, unknown_tags: unknown, performance, behavioural: behaviour })}\n`,
    );
    return;
  }
  const folded = Object.entries(unknown).sort((a, b) => b[1] - a[1]);
  const lines = [
    `${loaded.runId === null ? `Model ${flags.model}` : `Run ${loaded.runId}`} on ${flags.data} (${data.length} rows)`,
  ];
  if (folded.length > 0) {
    lines.push(
      `Tags the model does not know, ${loaded.model.args.multi_label ? `left out (a row with no known tag counts as '${OTHER_TAG}')` : `scored as '${OTHER_TAG}'`}: ${folded.map(([tag, count]) => `${tag} (${count})`).join(', ')}`,
    );
  }
  const { overall, averages } = performance;
  lines.push(
    `overall: precision ${formatMetric(overall.precision)}, recall ${formatMetric(overall.recall)}, f1 ${formatMetric(overall.f1)}` +
      (averages
        ? ` (weighted; micro f1 ${formatMetric(averages.micro.f1)}, macro f1 ${formatMetric(averages.macro.f1)})`
        : ''),
  );
  const header = ['tag', 'precision', 'recall', 'f1', 'rows'];
  const rows = Object.entries(performance.class).map(([tag, m]) => [
    tag,
    formatMetric(m.precision),
    formatMetric(m.recall),
    formatMetric(m.f1),
    String(m.num_samples),
  ]);
  lines.push(...textTable(header, rows, [1, 2, 3, 4]));
  // Every defined slice is listed; one without rows says so instead of showing metrics of nothing.
  const sliceRows = sliceDefinitions.map(({ name }) => {
    const m = performance.slices[name];
    return m === undefined
      ? [name, '-', '-', '-', '0']
      : [name, formatMetric(m.precision), formatMetric(m.recall), formatMetric(m.f1), String(m.num_samples)];
  });
  if (sliceRows.length > 0) {
    lines.push('', ...textTable(['slice', 'precision', 'recall', 'f1', 'rows'], sliceRows, [1, 2, 3, 4]));
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  process.stdout.write(behaviourSummary(behaviour));
}

/** Bad rows printed one by one before only their count is reported. */
const SHOWN_BAD_ROWS = 20;

async function predictFileCommand(flags: PredictFlags & { input: string }): Promise<void> {
  if (flags.output === undefined) {
    throw new UsageError('predict: --input needs --output <file.csv|.jsonl> for the tags');
  }
  if (flags.explain)
    throw new UsageError('predict: --explain works on texts given on the command line, not with --input');
  const loaded = await loadModelOfFlags(flags);
  const progress = createProgress({ label: 'tagging', total: 100, silent: flags.quiet === true, unit: '%' });
  const started = performance.now();
  let shown = 0;
  let result: TagFileResult;
  try {
    result = await tagFile(loaded.model, {
      input: flags.input,
      output: flags.output,
      textColumn: flags.textColumn,
      onProgress: ({ bytesRead, totalBytes, rows }) => {
        const seconds = (performance.now() - started) / 1000;
        const share = totalBytes === 0 ? 1 : Math.min(1, bytesRead / totalBytes);
        const eta = share > 0 ? (seconds / share) * (1 - share) : Number.NaN;
        progress.update(
          Math.floor(share * 100),
          `${rows.toLocaleString('en-US')} rows, ${Math.round(rows / Math.max(seconds, 1e-3)).toLocaleString('en-US')} rows/s, ETA ${Number.isFinite(eta) ? `${Math.ceil(eta)} s` : '?'}`,
        );
      },
      onBadRow: ({ line, reason }) => {
        shown += 1;
        if (shown <= SHOWN_BAD_ROWS)
          process.stderr.write(`tagger: ${flags.input}: line ${line}: ${reason}; skipped\n`);
      },
    });
  } finally {
    progress.stop();
  }
  if (result.bad > SHOWN_BAD_ROWS) {
    process.stderr.write(`tagger: … and ${result.bad - SHOWN_BAD_ROWS} more bad rows (not shown)\n`);
  }
  process.stdout.write(
    `Tagged ${result.tagged.toLocaleString('en-US')} of ${result.rows.toLocaleString('en-US')} rows of ${flags.input} into ${flags.output}` +
      `${result.bad > 0 ? ` (${result.bad} bad row${result.bad === 1 ? '' : 's'} skipped)` : ''} in ${result.seconds.toFixed(1)} s` +
      ` with run ${loaded.runId ?? '(model directory)'}.\n`,
  );
}

/** One text's explanation as a table: each listed feature's contribution, then the rest, the bias and the score. */
function explanationTable(text: string, tag: string, probability: number, explanation: Explanation): string {
  const number = (value: number): string => (value >= 0 ? ` ${value.toFixed(4)}` : value.toFixed(4));
  const rows: [string, string, string][] = explanation.contributions.map((c) => [
    JSON.stringify(c.feature),
    c.analyzer,
    number(c.contribution),
  ]);
  const others = explanation.features - explanation.contributions.length;
  rows.push([`(${others} other feature${others === 1 ? '' : 's'})`, '', number(explanation.rest)]);
  rows.push(['(bias)', '', number(explanation.bias)]);
  rows.push([`= score of ${explanation.tag}`, '', number(explanation.score)]);
  const header = ['feature', 'analyzer', 'contribution'];
  return [
    `${JSON.stringify(text)} → ${tag} (probability ${probability.toFixed(4)})`,
    ...textTable(header, rows, [2]),
  ].join('\n');
}

async function predictCommand(texts: string[], flags: PredictFlags): Promise<void> {
  if (flags.input !== undefined) {
    if (texts.length > 0) throw new UsageError('predict: give texts or --input <file>, not both');
    return predictFileCommand({ ...flags, input: flags.input });
  }
  if (flags.output !== undefined || flags.textColumn !== undefined) {
    throw new UsageError('predict: --output and --text-column go with --input <file>');
  }
  if (texts.length === 0)
    throw new UsageError('predict: give at least one text, e.g. tagger predict "Transformers for NER"');
  const empty = texts.findIndex((text) => text.trim() === '');
  if (empty >= 0) throw new UsageError(`predict: text ${empty + 1} is empty`);
  const loaded = await loadModelOfFlags(flags);
  const predictions = loaded.model.predict(texts).map((prediction, index) => ({
    input_text: texts[index],
    predicted_tag: prediction.predicted_tag,
    predicted_tags: prediction.predicted_tags,
    predicted_probabilities: prediction.probabilities,
  }));
  if (flags.explain) {
    const tables = texts.map((text, index) => {
      const prediction = predictions[index]!;
      const explanation = loaded.model.explain(text, 10);
      return explanationTable(
        text,
        prediction.predicted_tag,
        prediction.predicted_probabilities[explanation.tag] ?? Number.NaN,
        explanation,
      );
    });
    process.stdout.write(`run ${loaded.runId ?? '(model directory)'}\n\n${tables.join('\n\n')}\n`);
    return;
  }
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
    .option(
      '--register <model>',
      'register the run as a new version of this registered model (created if missing), for `serve --model-uri`',
    )
    .option(
      '--behaviour <file>',
      'behavioural test suite (YAML or JSON: mft, inv and dir cases) run on the model instead of the default suite',
    )
    .option(
      '--slices <file>',
      'slice definitions (YAML or JSON: name + where {tag, text_matches, words_below, words_at_least}) instead of nlp_cnn and short_text',
    )
    .option('--json', 'print one JSON object with run_id, experiment and metrics on stdout')
    .option('--quiet', 'no progress output')
    .action((flags: TrainFlags) => trainCommand(flags));

  const alias = program
    .command('alias')
    .description(
      "Move the Model Registry's aliases (what `serve --model-uri models:/<name>@<alias>` follows)",
    );
  alias
    .command('set')
    .description('Point an alias at a version (servers following it swap at their next reload)')
    .argument('<model>', 'registered model name')
    .argument('<alias>', 'alias, e.g. champion')
    .argument('<version>', 'version number', parseInteger('<version>', 1))
    .addOption(trackingOption())
    .option('--json', 'print one JSON object')
    .action((name: string, aliasName: string, version: number, flags: AliasFlags) =>
      aliasSetCommand(name, aliasName, version, flags),
    );
  alias
    .command('delete')
    .description('Remove an alias')
    .argument('<model>', 'registered model name')
    .argument('<alias>', 'alias')
    .addOption(trackingOption())
    .option('--json', 'print one JSON object')
    .action((name: string, aliasName: string, flags: AliasFlags) =>
      aliasDeleteCommand(name, aliasName, flags),
    );
  alias
    .command('list')
    .description("A registered model's aliases and newest version")
    .argument('<model>', 'registered model name')
    .addOption(trackingOption())
    .option('--json', 'print one JSON object')
    .action((name: string, flags: AliasFlags) => aliasListCommand(name, flags));

  program
    .command('optimize')
    .description('Search hyper-parameters; each trial is a logged run; saves the best arguments')
    .requiredOption('--data <csv>', 'training data CSV')
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
    .option('--args <json>', 'base training arguments (JSON file or inline object)')
    .option('--experiment <name>', 'experiment for the trial runs', 'optimization')
    .addOption(trackingOption())
    .addOption(artifactRootOption())
    .option('--seed <n>', 'random seed', parseInteger('--seed', 0), DEFAULT_SEED)
    .option('--output <file>', 'where to save the best arguments', 'best-args.json')
    .option('--behaviour <file>', 'behavioural test suite run on every trial (as for train)')
    .option('--slices <file>', 'slice definitions for every trial (as for train)')
    .option('--json', 'print a JSON summary on stdout')
    .option('--quiet', 'no progress output')
    .action((flags: OptimizeFlags) => optimizeCommand(flags));

  program
    .command('predict')
    .description(
      'Predict tags for texts with the best run of an experiment, a given run, or a model directory',
    )
    .argument('[text...]', 'texts to tag (or --input <file>)')
    .option('--run-id <id>', 'use this run instead of the best one')
    .option('--experiment <name>', 'experiment whose best run is used', 'best')
    .option('--model <dir>', 'use a saved model directory instead of a tracking store')
    .option(
      '--explain',
      'print, per text, the 10 features that moved the predicted tag most (a table: contributions, rest, bias = score)',
    )
    .option(
      '--input <file>',
      'tag every row of a .csv or .jsonl file (streamed: any size), in order; bad rows are reported by line and skipped',
    )
    .option(
      '--output <file>',
      'with --input: where the tags go (.csv or .jsonl: line, text, predicted_tag, probabilities; predicted_tags too for a multi-label model)',
    )
    .option(
      '--text-column <name>',
      "with --input: the column holding the text (default: 'text', else title + description)",
    )
    .option('--quiet', 'with --input: no progress output')
    .addOption(trackingOption())
    .action((texts: string[], flags: PredictFlags) => predictCommand(texts, flags));

  program
    .command('evaluate')
    .description(
      'Score the best run, a given run or a saved model on labelled data (title, description, tag): overall, per-tag and per-slice metrics, and the behavioural tests',
    )
    .requiredOption('--data <csv>', 'labelled CSV (title, description, tag)')
    .option('--run-id <id>', 'evaluate this run instead of the best one')
    .option('--experiment <name>', 'experiment whose best run is evaluated', 'best')
    .option('--model <dir>', 'evaluate a saved model directory instead of a run')
    .addOption(trackingOption())
    .option(
      '--slices <file>',
      'slice definitions (YAML or JSON, as for train) instead of nlp_cnn and short_text',
    )
    .option(
      '--behaviour <file>',
      'behavioural test suite (YAML or JSON, as for train) instead of the default',
    )
    .option(
      '--json',
      'print one JSON object: run_id, rows, unknown_tags, the performance report and the behavioural tests',
    )
    .action((flags: EvaluateFlags) => evaluateCommand(flags));

  const serve = program
    .command('serve')
    .description(
      'Serve the prediction API (best run of an experiment, or one saved model with --model). Every setting can also come from its environment variable or a config file; flags win, then variables, then the file (docs/configuration.md).',
    )
    .option(
      '--print-config',
      'print every setting, its value and where it came from (secrets masked), and exit without serving',
    );
  // Generated from the one settings table; no `.env()`: src/serve/config.ts reads the variables itself, so a
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
