/**
 * The character encoding of a data file (`tagger train --data`, `predict --input`, `evaluate`, …): UTF-8
 * with or without a byte-order mark, or UTF-16 with one, is read as it is; anything else is refused with
 * a message that names what it looks like (Latin-1 / Windows-1252, UTF-16 without a mark) and the
 * `--encoding` to read it with — any label of the WHATWG Encoding Standard (`latin1`, `windows-1252`,
 * `utf-16le`, `shift_jis`, `gb18030`, …), which TextDecoder knows. Before, a Latin-1 file trained silently
 * with every accented letter turned into U+FFFD ("caf\uFFFD").
 *
 * Pure: bytes in, text (or UTF-8 bytes, for a stream) out. `decodeText` takes a whole file;
 * `TextStreamDecoder` a file read in chunks, passing UTF-8 through unchanged once it is checked.
 */

/** A file's bytes are not text in the encoding it is read with; the message says what to do. */
export class TextEncodingError extends Error {
  override readonly name = 'TextEncodingError';
}

/** The encodings a byte-order mark names, and the mark's length. */
export function bomOf(
  bytes: Uint8Array,
): { encoding: 'utf-8' | 'utf-16le' | 'utf-16be'; length: number } | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { encoding: 'utf-8', length: 3 };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { encoding: 'utf-16le', length: 2 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { encoding: 'utf-16be', length: 2 };
  return null;
}

/**
 * The canonical name of an encoding label (`latin1` → `windows-1252`, as the Encoding Standard maps
 * it: a superset that also reads Windows' curly quotes and euro sign), or a TextEncodingError.
 */
export function encodingOf(label: string): string {
  try {
    return new TextDecoder(label.trim()).encoding;
  } catch {
    throw new TextEncodingError(
      `unknown encoding '${label}'; give a label of the Encoding Standard, e.g. utf-8, latin1 (windows-1252), iso-8859-15, utf-16le, utf-16be, shift_jis, gb18030`,
    );
  }
}

/**
 * Where the first byte that is not UTF-8 is at or after `from` (overlong forms, surrogates and values
 * past U+10FFFF included), or -1 when every sequence is valid. A sequence cut by the end is valid when
 * `final` is false (the rest may come in the next chunk): then `incomplete` says where it starts.
 */
export function firstInvalidUtf8(
  bytes: Uint8Array,
  final = true,
  from = 0,
): { invalid: number; incomplete: number } {
  let i = from;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
    } else return { invalid: i, incomplete: -1 };
    if (i + need >= n) {
      // Cut by the end: the rest may be in the next chunk if every byte present continues the sequence.
      if (final) return { invalid: i, incomplete: -1 };
      for (let k = 1; i + k < n; k++)
        if ((bytes[i + k]! & 0xc0) !== 0x80) return { invalid: i, incomplete: -1 };
      return { invalid: -1, incomplete: i };
    }
    let code = b & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return { invalid: i, incomplete: -1 };
      code = (code << 6) | (c & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
      return { invalid: i, incomplete: -1 };
    i += need + 1;
  }
  return { invalid: -1, incomplete: -1 };
}

/** Line breaks (LF, or a CR not followed by LF) in `bytes` before `end`: the line of a byte is this + 1. */
function linesBefore(bytes: Uint8Array, end: number): number {
  let lines = 0;
  for (let i = 0; i < end; i++) {
    if (bytes[i] === 0x0a || (bytes[i] === 0x0d && bytes[i + 1] !== 0x0a)) lines++;
  }
  return lines;
}

/** Whether the bytes look like UTF-16 without a mark: many NUL bytes, nearly all at even or at odd offsets. */
function looksUtf16(bytes: Uint8Array): 'utf-16le' | 'utf-16be' | null {
  const n = Math.min(bytes.length, 4096);
  let even = 0;
  let odd = 0;
  for (let i = 0; i < n; i++) {
    if (bytes[i] !== 0) continue;
    if (i % 2 === 0) even++;
    else odd++;
  }
  if (even + odd < n / 4) return null;
  return odd > even ? 'utf-16le' : 'utf-16be';
}

