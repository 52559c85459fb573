/**
 * Reading labelled datasets: a CSV with at least `title`, `description` and `tag` columns (the layout
 * of Made With ML's dataset.csv and of samples/projects.csv), or, for several tags per text, a `tags`
 * column whose tags are separated by `|`, `,` or `;` (samples/projects-multilabel.csv); or a `.json` file
 * holding an array of such records, where `tags` may be a list (the layout of Made With ML's multi-label
 * projects.json). Parsing uses csv-parse (RFC 4180, quoted newlines) and JSON.parse; this module only
 * validates what the parsers give back.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse } from 'csv-parse/sync';
import {
  type CsvDialect,
  csvProblem,
  decodeText,
  delimiterName,
  type LabelledText,
  restoreFormula,
  sniffDelimiter,
  TextEncodingError,
  tagSetKey,
} from '../model/index.js';

export const REQUIRED_COLUMNS = ['title', 'description', 'tag'] as const;
/** The columns of a multi-label dataset: `tags` instead of `tag`. */
export const MULTI_LABEL_COLUMNS = ['title', 'description', 'tags'] as const;
/** What separates the tags of one row in a `tags` column. */
export const TAG_SEPARATORS = /[|,;]/;

/** The tags of a `tags` cell: split at TAG_SEPARATORS, trimmed, empty ones dropped, each once. */
export const splitTags = (cell: string): string[] => [
  ...new Set(
    cell
      .split(TAG_SEPARATORS)
      .map((tag) => tag.trim())
      .filter((tag) => tag !== ''),
  ),
];

/** True when the rows give several tags per text (they were read from a `tags` column or list). */
export const isMultiLabel = (rows: readonly LabelledText[]): boolean =>
  rows.some((row) => row.tags !== undefined);

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

/**
 * Which columns (CSV) or keys (JSON) hold the text and the tag(s), when they are not the defaults —
 * `title` + `description`, and `tag` or `tags` (`tagger train --text-column/--tag-column/--tags-column`).
 */
export interface DatasetColumns {
  /**
   * The column holding the whole text, instead of title + description, or several separated by commas
   * (`subject,body`): their cells joined by a space, as title and description are.
   */
  text?: string | undefined;
  /** The column of the tag, one per row. */
  tag?: string | undefined;
  /** The column of several tags per row (separated by `|`, `,` or `;`, or a JSON list). */
  tags?: string | undefined;
  /**
   * How the file is read (`--encoding`): a label of the Encoding Standard; default its byte-order mark,
   * else UTF-8, refusing anything else with what it looks like (src/model/data-files/encoding.ts).
   */
  encoding?: string | undefined;
  /** CSV only (`--delimiter`): the field delimiter; default sniffed from the first lines (`,`, `;`, tab). */
  delimiter?: string | undefined;
}

/** The text columns named: the defaults, or the comma-separated list given (blank names refused). */
export function textColumnsOf(given: DatasetColumns): string[] {
  if (given.text === undefined) return ['title', 'description'];
  const names = given.text.split(',').map((name) => name.trim());
  if (names.some((name) => name === '')) {
    throw new DataError(
      `data: the text column(s) '${given.text}' name a blank column; give one name, or several separated by commas`,
    );
  }
  return names;
}

/** Refuses a tag column and a tags column together: a file is single- or multi-label. */
function checkColumns(given: DatasetColumns): void {
  if (given.tag !== undefined && given.tags !== undefined) {
    throw new DataError(
      `data: give the tag column or the tags column, not both (${given.tag}, ${given.tags})`,
    );
  }
}

/** The text and label columns a file is read with: the defaults, or those given (matched lower-case). */
function chosenColumns(
  names: readonly string[],
  given: DatasetColumns,
  source: string,
): { text: string[]; label: string; multiLabel: boolean } {
  const text = textColumnsOf(given).map((name) => name.toLowerCase());
  checkColumns(given);
  if (given.tag !== undefined) return { text, label: given.tag.trim().toLowerCase(), multiLabel: false };
  if (given.tags !== undefined) return { text, label: given.tags.trim().toLowerCase(), multiLabel: true };
  const label = labelColumn(names, source);
  return { text, label, multiLabel: label === 'tags' };
}

/** The columns a run's dataset input records as its schema (what Tagger read of the file). */
export function columnsRead(rows: readonly DatasetRow[], given: DatasetColumns = {}): string[] {
  const text = textColumnsOf(given);
  const label = given.tag ?? given.tags ?? (isMultiLabel(rows) ? 'tags' : 'tag');
  return [...text, label];
}

/** The text a model sees for one project: title and description joined by a space. */
export function projectText(title: string, description: string): string {
  return `${title} ${description}`;
}

