/**
 * Node/V8 flags the serving processes run with, added only where the user has not set the same flag.
 *
 * `--max-semi-space-size=8` (MiB; V8's default cap was 16 on 64-bit Node 20 and is derived from the heap limit on Node 24): startup (reading runs, decoding
 * models) and batched requests make V8 grow the young generation to its cap and keep it, which is what
 * put peak RSS under 1,000-text requests at 150–180 MB. Capped at 8 MiB, the peak measured 118–129 MB with
 * single-text and 1,000-text throughput unchanged within noise (side by side, alternating, on this
 * project's bench fixture; 4 MiB cut the peak further, to ~109 MB, but batched throughput looked lower).
 *
 * `--heap-growing-percent=20`: after a full GC V8 lets the heap grow to a multiple of what survived before
 * the next one, a multiple it raises while GC is cheap; on a machine with plenty of memory it sometimes let
 * the old generation grow to 145–165 MB committed under load, so a process that normally peaks at
 * 150–160 MB reached 220–290 MB (1,000-text loads: 6 of 16 runs; single-text loads: 2 of 11; 12–20 s at
 * 50 connections). Growing by at most 20 % per full GC, no run went past 158 MB (27 runs), with
 * single-text and 1,000-text throughput the same within noise (alternating runs, 2026-11-25); startup with
 * 1,000 runs in SQLite took ~0.17 s longer (0.97 → 1.15 s) and idle RSS 6 MB less. Such a spike could
 * get a process killed in a small container.
 *
 * V8 reads this flag only when the process starts, so it has to be on the command line of the process that
 * serves: `npm start` and the `--workers` primary pass it to the processes they start; a single-process
 * `tagger serve` gets it from `NODE_OPTIONS` (see the README).
 */
export const SERVE_NODE_FLAGS: readonly string[] = Object.freeze([
  '--max-semi-space-size=8',
  '--heap-growing-percent=20',
]);

/** `--max_semi_space_size=4` and `--max-semi-space-size 4` name the same V8 flag. */
const flagName = (arg: string): string => arg.split('=')[0]!.replaceAll('_', '-');

/**
 * `execArgv` plus every serve flag whose name appears neither in it nor in `nodeOptions` (the user's
 * NODE_OPTIONS, which Node applies to child processes too), so a user's own setting always wins.
 * @example serveExecArgv(['--import', 'tsx'], '') // ['--import', 'tsx', '--max-semi-space-size=8', '--heap-growing-percent=20']
 */
export function serveExecArgv(
  execArgv: readonly string[],
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string[] {
  const present = new Set(
    [...execArgv, ...nodeOptions.split(/\s+/)].filter((a) => a.startsWith('--')).map(flagName),
  );
  return [...execArgv, ...SERVE_NODE_FLAGS.filter((flag) => !present.has(flagName(flag)))];
}