/**
 * Why `bytes` (a file, or the chunk of it where the problem is) are not UTF-8, at byte `at`, which is on
 * line `line` of the file: what they look like, and the flag that reads them.
 */
export function notUtf8Message(source: string, bytes: Uint8Array, at: number, line: number): string {
  const byte = `0x${bytes[at]!.toString(16).toUpperCase().padStart(2, '0')}`;
  const utf16 = looksUtf16(bytes);
  if (utf16 !== null) {
    return `${source} is not UTF-8: it looks like UTF-16 without a byte-order mark (byte ${byte} on line ${line}, and many NUL bytes); read it with --encoding ${utf16}, or save it as UTF-8`;
  }
  // The line around the byte, as Windows-1252 (Latin-1's superset) reads it.
  let start = at;
  while (start > 0 && at - start < 30 && bytes[start - 1] !== 0x0a && bytes[start - 1] !== 0x0d) start--;
  let end = at + 1;
  while (end < bytes.length && end - at < 30 && bytes[end] !== 0x0a && bytes[end] !== 0x0d) end++;
  const shown = new TextDecoder('windows-1252').decode(bytes.subarray(start, end));
  // "…" where the line goes on beyond what is shown.
  const cutBefore = start > 0 && bytes[start - 1] !== 0x0a && bytes[start - 1] !== 0x0d;
  const cutAfter = end < bytes.length && bytes[end] !== 0x0a && bytes[end] !== 0x0d;
  // Control characters (tab aside) mean the bytes are not Latin-1 text either.
  const printable = ![...shown].some((ch) => {
    const code = ch.charCodeAt(0);
    return (code < 0x20 && code !== 0x09) || code === 0x7f;
  });
  const reads = printable
    ? `; as Latin-1 (Windows-1252) it reads "${cutBefore ? '…' : ''}${shown}${cutAfter ? '…' : ''}"`
    : '';
  return `${source} is not UTF-8: line ${line} has byte ${byte}, which UTF-8 does not allow there — the file is in another encoding, most likely Latin-1 / Windows-1252${reads}. Read it with --encoding latin1 (or the encoding it is in: --encoding <name>), or save it as UTF-8`;
}

export interface DecodedText {
  text: string;
  /** The encoding it was read in (canonical name). */
  encoding: string;
}

/**
 * A whole file as text: in `encoding` when given (a byte-order mark of it skipped), else by its
 * byte-order mark (UTF-8, UTF-16LE or UTF-16BE), else as UTF-8 — refused with a TextEncodingError
 * naming the line, the byte and what the file looks like when it is not.
 * @example decodeText(new Uint8Array([0x63, 0x61, 0x66, 0xe9]), 'a.csv') // throws: …Latin-1…
 */
export function decodeText(bytes: Uint8Array, source: string, encoding?: string): DecodedText {
  const bom = bomOf(bytes);
  if (encoding !== undefined) {
    const name = encodingOf(encoding);
    const skip = bom !== null && bom.encoding === name ? bom.length : 0;
    try {
      // Fatal for the Unicode encodings (a byte they cannot read is an error); the legacy single-byte
      // ones read every byte.
      return { text: new TextDecoder(name, { fatal: true }).decode(bytes.subarray(skip)), encoding: name };
    } catch {
      throw new TextEncodingError(
        `${source} is not valid ${name}; check --encoding (the file's encoding: a text editor shows it)`,
      );
    }
  }
  if (bom !== null && bom.encoding !== 'utf-8') {
    try {
      return {
        text: new TextDecoder(bom.encoding, { fatal: true }).decode(bytes.subarray(bom.length)),
        encoding: bom.encoding,
      };
    } catch {
      throw new TextEncodingError(
        `${source} starts with a ${bom.encoding.toUpperCase()} byte-order mark but is not valid ${bom.encoding.toUpperCase()}; save it again, or give --encoding`,
      );
    }
  }
  const body = bom === null ? bytes : bytes.subarray(bom.length);
  const { invalid } = firstInvalidUtf8(body);
  if (invalid >= 0)
    throw new TextEncodingError(notUtf8Message(source, body, invalid, linesBefore(body, invalid) + 1));
  return { text: new TextDecoder('utf-8').decode(body), encoding: 'utf-8' };
}

