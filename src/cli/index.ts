/**
 * The `tagger` command line: builds the program from one module per command and maps every error to a
 * clean one-line message and an exit status (never a stack trace for bad input). Importing it runs
 * nothing: `main(argv, io)` runs one command line (./main.ts is the process entry), so tests can drive
 * the commands in-process with captured output.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { BatchInputError } from '../batch/batch-predict.js';
import { EncoderError } from '../encoder/errors.js';
import { ModelFormatError, ModelInputError } from '../model/index.js';
import { ExportError, RecordStoreError } from '../monitoring/index.js';
import { StartupError } from '../server/server.js';
import { TrackingError } from '../tracking/store.js';
import { DataError } from '../train/data.js';
import { InterruptedError } from '../train/log-run.js';
import { MemoryBudgetError } from '../train/memory-check.js';
import { registerAlias } from './alias.js';
import { registerEvaluate } from './evaluate.js';
import { registerFeedback } from './feedback.js';
import { UsageError } from './inputs.js';
import { type CliIo, processIo } from './io.js';
import { registerLabelIssues } from './label-issues.js';
import { registerOptimize } from './optimize.js';
import { registerPredict } from './predict.js';
import { registerRetrain } from './retrain-command.js';
import { registerServe } from './serve.js';
import { printable, printableIo } from './terminal.js';
import { fewerRetriesFor, reportTrackingRetries } from './tracking-retries.js';
import { registerTrain } from './train.js';

/** Errors whose message is already a complete, user-facing explanation. */
const EXPECTED_ERRORS = [
  BatchInputError,
  DataError,
  EncoderError,
  ExportError,
  InterruptedError,
  MemoryBudgetError,
  ModelInputError,
  ModelFormatError,
  TrackingError,
  StartupError,
  RangeError,
  RecordStoreError,
  UsageError,
];

/** Tagger's version (package.json's, read once: the same file from src/ and from dist/) and Node's. */
function versionLine(): string {
  let version = 'unknown';
  try {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    if (typeof manifest.version === 'string') version = manifest.version;
  } catch {
    // A copy of dist/ without its package.json: the version is unknown, the command still runs.
  }
  return `tagger ${version} (Node.js ${process.version})`;
}

/** The one line printed after `tagger:` for an error. */
function explain(error: unknown): string {
  if (EXPECTED_ERRORS.some((kind) => error instanceof kind)) {
    return (error as Error).message;
  }
  const detail = process.env.TAGGER_DEBUG
    ? `\n${(error as Error)?.stack ?? String(error)}`
    : ' (set TAGGER_DEBUG=1 for details)';
  return `unexpected error: ${error instanceof Error ? error.message : String(error)}${detail}`;
}

/** The width every `--help` wraps at (a terminal narrower than it: its width). */
export const HELP_WIDTH = 100;

const helpWidth = (stream: { isTTY?: boolean | undefined; columns?: number | undefined }): number =>
  stream.isTTY && typeof stream.columns === 'number' && stream.columns > 0
    ? Math.min(HELP_WIDTH, stream.columns)
    : HELP_WIDTH;

/**
 * The program with every command, writing to `io`. Commander's own messages (help, usage errors) go to
 * `io` too, and end the parse by throwing a CommanderError (not by exiting the process).
 */
export function buildProgram(io: CliIo = processIo()): Command {
  const program = new Command('tagger')
    .description('Train, inspect and serve text-tagging models tracked as MLflow runs.')
    .version(versionLine(), '-V, --version', 'print the version of tagger and of the Node.js it runs on')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Every command's help wraps at HELP_WIDTH, or at a narrower terminal's width. (Commander's default,
      // 80 off a terminal, left `serve --help` unwrapped: its option names and the 40 columns commander
      // wants for a description did not fit in 80, so it printed lines of up to 418 characters.)
      getOutHelpWidth: () => helpWidth(io.stdout),
      getErrHelpWidth: () => helpWidth(io.stderr),
    });
  registerTrain(program, io);
  registerAlias(program, io);
  registerOptimize(program, io);
  registerPredict(program, io);
  registerEvaluate(program, io);
  registerLabelIssues(program, io);
  registerFeedback(program, io);
  registerRetrain(program, io);
  registerServe(program, io, explain);
  return program;
}

/**
 * Runs one command line; resolves to the exit status (0 success, 1 failure, 130/143 interrupted).
 * Everything it prints is printable: control characters from inputs are shown as `\uXXXX` (terminal.ts).
 * @example process.exitCode = await main(['predict', 'Transformers for NER']);
 */
export async function main(argv: readonly string[], given: CliIo = processIo()): Promise<number> {
  const io = printableIo(given);
  const program = buildProgram(io);
  const undo: (() => void)[] = [];
  program.hook('preAction', (_program, action) => {
    // The command under the program (`alias` for `alias set`).
    let command = action;
    while (command.parent && command.parent !== program) command = command.parent;
    if (command.name() === 'serve') return;
    undo.push(fewerRetriesFor(command.name()), reportTrackingRetries(io));
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    // Commander has already printed its message (or the help) to io.
    if (error instanceof CommanderError) return error.exitCode;
    io.stderr.write(`tagger: ${printable(explain(error))}\n`);
    return error instanceof InterruptedError ? error.exitCode : 1;
  } finally {
    for (const done of undo.reverse()) done();
  }
}
