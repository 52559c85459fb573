/**
 * `tagger feedback export --output labelled.csv`: the predictions people labelled through
 * `POST /feedback`, as a training file (src/monitoring/export.ts), so `tagger train --data labelled.csv`
 * learns from them and `tagger evaluate --data labelled.csv` scores any run on them. It reads the record
 * store `tagger serve` writes (the same TAGGER_RECORD_STORE, or its default beside the tracking store)
 * and only what one served experiment (or saved model) recorded.
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  defaultRecordStoreUri,
  openRecordStore,
  recordScope,
  writeLabelledCsv,
} from '../monitoring/index.js';
import { openTrackingStore, redactUri, resolveTrackingUri } from '../tracking/index.js';
import { textKey } from '../train/label-issues.js';
import { trainingCsv } from '../train/merge-corrections.js';
import { trackingOption, UsageError, withStore } from './inputs.js';
import type { CliIo } from './io.js';
import { findParent, prepare } from './retrain-data.js';
import { keptOutLine } from './retrain-report.js';

interface ExportFlags {
  output: string;
  experiment: string;
  runId?: string;
  model?: string;
  since?: string;
  trackingUri?: string;
  recordStore?: string;
  json?: boolean;
  /** Write what `tagger retrain` would train on instead (the served run's data with every correction). */
  merged?: boolean;
  fromRun?: string;
  data?: string;
  testData?: string;
  testOutput?: string;
  liveHoldout: number;
}

/** Writes a file through a temporary one beside it, so a failure never leaves half a file. */
async function writeWholeFile(path: string, content: string): Promise<void> {
  const temporary = join(dirname(path), `.${Date.now().toString(36)}-${process.pid}.tagger-export.tmp`);
  try {
    await writeFile(temporary, content);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new UsageError(`feedback export: cannot write ${path}: ${(error as Error).message}`);
  }
}

/**
 * `--merged`: the training set `tagger retrain` would train on — the served run's own training data (digest
 * checked) with every feedback label and label-issue fix merged in, the held-out random share left out —
 * and, with `--test-output`, the test rows it would be tested on.
 */
async function exportMerged(flags: ExportFlags, trackingUri: string, io: CliIo): Promise<void> {
  if (flags.model !== undefined || flags.runId !== undefined || flags.since !== undefined) {
    throw new UsageError(
      'feedback export --merged writes the training set of tagger retrain: it takes --experiment (or --from-run), --data and --test-data, not --model, --run-id or --since',
    );
  }
  const uri = flags.recordStore ?? defaultRecordStoreUri(trackingUri);
  const summary = await withStore(flags.trackingUri, async (store) => {
    const parent = await findParent(
      store,
      { experiment: flags.experiment, ...(flags.fromRun === undefined ? {} : { runId: flags.fromRun }) },
      { kind: 'best' },
    );
    const records = await openRecordStore(uri, { readOnly: true });
    try {
      return await prepare(store, records, parent, {
        ...(flags.data === undefined ? {} : { data: flags.data }),
        ...(flags.testData === undefined ? {} : { testData: flags.testData }),
        liveHoldout: flags.liveHoldout,
      });
    } finally {
      await records.close();
    }
  });
  const multiLabel = summary.data.multiLabel || summary.parent.args.multi_label;
  await writeWholeFile(flags.output, trainingCsv(summary.merged.rows, multiLabel));
  if (flags.testOutput !== undefined)
    await writeWholeFile(flags.testOutput, trainingCsv(summary.data.test, multiLabel));
  const s = summary.merged.summary;
  const counts = {
    output: flags.output,
    rows: summary.merged.rows.length,
    parent_run_id: summary.parent.run.info.runId,
    relabelled: s.relabelled,
    added: s.added,
    test_corrections: s.testCorrections,
    near_test: s.nearTest,
    data_test_repeats: s.dataTestRepeats,
    contradictions: s.contradictions,
    near_contradictions: s.nearContradictions,
    held_out: summary.labels.heldOut.length,
    test_rows: summary.data.test.length,
    ...(flags.testOutput === undefined ? {} : { test_output: flags.testOutput }),
  };
  if (flags.json) {
    io.stdout.write(`${JSON.stringify(counts)}\n`);
    return;
  }
  io.stdout.write(
    `Wrote ${counts.rows} training rows to ${flags.output}: run ${counts.parent_run_id}'s training data with ${s.relabelled.feedback + s.relabelled.label_issue} rows relabelled and ${s.added.feedback + s.added.label_issue} added from feedback and label-issue fixes` +
      `${s.contradictions > 0 ? ` (${s.contradictions} contradictory texts: the latest label used)` : ''}; ${summary.labels.heldOut.length} held-out labels of the random share and ${s.testCorrections} corrections of test rows left out${keptOutLine(s)}.\n` +
      (flags.testOutput === undefined
        ? `Its ${counts.test_rows} test rows are not in it (tagger retrain tests on them; --test-output writes them).\n`
        : `Wrote its ${counts.test_rows} test rows to ${flags.testOutput}: tagger train --data ${flags.output} --test-data ${flags.testOutput} tests on the same rows.\n`),
  );
}

/** `--since`: an ISO 8601 date or date-time. */
function parseSince(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new UsageError(
      `--since must be an ISO 8601 date or date-time (2026-11-01, 2026-11-01T12:00Z), got '${value}'`,
    );
  }
  return ms;
}

