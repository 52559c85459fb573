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
}

/** The text a model sees for one project: title and description joined by a space. */
export function projectText(title: string, description: string): string {
  return `${title} ${description}`;
}

/** Parses CSV content; `source` names the input in error messages. */
export function parseDataset(content: string, source: string): DatasetRow[] {
  let records: string[][];
  try {
    records = parse(content, { bom: true, relax_column_count: false, skip_empty_lines: true });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DataError(`data: ${source} is not valid CSV: ${reason}`);
  }
  const [header, ...rows] = records;
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
  return rows.map((row, index) => {
    const record = index + 1;
    const tag = (row[tagAt] ?? '').trim();
    if (tag === '') throw new DataError(`data: ${source} record ${record} has an empty tag`);
    const title = row[titleAt] ?? '';
    const description = row[descriptionAt] ?? '';
    if (title.trim() === '' && description.trim() === '') {
      throw new DataError(`data: ${source} record ${record} has neither a title nor a description`);
    }
    return { record, tag, text: projectText(title, description) };
  });
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
