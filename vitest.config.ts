import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The folders of test/ whose tests run only in the full suite (`npm test`), each with its reason: what
 * every test there starts. Every other folder of test/ is in the fast unit subset, `npm run test:unit`
 * (`vitest run --mode unit`), so a folder added or renamed is in it without a line here — before issue 42
 * the unit folders were listed by hand and still named `service` and `serve` after their renames, which
 * left test/served-models, test/server and test/platform in no unit run. test/suites.test.ts fails when a
 * name here is no folder of test/, or a NOT_UNIT pattern matches no file.
 */
export const FULL_SUITE_FOLDERS: Readonly<Record<string, string>> = {
  e2e: 'real tagger processes under load',
  deploy: 'the container image, podman, compose, haproxy, Kubernetes manifests',
  encoder: 'the real ONNX sentence encoder, in worker threads',
  cli: 'the tagger command, which trains models per command (in-process and as processes)',
  batch: 'batch tagging reads and writes each file in a worker thread',
  support: 'the test plumbing itself: child processes, the reporter run again, a machine-wide lock',
};

/** The folders of test/ in the unit subset: all but FULL_SUITE_FOLDERS. */
export const UNIT_FOLDERS: readonly string[] = readdirSync(resolve(import.meta.dirname, 'test'), {
  withFileTypes: true,
})
  .filter((entry) => entry.isDirectory() && !Object.hasOwn(FULL_SUITE_FOLDERS, entry.name))
  .map((entry) => entry.name)
  .sort();

/**
 * The fast unit subset: the tests that start no real server, process, browser, Python or container —
 * pure code, app.inject, files in temp folders — and finish in seconds: test/*.test.ts and the unit
 * folders…
 */
const UNIT = ['test/*.test.ts', ...UNIT_FOLDERS.map((folder) => `test/${folder}/**/*.test.ts`)];
/**
 * …less the tests in them that start one, or that are slow for another reason: they train on the shared
 * data set, train many models, start worker threads (the encoder's, cross-validation's), listen on a port,
 * or sleep. A test added to a unit folder is a unit test unless it is named or placed like these.
 */
export const NOT_UNIT = [
  '**/*.browser.test.ts', // Chromium
  '**/*-interop.test.ts', // MLflow's Python client and tracking server
  '**/*concurrency.test.ts', // racing writer processes, PostgreSQL
  '**/*-parity.test.ts', // scikit-learn in Python
  '**/*.dataset.test.ts', // trains on the shared data set (../shared/data), minutes of CPU in all
  'test/tracking/{rest,sql}/**', // MLflow tracking servers, loopback HTTP fakes, PostgreSQL
  'test/tracking/lock-file.test.ts', // 30 rounds of waiters that sleep between tries; a child process
  'test/model/classifiers/contract.test.ts', // trains every classifier of every family: 20 configurations
  'test/train/log-run-signals.test.ts', // `tagger train` in a child process
  'test/train/{cross-validate,optimize,parallel}.test.ts', // pools of worker threads (cross-validation, a training's)
  'test/train/encoder.test.ts', // the real ONNX sentence encoder, in worker threads
  'test/train/cascade-training.test.ts', // cross-validates cascades: both stages' out-of-fold models, five configurations
  'test/train/model-choice/choose.test.ts', // the model choice on ten made data sets: every candidate kind, each trained and refitted
  'test/http/feedback.test.ts', // waits out feedback's wait for a record on its way (10 s) before `pending`
  'test/server/{server,cluster,parent-watch,drain}.test.ts', // listening servers, serve processes, process chains
  'test/served-models/encoder-serving.test.ts', // the real ONNX sentence encoder, in worker threads
  'test/http/shared-rate-limit.test.ts', // redis-server
  'test/hardening/{hostile,load,schemathesis,credentials,oversize-body}.test.ts', // real sockets, autocannon, schemathesis, serve processes, Python and curl
  'test/monitoring/{record-stores,cloudevents}.test.ts', // PostgreSQL, a listening CloudEvents receiver
  'test/monitoring/recorder.test.ts', // waits out write retries and their backoff
];
export default defineConfig(({ mode }) => ({
  test: {
    include: mode === 'unit' ? UNIT : ['test/**/*.test.ts'],
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
    // Tests that start real servers (MLflow, Chromium) are heavy on a 2-core machine. The unit subset runs
    // in one worker: its files share that worker's modules and trained fixtures, which a second worker
    // would import and train again — measured side by side on the shared 2-core VM, 65–70 s of CPU with
    // one worker against 72–87 s with two (wall time: 87–120 s against 77–104 s at load 4–6).
    maxWorkers: mode === 'unit' ? 1 : 2,
    // The unit subset keeps the transformed modules on disk between runs (node_modules/.experimental-
    // vitest-cache; `vitest --clearCache` empties it): collecting it took 4–5 s less CPU of ~21 s.
    experimental: { fsModuleCache: mode === 'unit' },
    // The summary reporter prints the plain closing line `tests: N passed, N failed, N skipped`.
    reporters: ['default', './test/support/summary-reporter.ts'],
    // The full suite builds the container image once, in the background, when a selected test needs it
    // (test/support/image-setup.ts); the unit subset never builds one.
    globalSetup: mode === 'unit' ? [] : ['./test/support/image-setup.ts'],
  },
}));
