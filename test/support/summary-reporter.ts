// A vitest reporter that closes the run with one plain, colour-free line: `tests: N passed, N failed, N skipped`.
// vitest's own summary is coloured and spread over several lines; CI tooling that reads a run's closing line
// (and people skimming a log) need the counts in the common `N passed, N failed` shape, printed last.
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<unknown>,
    reason: TestRunEndReason,
  ): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failed += 1;
        else skipped += 1;
      }
      // A file that fails to load has no test cases but must still count as a failure.
      if (module.state() === 'failed' && !module.children.size) failed += 1;
    }
    failed += unhandledErrors.length;
    const interrupted = reason === 'interrupted' ? ' (interrupted)' : '';
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped${interrupted}\n`);
  }
}
