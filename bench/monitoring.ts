/**
 * Monitoring section of the benchmark: what recording predictions costs. Two `tagger serve` processes on
 * the same SQLite tracking store (bench/fixture.ts), one recording every prediction
 * (TAGGER_RECORD_SAMPLE_RATE=1, the default) into a SQLite record store, one recording none (0), measured
 * in interleaved rounds with one and ten texts per request (the median per target is reported). The goal
 * is ≥ 0.9× the throughput with recording on. Afterwards the recording server must have written what it
 * answered (its /metrics: records written, none dropped), so the ratio is not bought by dropping records.
 *
 * Throughput on a machine others use too swings by several times between runs; the server's own CPU time
 * per request (user + system of the process, all its threads, from /proc) does not, so it is reported
 * beside: off/on CPU per request is the capacity ratio a server bound by its CPU would see.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveExecArgv } from '../src/server/node-flags.js';
import { prepareFixture, resolveCli } from './fixture.js';
import { type LoadResult, loadTool, runLoad } from './load.js';
import { freePort, installCleanup, type Proc, start, stopAll, waitForPort } from './procs.js';
import { type BenchOptions, rowsOf, type SectionResult } from './section.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/monitoring] ${message}\n`);
};
const row = rowsOf('monitoring');
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
/** The issue's goal: throughput with every prediction recorded, against none. */
const GOAL = 0.9;

async function startServer(
  cli: string,
  store: string,
  work: string,
  name: string,
  sampleRate: number,
): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = start(
    name,
    process.execPath,
    [...serveExecArgv([]), cli, 'serve', '--port', String(port), '--workers', '1'],
    {
      cwd: work,
      env: {
        ...process.env,
        MLFLOW_TRACKING_URI: store,
        TAGGER_EXPERIMENT: 'best',
        TAGGER_RELOAD_INTERVAL_MS: '0',
        // Its own database (the fixture's tracking database is cached and shared between runs).
        TAGGER_RECORD_STORE: `sqlite:///${join(work, `${name}-records.db`)}`,
        TAGGER_RECORD_SAMPLE_RATE: String(sampleRate),
      },
      logFile: join(work, `${name}.log`),
    },
  );
  await waitForPort(proc, port, 60_000);
  return { proc, url: `http://127.0.0.1:${port}` };
}

/** CPU seconds (user + system, every thread) the process has used, from /proc; null elsewhere. */
function cpuSeconds(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the command), in clock ticks (100/s).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

async function metricValue(url: string, line: RegExp): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(line.exec(text)?.[1] ?? Number.NaN);
}