/**
 * A file read in chunks, decoded as decodeText decodes a whole one, as UTF-8 bytes: UTF-8 input is
 * checked and passed through unchanged (its mark dropped); any other encoding is converted. `push` and
 * `end` return the bytes to pass on and throw TextEncodingError at the first byte that is not text.
 */
export class TextStreamDecoder {
  private encoding: string | undefined;
  private decoder: InstanceType<typeof TextDecoder> | undefined;
  /** Bytes held back: the first bytes until the mark can be told, or a UTF-8 sequence cut by a chunk's end. */
  private held: Uint8Array = new Uint8Array(0);
  private started = false;
  /** Line breaks passed so far (UTF-8), for the line of a bad byte. */
  private lines = 0;
  private lastWasCr = false;

  constructor(
    private readonly source: string,
    encoding?: string,
  ) {
    this.encoding = encoding === undefined ? undefined : encodingOf(encoding);
  }

  /** The encoding being read (known after the first bytes). */
  get reading(): string | undefined {
    return this.encoding;
  }

  push(chunk: Uint8Array): Uint8Array {
    let bytes: Uint8Array = this.held.length > 0 ? concat(this.held, chunk) : chunk;
    this.held = new Uint8Array(0);
    if (!this.started) {
      if (bytes.length < 3) {
        this.held = bytes;
        return new Uint8Array(0);
      }
      bytes = this.start(bytes);
    }
    return this.decode(bytes, false);
  }

  end(): Uint8Array {
    let bytes: Uint8Array = this.held;
    this.held = new Uint8Array(0);
    if (!this.started) bytes = this.start(bytes);
    return this.decode(bytes, true);
  }

  /** Decides the encoding from the first bytes (the given one, else the mark, else UTF-8); drops the mark. */
  private start(bytes: Uint8Array): Uint8Array {
    this.started = true;
    const bom = bomOf(bytes);
    if (this.encoding === undefined) this.encoding = bom?.encoding ?? 'utf-8';
    if (this.encoding !== 'utf-8') this.decoder = new TextDecoder(this.encoding, { fatal: true });
    return bom !== null && bom.encoding === this.encoding ? bytes.subarray(bom.length) : bytes;
  }

  private decode(bytes: Uint8Array, final: boolean): Uint8Array {
    if (this.decoder !== undefined) {
      try {
        return new TextEncoder().encode(this.decoder.decode(bytes, { stream: !final }));
      } catch {
        throw new TextEncodingError(
          `${this.source} is not valid ${this.encoding}; check --encoding (the file's encoding: a text editor shows it)`,
        );
      }
    }
    const { invalid, incomplete } = firstInvalidUtf8(bytes, final);
    if (invalid >= 0) {
      // A CRLF cut between chunks was counted at its CR already.
      const counted = this.lastWasCr && bytes[0] === 0x0a && invalid > 0 ? 1 : 0;
      const line = this.lines + linesBefore(bytes, invalid) - counted + 1;
      throw new TextEncodingError(notUtf8Message(this.source, bytes, invalid, line));
    }
    const passed = incomplete >= 0 ? bytes.subarray(0, incomplete) : bytes;
    if (incomplete >= 0) this.held = bytes.slice(incomplete);
    this.count(passed);
    return passed;
  }

  private count(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      if (b === 0x0a) this.lines += this.lastWasCr ? 0 : 1;
      else if (b === 0x0d) this.lines += 1;
      this.lastWasCr = b === 0x0d;
    }
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
