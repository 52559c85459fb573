/** `tagger train`: trains one model on a data file and logs it as a run (optionally a registered version). */
import { type Command, InvalidArgumentError } from 'commander';
import { RUN_ARTIFACTS } from '../model/index.js';
import { registerModelVersion, validateModelName } from '../tracking/index.js';
import { checkCanLog, TrackingError } from '../tracking/store.js';
import { logTrainingRun } from '../train/log-run.js';
import { defaultTrainingThreads } from '../train/parallel.js';
import {
  argsForData,
  type CascadeOutcome,
  largeDataSettings,
  type TrainingInput,
} from '../train/pipeline.js';
import { choiceSummary, choiceTable, parseCandidates, parseDuration } from './choice-output.js';
import { embedForTraining, encoderArgs, withCascadeFlag, withEncoderFlag } from './embeddings.js';
import {
  artifactRootOption,
  type DataColumnFlags,
  DEFAULT_SEED,
  dataColumnOptions,
  dataColumnParams,
  defaultRunName,
  failOrphanedRunsOf,
  parseInteger,
  readArgs,
  readDefinitions,
  readTrainingFiles,
  trackingOption,
  UsageError,
  withStore,
} from './inputs.js';
import type { CliIo } from './io.js';
import { labelIssuesLine, labelIssuesSummary } from './label-issues.js';
import { choosesModel, prepareCommandChoice } from './model-choice.js';
import { behaviourSummary, formatMetric } from './output.js';
import { trainReporting } from './reported-training.js';
import { LABEL_ISSUE_MODES, type LabelIssueMode, labelIssuesAfterRun } from './run-label-issues.js';
import { type ServingNote, servingLine, servingNote } from './serving-note.js';

export interface TrainFlags extends DataColumnFlags {
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
  /** `--no-memory-check`: false. */
  memoryCheck?: boolean;
  /** Register the trained run as a new version of this registered model. */
  register?: string;
  /** A behaviour suite file replacing the default suite. */
  behaviour?: string;
  /** A slice definitions file replacing the default slices. */
  slices?: string;
  /** Where to look for label issues after the run is logged (`--no-label-issues`: false). */
  labelIssues?: LabelIssueMode | false;
  /** `--no-model-choice`: false. */
  modelChoice?: boolean;
  /** The model choice's budget (seconds). */
  timeBudget?: number;
  /** The model choice's candidates (names); absent: all. */
  candidates?: string[];
  /** A sentence encoder whose embeddings join the TF-IDF features (the `encoder` training arg). */
  encoder?: string;
  /** `--cascade`: a cascade run (the `cascade` training arg). */
  cascade?: boolean;
  /** Threads the training may use. */
  threads: number;
}

