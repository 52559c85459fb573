/**
 * The cases of the HTTP section (bench/http.ts), as Hono's router benchmarks list theirs: the loads each
 * round runs (LOAD_CASES, in order), the startups (STARTUP_CASES) and the rows of the table (ROW_CASES,
 * in order), each named, over the servers bench/http.ts starts (`Setup`). bench/http.ts runs them in
 * one loop; adding a load or a row is adding a case here.
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TaggerApp } from '../src/http/index.js';
import type { ServedModel } from '../src/served-models/index.js';
import { type Fixture, MANY_RUNS } from './fixture.js';
import { type LoadResult, runLoad } from './load.js';
import type { Proc } from './procs.js';
import type { RowCase } from './section.js';

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export interface Measured {
  rounds: LoadResult[];
  rps: number;
  textsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
}

export function mlflowBody(texts: string[]): string {
  return JSON.stringify({ dataframe_split: { columns: ['text'], data: texts.map((t) => [t]) } });
}

/** `n` texts from the holdout set, cycling. */
export const pick = (texts: string[], n: number): string[] =>
  Array.from({ length: n }, (_, i) => texts[i % texts.length]!);

/** A `tagger serve` process the cases load. */
export interface Tagger {
  proc: Proc;
  url: string;
  startupSeconds: number;
}

export type Measure = (seconds: number) => Promise<LoadResult>;

/** The protocols served beside the contract's API, each measured against /predict (issue 41). */
export const PROTOCOLS = {
  oip: { path: '/v2/models/tagger/infer', name: 'Open Inference Protocol POST /v2/models/tagger/infer' },
  hf: { path: '/hf/text-classification', name: 'Hugging Face POST /hf/text-classification' },
} as const;
export type Protocol = keyof typeof PROTOCOLS;

/** The request body of one text through a protocol. */
export function protocolBody(protocol: Protocol, text: string): string {
  return protocol === 'oip'
    ? JSON.stringify({ inputs: [{ name: 'text', shape: [1], datatype: 'BYTES', data: [text] }] })
    : JSON.stringify({ inputs: text });
}

/** The servers, request bodies and in-process model every case runs against, started once. */
export interface Setup {
  fixture: Fixture;
  /** The `tagger` entry point the servers run. */
  cli: string;
  work: string;
  notes: string[];
  /** The holdout text of median length: the one of every single-text body. */
  single: string;
  /** Tagger's request body file for 1, 10, 100 and 1,000 texts. */
  bodyFiles: Map<number, string>;
  /**
   * The single text's request body file for each protocol beside /predict (issue 41): the Open Inference
   * Protocol's JSON inference request and the Hugging Face shape.
   */
  protocolBodies: Record<Protocol, string>;
  /** Tagger's answer to the single text (the floor answers the same bytes). */
  singleAnswer: string;
  floorUrl: string;
  /** One worker, two workers, and one worker on the other Node major when the machine has one. */
  one: Tagger;
  two: Tagger;
  other?: { node: { path: string; version: string }; server: Tagger };
  mlflow?: { url: string; startupSeconds: number };
  /** The saved model the servers load, loaded in this process for in-process scoring. */
  served: ServedModel;
  /**
   * The same model served by an app in this process (no network, no load generator), which the
   * `inject-*` cases call with each protocol's single-text body in turn: what a request costs the server.
   */
  injectApp: TaggerApp;
  /** RSS of the one-worker server right after it started. */
  idleRss: number | null;
  /** What the request log costs on disk at the default level (info), summed over tagger-1's loads. */
  logged: { bytes: number; seconds: number; requests: number };
}

/** Writes a request body into the work folder; returns the file. */
export function bodyFile(work: string, name: string, body: string): string {
  const file = join(work, `${name}.json`);
  writeFileSync(file, body);
  return file;
}

/** A load of `connections` connections posting the body in `file` to `url` (wrk, else autocannon). */
const load =
  (setup: Setup, url: string, file: string, connections: number): Measure =>
  (seconds) =>
    runLoad({ url, bodyFile: file, connections, seconds }, setup.work);

/** Tagger's /predict with its `texts`-text body, on `server` (default: one worker). */
const predictOn =
  (texts: number, connections: number, server: (setup: Setup) => Tagger | undefined = (s) => s.one) =>
  (setup: Setup): Measure | undefined => {
    const tagger = server(setup);
    return tagger && load(setup, `${tagger.url}/predict`, setup.bodyFiles.get(texts)!, connections);
  };

/** The floor with the single-text body. */
const floorAt = (connections: number) => (setup: Setup) =>
  load(setup, setup.floorUrl, setup.bodyFiles.get(1)!, connections);

