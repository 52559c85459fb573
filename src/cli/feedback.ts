/**
 * `tagger feedback export --output labelled.csv`: the predictions people labelled through
 * `POST /feedback`, as a training file (src/monitoring/export.ts), so `tagger train --data labelled.csv`
 * learns from them and `tagger evaluate --data labelled.csv` scores any run on them. It reads the record
 * store `tagger serve` writes (the same TAGGER_RECORD_STORE, or its default beside the tracking store)
 * and only what one served experiment (or saved model) recorded.
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import {
  defaultRecordStoreUri,
  openRecordStore,
  recordScope,
  writeLabelledCsv,
} from '../monitoring/index.js';
import { openTrackingStore, redactUri, resolveTrackingUri } from '../tracking/index.js';
import { trackingOption, UsageError } from './inputs.js';
import type { CliIo } from './io.js';

interface ExportFlags {
  output: string;
  experiment: string;
  runId?: string;
  model?: string;
  since?: string;
  trackingUri?: string;
  recordStore?: string;
  json?: boolean;
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
  const sinceMs = parseSince(flags.since);
  const trackingUri = resolveTrackingUri(flags.trackingUri, process.env);
  const scope = await scopeOf(flags, trackingUri);
  const uri = flags.recordStore ?? defaultRecordStoreUri(flags.model === undefined ? trackingUri : null);
  const store = await openRecordStore(uri, { readOnly: true });
  let summary: Awaited<ReturnType<typeof writeLabelledCsv>>;
  try {
    summary = await writeLabelledCsv(store, flags.output, { scope, runId: flags.runId, sinceMs });
  } finally {
    await store.close();
  }
  if (flags.json) {
    io.stdout.write(
      `${JSON.stringify({ output: flags.output, rows: summary.rows, hashed_only: summary.hashedOnly, multi_label: summary.multiLabel, runs: summary.runs })}\n`,
    );
    return;
  }
  const left =
    summary.hashedOnly > 0 ? `; ${summary.hashedOnly} kept only a hash of their text and were left out` : '';
  io.stdout.write(
    `Wrote ${summary.rows} labelled predictions (${summary.multiLabel ? 'tags' : 'tag'} column) of ${summary.runs.length === 1 ? 'run' : 'runs'} ${summary.runs.join(', ')} to ${flags.output}${left}.\n` +
      `Train on them with \`tagger train --data ${flags.output}\`, or score a run with \`tagger evaluate --data ${flags.output}\`.\n`,
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
    .option('--json', 'print one JSON object: output, rows, hashed_only, multi_label, runs')
    .action((flags: ExportFlags) => exportCommand(flags, io));
}