export function registerTrain(program: Command, io: CliIo): void {
  const train = program
    .command('train')
    .description(
      'Train a tagger on a CSV (title, description, tag; or the columns --text-column/--tag-column name) and log it as an MLflow run',
    )
    .requiredOption('--data <csv>', 'training data CSV')
    .option('--test-data <csv>', 'separate test CSV; without it the data is split 70/15/15 (stratified)');
  dataColumnOptions(train)
    .option(
      '--args <json>',
      'training arguments: a JSON file or inline JSON object (unset keys keep defaults)',
    )
    .option(
      '--encoder <name|dir>',
      'add sentence embeddings to the TF-IDF features: minilm (npm run setup:encoder), a directory with an ONNX model and tokenizer.json, or a Hugging Face model id',
    )
    .option(
      '--cascade',
      "a cascade run (needs --encoder): the default TF-IDF model answers every text and the encoder model only those it is unsure of, below a threshold chosen from both models' out-of-fold predictions (cascade_tolerance, cascade_max_routed or cascade_threshold in --args choose the rule)",
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
    .option(
      '--time-budget <duration>',
      'how long the model choice may take: seconds or a duration (90s, 10m, 1h30m); default 3 min + 4 ms per row of data; candidates estimated not to fit are skipped and named',
      parseDuration,
    )
    .option(
      '--candidates <names>',
      'the candidates the model choice tries, comma-separated (linear_svm_words, linear_svm, soft_vote, fasttext, encoder, cascade); default: every one',
      parseCandidates,
    )
    .option(
      '--no-model-choice',
      'train the default model (the soft vote) instead of choosing one on the validation split; --args naming a model does the same',
    )
    .option(
      '--label-issues <where>',
      'where to look for rows whose tag is probably wrong, after the run is logged (label_issues.json): validation (the validation rows, no extra training) or folds (every row, 5 out-of-fold models: about five trainings more)',
      (value: string) => {
        if (!(LABEL_ISSUE_MODES as readonly string[]).includes(value)) {
          throw new InvalidArgumentError(
            `--label-issues is ${LABEL_ISSUE_MODES.join(' or ')}, got '${value}'`,
          );
        }
        return value as LabelIssueMode;
      },
      'validation',
    )
    .option('--no-label-issues', "don't look for rows whose tag is probably wrong")
    .option(
      '--threads <n>',
      'threads the training may use (default: the cores available); fasttext trains each epoch on all of them at once, so its runs then differ slightly for one seed (--threads 1: reproducible)',
      parseInteger('--threads', 1),
      defaultTrainingThreads(),
    )
    .option(
      '--no-memory-check',
      "train even when the estimate of the training's memory is over what this process may use (it may then be killed)",
    )
    .option('--json', 'print one JSON object with run_id, experiment and metrics on stdout')
    .option(
      '--quiet',
      'no progress, and only the run and its test scores (the slices and behavioural tests are in the run and in --json)',
    )
    .action((flags: TrainFlags) => trainCommand(flags, io));
}

async function trainCommand(flags: TrainFlags, io: CliIo): Promise<void> {
  // A bad model name is found before training, not after it.
  if (flags.register !== undefined) validateModelName(flags.register);
  const given = withCascadeFlag(withEncoderFlag(await readArgs(flags.args), flags.encoder), flags.cascade);
  const choosing = choosesModel(flags, given.explicit);
  if (!choosing && (flags.timeBudget !== undefined || flags.candidates !== undefined)) {
    throw new UsageError(
      `${flags.timeBudget !== undefined ? '--time-budget' : '--candidates'} belongs to the model choice, but ${flags.modelChoice === false ? '--no-model-choice' : '--args, --encoder or --cascade'} names the model to train; drop one of them`,
    );
  }
  const { behaviour, slices } = await readDefinitions(flags);
  const { data, testData, datasets } = await readTrainingFiles(flags);
  const quiet = flags.quiet === true;
  let args: TrainingInput['args'];
  let choice: TrainingInput['choice'];
  let encoder: TrainingInput['encoder'];
  if (choosing) {
    // The budget counts the CPU seconds from here: an embedding pass before the training is part of it.
    const prepared = await prepareCommandChoice(
      flags,
      given,
      { data, ...(testData ? { testData } : {}), ...(behaviour ? { behaviour } : {}) },
      io,
    );
    ({ args, choice, encoder } = prepared);
  } else {
    args = encoderArgs(argsForData(given.args, data, given.explicit), given.explicit);
    const large = largeDataSettings(given.args, data.length, given.explicit);
    if (Object.keys(large).length > 0 && !quiet) {
      io.stderr.write(
        `tagger: ${data.length.toLocaleString('en-US')} rows: training with the large-data settings ${JSON.stringify(large)} (docs/cli.md#large-data); set them in --args to choose otherwise\n`,
      );
    }
    // Before the store and the training: a bad encoder is one line, and the embeddings are computed once.
    encoder = await embedForTraining(
      args,
      { data, ...(testData ? { testData } : {}), ...(behaviour ? { behaviour } : {}) },
      io,
      quiet,
    );
  }
  const { outcome, logged, runName, registered, label, note, labelIssues } = await withStore(
    flags.trackingUri,
    async (store, label) => {
      // Before training, not after it: a store or experiment it cannot write would cost the whole training.
      await checkCanLog(store, flags.experiment);
      await failOrphanedRunsOf(store, flags.experiment, io);
      // The training runs in a worker thread, so SIGINT/SIGTERM stop it at once, and say so.
      const outcome = await trainReporting(
        {
          data,
          ...(testData ? { testData } : {}),
          ...(behaviour ? { behaviour } : {}),
          ...(slices ? { slices } : {}),
          ...(encoder ? { encoder } : {}),
          ...(choice ? { choice } : {}),
          args,
          seed: flags.seed,
          threads: flags.threads,
        },
        {
          io,
          quiet,
          memoryCheck: flags.memoryCheck !== false,
          kept: `nothing was logged (no run was created in ${store.displayUri})`,
        },
      );
      // From here the signals are logTrainingRun's (catchSignals), registered before it awaits anything.
      const runName = flags.runName ?? defaultRunName('train');
      const logged = await logTrainingRun(store, {
        experiment: flags.experiment,
        runName,
        args: outcome.args,
        seed: flags.seed,
        outcome,
        source: 'tagger train',
        extraParams: {
          data: flags.data,
          ...dataColumnParams(flags),
          ...(flags.testData ? { test_data: flags.testData } : {}),
          ...(flags.behaviour ? { behaviour: flags.behaviour } : {}),
          ...(flags.slices ? { slices: flags.slices } : {}),
        },
        datasets,
        catchSignals: true,
        onStoreWait: (message) => io.stderr.write(`tagger: ${message}\n`),
      });
      if (!quiet) io.stderr.write(`tagger: logged run ${logged.runId}\n`);
      // After the run is logged: a search that fails or is stopped keeps it.
      const labelIssues = await labelIssuesAfterRun(store, logged.runId, {
        mode: flags.labelIssues ?? 'validation',
        data,
        outcome,
        seed: flags.seed,
        ...(encoder && outcome.args.encoder !== null ? { encoder } : {}),
        file: flags.data,
        io,
        quiet,
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
      // What tagger serve will make of it, said last (a run held back by a gate was silently never served).
      const note: ServingNote = await servingNote(store, flags.experiment, logged.runId).catch(
        (error: unknown) => ({
          served: false,
          reason: `cannot tell whether it is served: ${(error as Error).message}`,
          fix: null,
        }),
      );
      return { outcome, logged, runName, registered, label, note, labelIssues };
    },
    flags.artifactRoot,
    io.stderr,
  );
  const { precision, recall, f1 } = outcome.performance.overall;
  const averages = outcome.performance.averages;
  const otherAverages = averages ? { micro_f1: averages.micro.f1, macro_f1: averages.macro.f1 } : {};
  // Loud on purpose: such a run logs a perfect-looking f1 that means nothing.
  for (const warning of outcome.warnings) io.stderr.write(`tagger: WARNING: ${warning}\n`);
  if (flags.json) {
    io.stdout.write(
      `${JSON.stringify({
        run_id: logged.runId,
        run_name: runName,
        experiment: flags.experiment,
        experiment_id: logged.experimentId,
        tracking_store: label,
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
        ...(outcome.cascade === undefined ? {} : { cascade: cascadeSummary(outcome.cascade) }),
        ...(labelIssues === undefined ? {} : { label_issues: labelIssuesSummary(labelIssues) }),
        ...(outcome.choice === undefined ? {} : { model_choice: choiceSummary(outcome.choice) }),
        ...(registered ? { registered_model: { name: registered.name, version: registered.version } } : {}),
        serving: note,
      })}\n`,
    );
    return;
  }
  if (!flags.quiet && outcome.choice !== undefined) io.stdout.write(choiceTable(outcome.choice));
  io.stdout.write(
    `Logged run ${logged.runId} (${runName}) to experiment '${flags.experiment}' in ${label}.\n` +
      `Test split (${outcome.sizes.test} rows): precision ${formatMetric(precision)}, recall ${formatMetric(recall)}, f1 ${formatMetric(f1)}` +
      (averages && outcome.model.args.multi_label
        ? ` (weighted; micro f1 ${formatMetric(averages.micro.f1)}, macro f1 ${formatMetric(averages.macro.f1)}; several tags per text)`
        : '') +
      '\n',
  );
  // Quiet: the run and its score only; the slices and the behavioural tests are in the run (and --json).
  const sliceParts = Object.entries(flags.quiet ? {} : outcome.slices.rows).map(([name, rows]) => {
    const m = outcome.performance.slices[name];
    return m === undefined
      ? `${name} (no rows; left out)`
      : `${name} (${rows} rows) f1 ${formatMetric(m.f1)}`;
  });
  if (sliceParts.length > 0) io.stdout.write(`Slices: ${sliceParts.join(', ')}\n`);
  if (outcome.cascade !== undefined) io.stdout.write(cascadeLine(outcome.cascade));
  if (!flags.quiet) io.stdout.write(behaviourSummary(outcome.behaviour));
  if (!flags.quiet && labelIssues !== undefined) io.stdout.write(labelIssuesLine(labelIssues, flags.data));
  if (registered) {
    io.stdout.write(
      `Registered as version ${registered.version} of model '${registered.name}' (models:/${registered.name}/${registered.version}); ` +
        `serve it by alias: tagger alias set ${registered.name} champion ${registered.version}, then tagger serve --model-uri models:/${registered.name}@champion\n`,
    );
  }
  // Quiet: only a gate holding the run back is said (on stderr, beside the warnings); else the last line.
  if (!flags.quiet) io.stdout.write(servingLine(note, logged.runId, flags.experiment));
  else if (note.fix !== null) io.stderr.write(`tagger: ${servingLine(note, logged.runId, flags.experiment)}`);
}

/** `tagger train --json`'s account of a cascade: τ, the rule and why, the CV point and the test split's figures. */
export function cascadeSummary(cascade: CascadeOutcome) {
  return {
    threshold: cascade.choice.point.threshold,
    rule: cascade.choice.rule.kind,
    reason: cascade.choice.reason,
    cv: { routed: cascade.choice.point.routed, f1: cascade.choice.point.f1, ...pick(cascade.curve) },
    test: cascade.test,
    artifact: RUN_ARTIFACTS.cascadeCurve,
  };
}

const pick = ({ fast_f1, encoder_f1, rows }: CascadeOutcome['curve']) => ({ fast_f1, encoder_f1, rows });

/** `tagger train`'s line about a cascade: τ and why, and the test split routed and scored stage by stage. */
export function cascadeLine(cascade: CascadeOutcome): string {
  const { test } = cascade;
  return (
    `Cascade: τ ${cascade.choice.point.threshold}, ${cascade.choice.reason}. ` +
    `Test split: ${(test.routed * 100).toFixed(1)} % routed to the encoder model; each stage alone f1 ${formatMetric(test.fast_f1)} (fast), ${formatMetric(test.encoder_f1)} (encoder)\n`
  );
}