/** The MLflow scoring server with `texts` texts, when it runs. */
const mlflowWith = (texts: number, connections: number) => (setup: Setup) => {
  if (!setup.mlflow) return undefined;
  const batch = texts === 1 ? [setup.single] : pick(setup.fixture.texts, texts);
  return load(
    setup,
    setup.mlflow.url,
    bodyFile(setup.work, `mlflow-${texts}`, mlflowBody(batch)),
    connections,
  );
};

/** In-process scoring of the same texts with the same saved model (what the server loads). */
const inProcess = (texts: number) => (setup: Setup) => {
  const { served } = setup;
  const batch = texts === 1 ? [setup.single] : pick(setup.fixture.texts, texts);
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

/** One caller sending `body` to `url` of the in-process app, one request after the other, for `secs`. */
const injected = (url: (setup: Setup) => string, body: (setup: Setup) => string) => (setup: Setup) => {
  const payload = body(setup);
  const path = url(setup);
  return async (secs: number): Promise<LoadResult> => {
    const times: number[] = [];
    const end = performance.now() + secs * 1000;
    let failures = 0;
    const t0 = performance.now();
    while (performance.now() < end) {
      const c0 = performance.now();
      const response = await setup.injectApp.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json' },
        payload,
      });
      if (response.statusCode !== 200) failures += 1;
      times.push(performance.now() - c0);
    }
    const elapsed = (performance.now() - t0) / 1000;
    times.sort((a, b) => a - b);
    return {
      requests: times.length,
      seconds: elapsed,
      rps: times.length / elapsed,
      p50Ms: times[Math.floor(times.length * 0.5)]!,
      p99Ms: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!,
      failures,
    };
  };
};

/** Counts what the server writes to its log (its stdout) while `measure` loads it. */
const withLogSize =
  (measure: Measure, setup: Setup): Measure =>
  async (secs) => {
    const before = statSync(setup.one.proc.logFile).size;
    const result = await measure(secs);
    setup.logged.bytes += statSync(setup.one.proc.logFile).size - before;
    setup.logged.seconds += result.seconds;
    setup.logged.requests += result.requests;
    return result;
  };

/**
 * One load of the interleaved rounds, named, as Hono's router benchmarks name their routes: texts per
 * request (or per in-process call), connections, what it loads (undefined: not on this machine), and the
 * process whose peak RSS is sampled meanwhile. Every round runs them in this order.
 */
export interface LoadCase {
  id: string;
  texts: number;
  connections: number;
  measure(setup: Setup): Measure | undefined;
  rssOf?(setup: Setup): number;
}

// 50 connections where latency is judged; fewer for big batches, where more only queue (one core).
export const LOAD_CASES: LoadCase[] = [
  { id: 'floor', texts: 1, connections: 50, measure: floorAt(50) },
  {
    id: 'tagger-1',
    texts: 1,
    connections: 50,
    measure: (setup) => withLogSize(predictOn(1, 50)(setup)!, setup),
    rssOf: (setup) => setup.one.proc.pid,
  },
  // Each protocol beside /predict, single texts at 50 connections, right after it in every round.
  ...(Object.keys(PROTOCOLS) as Protocol[]).map(
    (protocol): LoadCase => ({
      id: `${protocol}-1`,
      texts: 1,
      connections: 50,
      measure: (setup) =>
        load(setup, `${setup.one.url}${PROTOCOLS[protocol].path}`, setup.protocolBodies[protocol], 50),
    }),
  ),
  // The single-text ratio at light concurrency too: one client waiting on each answer, and ten.
  ...[1, 10].flatMap((c): LoadCase[] => [
    { id: `floor-c${c}`, texts: 1, connections: c, measure: floorAt(c) },
    { id: `tagger-1-c${c}`, texts: 1, connections: c, measure: predictOn(1, c) },
  ]),
  { id: 'tagger-10', texts: 10, connections: 50, measure: predictOn(10, 50) },
  { id: 'tagger-100', texts: 100, connections: 8, measure: predictOn(100, 8) },
  {
    id: 'tagger-1000',
    texts: 1000,
    connections: 4,
    measure: predictOn(1000, 4),
    rssOf: (setup) => setup.one.proc.pid,
  },
  { id: 'tagger-2w-1', texts: 1, connections: 50, measure: predictOn(1, 50, (s) => s.two) },
  { id: 'tagger-1-other-node', texts: 1, connections: 50, measure: predictOn(1, 50, (s) => s.other?.server) },
  { id: 'inproc-1', texts: 1, connections: 0, measure: inProcess(1) },
  { id: 'inproc-1000', texts: 1000, connections: 0, measure: inProcess(1000) },
  // What one request costs the server through each protocol, without the network: the same saved model
  // in an app of this process, each protocol's body in turn (issue 41).
  {
    id: 'inject-predict',
    texts: 1,
    connections: 0,
    measure: injected(
      () => '/predict',
      (s) => JSON.stringify({ texts: [{ text: s.single }] }),
    ),
  },
  ...(Object.keys(PROTOCOLS) as Protocol[]).map(
    (protocol): LoadCase => ({
      id: `inject-${protocol}`,
      texts: 1,
      connections: 0,
      measure: injected(
        () => PROTOCOLS[protocol].path,
        (s) => protocolBody(protocol, s.single),
      ),
    }),
  ),
  { id: 'mlflow-1', texts: 1, connections: 50, measure: mlflowWith(1, 50) },
  { id: 'mlflow-100', texts: 100, connections: 8, measure: mlflowWith(100, 8) },
];

