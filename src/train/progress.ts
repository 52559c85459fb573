/**
 * Progress for long work: a live bar (cli-progress) when stderr is a terminal, and a plain line at most
 * every few seconds otherwise, so CI logs and pipes get a readable trail instead of escape codes.
 * Progress goes to stderr; stdout stays free for results (`--json`). Messages printed while a bar is
 * shown (a bad row, a warning) go through `log`, which puts them on their own line above the bar.
 */
import { clearLine, cursorTo } from 'node:readline';
import cliProgress from 'cli-progress';

export interface Progress {
  /**
   * Sets the position (0..total) and an optional short status such as the current loss. A `minor` update
   * (progress within a step) prints a plain line only when nothing was printed for the interval, and
   * never holds back the next step's line.
   */
  update(done: number, status?: string, minor?: boolean): void;
  /**
   * Prints `text` (whole lines, ending with a line break) to the stream: above the bar on a terminal,
   * which is then drawn again below it; as it is otherwise, even when the progress is silent.
   */
  log(text: string): void;
  stop(): void;
}

export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean | undefined;
  readonly unfiltered?: ProgressStream | undefined;
}

export interface ProgressOptions {
  label: string;
  total: number;
  /**
   * Default process.stderr; a stream that is not a terminal gets plain lines. A bar writes its escape
   * codes to `unfiltered` when the stream has one (a filter that escapes control characters).
   */
  stream?: ProgressStream;
  /** Minimum interval between plain lines (non-terminal output). */
  plainIntervalMs?: number;
  /** Silence entirely (e.g. `--quiet`). */
  silent?: boolean;
  /** `%`: `done` is a percentage, shown as `42%` instead of `42/100`. */
  unit?: '%';
  /**
   * Say the time left at the pace so far (for work whose steps take about the same time; a caller that
   * knows better, such as batch tagging by rows, says it in its status instead).
   */
  eta?: boolean;
  /** The clock (ms), for tests; default Date.now. */
  now?: () => number;
  /**
   * When nothing was printed for this long, the last line is printed again (its ETA recomputed), so a
   * step that takes minutes never leaves the output silent. Default HEARTBEAT_MS; 0: never.
   */
  heartbeatMs?: number;
}

/** The longest a progress stays silent while it runs (the issue's rule: a line at least every 10 s). */
export const HEARTBEAT_MS = 10_000;

/** A duration for a person: `12 s`, `3 min 05 s`, `2 h 10 min`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/**
 * The time left if the remaining steps go at the pace of those done (` (ETA 3 min 05 s)`), or nothing
 * before the first step and after the last: a long training never looks hung, and says for how long.
 */
function etaOf(startedMs: number, nowMs: number, done: number, total: number): string {
  if (done <= 0 || done >= total) return '';
  return ` (ETA ${formatDuration(((nowMs - startedMs) * (total - done)) / done)})`;
}

export function createProgress(options: ProgressOptions): Progress {
  const stream: ProgressStream = options.stream ?? process.stderr;
  const now = options.now ?? Date.now;
  const started = now();
  const etaAt = (done: number): string => (options.eta ? etaOf(started, now(), done, options.total) : '');
  const log = (text: string): void => {
    stream.write(text);
  };
  if (options.silent) return { update: () => undefined, log, stop: () => undefined };
  if (stream.isTTY) {
    // A terminal is a real tty.WriteStream (process.stderr, or one a caller made).
    const terminal = (stream.unfiltered ?? stream) as NodeJS.WriteStream;
    const bar = new cliProgress.SingleBar(
      {
        format: `${options.label} [{bar}] ${options.unit === '%' ? '{value}%' : '{value}/{total}'} {status}{timeLeft}`,
        stream: terminal,
        hideCursor: true,
        clearOnComplete: false,
        // Drawn again on every tick even when unchanged, so a bar cleared for a message comes back.
        forceRedraw: true,
      },
      cliProgress.Presets.shades_classic,
    );
    // Not `{eta}`: cli-progress fills that token itself (seconds, from its own rate).
    bar.start(options.total, 0, { status: '', timeLeft: '' });
    let active = true;
    let shown = { done: 0, status: '' };
    const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
    // The bar is drawn again with its ETA recomputed, so it moves while a long step runs.
    const heartbeat =
      heartbeatMs > 0
        ? setInterval(() => {
            if (active)
              bar.update(Math.floor(shown.done), { status: shown.status, timeLeft: etaAt(shown.done) });
          }, heartbeatMs).unref()
        : null;
    return {
      update: (done, status = '') => {
        shown = { done, status };
        bar.update(Math.floor(done), { status, timeLeft: etaAt(done) });
      },
      log(text) {
        if (!active) return log(text);
        // The message replaces the bar's line, and the bar is drawn on the line after it. The bar
        // remembers where it started (ESC 7) and returns there when it stops: that is now this line.
        cursorTo(terminal, 0);
        clearLine(terminal, 0);
        stream.write(text);
        terminal.write('\u001b7');
        bar.render();
      },
      stop() {
        active = false;
        if (heartbeat !== null) clearInterval(heartbeat);
        bar.stop();
      },
    };
  }
  const interval = options.plainIntervalMs ?? 2000;
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  let lastPrinted = 0;
  // The heartbeat counts silence from the start, not from the epoch.
  let lastWritten = started;
  // Steps are throttled among themselves: a minor line in between never holds back the next step's.
  let lastStepPrinted = 0;
  let lastPrintedDone = -1;
  let last = { done: 0, status: '' };
  const print = () => {
    // A step may be fractional (a member fit's classes): the position shows whole steps, the ETA uses all.
    const whole = Math.floor(last.done);
    const position = options.unit === '%' ? `${whole}%` : `${whole}/${options.total}`;
    const eta = etaAt(last.done);
    stream.write(`${options.label}: ${position}${last.status ? ` ${last.status}` : ''}${eta}\n`);
    lastPrinted = now();
    lastWritten = lastPrinted;
    lastPrintedDone = last.done;
  };
  // Unref'd: it never keeps the process alive, and stop() ends it.
  const heartbeat =
    heartbeatMs > 0
      ? setInterval(
          () => {
            if (now() - lastWritten >= heartbeatMs) print();
          },
          Math.min(heartbeatMs, 1000),
        ).unref()
      : null;
  return {
    update(done, status = '', minor = false) {
      last = { done, status };
      if (minor) {
        if (now() - lastPrinted >= interval) print();
      } else if (now() - lastStepPrinted >= interval) {
        print();
        lastStepPrinted = lastPrinted;
      }
    },
    log,
    stop() {
      if (heartbeat !== null) clearInterval(heartbeat);
      // End on a line showing where the work stopped (nothing when it never started, e.g. bad input).
      if (lastPrintedDone !== -1 || last.done !== 0 || last.status !== '') {
        if (last.done !== lastPrintedDone) print();
      }
    },
  };
}
