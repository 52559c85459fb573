/**
 * A test-only preload for a real `tagger` process (`node --import tsx --import <this file>
 * src/cli/main.ts …`): prints `peak rss <KiB>` on stderr as the process exits — the most memory it ever
 * held, worker threads included — so a test can check that memory stays flat without sampling it.
 * `test/cli/predict-file-limits.test.ts` uses it.
 */
process.on('exit', () => {
  process.stderr.write(`peak rss ${process.resourceUsage().maxRSS}\n`);
});
