// A vitest reporter that closes the run with one plain, colour-free line: `tests: N passed, N failed, N skipped`.
// vitest's own summary is coloured and spread over several lines; CI tooling that reads a run's closing line
// (and people skimming a log) need the counts in the common `N passed, N failed` shape, printed last.
//
// "failed" counts every failure of the run, not only failed test cases: a hook that failed (a beforeAll
// that timed out while building an image leaves its tests *skipped*, not failed), a file that could not be
// loaded, and errors outside any test. A run with a failure never closes on "0 failed".
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';

/** The counts of a finished run, as the closing line prints them. */
export interface RunCounts {
  passed: number;
  failed: number;
  skipped: number;
}

/**
 * Counts tests by state, plus one failure per error reported on a file or a suite (its hooks, its
 * collection) and per unhandled error.
 */
export function countRun(
  testModules: ReadonlyArray<TestModule>,
  unhandledErrors: ReadonlyArray<unknown>,
): RunCounts {
  const counts: RunCounts = { passed: 0, failed: 0, skipped: 0 };
  for (const module of testModules) {
    for (const test of module.children.allTests()) {
      const state = test.result().state;
      if (state === 'passed') counts.passed += 1;
      else if (state === 'failed') counts.failed += 1;
      else counts.skipped += 1;
    }
    // Errors of the file itself (loading it, its top-level hooks) and of each suite (its hooks).
    const errors = [module, ...module.children.allSuites()].reduce(
      (n, suite) => n + suite.errors().length,
      0,
    );
    counts.failed += errors;
    // A file that failed without saying why (no test failed, no error recorded) is still a failure.
    if (module.state() === 'failed' && errors === 0 && ![...module.children.allTests('failed')].length) {
      counts.failed += 1;
    }
  }
  counts.failed += unhandledErrors.length;
  return counts;
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<unknown>,
    reason: TestRunEndReason,
  ): void {
    const { passed, failed, skipped } = countRun(testModules, unhandledErrors);
    const interrupted = reason === 'interrupted' ? ' (interrupted)' : '';
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped${interrupted}\n`);
  }
}
