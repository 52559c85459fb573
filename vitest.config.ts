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
 * …less the tests in them that start one, or that are slow for another reason: they train on the shared
 * data set, train many models, start worker threads (the encoder's, cross-validation's, batch tagging's),
 * or sleep. A test added to those folders is a unit test unless it is named or placed like these; e2e/,
 * deploy/, encoder/ and cli/ (which trains models per command) run only in the full suite (`npm test`).
 */
const NOT_UNIT = [
  '**/*.browser.test.ts', // Chromium
  '**/*-interop.test.ts', // MLflow's Python client and tracking server
  '**/*concurrency.test.ts', // racing writer processes, PostgreSQL
  '**/*-parity.test.ts', // scikit-learn in Python
  '**/*.dataset.test.ts', // trains on the shared data set (../shared/data), minutes of CPU in all
  'test/tracking/{rest,sql}/**', // MLflow tracking servers, loopback HTTP fakes, PostgreSQL
  'test/tracking/lock-file.test.ts', // 30 rounds of waiters that sleep between tries; a child process
  'test/model/classifiers/contract.test.ts', // trains every classifier of every family: 20 configurations
  'test/train/log-run-signals.test.ts', // `tagger train` in a child process
  'test/train/{cross-validate,optimize}.test.ts', // pools of cross-validation worker threads
  'test/train/encoder.test.ts', // the real ONNX sentence encoder, in worker threads
  'test/server/{server,cluster,parent-watch}.test.ts', // listening servers, serve processes, process chains
  'test/served-models/encoder-serving.test.ts', // the real ONNX sentence encoder, in worker threads
  'test/batch/*.test.ts', // batch tagging reads and writes each file in a worker thread
  'test/http/shared-rate-limit.test.ts', // redis-server
  'test/hardening/{hostile,load,schemathesis,credentials,oversize-body}.test.ts', // real sockets, autocannon, schemathesis, serve processes, Python and curl
  'test/monitoring/{record-stores,cloudevents}.test.ts', // PostgreSQL, a listening CloudEvents receiver
  'test/monitoring/recorder.test.ts', // waits out write retries and their backoff
];
export default defineConfig(({ mode }) => ({
  test: {
    include: mode === 'unit' ? [...UNIT] : ['test/**/*.test.ts'],
    // The unit subset is pure tests, so the files a worker runs share its module cache: importing Fastify,
    // TypeBox and the model code once per worker instead of once per file takes a third off the subset's
    // time. The full suite isolates every file.
    isolate: mode !== 'unit',
    exclude: mode === 'unit' ? [...configDefaults.exclude, ...NOT_UNIT] : [...configDefaults.exclude],
    // Generous: a training or a spawned server takes several times longer on a busy shared machine.
    testTimeout: 60_000,
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
