/**
 * What the command line prints is safe for a terminal. Messages echo what users and files gave —
 * paths, run ids, option names, experiment names, a malformed row's JSON — and a control character in
 * any of them (ESC starting a terminal escape sequence, CR, a C1 control, a bidirectional override) would
 * reach the terminal raw: retitle the window, hide or recolour text, rewrite the line before it. Every
 * such character is written as a visible `\uXXXX` escape instead; tab and line feed stay as they are.
 * The escape is valid inside a JSON string too, so JSON output reads back to the same value.
 */
import type { CliIo, CliStream } from './io.js';

/**
 * C0 controls but tab and line feed, DEL, C1 controls, and the invisible marks that reorder text
 * (Trojan Source, CVE-2021-42574): ALM, LRM, RLM, the embeddings, overrides and isolates.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The text with every character a terminal would act on written as `\uXXXX`.
 * @example printable('run \x1b[31mred') // 'run \\u001b[31mred'
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A stream that writes `printable` text; `unfiltered` is the stream itself, for a progress bar's escapes. */
function printableStream(stream: CliStream): CliStream {
  return {
    write: (text: string) => stream.write(printable(text)),
    isTTY: stream.isTTY,
    columns: stream.columns,
    unfiltered: stream.unfiltered ?? stream,
  };
}

/** The command line's streams, writing only printable text. */
export function printableIo(io: CliIo): CliIo {
  return { stdout: printableStream(io.stdout), stderr: printableStream(io.stderr) };
}
