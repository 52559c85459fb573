/**
 * The file half of batch tagging, run in a worker thread: it reads and parses the input, posts texts in
 * batches to the main thread (which only predicts), and writes each batch's tags and probabilities to the
 * output when they come back. Parsing (csv-parse ~7–10 µs a row) and formatting + writing (~5 µs) are
 * thus off the thread that runs the model (~30 µs a text), where they overlap with prediction instead of
 * adding to it. It reports bad rows with their line numbers (in line order). At most READER_CREDITS
 * batches are out at a time (posted, not yet written), so memory stays flat whatever the file's size.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { parse } from 'csv-parse';
import {
  type CsvDialect,
  csvReason,
  mostProbable,
  neutraliseFormula,
  sniffDelimiter,
  TextEncodingError,
  TextStreamDecoder,
  tagsOverThresholds,
} from '../model/index.js';
import { DEFAULT_MAX_ROW_BYTES, RowLimiter } from './batch-row-limit.js';
import { isS3Url, s3ReadStream } from './object-store.js';

export type BatchFormat = 'csv' | 'jsonl';

export interface ReaderOptions {
  input: string;
  format: BatchFormat;
  textColumn?: string | undefined;
  batchSize: number;
  /**
   * Rows longer than this (bytes in the file, line break excluded) are reported and skipped, never read
   * into memory (default DEFAULT_MAX_ROW_BYTES, 1 MiB).
   */
  maxRowBytes?: number | undefined;
  /**
   * Input columns (CSV) or fields (JSON Lines) copied into each output row, after `line`. Undefined:
   * `id` when the input has one (checked on its first row), else none.
   */
  keepColumns?: readonly string[] | undefined;
  /**
   * Tag only shard `index` of `count` (0 ≤ index < count): the rows whose position in the file (0-based,
   * in line order, bad rows counted) is `index` modulo `count`. The other rows are read and skipped.
   */
  shard?: Shard | undefined;
  /** The input's encoding (a label of the Encoding Standard); default its byte-order mark, else UTF-8. */
  encoding?: string | undefined;
  /** CSV: the field delimiter; default sniffed from the first lines (`,`, `;` or tab). */
  delimiter?: string | undefined;
}

/** One of `count` deterministic shares of a file's rows (see ReaderOptions.shard). */
export interface Shard {
  index: number;
  count: number;
}

export interface WriterOptions {
  /** The file to create (`wx`: it must not exist; the main thread renames it into place). */
  path: string;
  format: BatchFormat;
  /** The model's tags, in the order of the probabilities sent back. */
  tags: readonly string[];
  /**
   * A multi-label model's per-tag thresholds (in `tags` order): the output then lists every tag that
   * reaches its threshold (`predicted_tags`, most probable first). Null for a single-label model.
   */
  tagThresholds: readonly number[] | null;
  /** Neutralise cells a spreadsheet would run as formulas (see `neutraliseFormula`). */
  escapeFormulas: boolean;
  /**
   * Whose probabilities a row lists: every tag's (`p_<tag>` columns), or the n most probable (CSV: `tag_1,
   * p_1, … tag_n, p_n`; JSON Lines: those in `predicted_probabilities`, with `probabilities_listed`).
   */
  listed: 'all' | number;
}

export type ReaderMessage =
  /** The input columns each row keeps (`ReaderOptions.keepColumns`), before the first rows. */
  | { kind: 'columns'; keep: string[] }
  /** `kept`: per row, the values of the kept columns (for the output only; never sent to the model). */
  | { kind: 'rows'; lines: number[]; texts: string[]; kept: unknown[][]; bytesRead: number }
  | { kind: 'bad'; line: number; reason: string }
  /** The input cannot be used at all (no text column, unreadable); nothing more follows. */
  | { kind: 'failed'; message: string }
  | { kind: 'done'; bytesRead: number };

/** What the worker posts: the reader's messages, the end of the output, or why it cannot be written. */
export type WorkerMessage =
  | Exclude<ReaderMessage, { kind: 'done' | 'columns' | 'rows' }>
  /** A batch to tag: the texts only. */
  | { kind: 'rows'; lines: number[]; texts: string[]; bytesRead: number }
  /** Every row read and written, the output file closed. */
  | { kind: 'done'; bytesRead: number }
  | { kind: 'write-failed'; message: string; code: string | undefined };

