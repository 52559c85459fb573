/**
 * Where a command writes: the process's stdout and stderr when run as `tagger`, captured streams when a
 * test drives the commands in-process (`main(argv, io)`). Progress bars check `isTTY`, so a stream that
 * is not a terminal gets plain progress lines.
 */
export interface CliStream {
  write(text: string): unknown;
  readonly isTTY?: boolean | undefined;
  /** A terminal's width (help text wraps to it). */
  readonly columns?: number | undefined;
  /**
   * The stream under a filter that makes text printable (terminal.ts): what a progress bar writes its
   * own escape codes to. Absent on an unfiltered stream.
   */
  readonly unfiltered?: CliStream | undefined;
}

export interface CliIo {
  /** Results (tables, `--json` objects). */
  readonly stdout: CliStream;
  /** Progress, warnings and errors. */
  readonly stderr: CliStream;
}

/** The process's own streams. */
export const processIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr });
