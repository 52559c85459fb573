/**
 * `tagger retrain`'s command line: its options, checked as they are parsed, and the call into
 * retrain.ts, which does the work.
 */
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import { parseCandidates, parseDuration } from './choice-output.js';
import { parseInteger, trackingOption } from './inputs.js';
import type { CliIo } from './io.js';
import { type RetrainFlags, retrainCommand } from './retrain.js';

export function registerRetrain(program: Command, io: CliIo): void {
  const between =
    (name: string, low: number) =>
    (value: string): number => {
      const parsed = Number(value);
      if (value.trim() === '' || !Number.isFinite(parsed) || parsed < low || parsed > 1) {
        throw new InvalidArgumentError(`${name} must be a number from ${low} to 1, got '${value}'`);
      }
      return parsed;
    };
  program
    .command('retrain')
    .description(
      "Train the next model from people's corrections: the served run's own training data plus every feedback label and label-issue fix, tested on the same test rows; --promote serves it only when it is better",
    )
    .option('--experiment <name>', 'the experiment tagger serve serves (the new run joins it)', 'best')
    .option(
      '--run-id <id>',
      'the run to retrain from (default: the run tagger serve serves, or the one --promote’s alias points at)',
    )
    .option(
      '--data <file>',
      "the replaced run's training data, when it is no longer where the run recorded it (its digest must match)",
    )
    .option('--test-data <file>', "the replaced run's test file, likewise")
    .option(
      '--text-column <names>',
      "the column(s) of the replaced run's data files holding the text, several separated by commas (default: those the run recorded)",
    )
    .option('--tag-column <name>', 'the column holding the tag (default: the one the run recorded)')
    .option(
      '--tags-column <name>',
      'the column holding several tags per row (default: the one the run recorded)',
    )
    .option('--args <json>', "training arguments instead of the replaced run's (a JSON file or inline JSON)")
    .option('--seed <n>', "random seed (default: the replaced run's)", parseInteger('--seed', 0))
    .option(
      '--promote [target]',
      "promote the new run if it beats the served one: 'best' (the default: the experiment's best run) or models:/<name>@<alias>",
    )
    .addOption(
      new Option(
        '--min-gain <f1>',
        'the margin on the same test rows the new run must beat the served one by (negative: accept one up to that much worse)',
      )
        .default(0.005)
        .argParser(between('--min-gain', -1)),
    )
    .addOption(
      new Option('--min-live-labels <n>', 'held-out live labels needed to judge "no worse on live labels"')
        .default(20)
        .argParser(parseInteger('--min-live-labels', 0)),
    )
    .addOption(
      new Option(
        '--live-holdout <share>',
        'share of the random-share labels held out of training, to score both models on',
      )
        .default(0.5)
        .argParser(between('--live-holdout', 0)),
    )
    .option('--allow-warnings', 'promote even when the data checks warned of a leaked test set')
    .addOption(trackingOption())
    .addOption(
      new Option(
        '--record-store <uri>',
        'where tagger serve keeps records, feedback and label-issue decisions (as its setting; default beside the tracking store)',
      ).env('TAGGER_RECORD_STORE'),
    )
    .option('--run-name <name>', 'run name (default: retrain-<timestamp>)')
    .option(
      '--model-choice',
      "choose the model again on the merged rows, as tagger train does (default: the replaced run's kind and arguments)",
    )
    .option(
      '--time-budget <duration>',
      'with --model-choice: how long the choice may take (seconds or 90s, 10m, 1h30m)',
      parseDuration,
    )
    .option(
      '--candidates <names>',
      'with --model-choice: the candidates it tries, comma-separated (as tagger train --candidates)',
      parseCandidates,
    )
    .option('--no-label-issues', "don't look for label issues in the merged data")
    .option('--json', 'print one JSON object: the corrections, the merge, the scores and the promotion')
    .option(
      '--no-memory-check',
      "train even when the estimate of the training's memory is over what this process may use (it may then be killed)",
    )
    .option('--quiet', 'no progress')
    .action((flags: RetrainFlags) => retrainCommand(flags, io));
}
