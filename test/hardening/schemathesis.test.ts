/**
 * Property-based fuzzing of the real server with schemathesis (from the project's venv): every documented
 * operation, positive and negative data, all checks (status codes and response schemas as documented,
 * no 5xx, auth enforced where the document says so, ...). The server runs in this process on an
 * ephemeral loopback port with API keys on, so the auth checks have something to check; the app's own
 * /metrics counts what reached it, independently of schemathesis' report.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpMetrics } from '../../src/app.js';
import type { TaggerApp } from '../../src/http/index.js';
import { Monitoring } from '../../src/monitoring/index.js';
import { REPO_ROOT } from '../support/components.js';
import { captureLog, runsApp } from '../support/http.js';
import { testMonitoringConfig } from '../support/monitoring.js';
import { useServingFixture } from '../support/serving-fixture.js';
import { venvBin } from '../support/venv.js';

const schemathesis = venvBin('schemathesis');
const KEY = 'schemathesis-key-0123456789abcdef';
/** Examples per operation: operations with few parameters run out of distinct cases early, so 100 are needed for over 1,000 requests in total (measured: 75 gave about 850). */
const MAX_EXAMPLES = 100;

const fx = useServingFixture({ enabled: schemathesis !== null });
let app: TaggerApp;
let monitoring: Monitoring | undefined;
let base: string;

beforeAll(async () => {
  if (schemathesis === null) return;
  // With monitoring (records in memory), so POST /feedback and GET /monitoring are fuzzed as served.
  const metrics = createHttpMetrics({ defaultMetrics: false });
  monitoring = new Monitoring(testMonitoringConfig(), { log: captureLog(), registry: metrics.registry });
  ({ app } = await runsApp(fx.store, { deps: { http: { apiKeys: [KEY] }, metrics, monitoring } }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  await monitoring?.close();
});

function run(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: '1' } });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      output += String(chunk);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, output });
    });
  });
}

describe.skipIf(schemathesis === null)('schemathesis against the running server', () => {
  it('finds no failure across every endpoint, with at least 1,000 requests', {
    // Above the bound of schemathesis itself (360 s below): 19 operations took 150 s in a full run on a
    // 2-core machine shared with two other test suites; the protocols of issue 41 added 7.
    timeout: 420_000,
  }, async () => {
    const { code, output } = await run(
      schemathesis!,
      [
        '--config-file',
        resolve(REPO_ROOT, 'python', 'schemathesis.toml'),
        'run',
        `${base}/openapi.json`,
        '--checks',
        'all',
        '--max-examples',
        String(MAX_EXAMPLES),
        '--seed',
        '20261121',
        // One worker: with two threads, hypothesis' lambda-source parsing hit a CPython 3.11 ast.parse
        // race ("AST constructor recursion depth mismatch"); generation is GIL-bound anyway.
        '--workers',
        '1',
        // Stateful testing needs OpenAPI links, which this API has none of.
        '--phases',
        'examples,coverage,fuzzing',
        '--request-timeout',
        '20',
        '--header',
        `Authorization: Bearer ${KEY}`,
        '--suppress-health-check',
        'too_slow,data_too_large,filter_too_much',
      ],
      // ~60–130 s on a quiet 2-core machine; the bound leaves room for a busy one.
      360_000,
    );
    // The summary belongs in the test log whatever the outcome; the full output goes to a file.
    const logFile = join(tmpdir(), 'tagger-schemathesis.log');
    await writeFile(logFile, output);
    // Only schemathesis's case counts are echoed: its pytest-style closing banner (`=== 1 warning in 22s ===`)
    // would read, to tools that scan a log for test-runner summaries, as a pytest run with no tests.
    const cases = /Test cases:\s*\n\s*(.+)/.exec(output)?.[1]?.trim() ?? 'no case counts in its output';
    process.stdout.write(`schemathesis test cases — ${cases}; full output in ${logFile}\n`);
    expect(code, output.slice(-6000)).toBe(0);

    const metrics = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${KEY}` } });
    const series = [
      ...metrics.body.matchAll(
        /^tagger_http_requests_total\{method="(\w+)",route="([^"]*)",status_code="(\d+)"\} (\d+)$/gm,
      ),
    ].map(([, method, route, status, count]) => ({
      method,
      route,
      status: Number(status),
      count: Number(count),
    }));
    const total = series.reduce((sum, s) => sum + s.count, 0);
    const routes = new Set(series.map((s) => `${s.method} ${s.route}`));
    process.stdout.write(`server saw ${total} requests on ${routes.size} routes\n`);
    expect(total).toBeGreaterThanOrEqual(1000);
    expect(series.filter((s) => s.status >= 500)).toEqual([]);
    for (const route of [
      'GET /',
      'POST /predict',
      'GET /runs',
      'GET /runs/:run_id',
      'POST /runs/:run_id/predict',
      'GET /performance',
      'GET /args',
      'GET /args/:param',
      'GET /health/live',
      'GET /health/ready',
      'GET /metrics',
      'POST /feedback',
      'GET /monitoring',
      'GET /v2',
      'GET /v2/models/:name',
      'POST /v2/models/:name/infer',
      'POST /hf/text-classification',
    ]) {
      expect(routes, route).toContain(route);
    }
  });
});