/** Parses CSV content; `source` names the input in error messages. */
export function parseDataset(content: string, source: string, given: DatasetColumns = {}): DatasetRow[] {
  const dialect: CsvDialect =
    given.delimiter === undefined
      ? { delimiter: sniffDelimiter(content.slice(0, 65_536)), sniffed: true }
      : { delimiter: given.delimiter, sniffed: false };
  let parsed: [string[], number][];
  // Where the last good record ended (and the empty lines skipped by then): a bad record starts after it.
  let lastEnd = { lines: 0, empty: 0 };
  try {
    // The line a record ends on, for messages that point into the file. csv-parse's types assume
    // on_record returns a record, hence the casts; at run time it returns whatever on_record gives.
    const withLine = (record: string[], context: { lines: number; empty_lines: number }) => {
      lastEnd = { lines: context.lines, empty: context.empty_lines };
      return [record, context.lines];
    };
    parsed = parse(content, {
      bom: true,
      delimiter: dialect.delimiter,
      relax_column_count: false,
      skip_empty_lines: true,
      on_record: withLine as unknown as (record: string[]) => string[],
    }) as unknown as [string[], number][];
  } catch (error) {
    const found = error as Error & { code?: string; lines?: number; empty_lines?: number };
    const start = lastEnd.lines + 1 + Math.max(0, (found.empty_lines ?? lastEnd.empty) - lastEnd.empty);
    const end = Math.max(start, found.lines ?? start);
    throw new DataError(
      `data: ${source} is not valid CSV: ${csvProblem({ message: found.message ?? String(error), ...(found.code ? { code: found.code } : {}) }, start, end, dialect)}`,
    );
  }
  const [header, ...rows] = parsed.map(([record]) => record);
  if (!header)
    throw new DataError(
      `data: ${source} is empty; expected a header with columns ${REQUIRED_COLUMNS.join(', ')}`,
    );
  const names = header.map((name) => name.trim().toLowerCase());
  const columns = chosenColumns(names, given, source);
  const { multiLabel } = columns;
  const missing = [...columns.text, columns.label].filter((column) => !names.includes(column));
  if (missing.length > 0) {
    const custom = given.text !== undefined || given.tag !== undefined || given.tags !== undefined;
    // One column only: most likely another delimiter than the one the file was read with.
    const oneColumn =
      names.length === 1
        ? ` The header is one column read with delimiter ${delimiterName(dialect.delimiter)}${dialect.sniffed ? ' (sniffed)' : ''}: if the file uses another, name it with --delimiter.`
        : '';
    throw new DataError(
      `data: ${source} lacks column(s) ${missing.join(', ')}; found ${names.join(', ') || '(none)'}.${oneColumn} ` +
        (custom
          ? 'Name the columns that hold the text and the tag with --text-column and --tag-column (or --tags-column for several tags per text).'
          : `A dataset needs the columns ${REQUIRED_COLUMNS.join(', ')} (or ${MULTI_LABEL_COLUMNS.join(', ')} for several tags per text), or name yours with --text-column and --tag-column.`),
    );
  }
  if (rows.length === 0) throw new DataError(`data: ${source} has a header but no rows`);
  const textAt = columns.text.map((name) => names.indexOf(name));
  const labelAt = names.indexOf(columns.label);
  return checkedRows(
    rows.map((row, index) => ({
      line: parsed[index + 1]![1] - innerLineBreaks(row),
      // A cell Tagger (or a careful person) neutralised for spreadsheets is read as the text it was.
      text: textAt.map((at) => restoreFormula(row[at] ?? '')),
      label: restoreFormula(row[labelAt] ?? ''),
    })),
    multiLabel,
    source,
    'line',
  );
}

/** `tag` or `tags`, whichever the header names (a `tags` header means several tags per text). */
function labelColumn(names: readonly string[], source: string): 'tag' | 'tags' {
  if (names.includes('tag') && names.includes('tags')) {
    throw new DataError(
      `data: ${source} has both a tag and a tags column; keep tag for one tag per text or tags for several`,
    );
  }
  return names.includes('tags') ? 'tags' : 'tag';
}

/**
 * One record as read, before checks: where it is, its text fields (title and description, or the one
 * text column) and its label cell (or list).
 */
interface RawRecord {
  line: number;
  text: readonly string[];
  label: string | readonly string[];
}

/** Validates records into rows, naming every bad one at once (fixing a file one error per run is slow). */
function checkedRows(
  records: readonly RawRecord[],
  multiLabel: boolean,
  source: string,
  unit: 'line' | 'entry',
): DatasetRow[] {
  const out: DatasetRow[] = [];
  const noTag: number[] = [];
  const noText: number[] = [];
  records.forEach(({ line, text: fields, label }, index) => {
    const tags = typeof label === 'string' ? (multiLabel ? splitTags(label) : [label.trim()]) : label;
    if (tags.length === 0 || tags[0] === '') noTag.push(line);
    if (fields.every((field) => field.trim() === '')) noText.push(line);
    const text = fields.length === 2 ? projectText(fields[0]!, fields[1]!) : fields.join(' ');
    out.push(
      multiLabel
        ? { record: index + 1, line, tag: tagSetKey(tags), tags, text }
        : { record: index + 1, line, tag: tags[0] ?? '', text },
    );
  });
  const where = (lines: number[]): string =>
    unit === 'line'
      ? lineList(lines)
      : lineList(lines).replace(/^lines?/, (w) => (w === 'line' ? 'entry' : 'entries'));
  const problems = [
    ...(noTag.length > 0
      ? [`${noTag.length} row(s) have ${multiLabel ? 'no tags' : 'an empty tag'} (${where(noTag)})`]
      : []),
    ...(noText.length > 0
      ? [
          `${noText.length} row(s) have ${records[0]?.text.length === 2 ? 'neither a title nor a description' : 'no text'} (${where(noText)})`,
        ]
      : []),
  ];
  if (problems.length > 0) {
    throw new DataError(`data: ${source}: ${problems.join('; ')}; fill them in or remove them`);
  }
  return out;
}