/**
 * A batch's answer from the main thread, in the order batches were posted: per text the index of the
 * predicted tag in `tags`, and `tags.length` probabilities (row-major). Typed arrays are transferred,
 * not copied.
 */
export interface TaggedBatch {
  predicted: Int32Array<ArrayBuffer>;
  probabilities: Float64Array<ArrayBuffer>;
}

/** Batches out at once (posted and not yet written back) before the reader waits. */
export const READER_CREDITS = 4;
/** A batch ends at this many characters of text even before `batchSize` rows: long texts stay bounded. */
export const MAX_BATCH_CHARS = 1_000_000;

type Row = Record<string, unknown>;

class InputProblem extends Error {}

/** Names of the output's own columns (CSV) and fields (JSON Lines); `p_<tag>` too. */
export const OUTPUT_COLUMNS: readonly string[] = [
  'line',
  'text',
  'predicted_tag',
  'probability',
  'predicted_tags',
  'predicted_probabilities',
];

/** The columns each row keeps, decided from the first row's fields. */
function keptColumns(
  fields: readonly string[],
  keep: readonly string[] | undefined,
  input: string,
): string[] {
  if (keep === undefined) return fields.includes('id') ? ['id'] : [];
  const missing = keep.filter((name) => !fields.includes(name));
  if (missing.length > 0) {
    throw new InputProblem(
      `${input} has no column ${missing.map((name) => `'${name}'`).join(', ')} to keep (its columns: ${fields.join(', ') || 'none'}); check --keep-columns`,
    );
  }
  return [...keep];
}

