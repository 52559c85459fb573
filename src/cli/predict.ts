/** `tagger predict`: tags for texts given on the command line (optionally explained), or for a whole file. */
import { stat } from 'node:fs/promises';
import { type Command, InvalidArgumentError } from 'commander';
import { DEFAULT_MAX_ROW_BYTES, type Shard, type TagFileResult, tagFile } from '../batch/batch-predict.js';
import { isS3Url } from '../batch/object-store.js';
import { listedProbabilities } from '../model/index.js';
import type { Answers } from '../served-models/predictor.js';
import { InterruptedError } from '../train/log-run.js';
import { createProgress } from '../train/progress.js';
import { explanationBlock } from './explanation.js';
import { fileReading, loadModelOfFlags, parseInteger, trackingOption, UsageError } from './inputs.js';
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
  encoding?: string;
  delimiter?: string;
  escapeFormulas?: boolean;
  maxRowBytes?: number;
  keepColumns?: string;
  shard?: Shard;
  quiet?: boolean;
  probabilities?: 'all' | number;
}

/** `--probabilities <n|all>`: every tag's probability, or the n most probable. */
function parseProbabilities(value: string): 'all' | number {
  if (value.trim() === 'all') return 'all';
  try {
    return parseInteger('--probabilities', 1)(value);
  } catch {
    throw new InvalidArgumentError(`--probabilities must be 'all' or a whole number ≥ 1, got '${value}'`);
  }
}

/** What the output says when it lists only some tags' probabilities ('' when it lists all). */
const listedNote = (listed: 'all' | number, tags: number): string =>
  listed === 'all'
    ? ''
    : ` Probabilities: the ${listed} most probable of the model's ${tags} tags per row (--probabilities all for every tag).`;

/** `--shard <i>/<n>`: share i (0-based) of n. */
function parseShard(value: string): Shard {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(value);
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (match === null || !(count >= 1) || !(index < count)) {
    throw new InvalidArgumentError(
      `--shard must be <i>/<n> with 0 ≤ i < n (e.g. 0/4 … 3/4 for four processes), got '${value}'`,
    );
  }
  return { index, count };
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
  let taggedSoFar = 0;
  let result: TagFileResult;
  // SIGINT/SIGTERM stop the tagging cleanly: the partial output is removed, and the message says so.
  const existed =
    !isS3Url(flags.output) &&
    (await stat(flags.output).then(
      () => true,
      () => false,
    ));
  const stop = new AbortController();
  // The message is written once the job has stopped, with the rows tagged by then (a batch whose answer
  // was on its way when the signal came is not counted: its rows were never written).
  let stoppedBy: 'SIGINT' | 'SIGTERM' | undefined;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
    stoppedBy = signal;
    stop.abort(new InterruptedError(signal, 'tagging stopped'));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    result = await tagFile(loaded.predictor, {
      input: flags.input,
      output: flags.output,
      shard: flags.shard,
      textColumn: flags.textColumn,
      ...fileReading(flags),
      escapeFormulas: flags.escapeFormulas,
      maxRowBytes: flags.maxRowBytes,
      probabilities: flags.probabilities,
      keepColumns:
        flags.keepColumns === undefined
          ? undefined
          : flags.keepColumns
              .split(',')
              .map((name) => name.trim())
              .filter((name) => name !== ''),
      signal: stop.signal,
      onProgress: ({ bytesRead, totalBytes, rows, tagged }) => {
        taggedSoFar = tagged;
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
        // On its own line, above a progress bar on a terminal.
        if (shown <= SHOWN_BAD_ROWS)
          progress.log(`tagger: ${flags.input}: line ${line}: ${reason}; skipped\n`);
      },
    });
  } catch (error) {
    if (stoppedBy === undefined || error !== stop.signal.reason) throw error;
    throw new InterruptedError(
      stoppedBy,
      `tagging stopped after ${taggedSoFar.toLocaleString('en-US')} rows of ${flags.input} were tagged; nothing was written: ` +
        `the partial output was removed, and ${flags.output} ${existed ? 'is as it was' : 'was not created'}`,
    );
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    progress.stop();
    // Stopped: the encoder's queued batches are dropped, so the process ends after the one at the encoder.
    await loaded.close({ abandon: stop.signal.aborted });
  }
  if (result.bad > SHOWN_BAD_ROWS) {
    io.stderr.write(`tagger: … and ${result.bad - SHOWN_BAD_ROWS} more bad rows (not shown)\n`);
  }
  io.stdout.write(
    `Tagged ${result.tagged.toLocaleString('en-US')} of ${result.rows.toLocaleString('en-US')} rows of ${flags.input}${flags.shard ? ` (shard ${flags.shard.index}/${flags.shard.count})` : ''} into ${flags.output}` +
      `${result.bad > 0 ? ` (${result.bad} bad row${result.bad === 1 ? '' : 's'} skipped)` : ''} in ${result.seconds.toFixed(1)} s` +
      ` with run ${loaded.runId ?? '(model directory)'}.${listedNote(result.listed, result.tags)}\n`,
  );
}

