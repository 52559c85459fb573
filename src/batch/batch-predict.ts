/**
 * Batch tagging of a file (`tagger predict --input data.csv --output tags.csv`): rows are streamed in,
 * tagged in batches and streamed out in the input's order, so memory stays flat whatever the file's
 * size. A bad row (no text, malformed CSV or JSON, longer than `maxRowBytes`) is reported with its line
 * number and skipped; the run goes on. The output is written to a temp file beside the target and
 * renamed into place at the end, so an interrupted run never leaves a half-written file under the
 * requested name. Each output row keeps the input's `id` (or the `keepColumns` named).
 *
 * Formats by extension: `.csv` (a header row; read with csv-parse) and `.jsonl` / `.ndjson` (one
 * JSON object per line). The text is `--text-column`, else a `text` column, else `title + " " +
 * description` (what `tagger train` reads). CSV output is safe to open in a spreadsheet: cells that would
 * start a formula are neutralised (`escapeFormulas`).
 */
import { randomBytes } from 'node:crypto';
import { rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { listedProbabilities, type Prediction } from '../model/index.js';
import type { Predictor } from '../served-models/predictor.js';
import {
  BATCH_WORKER_MARK,
  type BatchFormat,
  OUTPUT_COLUMNS,
  type ReaderOptions,
  type Shard,
  type TaggedBatch,
  type WorkerMessage,
  type WriterOptions,
} from './batch-io.js';
import {
  checkS3Bucket,
  isS3Url,
  parseS3Url,
  S3ConfigError,
  s3Reason,
  s3Size,
  s3TimeoutMs,
  uploadToS3,
} from './object-store.js';

export type { BatchFormat, Shard } from './batch-io.js';
export { DEFAULT_MAX_ROW_BYTES } from './batch-row-limit.js';

export interface BadRow {
  /** 1-based line of the input where the row ends. */
  line: number;
  reason: string;
}

export interface BatchProgress {
  bytesRead: number;
  totalBytes: number;
  /** Rows read and handled: tagged, or bad and skipped. */
  rows: number;
  /** Rows tagged (handed to the writer). */
  tagged: number;
}

export interface TagFileOptions {
  input: string;
  output: string;
  /** Column (CSV) or field (JSONL) holding the text. */
  textColumn?: string | undefined;
  /**
   * The input's encoding (a label of the Encoding Standard: `latin1`, `utf-16le`, …). Default: its
   * byte-order mark (UTF-8, UTF-16LE/BE), else UTF-8; a file that is not is refused, saying what it looks
   * like (a BatchInputError).
   */
  encoding?: string | undefined;
  /** CSV: the field delimiter (one ASCII character). Default: sniffed from the first lines (`,`, `;`, tab). */
  delimiter?: string | undefined;
  /** Texts per model call. */
  batchSize?: number;
  /**
   * Rows longer than this many bytes (line break excluded) are reported as bad rows and skipped without
   * being read into memory (default 1 MiB, DEFAULT_MAX_ROW_BYTES); a CSV header over it fails the file.
   */
  maxRowBytes?: number | undefined;
  /**
   * Input columns (CSV) or fields (JSON Lines) copied into each output row after `line`, e.g. the
   * input's own ids. Default: `id` when the input has one; [] for none. A name the output already uses
   * (`text`, `p_<tag>`, …) is refused.
   */
  keepColumns?: readonly string[] | undefined;
  /**
   * Neutralise cells a spreadsheet would run as formulas (OWASP: a `'` before a leading `=`, `+`, `-`,
   * `@`, tab or CR). Default: on for CSV output, off for JSON Lines (read by programs, not spreadsheets).
   */
  escapeFormulas?: boolean | undefined;
  /**
   * Whose probabilities each row lists: `all` tags' (`p_<tag>` columns), or the n most probable (`tag_1,
   * p_1, …`). Default: every tag for a model of at most 20 tags, else the 20 most probable (as POST
   * /predict answers; listedProbabilities).
   */
  probabilities?: 'all' | number | undefined;
  /**
   * Tag one deterministic share of the rows: row k of the file (0-based, in line order, bad rows
   * counted) belongs to shard k mod count. n processes with shards 0…n−1 of n tag every row once; their
   * outputs, merged by `line`, are one process's output.
   */
  shard?: Shard | undefined;
  onProgress?: (progress: BatchProgress) => void;
  onBadRow?: (bad: BadRow) => void;
  /**
   * Stops the tagging when aborted: the worker is stopped, the temporary output removed (the target is
   * left as it was), and `signal.reason` is thrown.
   */
  signal?: AbortSignal | undefined;
}

export interface TagFileResult {
  /** Data rows read (header excluded), bad ones included. */
  rows: number;
  tagged: number;
  bad: number;
  seconds: number;
  /** Whose probabilities the rows list: every tag's, or the n most probable (of `tags`). */
  listed: 'all' | number;
  tags: number;
}

/** The input cannot be used at all (unknown format, no text column, unreadable file). */
export class BatchInputError extends Error {
  override readonly name = 'BatchInputError';
}

export function formatOf(path: string): BatchFormat | null {
  const extension = extname(isS3Url(path) ? parseS3Url(path).key : path).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  return null;
}

/** The file worker's old-generation cap. */
const WORKER_HEAP_MB = 96;

/** The file's worker (batch-io.ts). Started from the sources (tests, tsx), it needs tsx's loader too. */
function startWorker(reader: ReaderOptions, writer: WriterOptions): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  return new Worker(new URL(`./batch-io.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
    workerData: { mark: BATCH_WORKER_MARK, reader, writer },
    // Without a cap V8 lets the worker's heap grow with the file (its garbage is collected lazily: +185 MB
    // on 100 MB of CSV); capped, it collects sooner and the process stays flat. Live data is at most
    // READER_CREDITS batches of at most MAX_BATCH_CHARS, far below the cap.
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 16 },
    ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
  });
}

/** `work`, or the signal's reason as soon as it aborts. */
function untilStopped(work: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return work;
  signal.throwIfAborted();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The worker's messages as an async sequence; its crash or early exit is an error, and so is `signal`. */
async function* messagesOf(worker: Worker, signal?: AbortSignal): AsyncGenerator<WorkerMessage> {
  const queue: WorkerMessage[] = [];
  let failure: Error | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  worker.on('message', (message: WorkerMessage) => {
    queue.push(message);
    notify();
  });
  worker.on('error', (error) => {
    failure = error;
    notify();
  });
  worker.on('exit', () => {
    ended = true;
    notify();
  });
  signal?.addEventListener('abort', notify, { once: true });
  for (;;) {
    signal?.throwIfAborted();
    const message = queue.shift();
    if (message !== undefined) {
      yield message;
      if (message.kind === 'done') return;
      // A turn of the event loop after every message. Node delivers a port's messages in one go, up to a
      // thousand, as long as more keep arriving, and they do while the worker reads ahead: resumed from
      // inside that delivery, this loop tagged the whole file (a 200,000-row file: 26.7 s) before a
      // SIGINT's handler — and so `signal` — ever ran. From here the delivery only queues.
      await new Promise<void>((resume) => setImmediate(resume));
      continue;
    }
    if (failure) throw failure;
    if (ended) throw new Error('batch tagging: the file worker ended before the end of the file');
    await new Promise<void>((resume) => (wake = resume));
  }
}

/** Predictions as the worker writes them: tag indices and row-major probabilities, in typed arrays. */
function tagBatch(
  tags: readonly string[],
  predictions: readonly Prediction[],
  tagIndex: ReadonlyMap<string, number>,
): TaggedBatch {
  const width = tags.length;
  const predicted = new Int32Array(predictions.length);
  const probabilities = new Float64Array(predictions.length * width);
  for (let i = 0; i < predictions.length; i++) {
    const prediction = predictions[i]!;
    predicted[i] = tagIndex.get(prediction.predicted_tag)!;
    for (let t = 0; t < width; t++) probabilities[i * width + t] = prediction.probabilities[tags[t]!]!;
  }
  return { predicted, probabilities };
}

/**
 * Tags every row of `input` into `output` with the served model's Predictor (src/served-models/predictor.ts:
 * an encoder run's batches are embedded in its encoder's thread, a cascade's only for the texts it routes),
 * every tag's probability asked for. A cascade's unsure texts are never answered degraded here: an
 * encoder that cannot take a batch fails the tagging.
 * @example await tagFile(predictorFor(model), { input: 'projects.csv', output: 'tags.csv' })
 */
export async function tagFile(predictor: Predictor, options: TagFileOptions): Promise<TagFileResult> {
  const { model } = predictor;
  const started = performance.now();
  const s3Paths = [options.input, options.output].filter(isS3Url);
  try {
    for (const path of s3Paths) parseS3Url(path);
    if (s3Paths.length > 0) s3TimeoutMs();
  } catch (error) {
    if (error instanceof S3ConfigError) throw new BatchInputError(error.message, { cause: error });
    throw error;
  }
  const inputFormat = formatOf(options.input);
  const outputFormat = formatOf(options.output);
  if (inputFormat === null || outputFormat === null) {
    const which = inputFormat === null ? options.input : options.output;
    throw new BatchInputError(`${which}: use a .csv, .jsonl or .ndjson file`);
  }
  const same = (path: string) => (isS3Url(path) ? path : resolve(path));
  if (same(options.input) === same(options.output)) {
    throw new BatchInputError(`--output ${options.output} is the input file; write the tags to another file`);
  }
  const { shard } = options;
  if (
    shard &&
    !(
      Number.isInteger(shard.count) &&
      shard.count >= 1 &&
      Number.isInteger(shard.index) &&
      shard.index >= 0 &&
      shard.index < shard.count
    )
  ) {
    throw new BatchInputError(`shard ${shard.index}/${shard.count}: give <i>/<n> with 0 ≤ i < n`);
  }
  const keepColumns = options.keepColumns === undefined ? undefined : [...new Set(options.keepColumns)];
  const listed = listedProbabilities(options.probabilities, model.tags.length);
  const taken = keepColumns?.filter(
    (name) =>
      OUTPUT_COLUMNS.includes(name) ||
      model.tags.some((tag) => name === `p_${tag}`) ||
      (listed !== 'all' && /^(tag|p)_[1-9]\d*$/.test(name) && Number(name.split('_')[1]) <= listed),
  );
  if (taken !== undefined && taken.length > 0) {
    throw new BatchInputError(
      `--keep-columns: ${taken.map((name) => `'${name}'`).join(', ')} ${taken.length === 1 ? 'is a column' : 'are columns'} of the output already (${[...OUTPUT_COLUMNS, listed === 'all' ? 'p_<tag>' : 'tag_<i>, p_<i>'].join(', ')}); keep other columns`,
    );
  }
  /** A stop signal during an S3 call (or any wait) is the signal's reason, not a failure of the call. */
  const stopped = (error: unknown): unknown =>
    options.signal?.aborted ? (options.signal.reason as unknown) : error;
  let totalBytes: number;
  try {
    if (isS3Url(options.input)) totalBytes = await s3Size(options.input, options.signal);
    else {
      const info = await stat(options.input);
      if (!info.isFile()) throw new BatchInputError(`${options.input} is not a file`);
      totalBytes = info.size;
    }
  } catch (error) {
    if (options.signal?.aborted) throw stopped(error);
    if (error instanceof BatchInputError) throw error;
    const reason = isS3Url(options.input) ? s3Reason(error) : (error as Error).message;
    throw new BatchInputError(`cannot read ${options.input}: ${reason}`, { cause: error });
  }
  const toS3 = isS3Url(options.output);
  if (toS3) {
    // Before any input is read, as for a local output that cannot be created.
    await checkS3Bucket(options.output, options.signal).catch((error: unknown) => {
      if (options.signal?.aborted) throw stopped(error);
      throw new BatchInputError(`cannot write ${options.output}: ${s3Reason(error)}`, { cause: error });
    });
  }
  const batchSize = options.batchSize ?? 512;
  const progress: BatchProgress = { bytesRead: 0, totalBytes, rows: 0, tagged: 0 };
  let bad = 0;

  // A local output is written beside its target and renamed into place; an S3 one is written to a
  // local temporary file and uploaded whole at the end.
  const target = toS3 ? options.output : resolve(options.output);
  const temp = toS3
    ? join(tmpdir(), `tagger-${randomBytes(6).toString('hex')}${extname(parseS3Url(target).key)}.tmp`)
    : join(dirname(target), `.${basename(target)}.tagger-${randomBytes(4).toString('hex')}.tmp`);
  const tagIndex = new Map(model.tags.map((tag, index) => [tag, index]));
  const worker = startWorker(
    {
      input: options.input,
      format: inputFormat,
      textColumn: options.textColumn,
      encoding: options.encoding,
      delimiter: options.delimiter,
      batchSize,
      maxRowBytes: options.maxRowBytes,
      keepColumns,
      shard,
    },
    {
      path: temp,
      format: outputFormat,
      tags: model.tags,
      tagThresholds: model.tagThresholds,
      escapeFormulas: options.escapeFormulas ?? outputFormat === 'csv',
      listed,
    },
  );
  let tagged = 0;
  // Each batch is asked of the Predictor as it arrives (an encoder's queue keeps them in order) and
  // answered in order; a failure stops the worker and is the error thrown.
  let answered = Promise.resolve();
  let predictFailure: unknown;
  try {
    options.signal?.throwIfAborted();
    for await (const message of messagesOf(worker, options.signal)) {
      if (message.kind === 'bad') {
        bad += 1;
        progress.rows += 1;
        options.onBadRow?.({ line: message.line, reason: message.reason });
      } else if (message.kind === 'rows') {
        const answer = (predictions: readonly Prediction[]): void => {
          // Answers that arrive after a stop signal are not tagged: the job is over, the worker gone.
          if (options.signal?.aborted) return;
          // The one thing this thread does per row: predict. The worker formats and writes the answer.
          const tags = tagBatch(model.tags, predictions, tagIndex);
          worker.postMessage(tags, [tags.predicted.buffer, tags.probabilities.buffer]);
          tagged += message.texts.length;
          progress.tagged = tagged;
          progress.rows += message.texts.length;
          progress.bytesRead = message.bytesRead;
          options.onProgress?.({ ...progress });
        };
        const predicted = predictor.predict(message.texts, { overload: 'shed' });
        predicted.catch(() => undefined);
        answered = answered.then(async () => answer((await predicted).predictions));
        answered.catch((error: unknown) => {
          predictFailure ??= error;
          void worker.terminate();
        });
      } else if (message.kind === 'failed') {
        throw new BatchInputError(message.message);
      } else if (message.kind === 'write-failed') {
        throw new BatchInputError(`cannot tag ${options.input} into ${options.output}: ${message.message}`);
      }
    }
    // Every batch answered before the output is put in place (a stop signal does not wait for them).
    await untilStopped(answered, options.signal);
    // A signal handled with the last batch still stops the job: nothing is renamed (or uploaded) into place.
    options.signal?.throwIfAborted();
    if (toS3) {
      try {
        await uploadToS3(temp, target, options.signal);
      } catch (error) {
        if (options.signal?.aborted) throw stopped(error);
        throw new BatchInputError(`cannot write ${target}: ${s3Reason(error)}`, { cause: error });
      }
      await rm(temp, { force: true });
    } else await rename(temp, target);
  } catch (caught) {
    await worker.terminate();
    await rm(temp, { force: true }).catch(() => undefined);
    // The worker was stopped because a batch could not be predicted (an encoder run's encoder failed):
    // that failure is the story.
    if (predictFailure !== undefined) {
      const what = predictor.encoder === null ? 'the model failed' : 'the sentence encoder failed';
      throw new BatchInputError(
        `cannot tag ${options.input}: ${what} (${(predictFailure as Error).message})`,
        { cause: predictFailure },
      );
    }
    const error = stopped(caught);
    if (error instanceof BatchInputError || error === options.signal?.reason) throw error;
    // File system failures (ENOENT, EACCES, … on the rename): about the files, not a bug.
    const code = (error as NodeJS.ErrnoException).code;
    if (typeof code === 'string') {
      throw new BatchInputError(
        `cannot tag ${options.input} into ${options.output}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
  await worker.terminate();
  options.onProgress?.({ ...progress, bytesRead: totalBytes });
  return {
    rows: progress.rows,
    tagged,
    bad,
    seconds: (performance.now() - started) / 1000,
    listed,
    tags: model.tags.length,
  };
}
