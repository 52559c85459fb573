/**
 * Progress for long work: a live bar (cli-progress) when stderr is a terminal, and a plain line at most
 * every few seconds otherwise, so CI logs and pipes get a readable trail instead of escape codes.
 * Progress goes to stderr; stdout stays free for results (`--json`).
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** Sets the position (0..total) and an optional short status such as the current loss. */
  update(done: number, status?: string): void;
  stop(): void;
}

export interface ProgressOptions {
  label: string;
  total: number;
  /** Default process.stderr; a stream that is not a terminal gets plain lines. */
  stream?: { write(text: string): unknown; readonly isTTY?: boolean | undefined };
  /** Minimum interval between plain lines (non-terminal output). */
  plainIntervalMs?: number;
  /** Silence entirely (e.g. `--quiet`). */
  silent?: boolean;
  /** `%`: `done` is a percentage, shown as `42%` instead of `42/100`. */
  unit?: '%';
}

export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  if (options.silent) return { update: () => undefined, stop: () => undefined };
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${options.label} [{bar}] ${options.unit === '%' ? '{value}%' : '{value}/{total}'} {status}`,
        // A terminal is a real tty.WriteStream (process.stderr, or one a caller made).
        stream: stream as NodeJS.WriteStream,
        hideCursor: true,
        clearOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(options.total, 0, { status: '' });
    return {
      update: (done, status = '') => bar.update(done, { status }),
      stop: () => bar.stop(),
    };
  }
  const interval = options.plainIntervalMs ?? 2000;
  let lastPrinted = 0;
  let lastPrintedDone = -1;
  let last = { done: 0, status: '' };
  const print = () => {
    const position = options.unit === '%' ? `${last.done}%` : `${last.done}/${options.total}`;
    stream.write(`${options.label}: ${position}${last.status ? ` ${last.status}` : ''}\n`);
    lastPrinted = Date.now();
    lastPrintedDone = last.done;
  };
  return {
    update(done, status = '') {
      last = { done, status };
      if (Date.now() - lastPrinted >= interval) print();
    },
    stop() {
      // End on a line showing where the work stopped (nothing when it never started, e.g. bad input).
      if (lastPrintedDone !== -1 || last.done !== 0 || last.status !== '') {
        if (last.done !== lastPrintedDone) print();
      }
    },
  };
}
