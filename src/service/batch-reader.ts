/**
 * The reading half of batch tagging, run in a worker thread: parsing a file costs about a third of what
 * the model costs per text (csv-parse ~7–10 µs a row against ~30 µs), so on its own thread it overlaps
 * with prediction instead of adding to it. It streams the file, finds each row's text, reports bad
 * rows with their line numbers (in line order) and posts texts in batches. The main thread grants
 * credits, so at most a few batches wait in memory whatever the file's size.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { parse } from 'csv-parse';

export type BatchFormat = 'csv' | 'jsonl';

export interface ReaderOptions {
  input: string;
  format: BatchFormat;
  textColumn?: string | undefined;
  batchSize: number;
}

export type ReaderMessage =
  | { kind: 'rows'; lines: number[]; texts: string[]; bytesRead: number }
  | { kind: 'bad'; line: number; reason: string }
  /** The input cannot be used at all (no text column, unreadable); nothing more follows. */
  | { kind: 'failed'; message: string }
  | { kind: 'done'; bytesRead: number };

/** Batches in flight before the reader waits for the main thread to take one. */
export const READER_CREDITS = 4;

type Row = Record<string, unknown>;

class InputProblem extends Error {}

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

/** Rows of a CSV file with the line each ends on; malformed records are reported and skipped. */
async function* csvRows(path: string, counted: (bytes: number) => void, emit: Emit) {
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
  const skipped: { line: number; reason: string }[] = [];
  parser.on('skip', (error: Error & { lines?: number }) => {
    skipped.push({ line: error.lines ?? 0, reason: `malformed CSV row (${error.message.split(':')[0]})` });
  });
  source.on('error', (error) => parser.destroy(error));
  for await (const [row, line] of parser as AsyncIterable<[Row, number]>) {
    while (skipped.length > 0 && skipped[0]!.line < line) await emit({ kind: 'bad', ...skipped.shift()! });
    yield { row, line };
  }
  for (const bad of skipped) await emit({ kind: 'bad', ...bad });
}

/** Rows of a JSON Lines file; a line that is not a JSON object is reported and skipped. */
async function* jsonlRows(path: string, counted: (bytes: number) => void, emit: Emit) {
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
      await emit({ kind: 'bad', line, reason: `not valid JSON (${(error as Error).message})` });
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      await emit({ kind: 'bad', line, reason: 'not a JSON object' });
      continue;
    }
    yield { row: value as Row, line };
  }
}

/** Reads the whole file, emitting batches of texts, bad rows and the end (or why it cannot be read). */
export async function readBatches(options: ReaderOptions, emit: Emit): Promise<void> {
  let bytesRead = 0;
  const counted = (bytes: number): void => {
    bytesRead += bytes;
  };
  try {
    const rows =
      options.format === 'csv'
        ? csvRows(options.input, counted, emit)
        : jsonlRows(options.input, counted, emit);
    let text: ((row: Row) => unknown) | undefined;
    let lines: number[] = [];
    let texts: string[] = [];
    for await (const { row, line } of rows) {
      text ??= textOf(Object.keys(row), options.textColumn, options.input);
      const value = text(row);
      if (typeof value !== 'string' || value.trim() === '') {
        const reason =
          value === undefined || value === null || value === '' ? 'no text' : 'the text is not a string';
        await emit({ kind: 'bad', line, reason });
        continue;
      }
      lines.push(line);
      texts.push(value);
      if (texts.length >= options.batchSize) {
        await emit({ kind: 'rows', lines, texts, bytesRead });
        lines = [];
        texts = [];
      }
    }
    if (texts.length > 0) await emit({ kind: 'rows', lines, texts, bytesRead });
    await emit({ kind: 'done', bytesRead });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Bad input (a missing column, an unreadable file, csv-parse's CSV_… errors), not a bug.
    if (error instanceof InputProblem || typeof code === 'string') {
      await emit({
        kind: 'failed',
        message:
          error instanceof InputProblem
            ? error.message
            : `cannot read ${options.input}: ${(error as Error).message}`,
      });
      return;
    }
    throw error;
  }
}

/** Marks the worker's data so this module only acts as a worker when started as one. */
export const READER_MARK = 'tagger-batch-reader';

if (!isMainThread && parentPort && (workerData as { mark?: string } | null)?.mark === READER_MARK) {
  const port = parentPort;
  let credits = READER_CREDITS;
  let waiting: (() => void) | undefined;
  port.on('message', () => {
    credits += 1;
    waiting?.();
    waiting = undefined;
  });
  const options = (workerData as { options: ReaderOptions }).options;
  void readBatches(options, async (message) => {
    if (message.kind === 'rows') {
      while (credits === 0) await new Promise<void>((resume) => (waiting = resume));
      credits -= 1;
    }
    port.postMessage(message);
  }).then(() => port.unref());
}
