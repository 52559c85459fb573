/**
 * Batch tagging of a file (`tagger predict --input data.csv --output tags.csv`): rows are streamed in,
 * tagged in batches and streamed out in the input's order, so memory stays flat whatever the file's
 * size. A bad row (no text, malformed CSV or JSON) is reported with its line number and skipped; the
 * run goes on. The output is written to a temp file beside the target and renamed into place at the end,
 * so an interrupted run never leaves a half-written file under the requested name.
 *
 * Formats by extension: `.csv` (a header row; read with csv-parse) and `.jsonl` / `.ndjson` (one
 * JSON object per line). The text is `--text-column`, else a `text` column, else `title + " " +
 * description` (what `tagger train` reads).
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { TagModel } from '../model/index.js';
import { type BatchFormat, READER_MARK, type ReaderMessage, type ReaderOptions } from './batch-reader.js';

export type { BatchFormat } from './batch-reader.js';

export interface BadRow {
  /** 1-based line of the input where the row ends. */
  line: number;
  reason: string;
}

export interface BatchProgress {
  bytesRead: number;
  totalBytes: number;
  rows: number;
}

export interface TagFileOptions {
  input: string;
  output: string;
  /** Column (CSV) or field (JSONL) holding the text. */
  textColumn?: string | undefined;
  /** Texts per model call. */
  batchSize?: number;
  onProgress?: (progress: BatchProgress) => void;
  onBadRow?: (bad: BadRow) => void;
}

export interface TagFileResult {
  /** Data rows read (header excluded), bad ones included. */
  rows: number;
  tagged: number;
  bad: number;
  seconds: number;
}

/** The input cannot be used at all (unknown format, no text column, unreadable file). */
export class BatchInputError extends Error {
  override readonly name = 'BatchInputError';
}

export function formatOf(path: string): BatchFormat | null {
  const extension = extname(path).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  return null;
}

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF, quotes doubled. By hand on
 * purpose: csv-stringify took ~5 µs a row here, a sixth of the model's own time per text, for what is
 * this one rule on rows whose other fields are numbers and tag names.
 */
const csvField = (value: string): string =>
  /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
const csvLine = (fields: readonly (string | number)[]): string =>
  `${fields.map((field) => (typeof field === 'number' ? String(field) : csvField(field))).join(',')}\n`;

interface Pending {
  line: number;
  text: string;
}

/** Writes tagged rows in the output's format, waiting for the file to drain (flat memory). */
class RowWriter {
  private headerWritten = false;
  constructor(
    private readonly stream: WriteStream,
    private readonly format: BatchFormat,
    private readonly tags: readonly string[],
  ) {}

  async write(batch: readonly Pending[], model: TagModel): Promise<void> {
    const predictions = model.predict(batch.map((row) => row.text));
    let chunk: string;
    if (this.format === 'csv') {
      chunk = this.headerWritten ? '' : csvLine(this.header());
      this.headerWritten = true;
      for (const [i, row] of batch.entries()) {
        const { predicted_tag: tag, probabilities } = predictions[i]!;
        chunk += csvLine([
          row.line,
          row.text,
          tag,
          probabilities[tag] ?? '',
          ...this.tags.map((t) => probabilities[t] ?? ''),
        ]);
      }
    } else {
      chunk = batch
        .map((row, i) => {
          const { predicted_tag: tag, probabilities } = predictions[i]!;
          return `${JSON.stringify({
            line: row.line,
            text: row.text,
            predicted_tag: tag,
            probability: probabilities[tag] ?? null,
            predicted_probabilities: probabilities,
          })}\n`;
        })
        .join('');
    }
    if (!this.stream.write(chunk)) await once(this.stream, 'drain');
  }

  private header(): (string | number)[] {
    return ['line', 'text', 'predicted_tag', 'probability', ...this.tags.map((t) => `p_${t}`)];
  }

  /** A CSV with no tagged row still gets its header. */
  async finish(): Promise<void> {
    if (this.format !== 'csv' || this.headerWritten) return;
    this.headerWritten = true;
    if (!this.stream.write(csvLine(this.header()))) await once(this.stream, 'drain');
  }
}

/**
 * The reader's messages, from a worker thread (parsing then overlaps with prediction). Started from
 * the sources (tests, tsx), the worker is the .ts file and needs tsx's loader too.
 */
