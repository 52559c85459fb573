/** `tagger predict`: tags for texts given on the command line (optionally explained), or for a whole file. */
import type { Command } from 'commander';
import { type TagFileResult, tagFile } from '../service/batch-predict.js';
import { createProgress } from '../train/progress.js';
import { explanationBlock } from './explanation.js';
import { loadModelOfFlags, trackingOption, UsageError } from './inputs.js';
import type { CliIo } from './io.js';

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

/** Bad rows printed one by one before only their count is reported. */
const SHOWN_BAD_ROWS = 20;

async function predictFileCommand(flags: PredictFlags & { input: string }, io: CliIo): Promise<void> {
  if (flags.output === undefined) {
    throw new UsageError('predict: --input needs --output <file.csv|.jsonl> for the tags');
  }
  if (flags.explain)
    throw new UsageError('predict: --explain works on texts given on the command line, not with --input');
  const loaded = await loadModelOfFlags(flags, io);
  const progress = createProgress({
    label: 'tagging',
    total: 100,
    silent: flags.quiet === true,
    unit: '%',
    stream: io.stderr,
  });
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
          io.stderr.write(`tagger: ${flags.input}: line ${line}: ${reason}; skipped\n`);
      },
    });
  } finally {
    progress.stop();
  }
  if (result.bad > SHOWN_BAD_ROWS) {
    io.stderr.write(`tagger: … and ${result.bad - SHOWN_BAD_ROWS} more bad rows (not shown)\n`);
  }
  io.stdout.write(
    `Tagged ${result.tagged.toLocaleString('en-US')} of ${result.rows.toLocaleString('en-US')} rows of ${flags.input} into ${flags.output}` +
      `${result.bad > 0 ? ` (${result.bad} bad row${result.bad === 1 ? '' : 's'} skipped)` : ''} in ${result.seconds.toFixed(1)} s` +
      ` with run ${loaded.runId ?? '(model directory)'}.\n`,
  );
}

async function predictCommand(texts: string[], flags: PredictFlags, io: CliIo): Promise<void> {
  if (flags.input !== undefined) {
    if (texts.length > 0) throw new UsageError('predict: give texts or --input <file>, not both');
    return predictFileCommand({ ...flags, input: flags.input }, io);
  }
  if (flags.output !== undefined || flags.textColumn !== undefined) {
    throw new UsageError('predict: --output and --text-column go with --input <file>');
  }
  if (texts.length === 0)
    throw new UsageError('predict: give at least one text, e.g. tagger predict "Transformers for NER"');
  const empty = texts.findIndex((text) => text.trim() === '');
  if (empty >= 0) throw new UsageError(`predict: text ${empty + 1} is empty`);
  const loaded = await loadModelOfFlags(flags, io);
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
      return explanationBlock(
        text,
        prediction.predicted_tag,
        prediction.predicted_probabilities[explanation.tag] ?? Number.NaN,
        explanation,
      );
    });
    io.stdout.write(`run ${loaded.runId ?? '(model directory)'}\n\n${tables.join('\n\n')}\n`);
    return;
  }
  io.stdout.write(`${JSON.stringify({ run_id: loaded.runId, predictions }, null, 2)}\n`);
}

export function registerPredict(program: Command, io: CliIo): void {
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
      "print, per text, the 10 features that moved the predicted tag's score most (a table: contributions, rest, bias = score); for a soft vote, how it combined its members' probabilities and each member's table",
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
    .action((texts: string[], flags: PredictFlags) => predictCommand(texts, flags, io));
}
