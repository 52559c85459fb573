/**
 * HTTP section of the benchmark: Tagger's real `tagger serve` process against a bare `node:http` floor,
 * the MLflow scoring server and in-process scoring, measured side by side in interleaved rounds (every
 * target once per round, round after round; the median per target is reported), plus startup time and
 * resident memory with 1 and 1,000 runs in the experiment, and the scaling from 1 to 2 workers.
 *
 * What is measured is a table of named cases (bench/http-cases.ts: the loads of each round, the startups,
 * the rows); this file starts the servers they run against and runs them in one loop.
 *
 * Ratios matter, not absolute numbers: the machine is shared and the load generator runs on the same
 * cores as the server under test. Targets are reported as pass/fail; only breakage (failed requests, a
 * server that does not start, Tagger under a quarter of the floor) makes the benchmark fail.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { loadModelDirectory } from '../src/served-models/index.js';
import { serveExecArgv } from '../src/server/node-flags.js';
import { type Fixture, MANY_RUNS, prepareFixture, resolveCli } from './fixture.js';
import {
  bodyFile,
  LOAD_CASES,
  type Measured,
  median,
  mlflowBody,
  PROTOCOLS,
  type Protocol,
  pick,
  protocolBody,
  type Results,
  ROW_CASES,
  type Setup,
  STARTUP_CASES,
  type Startups,
} from './http-cases.js';
import { type LoadResult, loadTool } from './load.js';
import { mlflowAvailable, prepareMlflowModel, startMlflowServer } from './mlflow-scoring.js';
import { REPO } from './paths.js';
import {
  freePort,
  installCleanup,
  type Proc,
  rssMb,
  sampleRss,
  start,
  stopAll,
  waitForPort,
} from './procs.js';
import { type BenchOptions, rowsFrom, type SectionResult } from './section.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/http] ${message}\n`);
};

interface Target {
  id: string;
  /** Texts per request (or per in-process call). */
  texts: number;
  connections: number;
  measure(seconds: number): Promise<LoadResult>;
  /** Process whose peak RSS is sampled under load. */
  rssPid?: number;
}

/** A node binary of another major version to run the same server on (default: Debian's /usr/bin/node). */
const OTHER_NODE_ENV = 'TAGGER_BENCH_OTHER_NODE';

function otherNode(): { path: string; version: string } | undefined {
  const path = process.env[OTHER_NODE_ENV] ?? '/usr/bin/node';
  if (!existsSync(path)) return undefined;
  const version = spawnSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout?.trim();
  if (!version || version.split('.')[0] === process.versions.node.split('.')[0]) return undefined;
  return { path, version };
}

/** Below this ratio of the floor in every round, single-text /predict has regressed grossly. */
const GROSS_REGRESSION_RATIO = 0.1;

/** A `tagger serve` process on a free port (on `node`), ready once the port accepts connections. */
async function startTagger(
  cli: string,
  store: string,
  workers: number,
  workDir: string,
  name: string,
  node: string = process.execPath,
): Promise<{ proc: Proc; url: string; startupSeconds: number }> {
  const port = await freePort();
  const proc = start(
    name,
    node,
    // Started as `npm start` starts it: with the serve flags (src/server/node-flags.ts), unless NODE_OPTIONS sets them.
    [...serveExecArgv([]), cli, 'serve', '--port', String(port), '--workers', String(workers)],
    {
      cwd: workDir,
      env: {
        ...process.env,
        MLFLOW_TRACKING_URI: store,
        TAGGER_EXPERIMENT: 'best',
        // No reload polling during a measurement; everything else is the default configuration.
        TAGGER_RELOAD_INTERVAL_MS: '0',
      },
      logFile: join(workDir, `${name}.log`),
    },
  );
  let startupSeconds = await waitForPort(proc, port, 60_000);
  if (workers > 1) {
    // The primary listens once the first worker does; wait until every worker answers (≥ n pids seen).
    startupSeconds = await waitForWorkers(`http://127.0.0.1:${port}/`, proc, workers);
  }
  return { proc, url: `http://127.0.0.1:${port}`, startupSeconds };
}

