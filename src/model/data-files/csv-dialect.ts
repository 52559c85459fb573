/**
 * The field delimiter of a CSV file: `,`, `;` (what spreadsheets in many locales save) or a tab, sniffed
 * from the first lines as Python's csv.Sniffer does it in spirit — the candidate that splits the header
 * into more than one field and every other complete line into as many — or named by `--delimiter`. And
 * what to say when a file is not valid CSV: where the row starts (csv-parse names the line where it
 * noticed, which for an unterminated quote is lines later) and which delimiter it was read with, since a
 * `;` file read with `,` used to fail with "Invalid Opening Quote: a quote is found on field 0 at line 11"
 * and no word about the delimiter.
 */

/** The delimiters a file is sniffed for, in the order a tie is settled. */
export const SNIFFED_DELIMITERS = [',', ';', '\t'] as const;

/** How a CSV file is read: its delimiter, and whether it was sniffed or named. */
export interface CsvDialect {
  delimiter: string;
  sniffed: boolean;
}

/** A delimiter as people name it: `','`, `';'`, `tab`. */
export const delimiterName = (delimiter: string): string => (delimiter === '\t' ? 'tab' : `'${delimiter}'`);

/**
 * The delimiter `--delimiter` names: one ASCII character other than a quote, a line break or a letter or
 * digit, or `tab` (also `\t`). Throws an Error saying what is accepted.
 */
export function parseDelimiter(value: string): string {
  const given = value === '\\t' || value.toLowerCase() === 'tab' ? '\t' : value;
  if (
    given.length !== 1 ||
    given.charCodeAt(0) > 0x7e ||
    /["\r\n0-9A-Za-z]/.test(given) ||
    (given < ' ' && given !== '\t')
  ) {
    throw new Error(
      `--delimiter must be one character such as , ; | or tab (a quote, a line break, a letter or a digit cannot be one), got '${value}'`,
    );
  }
  return given;
}

/** The fields of each complete line of `text` split by `delimiter` (quotes honoured), at most `lines` lines. */
function fieldCounts(text: string, delimiter: string, lines: number): number[] {
  const counts: number[] = [];
  let fields = 1;
  let quoted = false;
  let fieldStart = true;
  for (let i = 0; i < text.length && counts.length < lines; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') i++;
        else quoted = false;
      }
      continue;
    }
    if (ch === '"' && fieldStart) {
      quoted = true;
      fieldStart = false;
    } else if (ch === delimiter) {
      fields++;
      fieldStart = true;
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      // An empty line is no record (csv-parse skips them).
      if (!(fields === 1 && fieldStart)) counts.push(fields);
      fields = 1;
      fieldStart = true;
    } else fieldStart = false;
  }
  // A file of one line without a line break: its header is all there is to go by.
  if (counts.length === 0 && !(fields === 1 && fieldStart)) counts.push(fields);
  return counts;
}

/**
 * The delimiter of CSV `head` (the file's first bytes, decoded): of `,`, `;` and tab, the one that gives
 * the header more than one field and the most of the next complete lines as many fields as the header
 * (ties: more header fields, then the order above); `,` when none splits the header.
 * @example sniffDelimiter('title;description;tag\nA;B;c\n') // ';'
 */
export function sniffDelimiter(head: string): string {
  let best: { delimiter: string; consistent: number; width: number } | null = null;
  for (const delimiter of SNIFFED_DELIMITERS) {
    const [width = 1, ...rest] = fieldCounts(head, delimiter, 21);
    if (width < 2) continue;
    const consistent = rest.length === 0 ? 1 : rest.filter((n) => n === width).length / rest.length;
    if (
      best === null ||
      consistent > best.consistent ||
      (consistent === best.consistent && width > best.width)
    ) {
      best = { delimiter, consistent, width };
    }
  }
  return best?.delimiter ?? ',';
}

/** What csv-parse's error tells (CsvError's fields). */
export interface CsvParseError {
  message: string;
  code?: string;
}

/**
 * Why a row is not valid CSV: the parser's reason, a hint for quote errors (the quote opened on
 * `startLine`), and how the file was read (its delimiter; `--delimiter`).
 */
export function csvReason(error: CsvParseError, startLine: number, dialect: CsvDialect): string {
  const reason = error.message.replace(/\s+/g, ' ').trim();
  const quote =
    error.code === 'CSV_QUOTE_NOT_CLOSED' || error.code === 'CSV_INVALID_CLOSING_QUOTE'
      ? `; a quote opened on line ${startLine} is not closed where it should be (a field with quotes in it is quoted whole, each quote doubled: "say ""hi""")`
      : error.code === 'CSV_INVALID_OPENING_QUOTE'
        ? '; a quote inside an unquoted field (quote the whole field and double the quote)'
        : '';
  const how = dialect.sniffed
    ? `read with delimiter ${delimiterName(dialect.delimiter)}, sniffed from the first lines; name another with --delimiter`
    : `read with --delimiter ${delimiterName(dialect.delimiter)}`;
  return `${reason}${quote} (${how})`;
}

/**
 * The message for a row that is not valid CSV: the line it starts on (and ends on, when later), then
 * csvReason.
 * @example csvProblem({ message: 'Invalid Closing Quote: got "C" at line 8 …', code: 'CSV_INVALID_CLOSING_QUOTE' }, 6, 8, { delimiter: ',', sniffed: true })
 */
export function csvProblem(
  error: CsvParseError,
  startLine: number,
  endLine: number,
  dialect: CsvDialect,
): string {
  const where =
    endLine > startLine ? `the row starting on line ${startLine} (to line ${endLine})` : `line ${startLine}`;
  return `${where}: ${csvReason(error, startLine, dialect)}`;
}
