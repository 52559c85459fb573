/**
 * End to end against a real `mlflow server`: the `tagger` CLI as users run it (real processes) trains
 * into and serves from the tracking server, MLflow's Python client reads what Tagger logged and logs
 * runs Tagger serves, the server goes away while Tagger serves, and basic auth guards training.
 *
 * One MLflow server per describe block (startup runs migrations, ~10 s on a shared 2-core box); cases
 * in a block share it and run in order. Python: `python/mlflow_interop.py` (reads) and
 * `python/log_tagger_runs.py` (logs runs whose artifacts a `tagger train` produced).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileTrackingStore } from '../../src/tracking/file/file-store.js';
import { RestTrackingStore } from '../../src/tracking/rest/rest-store.js';
import { CLI_ENTRY, trainArgv } from '../support/cli.js';
import { REPO_ROOT, SAMPLE_DATA, TSX_LOADER, venvPython } from '../support/components.js';
import { freePort } from '../support/free-port.js';
import { type MlflowServer, startMlflowServer, venvMlflow } from '../support/mlflow-server.js';
import { killServers, type ServeCommand, spawnServe } from '../support/serve-process.js';
import { useTempDir } from '../support/temp-dir.js';

const mlflow = venvMlflow();
const python = mlflow ? venvPython() : null;
const CLI = CLI_ENTRY;
const INTEROP = resolve(REPO_ROOT, 'python', 'mlflow_interop.py');
const LOG_RUNS = resolve(REPO_ROOT, 'python', 'log_tagger_runs.py');
/** Bound of a block's setup (an MLflow server start, trainings, Python): generous for a loaded CI box. */
const SETUP_TIMEOUT_MS = 240_000;
const FAST = JSON.stringify({ num_epochs: 3, ngram_max_range: 4 });
/** The SGD model (the defaults before the soft vote): its runs log one loss point per epoch. */
const SGD_FAST = JSON.stringify({ classifier: 'ovr', oversample: true, num_epochs: 3, ngram_max_range: 4 });
const TEXTS = [
  { text: 'Transfer learning with transformers for text classification.' },
  { text: 'Real-time object detection on video streams.' },
];

// ---------------------------------------------------------------------------------------------------
// Processes

/** The environment of a child: the developer's MLflow/Tagger variables never leak in. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('MLFLOW_') && !key.startsWith('TAGGER_')) env[key] = value;
  }
  return { ...env, PYTHONWARNINGS: 'ignore', ...extra };
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** One `tagger` command to completion. */
function tagger(cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, CLI, ...args],
      { cwd, env: childEnv(env), timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

interface TrainOutput {
  run_id: string;
  run_name: string;
  experiment: string;
  experiment_id: string;
  metrics: { precision: number; recall: number; f1: number };
}

async function train(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
  trainingArgs = FAST,
): Promise<TrainOutput> {
  const result = await tagger(
    cwd,
    ['train', '--data', SAMPLE_DATA, '--args', trainingArgs, '--json', ...args],
    env,
  );
  if (result.code !== 0) throw new Error(`tagger train failed (${result.code}):\n${result.stderr}`);
  return JSON.parse(result.stdout) as TrainOutput;
}

interface ServeProcess extends ServeCommand {
  /** `http://127.0.0.1:<port>`, parsed from the server's log. */
  url: string;
}

// Also the ones a timed-out setup never got to return.
afterAll(() => {
  killServers();
});

/** `tagger serve ... --port 0` as a real process; resolves once it logs its listening address. */
async function serve(cwd: string, args: string[], env: Record<string, string> = {}): Promise<ServeProcess> {
  const command = spawnServe(['--port', '0', ...args], {
    cwd,
    // One process: with several workers each has its own registry and caches, and requests land on
    // any of them, so "already cached" would depend on which worker answers.
    env: { PYTHONWARNINGS: 'ignore', TAGGER_WORKERS: '1', TAGGER_SHUTDOWN_DELAY_MS: '0', ...env },
    detached: true,
  });
  return { ...command, url: await command.listening() };
}

/** Runs one of the Python helpers: one JSON command on stdin, one JSON answer on stdout. */
function runPython<T>(script: string, command: Record<string, unknown>): Promise<T> {
  return new Promise((done, fail) => {
    const child = execFile(
      python!,
      [script],
      { env: childEnv(), maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error) return fail(new Error(`${script} failed: ${error.message}\n${stderr}`));
        let answer: T & { error?: string };
        try {
          answer = JSON.parse(stdout) as T & { error?: string };
        } catch {
          return fail(new Error(`${script} printed no JSON answer:\n${stdout}\n${stderr}`));
        }
        if (answer.error) fail(new Error(`${script}: ${answer.error}`));
        else done(answer);
      },
    );
    child.stdin?.end(JSON.stringify(command));
  });
}

