/**
 * `tagger label-issues`: the rows of a data file whose given tag is probably wrong, by confident learning on
 * out-of-fold probabilities (src/train/label-issues.ts), most unlikely first; and what `tagger train` says
 * and logs about the same list for its training data.
 */
import type { Command } from 'commander';
import { RUN_ARTIFACTS } from '../model/index.js';
import { DEFAULT_FOLDS } from '../train/cross-validate.js';
import {
  findLabelIssues,
  type LabelIssue,
  type LabelIssuesReport,
  type TrainingLabelIssues,
} from '../train/label-issues.js';
import { argsForData } from '../train/pipeline.js';
import { createProgress, type Progress } from '../train/progress.js';
import { embedForTraining, encoderArgs } from './embeddings.js';
import {
  type DataColumnFlags,
  DEFAULT_SEED,
  dataColumnOptions,
  parseInteger,
  readArgs,
  readTrainingFiles,
  recordedColumns,
  trackingOption,
} from './inputs.js';
import type { CliIo } from './io.js';
import { textTable } from './output.js';

interface LabelIssuesFlags extends DataColumnFlags {
  data: string;
  /** Read --data with the columns this run recorded. */
  runId?: string;
  trackingUri?: string;
  args?: string;
  seed: number;
  folds: number;
  top?: number;
  json?: boolean;
  quiet?: boolean;
}

/** Characters of a text shown in the table (the whole text is in --json). */
const SHOWN_TEXT = 60;

const oneLine = (text: string): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= SHOWN_TEXT ? flat : `${flat.slice(0, SHOWN_TEXT - 1)}…`;
};

const where = (issue: LabelIssue): string => (issue.line === null ? `#${issue.row + 1}` : String(issue.line));

/** The issues as a table: where, the tag as given and as suggested with their probabilities, the text. */
function issuesTable(report: LabelIssuesReport): string[] {
  if (!report.multi_label) {
    const rows = report.issues.map((issue) => {
      if (issue.kind !== 'tag') throw new Error('label-issues: a single-label report holds tag issues');
      return [
        String(issue.rank),
        where(issue),
        issue.data_tag === undefined ? issue.given_tag : `${issue.data_tag} (as ${issue.given_tag})`,
        issue.given_probability.toFixed(4),
        issue.suggested_tag,
        issue.suggested_probability.toFixed(4),
        oneLine(issue.text),
      ];
    });
    return textTable(
      ['rank', 'line', 'given tag', 'p(given)', 'suggested tag', 'p(suggested)', 'text'],
      rows,
      [0, 1, 3, 5],
    );
  }
  const rows = report.issues.map((issue) => {
    if (issue.kind === 'tag') throw new Error('label-issues: a multi-label report holds tag-set issues');
    return [
      String(issue.rank),
      where(issue),
      issue.kind === 'extra_tag' ? `drop ${issue.tag}` : `add ${issue.tag}`,
      issue.given_probability.toFixed(4),
      issue.suggested_probability.toFixed(4),
      `${issue.given_tags.join('|') || '(none)'} → ${issue.suggested_tags.join('|') || '(none)'}`,
      oneLine(issue.text),
    ];
  });
  return textTable(
    ['rank', 'line', 'suggested fix', 'p as given', 'p as fixed', 'tags', 'text'],
    rows,
    [0, 1, 3, 4],
  );
}

/** The report for people: what was done, the table, and what to do with it. */
export function labelIssuesText(report: LabelIssuesReport, file: string): string {
  const how = `confident learning on ${report.folds}-fold out-of-fold probabilities, seed ${report.seed}`;
  const unit = report.multi_label ? 'row tags' : 'rows';
  if (report.found === 0)
    return `No row of ${file} has a tag that looks wrong (${report.rows} rows; ${how}).\n`;
  const shown =
    report.issues.length < report.found ? ` (the first ${report.issues.length} shown; --top changes it)` : '';
  const p = report.multi_label
    ? 'p as given: the probability of the row as tagged (listing the tag, or not); p as fixed: with the fix'
    : 'p(given), p(suggested): the out-of-fold probabilities of the given and of the suggested tag';
  return [
    `${report.found} ${unit} of ${file} (${report.rows} rows) are probably mislabelled, the most unlikely first${shown}; ${how}.`,
    ...issuesTable(report),
    `${p}. Check each row, correct the tags in ${file} (the model may be the one that is wrong) and train again; --json gives every field and whole texts.`,
    '',
  ].join('\n');
}

