/**
 * The load generator of the HTTP benchmark: `wrk` (a C program, light on the CPU it shares with the
 * servers on this machine) when installed, else autocannon (Node, heavier: it takes CPU from the server
 * under test, so ratios against the floor are comparable but absolute numbers are lower).
 * Every run is bounded in time and connection count and targets loopback only.
 */
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './paths.js';

const run = promisify(execFile);
const WRK = process.env.TAGGER_BENCH_WRK ?? '/usr/bin/wrk';
const AUTOCANNON = resolve(REPO, 'node_modules', 'autocannon', 'autocannon.js');

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx, plus socket errors and timeouts. */
  failures: number;
}

export interface LoadSpec {
  url: string;
  /** File holding the JSON request body (POST). */
  bodyFile: string;
  connections: number;
  seconds: number;
  /** Sent as `X-API-Key` when the server has keys configured. */
  apiKey?: string;
}

export type LoadTool = 'wrk' | 'autocannon';

export function loadTool(): LoadTool {
  return existsSync(WRK) ? 'wrk' : 'autocannon';
}

/** Lua for wrk: POST the body file, print one JSON line with the totals when done. */
const WRK_SCRIPT = `
local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("BENCH_API_KEY")
if key ~= nil and key ~= "" then wrk.headers["X-API-Key"] = key end
done = function(summary, latency, requests)
  io.write(string.format('BENCH_JSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status, latency:percentile(50), latency:percentile(99)))
end
`;

export async function runLoad(spec: LoadSpec, workDir: string): Promise<LoadResult> {
  if (!spec.url.startsWith('http://127.0.0.1:'))
    throw new Error(`bench: load only on loopback, not ${spec.url}`);
  const timeoutMs = (spec.seconds + 30) * 1000;
  if (loadTool() === 'wrk') {
    // In this call's folder: a section that ran before may have removed its own (the script path of an
    // earlier call would be gone, and wrk would fall back to bodiless GETs).
    const scriptFile = join(workDir, 'wrk-post.lua');
    if (!existsSync(scriptFile)) writeFileSync(scriptFile, WRK_SCRIPT);
    // One wrk thread: the second core is the server's.
    const { stdout } = await run(
      WRK,
      ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--timeout', '10s', '-s', scriptFile, spec.url],
      {
        env: { ...process.env, BENCH_BODY_FILE: spec.bodyFile, BENCH_API_KEY: spec.apiKey ?? '' },
        timeout: timeoutMs,
        maxBuffer: 1 << 20,
      },
    );
    const line = /BENCH_JSON (.*)/.exec(stdout)?.[1];
    if (line === undefined) throw new Error(`bench: unexpected wrk output:\n${stdout}`);
    const r = JSON.parse(line) as Record<string, number>;
    const seconds = r.duration_us! / 1e6;
    return {
      requests: r.requests!,
      seconds,
      rps: r.requests! / seconds,
      p50Ms: r.p50_us! / 1000,
      p99Ms: r.p99_us! / 1000,
      failures: r.connect! + r.read! + r.write! + r.timeout! + r.status!,
    };
  }
  const { stdout } = await run(
    process.execPath,
    [
      AUTOCANNON,
      '-c',
      String(spec.connections),
      '-d',
      String(spec.seconds),
      '-m',
      'POST',
      '-H',
      'content-type=application/json',
      ...(spec.apiKey ? ['-H', `x-api-key=${spec.apiKey}`] : []),
      '-i',
      spec.bodyFile,
      '-t',
      '10',
      '-j',
      spec.url,
    ],
    { timeout: timeoutMs, maxBuffer: 16 << 20 },
  );
  const r = JSON.parse(stdout) as {
    requests: { total: number };
    duration: number;
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
    timeouts: number;
  };
  return {
    requests: r.requests.total,
    seconds: r.duration,
    rps: r.requests.total / r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    failures: r.non2xx + r.errors + r.timeouts,
  };
}
