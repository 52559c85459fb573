import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The fast unit subset, `npm run test:unit` (`vitest run --mode unit`): the tests that start no real
 * server, process, browser, Python or container — pure code, app.inject, files in temp folders — and
 * finish in seconds. It is these folders (and test/*.test.ts)…
 */
const UNIT = [
  'test/*.test.ts',
  'test/{model,train,tracking,http,service,serve,hardening,ui,monitoring}/**/*.test.ts',
] as const;
/**
 * …less the tests in them that do start one. A test added to those folders is a unit test unless it is
 * named or placed like these; e2e/, deploy/ and cli/ (which trains models per command) run only in the
 * full suite (`npm test`).
 */
const NOT_UNIT = [
  '**/*.browser.test.ts', // Chromium
  '**/*-interop.test.ts', // MLflow's Python client and tracking server
  '**/*concurrency.test.ts', // racing writer processes, PostgreSQL
  'test/tracking/{rest,sql}/**', // MLflow tracking servers, loopback HTTP fakes, PostgreSQL
  'test/model/text/tfidf-parity.test.ts', // scikit-learn in Python
  'test/train/log-run-signals.test.ts', // `tagger train` in a child process
  'test/serve/{server,cluster,parent-watch}.test.ts', // listening servers, serve processes, process chains
  'test/http/shared-rate-limit.test.ts', // redis-server
  'test/hardening/{hostile,load,schemathesis}.test.ts', // real sockets, autocannon, schemathesis
  'test/monitoring/{record-stores,cloudevents}.test.ts', // PostgreSQL, a listening CloudEvents receiver
];

export default defineConfig(({ mode }) => ({
  test: {
    include: mode === 'unit' ? [...UNIT] : ['test/**/*.test.ts'],
    exclude: mode === 'unit' ? [...configDefaults.exclude, ...NOT_UNIT] : [...configDefaults.exclude],
    testTimeout: 30_000,
    hookTimeout: 240_000,
    // beforeAll hooks in the order registered, afterAll hooks in reverse (vitest's default, pinned here):
    // test/support/serving-fixture.ts relies on it to close its fixture after what a file started over it.
    sequence: { hooks: 'stack' },
    // Tests that start real servers (MLflow, Chromium) are heavy on a 2-core machine.
    maxWorkers: 2,
    // The summary reporter prints the plain closing line `tests: N passed, N failed, N skipped`.
    reporters: ['default', './test/support/summary-reporter.ts'],
    // The full suite builds the container image once, in the background, when a selected test needs it
    // (test/support/image-setup.ts); the unit subset never builds one.
    globalSetup: mode === 'unit' ? [] : ['./test/support/image-setup.ts'],
  },
}));
