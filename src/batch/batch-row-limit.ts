/**
 * A bound on the size of one row of a file tagged in batch (`tagger predict --input`). The parsers keep a
 * whole row in memory — csv-parse a record, readline a line — so a single row of 50 MB took the file
 * worker's heap (and then the model's) with it, and the whole job ended with no line number. This
 * transform sits between the file and the parser: it finds where each row ends, passes rows up to
 * `maxBytes` through unchanged, and replaces a longer one by empty lines (the same number of lines, so
 * the parser's line numbers stay right) after reporting it. It holds at most one row's worth of bytes.
 *
 * Where a CSV row ends follows csv-parse's own reading with tagFile's options (RFC 4180 quotes, `""`
 * inside them, a quote that opens only at the start of a field and closes only before the field delimiter, a line
 * break or the end; the line break of the first row — CRLF, LF or CR — ends every row), and lines are
 * counted as csv-parse counts them, so a skipped row is reported on the line csv-parse would name. JSON
 * Lines rows end at any line break, as readline reads them.
 */
import { Transform, type TransformCallback } from 'node:stream';

/** The default limit: far above any text a tagger is meant for, far below what hurts memory. */
export const DEFAULT_MAX_ROW_BYTES = 1024 * 1024;

const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;
const BOM = [0xef, 0xbb, 0xbf] as const;

export interface TooLongRow {
  /** The line the row ends on, 1-based (where the parser would have reported it). */
  line: number;
  /** The row's size in bytes, line break excluded. */
  bytes: number;
  /** The first row of a CSV file: its header. */
  header: boolean;
}

export interface RowLimitOptions {
  maxBytes: number;
  format: 'csv' | 'jsonl';
  /** CSV: the field delimiter (one ASCII character; default `,`), where a quote may open a field. */
  fieldDelimiter?: string | undefined;
  onTooLong: (row: TooLongRow) => void;
}

/** The byte stream of a file with every row longer than `maxBytes` replaced by its line breaks. */
export class RowLimiter extends Transform {
  private readonly csv: boolean;
  private readonly comma: number;
  /** CSV: the record delimiter, found at the first line break (as csv-parse finds it). */
  private delimiter: Buffer | undefined;
  private quoting = false;
  private fieldStart = true;
  private atStart = true;
  /** The line of the current position, counted as the parser counts. */
  private line = 1;
  /** The line the current row started on. */
  private rowStartLine = 1;
  /** The current row's bytes from earlier chunks, while it is within the limit. */
  private held: Buffer[] = [];
  /** Bytes of the current row in earlier chunks (held, or dropped). */
  private rowBytes = 0;
  private rows = 0;
  private dropping = false;
  /** The end of the previous chunk, when what it means depends on the bytes after it. */
  private carry: Buffer | undefined;

