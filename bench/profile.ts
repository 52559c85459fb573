/**
 * Where a single-text `POST /predict` spends its CPU (`npm run bench -- --profile`): `tagger serve
 * --workers 1` runs under `node --cpu-prof` with every feature on (API key auth, rate limit, in-flight
 * and event-loop load shedding, metrics, request ids, Server-Timing, the request log), wrk sends
 * single-text requests with a key over 50 connections, and each CPU sample taken during the load is
 * attributed to one part of the request by its innermost recognisable stack frame (the rules below).
 * Prints the table, writes docs/profile-single-text.md (committed) and the raw profile to
 * bench/results/ (open it in Chrome DevTools' Performance panel or speedscope).
 */
import {
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { serveExecArgv } from '../src/server/node-flags.js';
import { prepareFixture, resolveCli } from './fixture.js';
import { runLoad } from './load.js';
import { REPO } from './paths.js';
import { freePort, installCleanup, start, waitForPort } from './procs.js';
import type { BenchOptions } from './section.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * The parts of a request, each recognised by a frame's script URL or function name. Checked from the
 * sampled (innermost) frame outwards; the first frame that matches any rule decides, so time inside a
 * library is charged to the library, and a V8 builtin (no URL) to whoever called it.
 */
const PARTS: { part: string; match: (frame: CallFrame) => boolean }[] = [
  { part: 'model (text cleaning, n-grams, scoring)', match: (f) => /\/(dist|src)\/model\//.test(f.url) },
  { part: 'serving layer (served model, run lookup)', match: (f) => /\/(dist|src)\/service\//.test(f.url) },
  {
    part: 'auth (API key)',
    match: (f) =>
      /\/http\/auth\./.test(f.url) || /^(identifyCredentials|requireApiKey)$/.test(f.functionName),
  },
  { part: 'rate limit', match: (f) => /@fastify\/rate-limit|\/http\/shared-rate-limit\./.test(f.url) },
  {
    part: 'load shedding (in-flight, event-loop delay)',
    match: (f) =>
      /@fastify\/under-pressure/.test(f.url) || /^(limitInFlight|releaseInFlight)$/.test(f.functionName),
  },
  {
    part: 'metrics (Prometheus)',
    match: (f) =>
      /prom-client/.test(f.url) || /^(observeResponse|recordPredictions|startTrace)$/.test(f.functionName),
  },
  { part: 'request id', match: (f) => f.functionName === 'requestIdFor' },
  {
    part: 'timing + request-id headers',
    match: (f) => /^(responseHeaders|timeParseStart|timeParseEnd)$/.test(f.functionName),
  },
  {
    part: 'logging (pino, request log summary)',
    match: (f) =>
      /\/(pino|sonic-boom|thread-stream|pino-std-serializers)\//.test(f.url) ||
      f.functionName === 'completed',
  },
  {
    part: 'validation (JSON schema)',
    match: (f) =>
      /\/ajv\/|fastify\/lib\/validation|\/http\/validation\./.test(f.url) ||
      /^validate\d*$/.test(f.functionName),
  },
  {
    part: 'body parsing',
    match: (f) => /secure-json-parse|fastify\/lib\/content-type-parser|\/http\/json-body\./.test(f.url),
  },
  {
    part: 'envelope + serialisation',
    match: (f) =>
      /fast-json-stringify|\/http\/envelope\.|\/http\/responses\.|fastify\/lib\/reply/.test(f.url),
  },
  { part: 'route handler (predict route)', match: (f) => /\/http\/(routes\/|index\.)/.test(f.url) },
  { part: 'routing (find-my-way)', match: (f) => /find-my-way|fastify\/lib\/route\./.test(f.url) },
  { part: 'Fastify core (hooks, request/reply)', match: (f) => /\/fastify\/|\/avvio\//.test(f.url) },
  {
    part: 'Node HTTP + sockets',
    match: (f) =>
      /^node:(_http|net|internal\/(http|stream|streams|net)|stream|events|internal\/timers)/.test(f.url),
  },
  { part: 'garbage collection', match: (f) => f.functionName === '(garbage collector)' },
];
const OTHER = 'other (V8 natives, Node internals)';

interface Attribution {
  part: string;
  samples: number;
  ms: number;
}

/** Time per part for the samples within [fromUs, toUs] of the profile's clock; idle excluded. */
export function attribute(
  profile: CpuProfile,
  fromUs: number,
  toUs: number,
): { parts: Attribution[]; busyMs: number } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const partOf = new Map<number, string | null>();
  const classify = (id: number): string | null => {
    const known = partOf.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') return null;
    const rule = PARTS.find((candidate) => candidate.match(node.callFrame));
    const parentId = parent.get(id);
    const part = rule ? rule.part : parentId === undefined ? OTHER : classify(parentId);
    partOf.set(id, part);
    return part;
  };
  const totals = new Map<string, { samples: number; us: number }>();
  let time = profile.startTime;
  let busyUs = 0;
  for (let index = 0; index < profile.samples.length; index += 1) {
    const delta = profile.timeDeltas[index] ?? 0;
    time += delta;
    if (time < fromUs || time > toUs) continue;
    // A sample's weight is the interval until the next one (the profiler's own attribution).
    const weight = profile.timeDeltas[index + 1] ?? delta;
    const part = classify(profile.samples[index]!);
    if (part === null) continue;
    const entry = totals.get(part) ?? { samples: 0, us: 0 };
    entry.samples += 1;
    entry.us += weight;
    totals.set(part, entry);
    busyUs += weight;
  }
  const parts = [...totals]
    .map(([part, { samples, us }]) => ({ part, samples, ms: us / 1000 }))
    .sort((a, b) => b.ms - a.ms);
  return { parts, busyMs: busyUs / 1000 };
}

export async function profile(opts: BenchOptions): Promise<void> {
  installCleanup();
  const log = (message: string): void => {
    process.stderr.write(`profile: ${message}\n`);
  };
  const fixture = await prepareFixture(log);
  const cli = resolveCli(log);
  const work = mkdtempSync(join(tmpdir(), 'tagger-profile-'));
  const profileDir = join(work, 'cpuprofile');
  const port = await freePort();
  const apiKey = 'bench-profile-key-0123456789';
  const proc = start(
    'tagger-profiled',
    process.execPath,
    [
      ...serveExecArgv([]),
      '--cpu-prof',
      `--cpu-prof-dir=${profileDir}`,
      '--cpu-prof-interval=250',
      cli,
      'serve',
      '--port',
      String(port),
      '--workers',
      '1',
    ],
    {
      cwd: work,
      env: {
        ...process.env,
        MLFLOW_TRACKING_URI: fixture.store1,
        TAGGER_EXPERIMENT: 'best',
        TAGGER_RELOAD_INTERVAL_MS: '0',
        TAGGER_SHUTDOWN_DELAY_MS: '0',
        TAGGER_API_KEYS: apiKey,
        // Every request passes the limiter's bookkeeping; none is refused.
        TAGGER_RATE_LIMIT_MAX: '1000000000',
        TAGGER_RATE_LIMIT_WINDOW_MS: '60000',
      },
      logFile: join(work, 'server.log'),
    },
  );
  try {
    await waitForPort(proc, port, 60_000);
    const url = `http://127.0.0.1:${port}/predict`;
    const bodyFile = join(work, 'body.json');
    writeFileSync(bodyFile, JSON.stringify({ texts: [{ text: fixture.texts[0] }] }));
    const seconds = opts.quick ? 4 : 10;
    log('warming up for 3 s');
    await runLoad({ url, bodyFile, connections: 50, seconds: 3, apiKey }, work);
    log(`profiling ${seconds} s of single-text requests at 50 connections`);
    const loadStart = performance.now();
    const result = await runLoad({ url, bodyFile, connections: 50, seconds, apiKey }, work);
    const loadEnd = performance.now();
    if (result.failures > 0)
      throw new Error(`profile: ${result.failures} of ${result.requests} requests failed`);
    await proc.stop();
    const exited = performance.now();
    const file = readdirSync(profileDir)
      .map((name) => join(profileDir, name))
      .sort((a, b) => statSync(b).size - statSync(a).size)[0];
    if (!file) throw new Error(`profile: the server wrote no CPU profile (log: ${join(work, 'server.log')})`);
    const cpu = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    // The profile ends when the process exits; the load window, measured here, is placed back from there.
    const fromUs = cpu.endTime - (exited - loadStart) * 1000;
    const toUs = cpu.endTime - (exited - loadEnd) * 1000;
    const { parts, busyMs } = attribute(cpu, fromUs, toUs);
    const perRequestUs = (ms: number): number => (ms * 1000) / result.requests;

    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const raw = resolve(REPO, 'bench', 'results', `profile-${stamp}.cpuprofile`);
    copyFileSync(file, raw);
    const rows = parts.map((p) => ({
      part: p.part,
      share: (100 * p.ms) / busyMs,
      usPerRequest: perRequestUs(p.ms),
    }));
    const summary = {
      date: new Date().toISOString(),
      node: process.version,
      requests: result.requests,
      seconds: result.seconds,
      rps: result.rps,
      p99Ms: result.p99Ms,
      busyMs,
      cpuUsPerRequest: perRequestUs(busyMs),
      rows,
    };
    writeFileSync(raw.replace(/\.cpuprofile$/, '.json'), `${JSON.stringify(summary, null, 2)}\n`);

    const table = [
      '| part | share of busy CPU | µs per request |',
      '|---|---:|---:|',
      ...rows.map((row) => `| ${row.part} | ${row.share.toFixed(1)} % | ${row.usPerRequest.toFixed(1)} |`),
      `| **all (busy, idle excluded)** | 100 % | ${summary.cpuUsPerRequest.toFixed(1)} |`,
    ].join('\n');
    console.log(table);
    console.log(
      `${result.requests.toLocaleString('en-US')} requests in ${result.seconds.toFixed(1)} s (${Math.round(result.rps).toLocaleString('en-US')} req/s, p99 ${result.p99Ms.toFixed(1)} ms); raw profile: ${relative(REPO, raw)}`,
    );
    const doc = resolve(REPO, 'docs', 'profile-single-text.md');
    writeFileSync(
      doc,
      [
        '# Where a single-text `/predict` spends its CPU',
        '',
        `Generated by \`npm run bench -- --profile\` (bench/profile.ts) on ${summary.date.slice(0, 10)}, Node ${summary.node}, ${process.env.TAGGER_PROFILE_MACHINE ?? 'a 2-core VM shared with the load generator'}.`,
        '`tagger serve --workers 1` (the default model, every feature on: API key auth, rate limit, load shedding,',
        'metrics, request ids, Server-Timing, the request log at `info`) under `node --cpu-prof`; wrk sends',
        `single-text requests with an API key over 50 connections for ${seconds} s after a 3 s warm-up.`,
        'Each CPU sample in the load window is charged to the innermost stack frame that belongs to a known part',
        '(rules in bench/profile.ts): time in a library goes to the library, a V8 builtin to its caller.',
        '',
        `${result.requests.toLocaleString('en-US')} requests, ${Math.round(result.rps).toLocaleString('en-US')} req/s, p99 ${result.p99Ms.toFixed(1)} ms; ${summary.cpuUsPerRequest.toFixed(1)} µs of the server's CPU per request.`,
        '',
        table,
        '',
        'The raw profile of a run is written to `bench/results/profile-<time>.cpuprofile` (not committed; open it',
        "in Chrome DevTools' Performance panel or speedscope).",
        '',
      ].join('\n'),
    );
    console.error(`wrote ${relative(REPO, doc)}`);
  } finally {
    await proc.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