async function predictCommand(texts: string[], flags: PredictFlags, io: CliIo): Promise<void> {
  if (flags.input !== undefined) {
    if (texts.length > 0) throw new UsageError('predict: give texts or --input <file>, not both');
    return predictFileCommand({ ...flags, input: flags.input }, io);
  }
  if (
    flags.output !== undefined ||
    flags.textColumn !== undefined ||
    flags.encoding !== undefined ||
    flags.delimiter !== undefined ||
    flags.escapeFormulas !== undefined ||
    flags.maxRowBytes !== undefined ||
    flags.keepColumns !== undefined ||
    flags.shard !== undefined
  ) {
    throw new UsageError(
      'predict: --output, --text-column, --encoding, --delimiter, --keep-columns, --max-row-bytes, --shard and --(no-)escape-formulas go with --input <file>',
    );
  }
  if (texts.length === 0)
    throw new UsageError('predict: give at least one text, e.g. tagger predict "Transformers for NER"');
  const empty = texts.findIndex((text) => text.trim() === '');
  if (empty >= 0) throw new UsageError(`predict: text ${empty + 1} is empty`);
  const loaded = await loadModelOfFlags(flags, io);
  // As POST /predict answers: past 20 tags the 20 most probable, saying how many of how many.
  const tagCount = loaded.model.tags.length;
  const listed = listedProbabilities(flags.probabilities, tagCount);
  let answers: Answers;
  try {
    // An encoder run: the texts' embeddings first, in the encoder's thread (no degraded answers here).
    answers = await loaded.predictor.predict(texts, { probabilities: listed, overload: 'shed' });
  } finally {
    await loaded.close();
  }
  const predictions = answers.predictions.map((prediction, index) => {
    const item = {
      input_text: texts[index],
      predicted_tag: prediction.predicted_tag,
      predicted_tags: prediction.predicted_tags,
      predicted_probabilities: prediction.probabilities,
      // The model knew none of the text's features: the answer is its prior (as POST /predict says).
      ...(prediction.no_known_features === true ? { no_known_features: true } : {}),
    };
    const count = Object.keys(prediction.probabilities).length;
    return count < tagCount ? { ...item, probabilities_listed: { listed: count, of: tagCount } } : item;
  });
  if (flags.explain) {
    const tables = texts.map((text, index) => {
      const prediction = predictions[index]!;
      const explanation = answers.explain(index, 10);
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
      'tag every row of a .csv or .jsonl file or s3://bucket/key object (streamed: any size), in order; bad rows are reported by line and skipped',
    )
    .option(
      '--output <file>',
      'with --input: where the tags go, a file or an s3://bucket/key object (.csv or .jsonl: line, the kept columns, text, predicted_tag, probabilities; predicted_tags too for a multi-label model)',
    )
    .option(
      '--shard <i>/<n>',
      'with --input: tag only share i of n (0-based): the rows at positions i, i+n, i+2n, … of the file (bad rows counted); n processes over one input write n parts whose rows, merged by line, are one process’s output',
      parseShard,
    )
    .option(
      '--text-column <name>',
      "with --input: the column holding the text (default: 'text', else title + description)",
    )
    .option(
      '--encoding <name>',
      "with --input: the file's encoding, e.g. latin1, windows-1252, utf-16le (default: UTF-8, or UTF-16 by its byte-order mark)",
    )
    .option(
      '--delimiter <char>',
      "with --input, CSV: the field delimiter, e.g. ';' or tab (default: sniffed: , ; or tab)",
    )
    .option(
      '--keep-columns <names>',
      "with --input: input columns (comma-separated) copied into each output row after line, e.g. your own ids (default: id, when the input has one; '' for none)",
    )
    .option(
      '--escape-formulas',
      "with --input: put a ' before cells starting with = + - @ tab or CR, so a spreadsheet shows them as text instead of running them (OWASP; the default for .csv output)",
    )
    .option('--no-escape-formulas', 'with --input: write cells as they are (the default for .jsonl output)')
    .option(
      '--max-row-bytes <n>',
      `with --input: a row longer than this (bytes in the file) is reported by line and skipped, never read into memory (default ${DEFAULT_MAX_ROW_BYTES}, 1 MiB)`,
      parseInteger('--max-row-bytes', 1),
    )
    .option(
      '--probabilities <n|all>',
      "whose probabilities are listed: 'all' tags, or the n most probable (default: all for a model of at most 20 tags, else the 20 most probable, and the output says so: probabilities_listed; with --input, columns tag_1,p_1,… instead of p_<tag>)",
      parseProbabilities,
    )
    .option('--quiet', 'with --input: no progress output')
    .addOption(trackingOption())
    .action((texts: string[], flags: PredictFlags) => predictCommand(texts, flags, io));
}