/** How to get the text of a row, decided from the first row's fields. */
function textOf(
  fields: readonly string[],
  textColumn: string | undefined,
  input: string,
): (row: Row) => unknown {
  if (textColumn !== undefined) {
    if (!fields.includes(textColumn)) {
      throw new InputProblem(
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
  throw new InputProblem(
    `${input} has neither a 'text' column nor 'title' and 'description' (its columns: ${fields.join(', ') || 'none'}); name the text column with --text-column`,
  );
}

type Emit = (message: ReaderMessage) => void | Promise<void>;

/** Bad rows found ahead of the rows read, reported in line order as the rows catch up with them. */
class BadRowQueue {
  private readonly rows: { line: number; reason: string }[] = [];

  add(line: number, reason: string): void {
    let at = this.rows.length;
    while (at > 0 && this.rows[at - 1]!.line > line) at -= 1;
    this.rows.splice(at, 0, { line, reason });
  }

  /** Emits the bad rows before line `before` (all of them without it). */
  async flush(emit: Emit, before = Number.POSITIVE_INFINITY): Promise<void> {
    while (this.rows.length > 0 && this.rows[0]!.line < before) {
      await emit({ kind: 'bad', ...this.rows.shift()! });
    }
  }
}

const bytes = (n: number): string => n.toLocaleString('en-US');

/** The input decoded to UTF-8 bytes (UTF-8 checked and passed through; see TextStreamDecoder). */
class DecodingStream extends Transform {
  private readonly decoder: TextStreamDecoder;
  constructor(source: string, encoding: string | undefined) {
    super();
    this.decoder = new TextStreamDecoder(source, encoding);
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      const out = this.decoder.push(chunk);
      if (out.length > 0) this.push(out);
      done();
    } catch (error) {
      done(error as Error);
    }
  }
  override _flush(done: TransformCallback): void {
    try {
      const out = this.decoder.end();
      if (out.length > 0) this.push(out);
      done();
    } catch (error) {
      done(error as Error);
    }
  }
}

/** How much of a CSV input is looked at for its delimiter. */
const SNIFF_BYTES = 64 * 1024;

/**
 * The decoded text of `path` (a local file, or an object streamed from an S3 API) with its CSV dialect:
 * the delimiter given, or sniffed from the first SNIFF_BYTES.
 */
async function decodedInput(
  options: ReaderOptions,
  counted: (bytes: number) => void,
): Promise<{ stream: Readable; dialect: CsvDialect }> {
  const path = options.input;
  const source = isS3Url(path) ? s3ReadStream(path) : createReadStream(path);
  source.on('data', (chunk: Buffer) => counted(chunk.length));
  const decoded = new DecodingStream(path, options.encoding);
  source.on('error', (error: Error) => decoded.destroy(error));
  source.pipe(decoded);
  if (options.format !== 'csv' || options.delimiter !== undefined) {
    return { stream: decoded, dialect: { delimiter: options.delimiter ?? ',', sniffed: false } };
  }
  const chunks = decoded[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let size = 0;
  let ended = false;
  while (size < SNIFF_BYTES) {
    const next = await chunks.next();
    if (next.done) {
      ended = true;
      break;
    }
    head.push(next.value);
    size += next.value.length;
  }
  const delimiter = sniffDelimiter(Buffer.concat(head).toString('utf8'));
  async function* all(): AsyncGenerator<Buffer> {
    yield* head;
    if (ended) return;
    for (;;) {
      const next = await chunks.next();
      if (next.done) return;
      yield next.value;
    }
  }
  return { stream: Readable.from(all(), { objectMode: false }), dialect: { delimiter, sniffed: true } };
}

/**
 * The decoded byte stream of the input with rows over `maxRowBytes` reported to `queue` and left out:
 * they never reach the parser, so a huge row costs no memory. A CSV header over the limit makes the file
 * unusable.
 */
async function limitedRows(
  options: ReaderOptions,
  counted: (bytes: number) => void,
  queue: BadRowQueue,
): Promise<{ rows: Readable; dialect: CsvDialect }> {
  const { input: path, format } = options;
  const maxRowBytes = options.maxRowBytes ?? DEFAULT_MAX_ROW_BYTES;
  const { stream, dialect } = await decodedInput(options, counted);
  const limiter = new RowLimiter({
    maxBytes: maxRowBytes,
    format,
    fieldDelimiter: dialect.delimiter,
    onTooLong: (row) => {
      const size = `${bytes(row.bytes)} bytes, over the limit of ${bytes(maxRowBytes)} bytes a row (--max-row-bytes)`;
      if (row.header) throw new InputProblem(`${path}: the header row (line ${row.line}) is ${size}`);
      queue.add(row.line, `the row is ${size}`);
    },
  });
  stream.on('error', (error: Error) => limiter.destroy(error));
  return { rows: stream.pipe(limiter), dialect };
}

/** Rows of a CSV file with the line each ends on; malformed and over-long records are reported and skipped. */
async function* csvRows(options: ReaderOptions, counted: (bytes: number) => void, emit: Emit) {
  // The parser reads ahead of the rows consumed: skipped records wait here so reports come in line order.
  const skipped = new BadRowQueue();
  const { rows, dialect } = await limitedRows(options, counted, skipped);
  // Where the last record (or skipped row) ended and the empty lines skipped by then: a malformed row
  // starts after it. csv-parse names the line where it noticed, which for an unterminated quote is lines
  // later, and after such a row it may go on inside it and fail again on its last line.
  let lastEnd = { lines: 0, empty: 0 };
  let reportedTo = 0;
  // on_record hands over the line with the record (cheaper than `info: true`, which copies a whole object).
  const parser = rows.pipe(
    parse({
      columns: true,
      bom: true,
      delimiter: dialect.delimiter,
      skip_records_with_error: true,
      skip_empty_lines: true,
      on_record: (record: Row, context: { lines: number; empty_lines: number }) => {
        lastEnd = { lines: context.lines, empty: context.empty_lines };
        return [record, context.lines];
      },
    }),
  );
  parser.on('skip', (error: Error & { code?: string; lines?: number; empty_lines?: number }) => {
    const empty = error.empty_lines ?? lastEnd.empty;
    const noticed = error.lines ?? lastEnd.lines + 1;
    // The rest of a row already reported (csv-parse went on inside it): not another bad row.
    if (noticed <= reportedTo) return;
    const start = lastEnd.lines + 1 + Math.max(0, empty - lastEnd.empty);
    const end = Math.max(start, noticed);
    lastEnd = { lines: end, empty };
    reportedTo = end;
    const to = end > start ? `, lines ${start}–${end}` : '';
    skipped.add(
      start,
      `malformed CSV row${to} (${csvReason({ message: error.message, ...(error.code ? { code: error.code } : {}) }, start, dialect)})`,
    );
  });
  rows.on('error', (error) => parser.destroy(error));
  for await (const [row, line] of parser as AsyncIterable<[Row, number]>) {
    await skipped.flush(emit, line);
    yield { row, line };
  }
  await skipped.flush(emit);
}

/** Rows of a JSON Lines file; a line that is not a JSON object, or is over-long, is reported and skipped. */
async function* jsonlRows(options: ReaderOptions, counted: (bytes: number) => void, emit: Emit) {
  const tooLong = new BadRowQueue();
  const lines = createInterface({
    input: (await limitedRows(options, counted, tooLong)).rows,
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let line = 0;
  for await (const text of lines) {
    line += 1;
    await tooLong.flush(emit, line + 1);
    if (text.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      await emit({ kind: 'bad', line, reason: `not valid JSON (${(error as Error).message})` });
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      await emit({ kind: 'bad', line, reason: 'not a JSON object' });
      continue;
    }
    yield { row: value as Row, line };
  }
  await tooLong.flush(emit);
}

/**
 * Reads the whole file, emitting batches of texts, bad rows and the end (or why it cannot be read); with
 * a shard, only that shard's rows (good and bad) are emitted.
 */
export async function readBatches(options: ReaderOptions, emit: Emit): Promise<void> {
  let bytesRead = 0;
  const counted = (bytes: number): void => {
    bytesRead += bytes;
  };
  // Every row, good or bad, takes the next position, in line order: the same in every shard's process.
  let position = 0;
  const { shard } = options;
  const mine = (): boolean => {
    const at = position++;
    return shard === undefined || at % shard.count === shard.index;
  };
  // Bad rows found while parsing are rows too: reported by the shard they fall to.
  const emitRow: Emit = (message) => (message.kind !== 'bad' || mine() ? emit(message) : undefined);
  try {
    const rows =
      options.format === 'csv' ? csvRows(options, counted, emitRow) : jsonlRows(options, counted, emitRow);
    let text: ((row: Row) => unknown) | undefined;
    let keep: string[] = [];
    let lines: number[] = [];
    let texts: string[] = [];
    let kept: unknown[][] = [];
    let chars = 0;
    for await (const { row, line } of rows) {
      if (text === undefined) {
        const fields = Object.keys(row);
        text = textOf(fields, options.textColumn, options.input);
        keep = keptColumns(fields, options.keepColumns, options.input);
        await emit({ kind: 'columns', keep });
      }
      if (!mine()) continue;
      const value = text(row);
      if (typeof value !== 'string' || value.trim() === '') {
        const reason =
          value === undefined || value === null || value === '' ? 'no text' : 'the text is not a string';
        await emit({ kind: 'bad', line, reason });
        continue;
      }
      lines.push(line);
      texts.push(value);
      kept.push(keep.map((name) => row[name]));
      chars += value.length;
      if (texts.length >= options.batchSize || chars >= MAX_BATCH_CHARS) {
        await emit({ kind: 'rows', lines, texts, kept, bytesRead });
        lines = [];
        texts = [];
        kept = [];
        chars = 0;
      }
    }
    if (text === undefined) await emit({ kind: 'columns', keep: [...(options.keepColumns ?? [])] });
    if (texts.length > 0) await emit({ kind: 'rows', lines, texts, kept, bytesRead });
    await emit({ kind: 'done', bytesRead });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Bad input (a missing column, an unreadable file, bytes not in its encoding, csv-parse's CSV_…
    // errors), not a bug.
    if (error instanceof InputProblem || error instanceof TextEncodingError || typeof code === 'string') {
      await emit({
        kind: 'failed',
        message:
          error instanceof InputProblem || error instanceof TextEncodingError
            ? error.message
            : `cannot read ${options.input}: ${(error as Error).message}`,
      });
      return;
    }
    throw error;
  }
}

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF, quotes doubled. By hand on
 * purpose: csv-stringify took ~5 µs a row here, a sixth of the model's own time per text, for what is
 * this one rule on rows whose other fields are numbers and tag names.
 */
const csvField = (value: string): string =>
  /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;

/**
 * A CSV field a spreadsheet cannot run: neutralised (`neutraliseFormula`, src/model/spreadsheet-cells.ts), and also quoted when it holds a `;` or a
 * tab, the separators spreadsheets use in some locales, so no cell can start inside it (OWASP).
 */
const safeCsvField = (value: string): string => {
  const safe = neutraliseFormula(value);
  return /[",;\t\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
};

/** The output's text for one batch (with the CSV header before the first). */
export class RowFormatter {
  private headerWritten = false;
  /** The input columns each row keeps, written after `line`. */
  private keep: readonly string[] = [];
  private readonly tagFields: string[];
  /** A text cell of the output (texts, tags, kept columns); numbers are written as they are. */
  private readonly field: (value: string) => string;
  /** The tags as the output names them (neutralised when formulas are escaped). */
  private readonly tagNames: readonly string[];
  constructor(
    private readonly format: BatchFormat,
    private readonly tags: readonly string[],
    private readonly tagThresholds: readonly number[] | null = null,
    escapeFormulas = false,
    private readonly listed: 'all' | number = 'all',
  ) {
    const text = escapeFormulas ? neutraliseFormula : (value: string) => value;
    this.field = format === 'csv' ? (escapeFormulas ? safeCsvField : csvField) : text;
    this.tagNames = tags.map(text);
    this.tagFields = tags.map(this.field);
  }

  /** A multi-label row's tags over their thresholds, most probable first (as TagModel.predict lists them). */
  private passed(probabilities: Float64Array, base: number): string[] {
    return tagsOverThresholds(this.tags, this.tagThresholds!, probabilities, base);
  }

  /** Sets the input columns each row keeps (before the first batch). */
  keepColumns(names: readonly string[]): void {
    this.keep = names;
  }

  /** A kept value as a CSV cell: text as it is, other JSON values as JSON, nothing as an empty cell. */
  private keptCell(value: unknown): string {
    if (value === undefined || value === null) return '';
    return this.field(typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** A kept value in JSON Lines: as it was, a missing one null; text neutralised like the other fields. */
  private keptValue(value: unknown): unknown {
    if (value === undefined) return null;
    return typeof value === 'string' ? this.field(value) : value;
  }

  /** The CSV header when nothing was written yet (so an empty result still has one), else ''. */
  header(): string {
    if (this.format !== 'csv' || this.headerWritten) return '';
    this.headerWritten = true;
    const multi = this.tagThresholds === null ? '' : 'predicted_tags,';
    const kept = this.keep.map((name) => `${this.field(name)},`).join('');
    const probabilities =
      this.listed === 'all'
        ? this.tags.map((tag) => this.field(`p_${tag}`))
        : Array.from({ length: this.listed }, (_, i) => `tag_${i + 1},p_${i + 1}`);
    return `line,${kept}text,predicted_tag,probability,${multi}${probabilities.join(',')}\n`;
  }

  batch(
    lines: readonly number[],
    texts: readonly string[],
    tagged: TaggedBatch,
    kept: readonly (readonly unknown[])[] = [],
  ): string {
    const width = this.tags.length;
    const { predicted, probabilities } = tagged;
    let chunk = this.header();
    for (let i = 0; i < texts.length; i++) {
      const top = predicted[i]!;
      const base = i * width;
      if (this.format === 'csv') {
        chunk += `${lines[i]},`;
        for (const value of kept[i] ?? []) chunk += `${this.keptCell(value)},`;
        chunk += `${this.field(texts[i]!)},${this.tagFields[top]},${probabilities[base + top]}`;
        // Joined by `|`, as a training file's tags column takes them.
        if (this.tagThresholds !== null)
          chunk += `,${this.field(this.passed(probabilities, base).join('|'))}`;
        if (this.listed === 'all') for (let t = 0; t < width; t++) chunk += `,${probabilities[base + t]}`;
        else {
          for (const t of mostProbable(probabilities, this.listed, base, width))
            chunk += `,${this.tagFields[t]},${probabilities[base + t]}`;
        }
        chunk += '\n';
      } else {
        const all: Record<string, number> = {};
        if (this.listed === 'all')
          for (let t = 0; t < width; t++) all[this.tagNames[t]!] = probabilities[base + t]!;
        else {
          for (const t of mostProbable(probabilities, this.listed, base, width))
            all[this.tagNames[t]!] = probabilities[base + t]!;
        }
        const keptFields: Record<string, unknown> = {};
        this.keep.forEach((name, k) => {
          keptFields[name] = this.keptValue(kept[i]?.[k]);
        });
        chunk += `${JSON.stringify({
          line: lines[i],
          ...keptFields,
          text: this.field(texts[i]!),
          predicted_tag: this.tagNames[top],
          probability: probabilities[base + top],
          ...(this.tagThresholds === null
            ? {}
            : { predicted_tags: this.passed(probabilities, base).map(this.field) }),
          predicted_probabilities: all,
          ...(this.listed === 'all' ? {} : { probabilities_listed: { listed: this.listed, of: width } }),
        })}\n`;
      }
    }
    return chunk;
  }
}

/** Marks the worker's data so this module only acts as a worker when started as one. */
export const BATCH_WORKER_MARK = 'tagger-batch-io';

/** The output could not be written; reading stops. */
class WriteFailed extends Error {}

/**
 * The worker: reads batches out (within its credits) and writes each one when its tags come back, in
 * order; ends the output when the input is read and every batch is written.
 */
async function runWorker(port: NonNullable<typeof parentPort>, reader: ReaderOptions, writer: WriterOptions) {
  const output = createWriteStream(writer.path, { flags: 'wx' });
  let writeError: (Error & { code?: string }) | undefined;
  const formatter = new RowFormatter(
    writer.format,
    writer.tags,
    writer.tagThresholds,
    writer.escapeFormulas,
    writer.listed,
  );
  /** Batches posted and not answered yet, oldest first. */
  const out: { lines: number[]; texts: string[]; kept: unknown[][] }[] = [];
  // The reading loop and the writing chain may both wait; any change wakes both to check again.
  const waiting: (() => void)[] = [];
  const wake = (): void => {
    for (const resume of waiting.splice(0)) resume();
  };
  const until = async (done: () => boolean): Promise<void> => {
    while (!done() && writeError === undefined) await new Promise<void>((resume) => waiting.push(resume));
    if (writeError !== undefined) throw new WriteFailed();
  };
  output.on('error', (error) => {
    writeError ??= error;
    wake();
  });
  /** Answered batches whose text the file has not taken yet: they still hold their credit. */
  let unwritten = 0;
  let writing = Promise.resolve();
  port.on('message', (tagged: TaggedBatch) => {
    const batch = out.shift()!;
    unwritten += 1;
    const chunk = formatter.batch(batch.lines, batch.texts, tagged, batch.kept);
    // Written in arrival order (the order batches were posted).
    writing = writing.then(async () => {
      if (!output.write(chunk) && writeError === undefined) await until(() => !output.writableNeedDrain);
      unwritten -= 1;
      wake();
    });
    writing.catch(() => undefined);
  });
  output.on('open', wake);
  output.on('drain', wake);
  output.on('finish', wake);
  try {
    // An output that cannot be created fails before any input is read.
    await until(() => output.pending === false);
    let end: ReaderMessage | undefined;
    await readBatches(reader, async (message) => {
      if (message.kind === 'done' || message.kind === 'failed') {
        end = message;
        return;
      }
      if (message.kind === 'columns') {
        formatter.keepColumns(message.keep);
        return;
      }
      if (message.kind === 'rows') {
        await until(() => out.length + unwritten < READER_CREDITS);
        const { kept, ...batch } = message;
        out.push({ lines: batch.lines, texts: batch.texts, kept });
        // The main thread gets the texts only.
        port.postMessage(batch satisfies WorkerMessage);
        return;
      }
      port.postMessage(message satisfies WorkerMessage);
    });
    if (end?.kind === 'failed') {
      output.destroy();
      port.postMessage(end satisfies WorkerMessage);
      return;
    }
    await until(() => out.length === 0 && unwritten === 0);
    output.end(formatter.header());
    await until(() => output.writableFinished);
    port.postMessage({
      kind: 'done',
      bytesRead: end?.kind === 'done' ? end.bytesRead : 0,
    } satisfies WorkerMessage);
  } catch (error) {
    if (!(error instanceof WriteFailed)) throw error;
    output.destroy();
    port.postMessage({
      kind: 'write-failed',
      message: writeError?.message ?? 'the output could not be written',
      code: writeError?.code,
    } satisfies WorkerMessage);
  }
}

if (!isMainThread && parentPort && (workerData as { mark?: string } | null)?.mark === BATCH_WORKER_MARK) {
  const port = parentPort;
  const { reader, writer } = workerData as { reader: ReaderOptions; writer: WriterOptions };
  void runWorker(port, reader, writer).then(() => port.unref());
}