async function labelIssuesCommand(flags: LabelIssuesFlags, io: CliIo): Promise<void> {
  const given = await readArgs(flags.args);
  const { data } = await readTrainingFiles({
    data: flags.data,
    ...(await recordedColumns(flags.runId, flags)),
  });
  const args = encoderArgs(argsForData(given.args, data, given.explicit), given.explicit);
  // Args that name an encoder: every row's embedding, once, before the folds train (all rows are predicted).
  const encoder = await embedForTraining({ ...args, subset: null }, { data }, io, flags.quiet === true);
  const progress = createProgress({
    label: 'label issues',
    total: flags.folds,
    eta: true,
    silent: flags.quiet === true,
    stream: io.stderr,
  });
  let report: LabelIssuesReport;
  try {
    report = findLabelIssues(data, {
      args,
      seed: flags.seed,
      folds: flags.folds,
      ...(flags.top === undefined ? {} : { top: flags.top }),
      onFold: (done) => progress.update(done, 'out-of-fold models trained'),
      ...(encoder ? { encoder } : {}),
    });
  } finally {
    progress.stop();
  }
  io.stdout.write(flags.json ? `${JSON.stringify(report)}\n` : labelIssuesText(report, flags.data));
}

export function registerLabelIssues(program: Command, io: CliIo): void {
  const command = program
    .command('label-issues')
    .description(
      'List the rows of a data file whose given tag is probably wrong: every row is predicted by a model trained without it (cross-validation), and confident learning flags the rows whose tag that model finds unlikely, with the tag it suggests',
    )
    .requiredOption('--data <csv>', 'data file (CSV or JSON, as for train: a tag or a tags column)');
  dataColumnOptions(command)
    .option(
      '--args <json>',
      'training arguments of the out-of-fold models: a JSON file or inline JSON object (unset keys keep defaults)',
    )
    .option(
      '--seed <n>',
      'random seed for the folds and the training',
      parseInteger('--seed', 0),
      DEFAULT_SEED,
    )
    .option(
      '--folds <k>',
      'cross-validation folds (each row is predicted by the model of the other k − 1)',
      parseInteger('--folds', 2),
      DEFAULT_FOLDS,
    )
    .option('--top <n>', 'list only the n most unlikely (all by default)', parseInteger('--top', 1))
    .option(
      '--run-id <id>',
      'read --data with the columns this run was trained with (its --text-column, --tag-column or --tags-column), unless column flags are given',
    )
    .addOption(trackingOption())
    .option('--json', 'print the whole report as one JSON object on stdout')
    .option('--quiet', 'no progress output')
    .action((flags: LabelIssuesFlags) => labelIssuesCommand(flags, io));
}

/**
 * `tagger train`'s progress of the label issues of its training data (unless --no-label-issues): a line per
 * out-of-fold model, started by the first one.
 */
export function labelIssuesProgress(io: CliIo, quiet: boolean) {
  let progress: Progress | undefined;
  let at = { done: 0, total: DEFAULT_FOLDS };
  return {
    started: (): boolean => progress !== undefined,
    update(done: number, total: number): void {
      at = { done, total };
      progress ??= createProgress({ label: 'label issues', total, silent: quiet, stream: io.stderr });
      progress.update(done, 'out-of-fold models trained');
    },
    /** Where the search is, for a message. */
    where: (): string =>
      `the training was done, and the search for label issues stopped after ${at.done} of ${at.total} out-of-fold models`,
    stop: (): void => progress?.stop(),
  };
}

/** `tagger train --json`'s account of the label issues: how many were logged, or why none were looked for. */
export function labelIssuesSummary(found: TrainingLabelIssues) {
  if ('skipped' in found) return { skipped: found.skipped };
  const { report } = found;
  return {
    found: report.found,
    // Found among a seeded sample of `rows` of the data's `sampled_from` rows (larger data only).
    ...(report.sampled_from === undefined ? {} : { rows: report.rows, sampled_from: report.sampled_from }),
    artifact: RUN_ARTIFACTS.labelIssues,
    seconds: found.seconds,
  };
}

/** `tagger train`'s line about the label issues: how many, the most unlikely one, and where the list is. */
export function labelIssuesLine(found: TrainingLabelIssues, file: string): string {
  if ('skipped' in found) return `Label issues: not looked for: ${found.skipped}\n`;
  const { report } = found;
  const sample =
    report.sampled_from === undefined
      ? ''
      : ` among a sample of ${report.rows.toLocaleString('en-US')} of the ${report.sampled_from.toLocaleString('en-US')} rows`;
  if (report.found === 0) return `Label issues: none found${sample} (${found.seconds.toFixed(1)} s)\n`;
  const first = report.issues[0]!;
  const fix =
    first.kind === 'tag'
      ? `tagged ${first.given_tag}, probably ${first.suggested_tag}`
      : first.kind === 'extra_tag'
        ? `lists ${first.tag}, which probably does not apply`
        : `lacks ${first.tag}, which probably applies`;
  return (
    `Label issues: ${report.found} ${report.multi_label ? 'row tags' : 'rows'} probably mislabelled${sample} (the most unlikely: line ${where(first)}, ${fix}); ` +
    `logged as ${RUN_ARTIFACTS.labelIssues}, listed by tagger label-issues --data ${file} (${found.seconds.toFixed(1)} s)\n`
  );
}