/**
 * Parses a JSON dataset: an array of objects with `title`, `description` and `tag` (a string) or `tags`
 * (a list of strings, or one string separated like a CSV cell). Other keys (`id`, `created_on`, …) are
 * ignored. Entries are numbered from 1 in messages.
 */
export function parseJsonDataset(content: string, source: string, given: DatasetColumns = {}): DatasetRow[] {
  let raw: unknown;
  try {
    raw = JSON.parse(content.charCodeAt(0) === 0xfeff ? content.slice(1) : content);
  } catch (error) {
    throw new DataError(`data: ${source} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(raw)) {
    throw new DataError(
      `data: ${source} must hold a JSON array of records ({title, description, tag or tags})`,
    );
  }
  if (raw.length === 0) throw new DataError(`data: ${source} holds no records`);
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  const first = raw[0];
  const custom = given.tag !== undefined || given.tags !== undefined;
  checkColumns(given);
  // Keys as given (JSON keys are not case-folded).
  const multiLabel = custom ? given.tags !== undefined : isObject(first) && Object.hasOwn(first, 'tags');
  const key = given.tag ?? given.tags ?? (multiLabel ? 'tags' : 'tag');
  const textKeys = textColumnsOf(given);
  const records = raw.map((entry, index): RawRecord => {
    const at = `${source}: entry ${index + 1}`;
    if (!isObject(entry)) throw new DataError(`data: ${at} is not an object`);
    if (!custom && Object.hasOwn(entry, multiLabel ? 'tag' : 'tags')) {
      throw new DataError(
        `data: ${at} has ${multiLabel ? 'tag' : 'tags'}, but the first entry has ${key}; use one of them in every entry`,
      );
    }
    const text = (name: string): string => {
      const value = entry[name] ?? '';
      if (typeof value !== 'string') throw new DataError(`data: ${at}: ${name} must be a string`);
      return value;
    };
    const label = entry[key] ?? (multiLabel ? [] : '');
    const listOk = Array.isArray(label) && label.every((tag) => typeof tag === 'string');
    if (typeof label !== 'string' && !(multiLabel && listOk)) {
      throw new DataError(
        `data: ${at}: ${key} must be ${multiLabel ? 'a list of strings or a string' : 'a string'}, got ${JSON.stringify(label)}`,
      );
    }
    const labels =
      typeof label === 'string'
        ? label
        : [...new Set((label as string[]).map((tag) => tag.trim()).filter((tag) => tag !== ''))];
    return { line: index + 1, text: textKeys.map(text), label: labels };
  });
  return checkedRows(records, multiLabel, source, 'entry');
}

/** Reads and validates a dataset file. */
export async function readDataset(path: string, columns: DatasetColumns = {}): Promise<DatasetRow[]> {
  return (await readDatasetFile(path, columns)).rows;
}

/** Reads a dataset file once: its rows, validated, and the bytes they came from (for its digest). */
export async function readDatasetFile(
  path: string,
  columns: DatasetColumns = {},
): Promise<{ rows: DatasetRow[]; bytes: Uint8Array }> {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await readFile(path));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new DataError(`data: file not found: ${path}`);
    if (code === 'EISDIR') throw new DataError(`data: ${path} is a directory; pass a CSV file`);
    throw new DataError(`data: cannot read ${path}: ${(error as Error).message}`);
  }
  return { rows: parseDatasetBytes(bytes, path, columns), bytes };
}

/**
 * A dataset file's rows from its bytes: decoded (UTF-8 or UTF-16 by its mark, or `columns.encoding`; a
 * DataError naming what it looks like otherwise), then parsed as JSON (`.json`) or CSV.
 */
export function parseDatasetBytes(
  bytes: Uint8Array,
  source: string,
  columns: DatasetColumns = {},
): DatasetRow[] {
  let content: string;
  try {
    content = decodeText(bytes, source, columns.encoding).text;
  } catch (error) {
    if (error instanceof TextEncodingError) throw new DataError(`data: ${error.message}`);
    throw error;
  }
  return extname(source).toLowerCase() === '.json'
    ? parseJsonDataset(content, source, columns)
    : parseDataset(content, source, columns);
}
