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
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parse } from 'csv-parse';
import type { TagModel } from '../model/index.js';

export type BatchFormat = 'csv' | 'jsonl';

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

type Row = Record<string, unknown>;

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF, quotes doubled. By hand on
 * purpose: csv-stringify took ~5 µs a row here, a sixth of the model's own time per text, for what is
 * this one rule on rows whose other fields are numbers and tag names.
 */
const csvField = (value: string): string =>
  /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
const csvLine = (fields: readonly (string | number)[]): string =>
  `${fields.map((field) => (typeof field === 'number' ? String(field) : csvField(field))).join(',')}\n`;

/** How to get the text of a row, decided from the first row's fields. */
function textOf(
  fields: readonly string[],
  textColumn: string | undefined,
  input: string,
): (row: Row) => unknown {
  if (textColumn !== undefined) {
    if (!fields.includes(textColumn)) {
      throw new BatchInputError(
        `${input} has no column '${textColumn}' (its columns: ${fields.join(', ') || 'none'}); pick one with --text-column`,
      );
    }
    return (row) => row[textColumn];
  }
  if (fields.includes('text')) return (row) => row.text;
  if (fields.includes('title') && fields.includes('description')) {
    return (row) =>
      typeof row.title === 'string' && typeof row.description === 'string'
        ? `${row.title} ${row.description}`.trim()
        : undefined;
  }
  throw new BatchInputError(
    `${input} has neither a 'text' column nor 'title' and 'description' (its columns: ${fields.join(', ') || 'none'}); name the text column with --text-column`,
  );
}

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

/** Rows of a CSV file with the line each ends on; malformed records are reported and skipped. */
async function* csvRows(path: string, counted: (bytes: number) => void, onBad: (bad: BadRow) => void) {
  const source = createReadStream(path);
  source.on('data', (chunk) => counted(chunk.length));
  // on_record hands over the line with the record (cheaper than `info: true`, which copies a whole object).
  const parser = source.pipe(
    parse({
      columns: true,
      bom: true,
      skip_records_with_error: true,
      skip_empty_lines: true,
      on_record: (record: Row, context: { lines: number }) => [record, context.lines],
    }),
  );
  // The parser reads ahead of the rows consumed: skipped records wait here so reports come in line order.
  const skipped: BadRow[] = [];
  parser.on('skip', (error: Error & { lines?: number }) => {
    skipped.push({ line: error.lines ?? 0, reason: `malformed CSV row (${error.message.split(':')[0]})` });
  });
  source.on('error', (error) => parser.destroy(error));
  for await (const [row, line] of parser as AsyncIterable<[Row, number]>) {
    while (skipped.length > 0 && skipped[0]!.line < line) onBad(skipped.shift()!);
    yield { row, line };
  }
  for (const bad of skipped) onBad(bad);
}

/** Rows of a JSON Lines file; a line that is not a JSON object is reported and skipped. */
async function* jsonlRows(path: string, counted: (bytes: number) => void, onBad: (bad: BadRow) => void) {
  const source = createReadStream(path);
  source.on('data', (chunk) => counted(chunk.length));
  const lines = createInterface({ input: source, crlfDelay: Number.POSITIVE_INFINITY });
  let line = 0;
  for await (const text of lines) {
    line += 1;
    if (text.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      onBad({ line, reason: `not valid JSON (${(error as Error).message})` });
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      onBad({ line, reason: 'not a JSON object' });
      continue;
    }
    yield { row: value as Row, line };
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
  const onBad = (row: BadRow): void => {
    bad += 1;
    progress.rows += 1;
    options.onBadRow?.(row);
  };
  const counted = (bytes: number): void => {
    progress.bytesRead += bytes;
  };

  const target = resolve(options.output);
  const temp = join(dirname(target), `.${basename(target)}.tagger-${randomBytes(4).toString('hex')}.tmp`);
  const stream = createWriteStream(temp, { flags: 'wx' });
  const failed = new Promise<never>((_, reject) => stream.once('error', reject));
  failed.catch(() => undefined);
  const writer = new RowWriter(stream, outputFormat, model.tags);
  let tagged = 0;
  try {
    await Promise.race([once(stream, 'open'), failed]);
    const rows =
      inputFormat === 'csv'
        ? csvRows(options.input, counted, onBad)
        : jsonlRows(options.input, counted, onBad);
    let text: ((row: Row) => unknown) | undefined;
    let batch: Pending[] = [];
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      await Promise.race([writer.write(batch, model), failed]);
      tagged += batch.length;
      batch = [];
      options.onProgress?.({ ...progress });
    };
    for await (const { row, line } of rows) {
      text ??= textOf(Object.keys(row), options.textColumn, options.input);
      const value = text(row);
      if (typeof value !== 'string' || value.trim() === '') {
        onBad({
          line,
          reason:
            value === undefined || value === null || value === '' ? 'no text' : 'the text is not a string',
        });
        continue;
      }
      progress.rows += 1;
      batch.push({ line, text: value });
      if (batch.length >= batchSize) await flush();
    }
    await flush();
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