type JsonFloat = number | 'NaN' | 'Infinity' | '-Infinity';
interface PyRun {
  run_name: string;
  status: string;
  start_time: number;
  end_time: number | null;
  metrics: Record<string, JsonFloat>;
  params: Record<string, string>;
  history: Record<string, { value: JsonFloat; step: number }[]>;
  artifacts: Record<string, { path: string; is_dir: boolean; file_size: number | null }[]>;
  downloads: Record<string, string>;
}
interface PyRead {
  experiment_id: string;
  order: string[];
  runs: Record<string, PyRun>;
}

/** MLflow's view of experiment `best`: `search_runs(order_by=["metrics.f1 DESC"])` plus details. */
function readBest(trackingUri: string, extra: Record<string, unknown> = {}): Promise<PyRead> {
  return runPython<PyRead>(INTEROP, {
    command: 'read',
    tracking_uri: trackingUri,
    experiment_name: 'best',
    order_by: ['metrics.f1 DESC'],
    ...extra,
  });
}

const decode = (base64: string | undefined): unknown =>
  JSON.parse(Buffer.from(base64 ?? '', 'base64').toString('utf8'));

interface ApiAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field.
  body: any;
}

/** One request to Tagger, bounded so a hang fails the test instead of stalling it. */
async function api(base: string, path: string, body?: unknown): Promise<ApiAnswer> {
  const response = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** What `GET /runs` should say about a run, from MLflow's Python client. */
/** The /runs record of a run; the best (first in MLflow's order) is the one served here. */
/** A run record as Tagger serves it from the MLflow server at `serverUri` (linking MLflow's UI). */
function expectedRecord(
  runId: string,
  run: PyRun,
  servedRunId: string,
  serverUri: string,
  experimentId: string,
) {
  return {
    run_id: runId,
    run_name: run.run_name,
    status: run.status,
    start_time: new Date(run.start_time).toISOString(),
    end_time: run.end_time === null ? null : new Date(run.end_time).toISOString(),
    metrics: run.metrics,
    params: run.params,
    served: runId === servedRunId,
    // The data checks' warnings of its training (tag tagger.warnings; none for these data).
    warnings: [],
    mlflow_url: `${serverUri}/#/experiments/${experimentId}/runs/${runId}`,
    unused_params: unusedParamsExpected(run.params),
  };
}

/**
 * The params of another kind than the run's, as the record lists them (test/model/classifiers/
 * kind-args.test.ts pins the lists): some of the run's own param names, sorted; a vote's fastText and SGD
 * ones but never its members, an SGD run's fastText ones and the vote's members but never its rates.
 */
function unusedParamsExpected(params: Record<string, string>) {
  const classifier = params.classifier?.replace(/^"(.*)"$/, '$1');
  const [unused, used] =
    classifier === 'soft_vote'
      ? [
          ['ft_dim', 'learning_rate'],
          ['members', 'analyzer'],
        ]
      : classifier === 'ovr'
        ? [
            ['ft_dim', 'members'],
            ['learning_rate', 'analyzer'],
          ]
        : [[], ['analyzer']];
  return expect.toSatisfy((names: unknown) => {
    if (!Array.isArray(names)) return false;
    const sorted = [...names].sort();
    return (
      names.every((name, i) => name === sorted[i] && Object.hasOwn(params, name)) &&
      unused.every((name) => !Object.hasOwn(params, name) || names.includes(name)) &&
      used.every((name) => !names.includes(name))
    );
  }, `the params of another kind than ${classifier}'s`);
}

// ---------------------------------------------------------------------------------------------------

describe.skipIf(!mlflow || !python)('tagger train and serve against a real MLflow tracking server', () => {
  let server: MlflowServer;
  const scratch = useTempDir('tagger-e2e-');
  let viaFlag: TrainOutput;
  let viaEnv: TrainOutput;
  let seen: PyRead;

  beforeAll(async () => {
    server = await startMlflowServer(mlflow!);
    // One SGD run and one of the default soft vote.
    viaFlag = await train(
      scratch.path,
      ['--tracking-uri', server.uri, '--run-name', 'e2e-flag'],
      {},
      SGD_FAST,
    );
    viaEnv = await train(scratch.path, ['--run-name', 'e2e-env', '--seed', '7'], {
      MLFLOW_TRACKING_URI: server.uri,
    });
    seen = await readBest(server.uri, {
      history_keys: ['train_loss', 'val_loss'],
      artifact_dirs: ['', 'model'],
      download: ['args.json', 'performance.json', 'model/tagger-model.json'],
    });
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
  });

  it('train logs runs (via --tracking-uri and via MLFLOW_TRACKING_URI) that MLflow reads back', () => {
    expect(viaFlag.experiment_id).toBe(seen.experiment_id);
    expect(viaEnv.experiment_id).toBe(seen.experiment_id);
    expect([...seen.order].sort()).toEqual([viaFlag.run_id, viaEnv.run_id].sort());
    for (const [output, name, seed] of [
      [viaFlag, 'e2e-flag', '42'],
      [viaEnv, 'e2e-env', '7'],
    ] as const) {
      const run = seen.runs[output.run_id];
      if (!run) throw new Error(`MLflow does not list run ${output.run_id}`);
      expect(run.run_name).toBe(name);
      expect(run.status).toBe('FINISHED');
      expect(run.end_time).not.toBeNull();

      // Params: every training argument (as args.json has it), the seed and the data file.
      const args = decode(run.downloads['args.json']) as Record<string, unknown>;
      expect(args).toMatchObject({ num_epochs: 3, ngram_max_range: 4 });
      for (const [key, value] of Object.entries(args)) {
        expect(run.params[key], key).toBe(typeof value === 'string' ? value : JSON.stringify(value));
      }
      expect(run.params.seed).toBe(seed);
      expect(run.params.data).toBe(SAMPLE_DATA);

      // Final metrics as the CLI printed them, and one train/val loss point per epoch: 3 for the SGD run,
      // 1 for the vote (solved exactly, no epochs).
      for (const key of ['precision', 'recall', 'f1'] as const) {
        expect(run.metrics[key], key).toBe(output.metrics[key]);
      }
      const epochs = output === viaFlag ? 3 : 1;
      for (const key of ['train_loss', 'val_loss']) {
        const history = run.history[key] ?? [];
        expect(history, key).toHaveLength(epochs);
        expect(new Set(history.map((point) => point.step)).size, key).toBe(epochs);
        for (const point of history) {
          expect(typeof point.value === 'number' && point.value > 0, `${key} ${point.value}`).toBe(true);
        }
        const last = [...history].sort((a, b) => a.step - b.step).at(-1);
        expect(run.metrics[key]).toBe(last?.value);
      }

      // Artifacts: args.json, performance.json and the model folder, readable through the proxy.
      const root = (run.artifacts[''] ?? []).map((entry) => [entry.path, entry.is_dir]);
      expect(root).toEqual(
        expect.arrayContaining([
          ['args.json', false],
          ['performance.json', false],
          ['model', true],
        ]),
      );
      const model = (run.artifacts.model ?? []).map((entry) => entry.path);
      expect(model).toContain('model/tagger-model.json');
      expect(decode(run.downloads['model/tagger-model.json'])).toMatchObject({
        format: expect.stringMatching(/^tagger-model\/[\d.]+$/),
      });
      const performance = decode(run.downloads['performance.json']) as { overall: { f1: number } };
      expect(performance.overall.f1).toBe(output.metrics.f1);
    }
  });

  it('serve --tracking-uri serves the best run of experiment best from the server', async () => {
    // The two runs were trained with different seeds, so on different test splits: without this the
    // promotion gate would serve the first one, whatever the f1s (docs/serving.md#promotion-gates).
    const tagger = await serve(scratch.path, ['--tracking-uri', server.uri], {
      TAGGER_ALLOW_INCOMPARABLE: 'true',
    });
    try {
      const runs = await api(tagger.url, '/runs');
      expect(runs.status).toBe(200);
      expect(runs.body.data.runs.map((run: { run_id: string }) => run.run_id)).toEqual(seen.order);
      expect(runs.body.data.runs).toEqual(
        seen.order.map((id) =>
          expectedRecord(id, seen.runs[id]!, seen.order[0]!, server.uri, seen.experiment_id),
        ),
      );

      const best = seen.order[0]!;
      const predicted = await api(tagger.url, '/predict', { texts: TEXTS });
      expect(predicted.status).toBe(200);
      expect(predicted.body.data.run_id).toBe(best);
      expect(predicted.body.data.predictions).toHaveLength(TEXTS.length);

      for (const id of seen.order) {
        const run = await api(tagger.url, `/runs/${id}`);
        expect(run.status, id).toBe(200);
        expect(run.body.data).toEqual({
          run_id: id,
          performance: decode(seen.runs[id]?.downloads['performance.json']),
          warnings: [],
        });
      }
      const args = await api(tagger.url, '/args');
      expect(args.body.data.args).toEqual(decode(seen.runs[best]?.downloads['args.json']));
    } finally {
      await tagger.stop();
    }
  }, 120_000);
});

describe.skipIf(!mlflow || !python)('runs logged by Python MLflow with Tagger-trained artifacts', () => {
  let server: MlflowServer;
  const scratch = useTempDir('tagger-e2e-interop-');
  /** The local runs whose artifacts folders the Python runs upload. */
  const local: { runId: string; artifactsDir: string }[] = [];
  /** Python run name → [chosen f1, index into `local`]. */
  const chosen: Record<string, [number | 'NaN', number]> = {
    'py-mid': [0.61, 0],
    'py-best': [0.93, 1],
    'py-good': [0.77, 0],
    'py-nan': ['NaN', 1],
  };
  let created: Record<string, string>;
  let seen: PyRead;
  let tagger: ServeProcess | undefined;

  beforeAll(async () => {
    const mlruns = join(scratch.path, 'mlruns');
    // Two local trainings with different seeds: different models and reports.
    server = await startMlflowServer(mlflow!);
    const trained = await Promise.all([
      train(scratch.path, ['--tracking-uri', mlruns, '--seed', '1']),
      train(scratch.path, ['--tracking-uri', mlruns, '--seed', '2']),
    ]);
    const store = await FileTrackingStore.open(mlruns);
    try {
      for (const output of trained) {
        const run = await store.getRun(output.run_id);
        if (!run) throw new Error(`local run ${output.run_id} not found`);
        local.push({ runId: output.run_id, artifactsDir: fileURLToPath(run.info.artifactUri) });
      }
    } finally {
      await store.close();
    }

    const names = Object.keys(chosen);
    const answer = await runPython<{ created: string[] }>(LOG_RUNS, {
      tracking_uri: server.uri,
      experiment_name: 'best',
      runs: names.map((name) => {
        const [f1, source] = chosen[name]!;
        return {
          name,
          params: { origin: 'python', local_run_id: local[source]!.runId },
          metrics: { f1, precision: 0.5 },
          artifacts_dir: local[source]!.artifactsDir,
        };
      }),
    });
    created = Object.fromEntries(names.map((name, i) => [name, answer.created[i]!]));
    seen = await readBest(server.uri);
    // MLFLOW_TRACKING_URI (not the flag) for serve; one retry keeps store failures quick below, and a
    // 1 s reload poll makes sure the poller, too, meets the outage.
    tagger = await serve(scratch.path, [], {
      MLFLOW_TRACKING_URI: server.uri,
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: '1',
      TAGGER_RELOAD_INTERVAL_MS: '1000',
    });
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await tagger?.stop();
    await server?.stop();
  });

  const performanceOf = async (name: string): Promise<unknown> => {
    const source = local[chosen[name]![1]]!;
    return JSON.parse(await readFile(join(source.artifactsDir, 'performance.json'), 'utf8'));
  };

  it("serves them: Tagger's best run and /runs order are MLflow's search_runs order", async () => {
    const url = tagger!.url;
    expect(seen.order.map((id) => seen.runs[id]?.run_name)).toEqual([
      'py-best',
      'py-good',
      'py-mid',
      'py-nan',
    ]);
    expect(seen.runs[created['py-nan']!]?.metrics.f1).toBe('NaN');

    const runs = await api(url, '/runs');
    expect(runs.status).toBe(200);
    expect(runs.body.data.runs).toEqual(
      seen.order.map((id) =>
        expectedRecord(id, seen.runs[id]!, seen.order[0]!, server.uri, seen.experiment_id),
      ),
    );

    const predicted = await api(url, '/predict', { texts: TEXTS });
    expect(predicted.status).toBe(200);
    expect(predicted.body.data.run_id).toBe(seen.order[0]);
    expect(runs.body.data.runs[0].run_id).toBe(seen.order[0]);

    // Performance comes from each run's own artifacts (two different Tagger trainings).
    expect(await performanceOf('py-best')).not.toEqual(await performanceOf('py-mid'));
    for (const name of ['py-best', 'py-mid']) {
      const run = await api(url, `/runs/${created[name]}`);
      expect(run.status, name).toBe(200);
      expect(run.body.data).toEqual({
        run_id: created[name],
        performance: await performanceOf(name),
        warnings: [],
      });
    }

    // A non-best run's model, loaded from the server on demand, predicts like the best one's model
    // when both came from the same Tagger training.
    const sameModel = await api(url, `/runs/${created['py-nan']}/predict`, { texts: TEXTS });
    expect(sameModel.status).toBe(200);
    // Every prediction has an id of its own (monitoring); everything else is the same.
    const withoutIds = (items: { prediction_id: string }[]) =>
      items.map(({ prediction_id, ...rest }) => rest);
    expect(sameModel.body.data.run_id).toBe(created['py-nan']);
    expect(withoutIds(sameModel.body.data.predictions)).toEqual(withoutIds(predicted.body.data.predictions));
    for (const [index, item] of sameModel.body.data.predictions.entries()) {
      expect(item.prediction_id).not.toBe(predicted.body.data.predictions[index].prediction_id);
    }
  }, 60_000);

  it('keeps serving what it loaded when the MLflow server goes away; store reads answer 503', async () => {
    const url = tagger!.url;
    // Cached before the outage (also when the case above did not run).
    const cached = await api(url, `/runs/${created['py-mid']}`);
    expect(cached.status).toBe(200);
    const runs = await api(url, '/runs');

    const since = tagger!.output().length;
    await server.stop();
    // A reload poll fails against the stopped server; what was loaded must keep serving after it.
    await tagger!.waitForOutput(/reload failed/, since, 60_000);

    for (let i = 0; i < 3; i += 1) {
      const predicted = await api(url, '/predict', { texts: TEXTS });
      expect(predicted.status).toBe(200);
      expect(predicted.body.data.run_id).toBe(created['py-best']);
    }
    expect((await api(url, '/runs')).body.data).toEqual(runs.body.data);
    expect((await api(url, `/runs/${created['py-best']}`)).body.data.performance).toEqual(
      await performanceOf('py-best'),
    );
    expect((await api(url, `/runs/${created['py-mid']}`)).body).toEqual({
      ...cached.body,
      timestamp: expect.any(String),
    });

    // py-good's model and report were never loaded: that needs the store, which is down.
    for (const path of [`/runs/${created['py-good']}/predict`, `/runs/${created['py-good']}`]) {
      const failed = await api(url, path, path.endsWith('/predict') ? { texts: TEXTS } : undefined);
      expect(failed.status, path).toBe(503);
      expect(failed.headers.get('retry-after'), path).toBe('5');
      expect(failed.body, path).toMatchObject({ message: 'Service Unavailable', 'status-code': 503 });
      expect(failed.body.detail, path).toContain(`run ${created['py-good']} cannot be served`);
      // What is wrong, not where the store lives (the server log has its URI).
      expect(failed.body.detail, path).toContain('the tracking store cannot be reached; retry later');
      expect(failed.body.detail, path).not.toContain(server.uri);
    }
    // ...and the service is still fine afterwards.
    expect((await api(url, '/predict', { texts: TEXTS })).status).toBe(200);
  }, 90_000);
});

describe.skipIf(!mlflow || !python)('tagger train against an MLflow server with basic auth', () => {
  let server: MlflowServer;
  const scratch = useTempDir('tagger-e2e-auth-');

  beforeAll(async () => {
    server = await startMlflowServer(mlflow!, { basicAuth: true });
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
  });

  it('logs with MLFLOW_TRACKING_USERNAME/PASSWORD; a wrong password fails clearly, without echoing it', async () => {
    const admin = server.admin!;
    const wrong = `wrong-${admin.password}`;
    const common = trainArgv(server.uri, [], { args: FAST });
    const [ok, denied] = await Promise.all([
      tagger(scratch.path, [...common, '--json', '--run-name', 'auth-ok'], {
        MLFLOW_TRACKING_USERNAME: admin.username,
        MLFLOW_TRACKING_PASSWORD: admin.password,
      }),
      tagger(scratch.path, [...common, '--run-name', 'auth-wrong'], {
        MLFLOW_TRACKING_USERNAME: admin.username,
        MLFLOW_TRACKING_PASSWORD: wrong,
      }),
    ]);

    expect(ok.code, ok.stderr).toBe(0);
    expect(`${ok.stdout}${ok.stderr}`).not.toContain(admin.password);
    const runId = (JSON.parse(ok.stdout) as TrainOutput).run_id;

    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(
      new RegExp(
        `^tagger: tracking: ${server.uri.replace(/[.]/g, '\\.')} requires authentication .*the password of user 'admin' was rejected`,
        'm',
      ),
    );
    expect(denied.stderr).not.toMatch(/^\s+at /m);
    const everything = `${denied.stdout}${denied.stderr}`;
    expect(everything).not.toContain(wrong);
    expect(everything).not.toContain(admin.password);
    expect(everything).not.toContain(Buffer.from(`admin:${wrong}`).toString('base64'));

    // Only the authenticated run exists, finished, with its metrics.
    const store = new RestTrackingStore({
      uri: server.uri,
      env: { MLFLOW_TRACKING_USERNAME: admin.username, MLFLOW_TRACKING_PASSWORD: admin.password },
    });
    try {
      const experiment = await store.getExperimentByName('best');
      const runs = await store.searchRuns(experiment?.experimentId ?? '');
      expect(runs.map((run) => [run.info.runId, run.info.runName, run.info.status])).toEqual([
        [runId, 'auth-ok', 'FINISHED'],
      ]);
      expect(runs[0]?.metrics.f1).toBe((JSON.parse(ok.stdout) as TrainOutput).metrics.f1);
    } finally {
      await store.close();
    }
  }, 120_000);
});

describe('tagger serve when the tracking server is not up', () => {
  // test/server/server.test.ts checks the message of runServeCommand in-process; this is the real process:
  // exit status, and the URI it names carries no credentials.
  it('waits TAGGER_STORE_WAIT_MS, then exits non-zero naming the credential-free URI', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tagger-e2e-down-'));
    try {
      const port = await freePort(); // nothing listens there
      const secret = 'e2e-uri-secret';
      const result = await tagger(
        dir,
        ['serve', '--port', '0', '--tracking-uri', `http://e2e:${secret}@127.0.0.1:${port}`],
        {
          TAGGER_STORE_WAIT_MS: '800',
        },
      );
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(
        new RegExp(
          `^tagger: serve: tracking: http://127\\.0\\.0\\.1:${port} was not ready within 800 ms .*raise TAGGER_STORE_WAIT_MS`,
          'm',
        ),
      );
      expect(result.stderr).not.toMatch(/^\s+at /m);
      expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