async function waitForWorkers(url: string, proc: Proc, workers: number): Promise<number> {
  const { childPids } = await import('./procs.js');
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const children = childPids(proc.pid);
    if (children.length >= workers) {
      // Every worker has loaded and listens once the primary has seen them all: probe a few requests.
      const ok = await Promise.all(
        Array.from({ length: workers * 4 }, () =>
          fetch(url).then(
            (r) => r.ok,
            () => false,
          ),
        ),
      );
      if (ok.every(Boolean)) return Number(process.hrtime.bigint() - proc.spawnedAt) / 1e9;
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`bench: ${proc.name}: ${workers} workers not up within 60 s`);
}

async function post(url: string, body: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, text: await response.text() };
}

function taggerBody(texts: string[]): string {
  return JSON.stringify({ texts: texts.map((text) => ({ text })) });
}

export async function run(opts: BenchOptions): Promise<SectionResult> {
  installCleanup();
  const work = mkdtempSync(join(tmpdir(), 'tagger-bench-http-'));
  try {
    return await measureAll(opts, work);
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Starts every server the cases load and checks each answers as it should. */
async function startServers(work: string, notes: string[], quick: boolean): Promise<Setup> {
  const fixture: Fixture = await prepareFixture(log);
  const cli = resolveCli(log);

  // Request bodies: one text of median length, and batches of the holdout texts.
  const byLength = [...fixture.texts].sort((a, b) => a.length - b.length);
  const single = byLength[byLength.length >> 1]!;
  const bodies = new Map<number, { tagger: string; file: string }>();
  for (const n of [1, 10, 100, 1000]) {
    const texts = n === 1 ? [single] : pick(fixture.texts, n);
    const tagger = taggerBody(texts);
    bodies.set(n, { tagger, file: bodyFile(work, `tagger-${n}`, tagger) });
  }

  log(`starting servers (${cli.replace(`${REPO}/`, '')})`);
  const one = await startTagger(cli, fixture.store1, 1, work, 'tagger-1w');
  const idleRss = rssMb(one.proc.pid);
  // Every Tagger body must be answered 200 with one prediction per text, by the served run.
  for (const [n, body] of bodies) {
    const answer = await post(`${one.url}/predict`, body.tagger);
    const parsed =
      answer.status === 200 ? (JSON.parse(answer.text) as { run_id?: string; data?: unknown }) : null;
    const predictions = extractPredictions(parsed);
    if (answer.status !== 200 || predictions !== n) {
      throw new Error(
        `bench: POST /predict with ${n} texts answered ${answer.status}: ${answer.text.slice(0, 300)}`,
      );
    }
  }
  // Each protocol's single-text body must be answered 200 with one answer (issue 41).
  const protocolBodies = {} as Record<Protocol, string>;
  for (const protocol of Object.keys(PROTOCOLS) as Protocol[]) {
    const body = protocolBody(protocol, single);
    const answer = await post(`${one.url}${PROTOCOLS[protocol].path}`, body);
    if (answer.status !== 200) {
      throw new Error(
        `bench: ${PROTOCOLS[protocol].name} answered ${answer.status}: ${answer.text.slice(0, 300)}`,
      );
    }
    protocolBodies[protocol] = bodyFile(work, `${protocol}-1`, body);
  }
  // The floor answers with Tagger's own single-text answer (same size).
  const singleAnswer = await post(`${one.url}/predict`, bodies.get(1)!.tagger);
  const floorPort = await freePort();
  const floorProc = start(
    'floor',
    process.execPath,
    ['--import', 'tsx', join(REPO, 'bench', 'floor-server.ts'), String(floorPort)],
    {
      cwd: REPO,
      env: { ...process.env, FLOOR_RESPONSE_FILE: bodyFile(work, 'floor-response', singleAnswer.text) },
      logFile: join(work, 'floor.log'),
    },
  );
  await waitForPort(floorProc, floorPort, 30_000);
  const floorUrl = `http://127.0.0.1:${floorPort}/`;
  const floorAnswer = await post(floorUrl, bodies.get(1)!.tagger);
  if (floorAnswer.status !== 200 || floorAnswer.text.length !== singleAnswer.text.length) {
    throw new Error(
      `bench: the floor server answered ${floorAnswer.status} (${floorAnswer.text.length} bytes)`,
    );
  }

  const two = await startTagger(cli, fixture.store1, 2, work, 'tagger-2w');
  // The same code on the previous LTS line, when the machine has it (Debian's Node 20): side by side.
  const node = otherNode();
  const other = node
    ? { node, server: await startTagger(cli, fixture.store1, 1, work, 'tagger-other-node', node.path) }
    : undefined;
  if (!node) notes.push(`no other Node to compare with (set ${OTHER_NODE_ENV} to a node binary)`);

  let mlflow: Setup['mlflow'];
  if (quick) {
    notes.push('--quick: MLflow scoring server skipped (its start-up alone takes ~20 s here)');
    log(notes.at(-1)!);
  } else if (!mlflowAvailable()) {
    notes.push('MLflow scoring server skipped: no .venv with mlflow (TAGGER_PYTHON)');
    log(notes.at(-1)!);
  } else {
    const model = prepareMlflowModel(fixture, log);
    const server = await startMlflowServer(model, join(work, 'mlflow.log'));
    const check = await post(server.url, mlflowBody([single]));
    if (check.status !== 200)
      throw new Error(`bench: MLflow scoring server answered ${check.status}: ${check.text.slice(0, 300)}`);
    mlflow = { url: server.url, startupSeconds: server.startupSeconds };
  }

  // In-process scoring of the same texts with the same saved model (what the server loads).
  const served = await loadModelDirectory(fixture.modelDir);
  // The same model in an app of this process, for what each protocol's request costs without the network.
  const injectApp = createApp({ serving: { mode: 'model', model: served, source: fixture.modelDir } });
  await injectApp.ready();

  return {
    fixture,
    cli,
    work,
    notes,
    single,
    bodyFiles: new Map([...bodies].map(([n, body]) => [n, body.file])),
    protocolBodies,
    singleAnswer: singleAnswer.text,
    floorUrl,
    one,
    two,
    ...(other ? { other } : {}),
    ...(mlflow ? { mlflow } : {}),
    served,
    injectApp,
    idleRss,
    logged: { bytes: 0, seconds: 0, requests: 0 },
  };
}

async function measureAll(opts: BenchOptions, work: string): Promise<SectionResult> {
  const quick = opts.quick;
  const rounds = quick ? 2 : 3;
  const seconds = quick ? 2 : 6;
  const warmupSeconds = quick ? 1 : 2;
  const startupPairsPerRound = quick ? 1 : 2;
  const notes: string[] = [];
  const breakage: string[] = [];

  const tool = loadTool();
  if (tool !== 'wrk') {
    const note =
      'wrk not found (/usr/bin/wrk): using autocannon, which takes more CPU from the server under test';
    log(note);
    notes.push(note);
  }
  const setup = await startServers(work, notes, quick);
  const targets: Target[] = [];
  for (const c of LOAD_CASES) {
    const measure = c.measure(setup);
    if (measure === undefined) continue;
    const rssPid = c.rssOf?.(setup);
    targets.push({
      id: c.id,
      texts: c.texts,
      connections: c.connections,
      measure,
      ...(rssPid ? { rssPid } : {}),
    });
  }

  const results = new Map<string, LoadResult[]>(targets.map((t) => [t.id, []]));
  let peakRss: number | null = null;
  const startups: Startups = { one: [], many: [], rssOne: [], rssMany: [], sqliteOne: [], sqliteMany: [] };

  const startupOnce = async (
    store: string,
    name: string,
  ): Promise<{ seconds: number; rss: number | null }> => {
    const server = await startTagger(setup.cli, store, 1, work, name);
    const rss = rssMb(server.proc.pid);
    // Let the server finish installing its signal handlers first: a SIGTERM right after the port opens
    // would test that window, not startup (it is reported as a note when the server dies of it anyway).
    await new Promise((done) => setTimeout(done, 300));
    const code = await server.proc.stop();
    if (code !== 0) {
      const how = code === null ? `was killed by ${server.proc.child.signalCode}` : `exited ${code}`;
      const note = `${name}: tagger serve ${how} on SIGTERM 300 ms after its port opened`;
      if (!notes.includes(note)) notes.push(note);
    }
    return { seconds: server.startupSeconds, rss };
  };

  for (let round = 1; round <= rounds; round += 1) {
    log(`round ${round}/${rounds}`);
    for (const target of targets) {
      // Warm-up (JIT, connection set-up) before each measurement, not counted.
      if (round === 1 || target.id.startsWith('mlflow')) await target.measure(warmupSeconds);
      const sampler = target.rssPid === undefined ? undefined : sampleRss(target.rssPid);
      const result = await target.measure(seconds);
      const peak = sampler?.stop() ?? null;
      if (peak !== null && (peakRss === null || peak > peakRss)) peakRss = peak;
      results.get(target.id)!.push(result);
      log(
        `  ${target.id.padEnd(12)} ${Math.round(result.rps)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms${peak === null ? '' : `, peak RSS ${peak.toFixed(0)} MB`}${result.failures ? `, ${result.failures} FAILED` : ''}`,
      );
    }
    for (let i = 0; i < startupPairsPerRound; i += 1) {
      for (const c of STARTUP_CASES) {
        const { seconds: took, rss } = await startupOnce(c.store(setup.fixture), c.name);
        startups[c.seconds].push(took);
        if (c.rss && rss !== null) startups[c.rss].push(rss);
      }
      const last = (key: keyof Startups) => startups[key].at(-1)!.toFixed(3);
      log(
        `  startup      SQLite: 1 run ${last('sqliteOne')} s, ${MANY_RUNS} runs ${last('sqliteMany')} s; mlruns: 1 run ${last('one')} s, ${MANY_RUNS} runs ${last('many')} s`,
      );
    }
  }

  await setup.injectApp.close();
  const m = new Map<string, Measured>();
  for (const target of targets) {
    const rs = results.get(target.id)!;
    const failures = rs.reduce((sum, r) => sum + r.failures, 0);
    const rps = median(rs.map((r) => r.rps));
    m.set(target.id, {
      rounds: rs,
      rps,
      textsPerSecond: rps * target.texts,
      p50Ms: median(rs.map((r) => r.p50Ms)),
      p99Ms: median(rs.map((r) => r.p99Ms)),
      failures,
    });
    if (failures > 0 && !target.id.startsWith('mlflow'))
      breakage.push(`${target.id}: ${failures} failed requests`);
  }

  // Gross regression only: the best round's ratio (each round measures both back to back), so rounds
  // disturbed by other load on the machine cannot fail the run.
  const floorRounds = results.get('floor')!;
  const bestRatio = Math.max(...results.get('tagger-1')!.map((r, i) => r.rps / floorRounds[i]!.rps));
  // Tagger-1 measures ~0.2-0.3x the floor on a 2-core machine where wrk shares the cores (see the
  // README); under 0.1x in every round means something regressed grossly (> 2x), not noise.
  if (bestRatio < GROSS_REGRESSION_RATIO) {
    breakage.push(
      `tagger-1 stayed under ${GROSS_REGRESSION_RATIO}x the floor in every round (best ${bestRatio.toFixed(2)}x)`,
    );
  }

  const targetOf = (id: string) => targets.find((t) => t.id === id);
  const { logged } = setup;
  const measured: Results = {
    setup,
    of: (id) => {
      const x = m.get(id);
      if (x === undefined) throw new Error(`bench/http: case ${id} did not run`);
      return x;
    },
    ran: (id) => m.has(id),
    conns: (id) => {
      const t = targetOf(id);
      return t ? `${t.connections} conn` : '';
    },
    startups,
    peakRss,
    logMbPerMinute: logged.seconds > 0 ? (logged.bytes / 1024 / 1024 / logged.seconds) * 60 : Number.NaN,
  };
  const rows = rowsFrom('http', ROW_CASES, measured);

  return {
    rows,
    breakage,
    notes,
    details: {
      loadTool: tool,
      rounds,
      secondsPerMeasurement: seconds,
      targets: Object.fromEntries(
        [...m].map(([id, x]) => [
          id,
          { ...x, connections: targetOf(id)?.connections, texts: targetOf(id)?.texts },
        ]),
      ),
      startup: startups,
      singleTextChars: setup.single.length,
      responseBytes1: setup.singleAnswer.length,
    },
  };
}

/** Number of predictions in a /predict answer (enveloped or not). */
function extractPredictions(parsed: unknown): number {
  if (typeof parsed !== 'object' || parsed === null) return -1;
  const record = parsed as Record<string, unknown>;
  const data = (record.data ?? record) as Record<string, unknown>;
  return Array.isArray(data.predictions) ? data.predictions.length : -1;
}