/** The scope records were kept under: the experiment's id (read from the tracking store), or the model's. */
async function scopeOf(flags: ExportFlags, trackingUri: string): Promise<string> {
  if (flags.model !== undefined) return recordScope({ modelDir: resolve(flags.model) });
  const store = await openTrackingStore(trackingUri, { readOnly: true });
  try {
    const experiment = await store.getExperimentByName(flags.experiment);
    if (experiment === null) {
      throw new UsageError(
        `feedback export: there is no experiment '${flags.experiment}' in ${redactUri(trackingUri)}; give the one tagger serve serves with --experiment`,
      );
    }
    return recordScope({ experimentId: experiment.experimentId });
  } finally {
    await store.close();
  }
}

async function exportCommand(flags: ExportFlags, io: CliIo): Promise<void> {
  const trackingUri = resolveTrackingUri(flags.trackingUri, process.env);
  if (flags.merged) return exportMerged(flags, trackingUri, io);
  const sinceMs = parseSince(flags.since);
  const scope = await scopeOf(flags, trackingUri);
  const uri = flags.recordStore ?? defaultRecordStoreUri(flags.model === undefined ? trackingUri : null);
  const store = await openRecordStore(uri, { readOnly: true });
  let summary: Awaited<ReturnType<typeof writeLabelledCsv>>;
  let cutFixes = 0;
  try {
    // Label-issue fixes are corrections too; a fix whose text the issue showed cut is written by --merged,
    // which reads the whole text from the training data.
    const fixes =
      flags.runId !== undefined || sinceMs !== undefined
        ? []
        : (await store.labelReviews(scope)).filter((review) => review.decision === 'fix');
    const whole = fixes.filter((review) => textKey(review.text) === review.textKey);
    cutFixes = fixes.length - whole.length;
    summary = await writeLabelledCsv(
      store,
      flags.output,
      { scope, runId: flags.runId, sinceMs },
      whole.map((review) => ({ text: review.text, tags: review.tags })),
    );
  } finally {
    await store.close();
  }
  if (flags.json) {
    io.stdout.write(
      `${JSON.stringify({ output: flags.output, rows: summary.rows, label_issue_fixes: summary.extra, cut_fixes: cutFixes, hashed_only: summary.hashedOnly, multi_label: summary.multiLabel, runs: summary.runs })}\n`,
    );
    return;
  }
  const left =
    summary.hashedOnly > 0 ? `; ${summary.hashedOnly} kept only a hash of their text and were left out` : '';
  io.stdout.write(
    `Wrote ${summary.rows - summary.extra} labelled predictions (${summary.multiLabel ? 'tags' : 'tag'} column) of ${summary.runs.length === 1 ? 'run' : 'runs'} ${summary.runs.join(', ') || '(none)'}${summary.extra > 0 ? ` and ${summary.extra} label-issue fixes` : ''} to ${flags.output}${left}${cutFixes > 0 ? `; ${cutFixes} fixes of texts shown cut are left out (feedback export --merged and tagger retrain apply them)` : ''}.\n` +
      `Retrain on them merged with the served run's data with \`tagger retrain\` (or write that set with --merged); score a run with \`tagger evaluate --data ${flags.output}\`.\n`,
  );
}

export function registerFeedback(program: Command, io: CliIo): void {
  const feedback = program
    .command('feedback')
    .description('Work with the feedback labels given to served predictions (POST /feedback)');
  feedback
    .command('export')
    .description(
      'Write the labelled predictions of one experiment (or saved model) as a training file (title, description, tag or tags)',
    )
    .requiredOption('--output <csv>', 'the training file to write (replaced if it exists)')
    .option('--experiment <name>', 'the experiment tagger serve serves', 'best')
    .option('--run-id <id>', "only this run's predictions")
    .option(
      '--model <dir>',
      'the saved model directory tagger serve --model serves, instead of an experiment',
    )
    .option('--since <date>', 'only feedback received since this ISO 8601 date or date-time')
    .addOption(trackingOption())
    .addOption(
      new Option(
        '--record-store <uri>',
        'where tagger serve keeps records (as its setting; default: the tracking database when it is SQLite or PostgreSQL, else sqlite:///tagger-records.db)',
      ).env('TAGGER_RECORD_STORE'),
    )
    .option(
      '--merged',
      'write what tagger retrain would train on instead: the served run’s own training data (digest checked) with every feedback label and label-issue fix merged in',
    )
    .option(
      '--from-run <id>',
      'with --merged: the run whose data to merge into (default: the run tagger serve serves)',
    )
    .option(
      '--data <file>',
      'with --merged: that run’s training data, when it is no longer where it recorded it',
    )
    .option('--test-data <file>', 'with --merged: that run’s test file, likewise')
    .option('--test-output <csv>', 'with --merged: also write the test rows tagger retrain tests on')
    .addOption(
      new Option(
        '--live-holdout <share>',
        'with --merged: share of the random-share labels held out (as tagger retrain)',
      )
        .default(0.5)
        .argParser((value: string) => {
          const share = Number(value);
          if (value.trim() === '' || !(share >= 0 && share <= 1)) {
            throw new InvalidArgumentError(`--live-holdout must be a number from 0 to 1, got '${value}'`);
          }
          return share;
        }),
    )
    .option('--json', 'print one JSON object: output, rows, hashed_only, multi_label, runs')
    .action((flags: ExportFlags) => exportCommand(flags, io));
}
