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
 * `--no-maglev`: Node 24's V8 compiles warm functions with Maglev, a mid-tier optimising compiler, before
 * TurboFan takes the hot ones. Under load it cost a serving process ~16 MB of peak RSS (single-text then
 * 1,000-text load, 5 alternating pairs: VmHWM 151–154 MB with it, 135–140 MB without) and no throughput
 * after a 3 s warm-up (medians 9,433 vs 9,576 single-text req/s, 80.0 vs 80.0 1,000-text req/s), nor
 * startup time with 1,000 runs (1.28–1.31 s vs 1.22–1.32 s); 2026-11-25. Node 20 did not enable Maglev.
 *
 * V8 reads these flags only when the process starts, and Node refuses all but `--max-semi-space-size` in
 * `NODE_OPTIONS`, so they have to be on the command line of the process that serves: `npm start` and the
 * `--workers` primary pass them to the processes they start, the container's entry point has them, and a
 * single-process `tagger serve` needs them on its `node` command line (see the README).
 */
export const SERVE_NODE_FLAGS: readonly string[] = Object.freeze([
  '--max-semi-space-size=8',
  '--heap-growing-percent=20',
  '--no-maglev',
]);

/** `--max_semi_space_size=4` and `--max-semi-space-size 4` name the same V8 flag, as `--maglev` and `--no-maglev` do. */
const flagName = (arg: string): string =>
  arg
    .split('=')[0]!
    .replaceAll('_', '-')
    .replace(/^--no-/, '--');

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
