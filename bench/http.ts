/**
 * HTTP section of the benchmark: Tagger's real `tagger serve` process against a bare `node:http` floor,
 * the MLflow scoring server and in-process scoring, measured side by side in interleaved rounds (every
 * target once per round, round after round; the median per target is reported), plus startup time and
 * resident memory with 1 and 1,000 runs in the experiment, and the scaling from 1 to 2 workers.
 *
 * Ratios matter, not absolute numbers: the machine is shared and the load generator runs on the same
 * cores as the server under test. Targets are reported as pass/fail; only breakage (failed requests, a
 * server that does not start, Tagger under a quarter of the floor) makes the benchmark fail.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveExecArgv } from '../src/serve/node-flags.js';
import { loadModelDirectory } from '../src/service/index.js';
import { type Fixture, MANY_RUNS, prepareFixture, resolveCli } from './fixture.js';
import { type LoadResult, loadTool, runLoad } from './load.js';
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
import type { BenchOptions, BenchRow, SectionResult } from './section.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/http] ${message}\n`);
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
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

interface Measured {
  rounds: LoadResult[];
  rps: number;
  textsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
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
    // Started as `npm start` starts it: with the serve flags (src/serve/node-flags.ts), unless NODE_OPTIONS sets them.
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

function mlflowBody(texts: string[]): string {
  return JSON.stringify({ dataframe_split: { columns: ['text'], data: texts.map((t) => [t]) } });
}

/** `n` texts from the holdout set, cycling. */
const pick = (texts: string[], n: number): string[] =>
  Array.from({ length: n }, (_, i) => texts[i % texts.length]!);

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