  constructor(private readonly options: RowLimitOptions) {
    super();
    this.csv = options.format === 'csv';
    this.comma = (options.fieldDelimiter ?? ',').charCodeAt(0);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      const buffer = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
      this.carry = undefined;
      this.scan(buffer, false);
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      const last = this.carry ?? Buffer.alloc(0);
      this.carry = undefined;
      this.scan(last, true);
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  /** The length of the CSV record delimiter (JSON Lines: any line break) at `i`; 0 for none. */
  private breakAt(buffer: Buffer, i: number): number {
    const byte = buffer[i];
    if (byte !== CR && byte !== LF) return 0;
    if (!this.csv) return byte === CR && buffer[i + 1] === LF ? 2 : 1;
    // csv-parse takes the first line break it meets for the delimiter of every record.
    this.delimiter ??= Buffer.from(byte === LF ? '\n' : buffer[i + 1] === LF ? '\r\n' : '\r');
    const d = this.delimiter;
    return byte === d[0] && (d.length === 1 || buffer[i + 1] === d[1]) ? d.length : 0;
  }

  /**
   * Reads `buffer` (the end of the file when `end`), pushing the rows within the limit as they are and a
   * longer row's lines empty; keeps the unfinished last row for the next chunk.
   */
  private scan(buffer: Buffer, end: boolean): void {
    let i = 0;
    if (this.atStart && this.csv) {
      // csv-parse drops a UTF-8 byte order mark before reading the first field.
      if (buffer.length < BOM.length && !end) {
        this.carry = buffer;
        return;
      }
      this.atStart = false;
      if (BOM.every((byte, k) => buffer[k] === byte)) i = BOM.length;
    }
    /** Where the bytes not yet pushed start, and where the current row starts, in `buffer`. */
    let emitFrom = 0;
    let rowFrom = 0;
    let stop = buffer.length;
    for (; i < buffer.length; i++) {
      const byte = buffer[i]!;
      // What a quote or a CR means depends on the two bytes after it: wait for them.
      if ((byte === QUOTE || byte === CR) && i + 2 >= buffer.length && !end) {
        stop = i;
        this.carry = buffer.subarray(i);
        break;
      }
      if (this.csv && byte === QUOTE) {
        if (this.quoting) {
          if (buffer[i + 1] === QUOTE) {
            i += 1;
          } else if (
            i + 1 === buffer.length ||
            buffer[i + 1] === this.comma ||
            this.breakAt(buffer, i + 1) > 0
          ) {
            this.quoting = false;
          }
        } else if (this.fieldStart) {
          this.quoting = true;
        }
        this.fieldStart = false;
        continue;
      }
      if (byte === CR || byte === LF) {
        const length = this.quoting ? 0 : this.breakAt(buffer, i);
        if (length === 0) {
          // A line break inside a quoted field, or another kind than the file's: csv-parse counts a line
          // for each such byte, and the row goes on.
          if (this.csv) this.line += 1;
          this.fieldStart = false;
          continue;
        }
        const bytes = this.rowBytes + (i - rowFrom);
        if (this.dropping || bytes > this.options.maxBytes) {
          if (rowFrom > emitFrom) this.push(buffer.subarray(emitFrom, rowFrom));
          this.dropRow(bytes, 1);
          emitFrom = i + length;
        } else if (this.held.length > 0) {
          // The row began in an earlier chunk (so rowFrom is 0 and nothing of this one is pushed yet).
          for (const part of this.held) this.push(part);
        }
        this.nextRow(bytes > 0);
        i += length - 1;
        rowFrom = i + 1;
        continue;
      }
      this.fieldStart = this.csv && byte === this.comma && !this.quoting;
    }
    if (rowFrom > emitFrom) this.push(buffer.subarray(emitFrom, rowFrom));
    // The unfinished row: held (a copy, so the chunk is not kept alive by it) while within the limit.
    const tail = stop - rowFrom;
    this.rowBytes += tail;
    if (!this.dropping && this.rowBytes > this.options.maxBytes) {
      this.dropping = true;
      this.held = [];
    } else if (!this.dropping && tail > 0) {
      this.held.push(Buffer.from(buffer.subarray(rowFrom, stop)));
    }
    if (end && this.rowBytes > 0) {
      // The last row, without a line break after it.
      if (this.dropping) this.dropRow(this.rowBytes, 0);
      else for (const part of this.held) this.push(part);
      this.nextRow(true);
    }
  }

  /** Reports the current row as too long and pushes its lines, empty (`breaks`: 1 when a line break ends it). */
  private dropRow(bytes: number, breaks: number): void {
    this.options.onTooLong({ line: this.line, bytes, header: this.csv && this.rows === 0 });
    const lines = this.line - this.rowStartLine + breaks;
    const empty = this.delimiter ?? Buffer.from('\n');
    if (lines > 0) this.push(Buffer.concat(Array.from({ length: lines }, () => empty)));
  }

  /** Starts the next row; `counted`: the one that ended held something (an empty line is no row). */
  private nextRow(counted: boolean): void {
    if (counted) this.rows += 1;
    this.held = [];
    this.rowBytes = 0;
    this.dropping = false;
    this.quoting = false;
    this.fieldStart = true;
    this.line += 1;
    this.rowStartLine = this.line;
  }
}