export async function run(opts: BenchOptions): Promise<SectionResult> {
  installCleanup();
  const work = mkdtempSync(join(tmpdir(), 'tagger-bench-monitoring-'));
  try {
    return await measure(opts, work);
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

async function measure(opts: BenchOptions, work: string): Promise<SectionResult> {
  const rounds = opts.quick ? 2 : 5;
  const seconds = opts.quick ? 3 : 8;
  const notes: string[] = [];
  const breakage: string[] = [];
  const fixture = await prepareFixture(log);
  const cli = resolveCli(log);
  if (loadTool() !== 'wrk') notes.push('wrk not found: autocannon takes more of the CPU the servers share');

  const byLength = [...fixture.texts].sort((a, b) => a.length - b.length);
  const bodyFile = (n: number): string => {
    const texts = n === 1 ? [byLength[byLength.length >> 1]!] : fixture.texts.slice(0, n);
    const file = join(work, `body-${n}.json`);
    writeFileSync(file, JSON.stringify({ texts: texts.map((text) => ({ text })) }));
    return file;
  };
  const bodies = new Map([1, 10].map((n) => [n, bodyFile(n)]));

  log('starting a server recording nothing and one recording every prediction');
  const off = await startServer(cli, fixture.sqlite1, work, 'recording-off', 0);
  const on = await startServer(cli, fixture.sqlite1, work, 'recording-on', 1);

  const results = new Map<string, LoadResult[]>();
  /** The server's CPU microseconds per request, every thread counted. */
  const cpuPerRequest = new Map<string, number[]>();
  for (let round = 1; round <= rounds; round++) {
    for (const texts of [1, 10]) {
      // Alternate which goes first, so neither always follows the other's garbage.
      const order = round % 2 === 0 ? [on, off] : [off, on];
      for (const server of order) {
        const id = `${server === on ? 'on' : 'off'}-${texts}`;
        const spec = { url: `${server.url}/predict`, bodyFile: bodies.get(texts)!, connections: 50 };
        await runLoad({ ...spec, seconds: 1 }, work);
        const cpuBefore = cpuSeconds(server.proc.pid);
        const result = await runLoad({ ...spec, seconds }, work);
        const cpuAfter = cpuSeconds(server.proc.pid);
        results.set(id, [...(results.get(id) ?? []), result]);
        if (cpuBefore !== null && cpuAfter !== null) {
          cpuPerRequest.set(id, [
            ...(cpuPerRequest.get(id) ?? []),
            ((cpuAfter - cpuBefore) * 1e6) / result.requests,
          ]);
        }
        log(
          `round ${round} ${id}: ${Math.round(result.rps)} req/s, ${result.failures} failed, load ${loadavg()[0]!.toFixed(1)}`,
        );
      }
    }
  }
  // Everything the recording server answered reaches its store (allow a flush interval to pass).
  await new Promise((done) => setTimeout(done, 2_000));
  const written = await metricValue(
    on.url,
    /^tagger_prediction_records_written_total\{sink="store"\} (\d+)/m,
  );
  const dropped = await metricValue(
    on.url,
    /^tagger_prediction_records_dropped_total\{sink="store",reason="buffer_full"\} (\d+)/m,
  );
  const answered = [...results]
    .filter(([id]) => id.startsWith('on-'))
    .reduce(
      (sum, [id, list]) => sum + list.reduce((n, r) => n + r.requests, 0) * Number(id.split('-')[1]),
      0,
    );

  const rows = [];
  const details: Record<string, unknown> = {
    rounds: Object.fromEntries(results),
    cpuMicrosecondsPerRequest: Object.fromEntries(cpuPerRequest),
    written,
    dropped,
  };
  for (const texts of [1, 10]) {
    const offRps = median(results.get(`off-${texts}`)!.map((r) => r.rps));
    const onRps = median(results.get(`on-${texts}`)!.map((r) => r.rps));
    const ratio = onRps / offRps;
    const failures = [...results.get(`off-${texts}`)!, ...results.get(`on-${texts}`)!].reduce(
      (sum, r) => sum + r.failures,
      0,
    );
    if (failures > 0) breakage.push(`${failures} failed requests with ${texts} text(s) per request`);
    rows.push({
      ...row(
        `throughput, ${texts} text${texts === 1 ? '' : 's'}/request, recording on vs off`,
        'req/s',
        onRps,
        offRps,
        `median of ${rounds} rounds of ${seconds} s, 50 connections, 1 worker; p99 on ${median(results.get(`on-${texts}`)!.map((r) => r.p99Ms)).toFixed(1)} ms, off ${median(results.get(`off-${texts}`)!.map((r) => r.p99Ms)).toFixed(1)} ms`,
      ),
      target: { text: `>= ${GOAL}x recording off`, pass: ratio >= GOAL },
    });
  }
  rows.push(
    row(
      'records written by the recording server',
      'records',
      written,
      null,
      `${answered} predictions answered in the measured rounds (and more in warm-ups); ${dropped} dropped`,
    ),
  );
  for (const texts of [1, 10]) {
    const off = cpuPerRequest.get(`off-${texts}`);
    const on = cpuPerRequest.get(`on-${texts}`);
    if (off === undefined || on === undefined) continue;
    rows.push({
      ...row(
        `server CPU per request, ${texts} text${texts === 1 ? '' : 's'}, recording on vs off`,
        'µs',
        median(on),
        median(off),
        'user + system of the serving process, every thread (the record store’s worker thread included); off/on is the capacity ratio of a CPU-bound server',
      ),
      target: { text: `off/on >= ${GOAL}`, pass: median(off) / median(on) >= GOAL },
    });
  }
  notes.push(
    `load average during the run: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')} (${availableParallelism()} cores)`,
  );
  if (!(written > 0)) breakage.push('the recording server wrote no records');
  return { rows, breakage, notes, details };
}