async function measureAll(opts: BenchOptions, work: string): Promise<SectionResult> {
  const quick = opts.quick;
  const rounds = quick ? 2 : 3;
  const seconds = quick ? 2 : 6;
  const warmupSeconds = quick ? 1 : 2;
  const startupPairsPerRound = quick ? 1 : 2;
  const notes: string[] = [];
  const breakage: string[] = [];

  const fixture: Fixture = await prepareFixture(log);
  const cli = resolveCli(log);
  const tool = loadTool();
  if (tool !== 'wrk') {
    const note =
      'wrk not found (/usr/bin/wrk): using autocannon, which takes more CPU from the server under test';
    log(note);
    notes.push(note);
  }

  // Request bodies: one text of median length, and batches of the holdout texts.
  const byLength = [...fixture.texts].sort((a, b) => a.length - b.length);
  const single = byLength[byLength.length >> 1]!;
  const bodyFile = (name: string, body: string): string => {
    const file = join(work, `${name}.json`);
    writeFileSync(file, body);
    return file;
  };
  const bodies = new Map<number, { tagger: string; file: string }>();
  for (const n of [1, 10, 100, 1000]) {
    const texts = n === 1 ? [single] : pick(fixture.texts, n);
    const tagger = taggerBody(texts);
    bodies.set(n, { tagger, file: bodyFile(`tagger-${n}`, tagger) });
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
  // The floor answers with Tagger's own single-text answer (same size).
  const singleAnswer = await post(`${one.url}/predict`, bodies.get(1)!.tagger);
  const floorPort = await freePort();
  const floorProc = start(
    'floor',
    process.execPath,
    ['--import', 'tsx', join(REPO, 'bench', 'floor-server.ts'), String(floorPort)],
    {
      cwd: REPO,
      env: { ...process.env, FLOOR_RESPONSE_FILE: bodyFile('floor-response', singleAnswer.text) },
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
  const other = otherNode();
  const onOther = other
    ? await startTagger(cli, fixture.store1, 1, work, 'tagger-other-node', other.path)
    : undefined;
  if (!other) notes.push(`no other Node to compare with (set ${OTHER_NODE_ENV} to a node binary)`);

  let mlflow: { url: string } | undefined;
  let mlflowStartup: number | undefined;
  if (quick) {
    notes.push('--quick: MLflow scoring server skipped (its start-up alone takes ~20 s here)');
    log(notes.at(-1)!);
  } else if (!mlflowAvailable()) {
    notes.push('MLflow scoring server skipped: no .venv with mlflow (TAGGER_PYTHON)');
    log(notes.at(-1)!);
  } else {
    const model = prepareMlflowModel(fixture, log);
    const server = await startMlflowServer(model, join(work, 'mlflow.log'));
    mlflowStartup = server.startupSeconds;
    const check = await post(server.url, mlflowBody([single]));
    if (check.status !== 200)
      throw new Error(`bench: MLflow scoring server answered ${check.status}: ${check.text.slice(0, 300)}`);
    mlflow = server;
  }

  // In-process scoring of the same texts with the same saved model (what the server loads).
  const served = await loadModelDirectory(fixture.modelDir);
  const inProcess = (n: number) => {
    const batch = n === 1 ? [single] : pick(fixture.texts, n);
    return async (secs: number): Promise<LoadResult> => {
      const times: number[] = [];
      const end = performance.now() + secs * 1000;
      let calls = 0;
      const t0 = performance.now();
      while (performance.now() < end) {
        const c0 = performance.now();
        served.model.predict(batch);
        times.push(performance.now() - c0);
        calls += 1;
        // Let timers (RSS sampling) run; costs nothing measurable per call.
        if (calls % 64 === 0) await new Promise((done) => setImmediate(done));
      }
      const elapsed = (performance.now() - t0) / 1000;
      times.sort((a, b) => a - b);
      return {
        requests: calls,
        seconds: elapsed,
        rps: calls / elapsed,
        p50Ms: times[Math.floor(times.length * 0.5)]!,
        p99Ms: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!,
        failures: 0,
      };
    };
  };

  const http = (url: string, file: string, connections: number) => (secs: number) =>
    runLoad({ url, bodyFile: file, connections, seconds: secs }, work);
  // What the request log costs on disk at the default level (info): the server's log file is its stdout.
  const logged = { bytes: 0, seconds: 0, requests: 0 };
  const withLogSize =
    (measure: (secs: number) => Promise<LoadResult>, logFile: string) =>
    async (secs: number): Promise<LoadResult> => {
      const before = statSync(logFile).size;
      const result = await measure(secs);
      logged.bytes += statSync(logFile).size - before;
      logged.seconds += result.seconds;
      logged.requests += result.requests;
      return result;
    };
  // 50 connections where latency is judged; fewer for big batches, where more only queue (one core).
  const targets: Target[] = [
    { id: 'floor', texts: 1, connections: 50, measure: http(floorUrl, bodies.get(1)!.file, 50) },
    {
      id: 'tagger-1',
      texts: 1,
      connections: 50,
      measure: withLogSize(http(`${one.url}/predict`, bodies.get(1)!.file, 50), one.proc.logFile),
      rssPid: one.proc.pid,
    },
    // The single-text ratio at light concurrency too: one client waiting on each answer, and ten.
    ...[1, 10].flatMap((c): Target[] => [
      { id: `floor-c${c}`, texts: 1, connections: c, measure: http(floorUrl, bodies.get(1)!.file, c) },
      {
        id: `tagger-1-c${c}`,
        texts: 1,
        connections: c,
        measure: http(`${one.url}/predict`, bodies.get(1)!.file, c),
      },
    ]),
    {
      id: 'tagger-10',
      texts: 10,
      connections: 50,
      measure: http(`${one.url}/predict`, bodies.get(10)!.file, 50),
    },
    {
      id: 'tagger-100',
      texts: 100,
      connections: 8,
      measure: http(`${one.url}/predict`, bodies.get(100)!.file, 8),
    },
    {
      id: 'tagger-1000',
      texts: 1000,
      connections: 4,
      measure: http(`${one.url}/predict`, bodies.get(1000)!.file, 4),
      rssPid: one.proc.pid,
    },
    {
      id: 'tagger-2w-1',
      texts: 1,
      connections: 50,
      measure: http(`${two.url}/predict`, bodies.get(1)!.file, 50),
    },
    ...(onOther
      ? [
          {
            id: 'tagger-1-other-node',
            texts: 1,
            connections: 50,
            measure: http(`${onOther.url}/predict`, bodies.get(1)!.file, 50),
          },
        ]
      : []),
    { id: 'inproc-1', texts: 1, connections: 0, measure: inProcess(1) },
    { id: 'inproc-1000', texts: 1000, connections: 0, measure: inProcess(1000) },
  ];
  if (mlflow) {
    targets.push(
      {
        id: 'mlflow-1',
        texts: 1,
        connections: 50,
        measure: http(mlflow.url, bodyFile('mlflow-1', mlflowBody([single])), 50),
      },
      {
        id: 'mlflow-100',
        texts: 100,
        connections: 8,
        measure: http(mlflow.url, bodyFile('mlflow-100', mlflowBody(pick(fixture.texts, 100))), 8),
      },
    );
  }

  const results = new Map<string, LoadResult[]>(targets.map((t) => [t.id, []]));
  let peakRss: number | null = null;
  const startups = {
    one: [] as number[],
    many: [] as number[],
    rssOne: [] as number[],
    rssMany: [] as number[],
    sqliteOne: [] as number[],
    sqliteMany: [] as number[],
  };

  const startupOnce = async (
    store: string,
    name: string,
  ): Promise<{ seconds: number; rss: number | null }> => {
    const server = await startTagger(cli, store, 1, work, name);
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
    // Startup: 1 run vs 1,000 runs, alternating, in SQLite (the default store) and in the mlruns layout.
    for (let i = 0; i < startupPairsPerRound; i += 1) {
      const c = await startupOnce(fixture.sqlite1, 'startup-sqlite-1');
      const d = await startupOnce(fixture.sqlite1000, 'startup-sqlite-1000');
      const a = await startupOnce(fixture.store1, 'startup-1');
      const b = await startupOnce(fixture.store1000, 'startup-1000');
      startups.sqliteOne.push(c.seconds);
      startups.sqliteMany.push(d.seconds);
      startups.one.push(a.seconds);
      startups.many.push(b.seconds);
      if (a.rss !== null) startups.rssOne.push(a.rss);
      if (b.rss !== null) startups.rssMany.push(b.rss);
      log(
        `  startup      SQLite: 1 run ${c.seconds.toFixed(3)} s, ${MANY_RUNS} runs ${d.seconds.toFixed(3)} s; mlruns: 1 run ${a.seconds.toFixed(3)} s, ${MANY_RUNS} runs ${b.seconds.toFixed(3)} s`,
      );
    }
  }

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

  const get = (id: string): Measured | undefined => m.get(id);
  const floor = get('floor')!;
  const t1 = get('tagger-1')!;
  const t1000 = get('tagger-1000')!;
  const in1000 = get('inproc-1000')!;
  const w2 = get('tagger-2w-1')!;
  const ml1 = get('mlflow-1');
  const ml100 = get('mlflow-100');
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

  const rows: BenchRow[] = [];
  const row = (r: Omit<BenchRow, 'section'>): void => {
    rows.push({ section: 'http', ...r });
  };
  const conns = (t: Target | undefined) => (t ? `${t.connections} conn` : '');
  const targetOf = (id: string) => targets.find((t) => t.id === id);
  const lat = (x: Measured) => `p50 ${x.p50Ms.toFixed(2)} ms, p99 ${x.p99Ms.toFixed(2)} ms`;

  row({
    metric: 'floor: bare node:http, 1 text',
    unit: 'req/s',
    tagger: null,
    reference: floor.rps,
    note: `${conns(targetOf('floor'))}; ${lat(floor)}`,
  });
  const logMbPerMinute = logged.seconds > 0 ? (logged.bytes / 1024 / 1024 / logged.seconds) * 60 : Number.NaN;
  row({
    metric: 'request log written at the default level under single-text load',
    unit: 'MB/min',
    tagger: logMbPerMinute,
    reference: null,
    target: { text: '< 10 MB/min', pass: logMbPerMinute < 10 },
    note: `${logged.bytes.toLocaleString('en-US')} bytes over ${logged.requests.toLocaleString('en-US')} requests in ${logged.seconds.toFixed(0)} s (${Math.round(logged.requests / Math.max(logged.seconds, 1e-9)).toLocaleString('en-US')} req/s); a 5-minute soak at that rate: ${(logMbPerMinute * 5 || 0).toFixed(2)} MB`,
  });
  row({
    metric: 'Tagger POST /predict, 1 text (vs floor)',
    unit: 'req/s',
    tagger: t1.rps,
    reference: floor.rps,
    target: { text: '>= 0.6x floor', pass: t1.rps >= 0.6 * floor.rps },
    note: `${conns(targetOf('tagger-1'))}; ${lat(t1)}`,
  });
  row({
    metric: 'Tagger POST /predict, 1 text: p99 latency (vs floor)',
    unit: 'ms',
    tagger: t1.p99Ms,
    reference: floor.p99Ms,
    target: { text: '<= 5 ms', pass: t1.p99Ms <= 5 },
    note: '50 connections',
  });
  for (const c of [1, 10]) {
    const tagger = get(`tagger-1-c${c}`)!;
    const bare = get(`floor-c${c}`)!;
    row({
      metric: `Tagger POST /predict, 1 text at ${c} connection${c === 1 ? '' : 's'} (vs floor at ${c})`,
      unit: 'req/s',
      tagger: tagger.rps,
      reference: bare.rps,
      note: `Tagger ${lat(tagger)}; floor ${lat(bare)}`,
    });
  }
  for (const n of [10, 100]) {
    const x = get(`tagger-${n}`)!;
    row({
      metric: `Tagger POST /predict, ${n} texts (vs in-process, ${n === 10 ? 1 : 1000} per call)`,
      unit: 'texts/s',
      tagger: x.textsPerSecond,
      reference: (n === 10 ? get('inproc-1')! : in1000).textsPerSecond,
      note: `${Math.round(x.rps)} req/s; ${conns(targetOf(`tagger-${n}`))}; ${lat(x)}`,
    });
  }
  row({
    metric: 'Tagger POST /predict, 1000 texts (vs in-process)',
    unit: 'texts/s',
    tagger: t1000.textsPerSecond,
    reference: in1000.textsPerSecond,
    target: { text: '>= 0.8x in-process', pass: t1000.textsPerSecond >= 0.8 * in1000.textsPerSecond },
    note: `${Math.round(t1000.rps)} req/s; ${conns(targetOf('tagger-1000'))}; ${lat(t1000)}`,
  });
  row({
    metric: 'in-process predict, 1000 texts per call',
    unit: 'texts/s',
    tagger: in1000.textsPerSecond,
    reference: null,
    note: `p50 ${in1000.p50Ms.toFixed(1)} ms per call; no HTTP`,
  });
  row({
    metric: 'in-process predict, 1 text per call',
    unit: 'texts/s',
    tagger: get('inproc-1')!.textsPerSecond,
    reference: null,
    note: `p50 ${(get('inproc-1')!.p50Ms * 1000).toFixed(0)} µs per call`,
  });
  if (ml1 && ml100) {
    row({
      metric: 'Tagger 1 text vs MLflow scoring server 1 text',
      unit: 'req/s',
      tagger: t1.rps,
      reference: ml1.rps,
      target: { text: '>= 20x MLflow', pass: t1.rps >= 20 * ml1.rps },
      note: `MLflow: ${lat(ml1)}${ml1.failures ? `, ${ml1.failures} failed` : ''}`,
    });
    row({
      metric: 'Tagger 100 texts vs MLflow scoring server 100 texts',
      unit: 'texts/s',
      tagger: get('tagger-100')!.textsPerSecond,
      reference: ml100.textsPerSecond,
      note: `MLflow: ${Math.round(ml100.rps)} req/s, ${lat(ml100)}`,
    });
  } else {
    row({
      metric: 'Tagger 1 text vs MLflow scoring server 1 text',
      unit: 'req/s',
      tagger: t1.rps,
      reference: null,
      note: notes.find((n) => n.includes('MLflow')) ?? 'skipped',
    });
  }
  const onOtherNode = get('tagger-1-other-node');
  if (other && onOtherNode) {
    row({
      metric: `Tagger 1 text on Node ${process.versions.node} vs Node ${other.version}`,
      unit: 'req/s',
      tagger: t1.rps,
      reference: onOtherNode.rps,
      note: `same dist/ and load; Node ${other.version}: ${lat(onOtherNode)}`,
    });
  }
  row({
    metric: 'Tagger --workers 2 vs --workers 1, 1 text',
    unit: 'req/s',
    tagger: w2.rps,
    reference: t1.rps,
    note: `the load generator shares the 2 cores with both workers; ${lat(w2)}`,
  });
  const s1 = median(startups.one);
  const sMany = median(startups.many);
  const q1 = median(startups.sqliteOne);
  const qMany = median(startups.sqliteMany);
  row({
    metric: 'startup to port open, 1 run (SQLite, the default store)',
    unit: 's',
    tagger: q1,
    reference: null,
    note: `median of ${startups.sqliteOne.length}; process start -> first connection`,
  });
  row({
    metric: `startup to port open, ${MANY_RUNS} runs (vs 1 run; SQLite, the default store)`,
    unit: 's',
    tagger: qMany,
    reference: q1,
    target: { text: '<= 1 s beyond 1 run', pass: qMany - q1 <= 1 },
    note: `+${(qMany - q1).toFixed(3)} s; median of ${startups.sqliteMany.length}`,
  });
  row({
    metric: 'startup to port open, 1 run (mlruns folder layout)',
    unit: 's',
    tagger: s1,
    reference: null,
    note: `median of ${startups.one.length}; process start -> first connection`,
  });
  row({
    metric: `startup to port open, ${MANY_RUNS} runs (vs 1 run; mlruns folder layout)`,
    unit: 's',
    tagger: sMany,
    reference: s1,
    note: `+${(sMany - s1).toFixed(3)} s; median of ${startups.many.length}; listing reads every run's files`,
  });
  row({
    metric: 'RSS after startup, 1 run',
    unit: 'MB',
    tagger: startups.rssOne.length ? median(startups.rssOne) : idleRss,
    reference: null,
  });
  row({
    metric: `RSS after startup, ${MANY_RUNS} runs`,
    unit: 'MB',
    tagger: startups.rssMany.length ? median(startups.rssMany) : null,
    reference: null,
  });
  row({
    metric: 'RSS under load (peak; 1 and 1000 texts per request)',
    unit: 'MB',
    tagger: peakRss,
    reference: null,
    target: { text: '<= 150 MB', pass: peakRss !== null && peakRss <= 150 },
  });
  if (mlflowStartup !== undefined)
    row({
      metric: 'MLflow scoring server startup to port open',
      unit: 's',
      tagger: null,
      reference: mlflowStartup,
    });

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
      singleTextChars: single.length,
      responseBytes1: singleAnswer.text.length,
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