/** Startup times and RSS, per store, over every round. */
export interface Startups {
  one: number[];
  many: number[];
  rssOne: number[];
  rssMany: number[];
  sqliteOne: number[];
  sqliteMany: number[];
}

/**
 * The startups of each round, in this order: 1 run vs 1,000 runs alternating, in SQLite (the default
 * store) and in the mlruns layout; where they go in `Startups`.
 */
export const STARTUP_CASES: {
  name: string;
  store(fixture: Fixture): string;
  seconds: keyof Startups;
  rss?: keyof Startups;
}[] = [
  { name: 'startup-sqlite-1', store: (f) => f.sqlite1, seconds: 'sqliteOne' },
  { name: 'startup-sqlite-1000', store: (f) => f.sqlite1000, seconds: 'sqliteMany' },
  { name: 'startup-1', store: (f) => f.store1, seconds: 'one', rss: 'rssOne' },
  { name: 'startup-1000', store: (f) => f.store1000, seconds: 'many', rss: 'rssMany' },
];

/** What the rows are made of: each case's medians over the rounds, and the rest measured. */
export interface Results {
  setup: Setup;
  /** A case's medians (throws for a case that did not run). */
  of(id: string): Measured;
  ran(id: string): boolean;
  /** A case's connections, as the notes write them. */
  conns(id: string): string;
  startups: Startups;
  peakRss: number | null;
  logMbPerMinute: number;
}

const lat = (x: Measured) => `p50 ${x.p50Ms.toFixed(2)} ms, p99 ${x.p99Ms.toFixed(2)} ms`;

