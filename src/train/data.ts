/**
 * Reading labelled datasets: a CSV with at least `title`, `description` and `tag` columns (the layout
 * of Made With ML's dataset.csv and of samples/projects.csv). Parsing uses csv-parse (RFC 4180,
 * quoted newlines); this module only validates what the parser gives back.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { LabelledText } from '../model/index.js';

export const REQUIRED_COLUMNS = ['title', 'description', 'tag'] as const;

/** Bad input data: the message says which file, which row or column, and what to do. */
export class DataError extends Error {
  override readonly name = 'DataError';
}

export interface DatasetRow extends LabelledText {
  /** 1-based line-independent record number (header excluded), for messages. */
  record: number;
  /** 1-based line of the file where the record starts (the header is line 1), for messages. */
  line: number;
}

/** At most this many line numbers in one message; the count says how many there are. */
const MAX_LINES_SHOWN = 10;

/** "lines 3, 9 and 12" or "lines 3, 9, …, 40 (25 rows)": enough to find them in an editor. */
export function lineList(lines: readonly number[]): string {
  if (lines.length === 1) return `line ${lines[0]}`;
  if (lines.length <= MAX_LINES_SHOWN) return `lines ${lines.slice(0, -1).join(', ')} and ${lines.at(-1)}`;
  return `lines ${lines.slice(0, MAX_LINES_SHOWN - 1).join(', ')}, …, ${lines.at(-1)} (${lines.length} rows)`;
}

const NEWLINE_RE = /\r\n|\n|\r/g;
/** Line breaks inside a record's quoted fields: the record started that many lines before it ended. */
const innerLineBreaks = (fields: readonly string[]): number =>
  fields.reduce((sum, field) => sum + (field.match(NEWLINE_RE)?.length ?? 0), 0);

/** The text a model sees for one project: title and description joined by a space. */
export function projectText(title: string, description: string): string {
  return `${title} ${description}`;
}

/** Parses CSV content; `source` names the input in error messages. */
export function parseDataset(content: string, source: string): DatasetRow[] {
  let parsed: [string[], number][];
  try {
    // The line a record ends on, for messages that point into the file. csv-parse's types assume
    // on_record returns a record, hence the casts; at run time it returns whatever on_record gives.
    const withLine = (record: string[], context: { lines: number }) => [record, context.lines];
    parsed = parse(content, {
      bom: true,
      relax_column_count: false,
      skip_empty_lines: true,
      on_record: withLine as unknown as (record: string[]) => string[],
    }) as unknown as [string[], number][];
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DataError(`data: ${source} is not valid CSV: ${reason}`);
  }
  const [header, ...rows] = parsed.map(([record]) => record);
  if (!header)
    throw new DataError(
      `data: ${source} is empty; expected a header with columns ${REQUIRED_COLUMNS.join(', ')}`,
    );
  const names = header.map((name) => name.trim().toLowerCase());
  const missing = REQUIRED_COLUMNS.filter((column) => !names.includes(column));
  if (missing.length > 0) {
    throw new DataError(
      `data: ${source} lacks column(s) ${missing.join(', ')}; found ${names.join(', ') || '(none)'}. ` +
        `A dataset needs the columns ${REQUIRED_COLUMNS.join(', ')}.`,
    );
  }
  if (rows.length === 0) throw new DataError(`data: ${source} has a header but no rows`);
  const titleAt = names.indexOf('title');
  const descriptionAt = names.indexOf('description');
  const tagAt = names.indexOf('tag');
  const out: DatasetRow[] = [];
  const noTag: number[] = [];
  const noText: number[] = [];
  rows.forEach((row, index) => {
    const line = parsed[index + 1]![1] - innerLineBreaks(row);
    const tag = (row[tagAt] ?? '').trim();
    const title = row[titleAt] ?? '';
    const description = row[descriptionAt] ?? '';
    if (tag === '') noTag.push(line);
    if (title.trim() === '' && description.trim() === '') noText.push(line);
    out.push({ record: index + 1, line, tag, text: projectText(title, description) });
  });
  // Every bad row at once: fixing a file one error per run is slow.
  const problems = [
    ...(noTag.length > 0 ? [`${noTag.length} row(s) have an empty tag (${lineList(noTag)})`] : []),
    ...(noText.length > 0
      ? [`${noText.length} row(s) have neither a title nor a description (${lineList(noText)})`]
      : []),
  ];
  if (problems.length > 0) {
    throw new DataError(`data: ${source}: ${problems.join('; ')}; fill them in or remove them`);
  }
  return out;
}

/** Reads and validates a dataset file. */
export async function readDataset(path: string): Promise<DatasetRow[]> {
  return (await readDatasetFile(path)).rows;
}

/** Reads a dataset file once: its rows, validated, and the bytes they came from (for its digest). */
export async function readDatasetFile(path: string): Promise<{ rows: DatasetRow[]; bytes: Uint8Array }> {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await readFile(path));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new DataError(`data: file not found: ${path}`);
    if (code === 'EISDIR') throw new DataError(`data: ${path} is a directory; pass a CSV file`);
    throw new DataError(`data: cannot read ${path}: ${(error as Error).message}`);
  }
  return { rows: parseDataset(Buffer.from(bytes).toString('utf8'), path), bytes };
}
