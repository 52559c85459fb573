import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 240_000,
    // beforeAll hooks in the order registered, afterAll hooks in reverse (vitest's default, pinned here):
    // test/support/serving-fixture.ts relies on it to close its fixture after what a file started over it.
    sequence: { hooks: 'stack' },
    // Tests that start real servers (MLflow, Chromium) are heavy on a 2-core machine.
    maxWorkers: 2,
    // The summary reporter prints the plain closing line `tests: N passed, N failed, N skipped`.
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