/** The rows of the table, in order. */
export const ROW_CASES: RowCase<Results>[] = [
  {
    metric: 'floor: bare node:http, 1 text',
    unit: 'req/s',
    tagger: () => null,
    reference: (r) => r.of('floor').rps,
    note: (r) => `${r.conns('floor')}; ${lat(r.of('floor'))}`,
  },
  {
    metric: 'request log written at the default level under single-text load',
    unit: 'MB/min',
    tagger: (r) => r.logMbPerMinute,
    reference: () => null,
    target: { text: '< 10 MB/min', pass: (r) => r.logMbPerMinute < 10 },
    note: ({ setup: { logged }, logMbPerMinute }) =>
      `${logged.bytes.toLocaleString('en-US')} bytes over ${logged.requests.toLocaleString('en-US')} requests in ${logged.seconds.toFixed(0)} s (${Math.round(logged.requests / Math.max(logged.seconds, 1e-9)).toLocaleString('en-US')} req/s); a 5-minute soak at that rate: ${(logMbPerMinute * 5 || 0).toFixed(2)} MB`,
  },
  {
    metric: 'Tagger POST /predict, 1 text (vs floor)',
    unit: 'req/s',
    tagger: (r) => r.of('tagger-1').rps,
    reference: (r) => r.of('floor').rps,
    target: { text: '>= 0.6x floor', pass: (r) => r.of('tagger-1').rps >= 0.6 * r.of('floor').rps },
    note: (r) => `${r.conns('tagger-1')}; ${lat(r.of('tagger-1'))}`,
  },
  {
    metric: 'Tagger POST /predict, 1 text: p99 latency (vs floor)',
    unit: 'ms',
    tagger: (r) => r.of('tagger-1').p99Ms,
    reference: (r) => r.of('floor').p99Ms,
    target: { text: '<= 5 ms', pass: (r) => r.of('tagger-1').p99Ms <= 5 },
    note: () => '50 connections',
  },
  ...(Object.keys(PROTOCOLS) as Protocol[]).flatMap((protocol): RowCase<Results>[] => [
    {
      metric: `${PROTOCOLS[protocol].name}, 1 text (vs POST /predict)`,
      unit: 'req/s',
      tagger: (r) => r.of(`${protocol}-1`).rps,
      reference: (r) => r.of('tagger-1').rps,
      target: {
        text: '>= 0.85x /predict',
        pass: (r) => r.of(`${protocol}-1`).rps >= 0.85 * r.of('tagger-1').rps,
      },
      note: (r) =>
        `${r.conns(`${protocol}-1`)}; ${(r.of(`${protocol}-1`).rps / r.of('tagger-1').rps).toFixed(2)}x; ${lat(r.of(`${protocol}-1`))}`,
    },
    {
      metric: `${PROTOCOLS[protocol].name}, 1 text: p99 latency (vs POST /predict)`,
      unit: 'ms',
      tagger: (r) => r.of(`${protocol}-1`).p99Ms,
      reference: (r) => r.of('tagger-1').p99Ms,
      note: () => '50 connections, the same server, measured right after /predict in each round',
    },
  ]),
  ...(Object.keys(PROTOCOLS) as Protocol[]).map(
    (protocol): RowCase<Results> => ({
      metric: `${PROTOCOLS[protocol].name}, 1 text, in-process app (vs POST /predict in-process)`,
      unit: 'req/s',
      tagger: (r) => r.of(`inject-${protocol}`).rps,
      reference: (r) => r.of('inject-predict').rps,
      note: (r) =>
        `one caller, app.inject, no network; p50 ${(r.of(`inject-${protocol}`).p50Ms * 1000).toFixed(0)} µs vs ${(r.of('inject-predict').p50Ms * 1000).toFixed(0)} µs`,
    }),
  ),
  ...[1, 10].map(
    (c): RowCase<Results> => ({
      metric: `Tagger POST /predict, 1 text at ${c} connection${c === 1 ? '' : 's'} (vs floor at ${c})`,
      unit: 'req/s',
      tagger: (r) => r.of(`tagger-1-c${c}`).rps,
      reference: (r) => r.of(`floor-c${c}`).rps,
      note: (r) => `Tagger ${lat(r.of(`tagger-1-c${c}`))}; floor ${lat(r.of(`floor-c${c}`))}`,
    }),
  ),
  ...[10, 100].map(
    (n): RowCase<Results> => ({
      metric: `Tagger POST /predict, ${n} texts (vs in-process, ${n === 10 ? 1 : 1000} per call)`,
      unit: 'texts/s',
      tagger: (r) => r.of(`tagger-${n}`).textsPerSecond,
      reference: (r) => r.of(n === 10 ? 'inproc-1' : 'inproc-1000').textsPerSecond,
      note: (r) =>
        `${Math.round(r.of(`tagger-${n}`).rps)} req/s; ${r.conns(`tagger-${n}`)}; ${lat(r.of(`tagger-${n}`))}`,
    }),
  ),
  {
    metric: 'Tagger POST /predict, 1000 texts (vs in-process)',
    unit: 'texts/s',
    tagger: (r) => r.of('tagger-1000').textsPerSecond,
    reference: (r) => r.of('inproc-1000').textsPerSecond,
    target: {
      text: '>= 0.8x in-process',
      pass: (r) => r.of('tagger-1000').textsPerSecond >= 0.8 * r.of('inproc-1000').textsPerSecond,
    },
    note: (r) =>
      `${Math.round(r.of('tagger-1000').rps)} req/s; ${r.conns('tagger-1000')}; ${lat(r.of('tagger-1000'))}`,
  },
  {
    metric: 'in-process predict, 1000 texts per call',
    unit: 'texts/s',
    tagger: (r) => r.of('inproc-1000').textsPerSecond,
    reference: () => null,
    note: (r) => `p50 ${r.of('inproc-1000').p50Ms.toFixed(1)} ms per call; no HTTP`,
  },
  {
    metric: 'in-process predict, 1 text per call',
    unit: 'texts/s',
    tagger: (r) => r.of('inproc-1').textsPerSecond,
    reference: () => null,
    note: (r) => `p50 ${(r.of('inproc-1').p50Ms * 1000).toFixed(0)} µs per call`,
  },
  {
    metric: 'Tagger 1 text vs MLflow scoring server 1 text',
    unit: 'req/s',
    when: (r) => r.ran('mlflow-1') && r.ran('mlflow-100'),
    tagger: (r) => r.of('tagger-1').rps,
    reference: (r) => r.of('mlflow-1').rps,
    target: { text: '>= 20x MLflow', pass: (r) => r.of('tagger-1').rps >= 20 * r.of('mlflow-1').rps },
    note: (r) => {
      const ml1 = r.of('mlflow-1');
      return `MLflow: ${lat(ml1)}${ml1.failures ? `, ${ml1.failures} failed` : ''}`;
    },
  },
  {
    metric: 'Tagger 100 texts vs MLflow scoring server 100 texts',
    unit: 'texts/s',
    when: (r) => r.ran('mlflow-1') && r.ran('mlflow-100'),
    tagger: (r) => r.of('tagger-100').textsPerSecond,
    reference: (r) => r.of('mlflow-100').textsPerSecond,
    note: (r) => `MLflow: ${Math.round(r.of('mlflow-100').rps)} req/s, ${lat(r.of('mlflow-100'))}`,
  },
  {
    metric: 'Tagger 1 text vs MLflow scoring server 1 text',
    unit: 'req/s',
    when: (r) => !(r.ran('mlflow-1') && r.ran('mlflow-100')),
    tagger: (r) => r.of('tagger-1').rps,
    reference: () => null,
    note: (r) => r.setup.notes.find((n) => n.includes('MLflow')) ?? 'skipped',
  },
  {
    metric: (r) => `Tagger 1 text on Node ${process.versions.node} vs Node ${r.setup.other?.node.version}`,
    unit: 'req/s',
    when: (r) => r.ran('tagger-1-other-node'),
    tagger: (r) => r.of('tagger-1').rps,
    reference: (r) => r.of('tagger-1-other-node').rps,
    note: (r) =>
      `same dist/ and load; Node ${r.setup.other?.node.version}: ${lat(r.of('tagger-1-other-node'))}`,
  },
  {
    metric: 'Tagger --workers 2 vs --workers 1, 1 text',
    unit: 'req/s',
    tagger: (r) => r.of('tagger-2w-1').rps,
    reference: (r) => r.of('tagger-1').rps,
    note: (r) => `the load generator shares the 2 cores with both workers; ${lat(r.of('tagger-2w-1'))}`,
  },
  {
    metric: 'startup to port open, 1 run (SQLite, the default store)',
    unit: 's',
    tagger: (r) => median(r.startups.sqliteOne),
    reference: () => null,
    note: (r) => `median of ${r.startups.sqliteOne.length}; process start -> first connection`,
  },
  {
    metric: `startup to port open, ${MANY_RUNS} runs (vs 1 run; SQLite, the default store)`,
    unit: 's',
    tagger: (r) => median(r.startups.sqliteMany),
    reference: (r) => median(r.startups.sqliteOne),
    target: {
      text: '<= 1 s beyond 1 run',
      pass: (r) => median(r.startups.sqliteMany) - median(r.startups.sqliteOne) <= 1,
    },
    note: (r) =>
      `+${(median(r.startups.sqliteMany) - median(r.startups.sqliteOne)).toFixed(3)} s; median of ${r.startups.sqliteMany.length}`,
  },
  {
    metric: 'startup to port open, 1 run (mlruns folder layout)',
    unit: 's',
    tagger: (r) => median(r.startups.one),
    reference: () => null,
    note: (r) => `median of ${r.startups.one.length}; process start -> first connection`,
  },
  {
    metric: `startup to port open, ${MANY_RUNS} runs (vs 1 run; mlruns folder layout)`,
    unit: 's',
    tagger: (r) => median(r.startups.many),
    reference: (r) => median(r.startups.one),
    note: (r) =>
      `+${(median(r.startups.many) - median(r.startups.one)).toFixed(3)} s; median of ${r.startups.many.length}; listing reads every run's files`,
  },
  {
    metric: 'RSS after startup, 1 run',
    unit: 'MB',
    tagger: (r) => (r.startups.rssOne.length ? median(r.startups.rssOne) : r.setup.idleRss),
    reference: () => null,
  },
  {
    metric: `RSS after startup, ${MANY_RUNS} runs`,
    unit: 'MB',
    tagger: (r) => (r.startups.rssMany.length ? median(r.startups.rssMany) : null),
    reference: () => null,
  },
  {
    metric: 'RSS under load (peak; 1 and 1000 texts per request)',
    unit: 'MB',
    tagger: (r) => r.peakRss,
    reference: () => null,
    target: { text: '<= 150 MB', pass: (r) => r.peakRss !== null && r.peakRss <= 150 },
  },
  {
    metric: 'MLflow scoring server startup to port open',
    unit: 's',
    when: (r) => r.setup.mlflow !== undefined,
    tagger: () => null,
    reference: (r) => r.setup.mlflow?.startupSeconds ?? null,
  },
];
