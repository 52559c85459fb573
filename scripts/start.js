#!/usr/bin/env node
// `npm start`: serve the best run of the tracking store. On a fresh clone the default store
// (sqlite:///mlflow.db, MLflow's default: ./mlflow.db; ./mlruns instead when that folder already holds
// experiments) has no runs, so a first model is trained on the bundled sample data before serving.
// Honours the same settings as `tagger serve` (variables such as MLFLOW_TRACKING_URI, TAGGER_PORT, a
// TAGGER_CONFIG file; docs/configuration.md).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(cli)) {
  process.stderr.write('start: dist/ is missing; run `npm run setup` (or `npm run build`) first.\n');
  process.exit(1);
}

const { openTrackingStore, redactUri } = await import('../dist/tracking/index.js');
const { resolveSettings } = await import('../dist/server/config.js');
const { serveExecArgv } = await import('../dist/server/node-flags.js');
const { PARENT_FORWARDS_SIGNALS_ENV, watchParent } = await import('../dist/server/parent-watch.js');
const { StopSignalClassifier } = await import('../dist/server/stop-signals.js');
// The same settings `tagger serve` will use (variables, then TAGGER_CONFIG's file, then defaults).
let settings;
try {
  settings = resolveSettings({}, process.env);
} catch (error) {
  process.stderr.write(`start: ${error.message}\n`);
  process.exit(1);
}
const experiment = settings.get('experiment').value;
const trackingUri = settings.get('tracking_uri').value;
const samples = fileURLToPath(new URL('../samples/projects.csv', import.meta.url));

async function hasRuns() {
  // Only a look: a store that is not there yet has no runs (training creates it), and is not created here.
  let store;
  try {
    store = await openTrackingStore(trackingUri, { readOnly: true });
  } catch (error) {
    if (error?.code === 'NOT_FOUND') return false;
    throw error;
  }
  try {
    const found = await store.getExperimentByName(experiment);
    if (found?.lifecycleStage !== 'active') return false;
    return (await store.searchRuns(found.experimentId)).length > 0;
  } finally {
    await store.close();
  }
}

const run = (args) =>
  spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit', cwd: root }).status ?? 1;

if (!(await hasRuns())) {
  process.stdout.write(
    `start: no runs in experiment '${experiment}' at ${redactUri(trackingUri)}; training one on ${samples}\n`,
  );
  const status = run([
    'train',
    '--data',
    samples,
    '--experiment',
    experiment,
    '--run-name',
    'sample-quickstart',
  ]);
  if (status !== 0) process.exit(status);
}
// The server runs as a child so that it is the same `tagger serve` users run, started with the serve
// flags (src/server/node-flags.ts); signals are forwarded so a process manager stopping `npm start` gets a
// graceful shutdown. It watches only us (we forward, and watch npm above us: src/server/parent-watch.ts).
const server = spawn(process.execPath, [...serveExecArgv([]), cli, 'serve', ...process.argv.slice(2)], {
  stdio: 'inherit',
  cwd: root,
  env: { ...process.env, [PARENT_FORWARDS_SIGNALS_ENV]: String(process.pid) },
});
// A signal to the process group (Ctrl-C, systemd's KillMode=control-group) reaches the server directly
// too; a copy of the first stop signal is not passed on, or the server would take it for a second one
// and skip its drain. A person's second signal is (src/server/stop-signals.ts).
const stops = new StopSignalClassifier();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (stops.classify(signal) !== 'repeat') server.kill(signal);
  });
}
process.on('SIGHUP', () => server.kill('SIGHUP'));
// npm runs this script through `sh -c`; stopping npm ends npm and that shell without signalling us, and
// killing npm leaves the shell behind, so losing npm or the shell counts as SIGTERM
// (src/server/parent-watch.ts) — unless a stop signal already came, which npm's exit then follows.
watchParent(() => server.kill('SIGTERM'));
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