async function* readInWorker(options: ReaderOptions): AsyncGenerator<ReaderMessage> {
  const fromSource = import.meta.url.endsWith('.ts');
  const worker = new Worker(new URL(`./batch-reader.${fromSource ? 'ts' : 'js'}`, import.meta.url), {
    workerData: { mark: READER_MARK, options },
    ...(fromSource ? { execArgv: ['--import', import.meta.resolve('tsx')] } : {}),
  });
  const queue: ReaderMessage[] = [];
  let failure: Error | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  worker.on('message', (message: ReaderMessage) => {
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
  try {
    for (;;) {
      const message = queue.shift();
      if (message !== undefined) {
        // A batch taken off the queue frees a credit for the reader.
        if (message.kind === 'rows') worker.postMessage('credit');
        yield message;
        if (message.kind === 'done' || message.kind === 'failed') return;
        continue;
      }
      if (failure) throw failure;
      if (ended) throw new Error('batch reader: the worker ended before the end of the file');
      await new Promise<void>((resume) => (wake = resume));
    }
  } finally {
    await worker.terminate();
  }
}

/**
 * Tags every row of `input` into `output`.
 * @example await tagFile(model, { input: 'projects.csv', output: 'tags.csv' })
 */
export async function tagFile(model: TagModel, options: TagFileOptions): Promise<TagFileResult> {
  const started = performance.now();
  const inputFormat = formatOf(options.input);
  const outputFormat = formatOf(options.output);
  if (inputFormat === null || outputFormat === null) {
    const which = inputFormat === null ? options.input : options.output;
    throw new BatchInputError(`${which}: use a .csv, .jsonl or .ndjson file`);
  }
  if (resolve(options.input) === resolve(options.output)) {
    throw new BatchInputError(`--output ${options.output} is the input file; write the tags to another file`);
  }
  let totalBytes: number;
  try {
    const info = await stat(options.input);
    if (!info.isFile()) throw new BatchInputError(`${options.input} is not a file`);
    totalBytes = info.size;
  } catch (error) {
    if (error instanceof BatchInputError) throw error;
    throw new BatchInputError(`cannot read ${options.input}: ${(error as Error).message}`, { cause: error });
  }
  const batchSize = options.batchSize ?? 512;
  const progress: BatchProgress = { bytesRead: 0, totalBytes, rows: 0 };
  let bad = 0;

  const target = resolve(options.output);
  const temp = join(dirname(target), `.${basename(target)}.tagger-${randomBytes(4).toString('hex')}.tmp`);
  const stream = createWriteStream(temp, { flags: 'wx' });
  const failed = new Promise<never>((_, reject) => stream.once('error', reject));
  failed.catch(() => undefined);
  const writer = new RowWriter(stream, outputFormat, model.tags);
  let tagged = 0;
  try {
    await Promise.race([once(stream, 'open'), failed]);
    for await (const message of readInWorker({
      input: options.input,
      format: inputFormat,
      textColumn: options.textColumn,
      batchSize,
    })) {
      if (message.kind === 'bad') {
        bad += 1;
        progress.rows += 1;
        options.onBadRow?.({ line: message.line, reason: message.reason });
      } else if (message.kind === 'rows') {
        await Promise.race([
          writer.write(
            message.texts.map((text, i) => ({ line: message.lines[i]!, text })),
            model,
          ),
          failed,
        ]);
        tagged += message.texts.length;
        progress.rows += message.texts.length;
        progress.bytesRead = message.bytesRead;
        options.onProgress?.({ ...progress });
      } else if (message.kind === 'failed') {
        throw new BatchInputError(message.message);
      }
    }
    await writer.finish();
    stream.end();
    await Promise.race([once(stream, 'finish'), failed]);
    await rename(temp, target);
  } catch (error) {
    stream.destroy();
    await rm(temp, { force: true }).catch(() => undefined);
    if (error instanceof BatchInputError) throw error;
    // File system (ENOENT, EACCES, …) and csv-parse (CSV_…) failures: about the files, not a bug.
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
  options.onProgress?.({ ...progress, bytesRead: totalBytes });
  return { rows: progress.rows, tagged, bad, seconds: (performance.now() - started) / 1000 };
}
