/**
 * The `scale` section's serving part (issue 31: "RSS of a 500-tag model served"): a model of many tags
 * (the default classifier and `classifier: fasttext`, trained by bench/scale-train.ts in a process of its
 * own and saved as a model directory) served by a real `tagger serve --model <dir> --workers 1` process.
 * Measured: the server's RSS once it listens and after the requests (and its peak), and single-text
 * POST /predict latency over HTTP on loopback, one request at a time: with the default answer (the 20 most
 * probable tags' probabilities, `probabilities_listed` saying so), with `"probabilities": "all"`, and the
 * default answer with prediction records off (`--record-sample-rate 0`; records keep every tag's
 * probability, so recording makes the model build all of them), the three interleaved request by request.
 * Client-side wall time on a shared machine: compare the rows of one run with each other, not across runs.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { serveExecArgv } from '../src/server/node-flags.js';
import { resolveCli } from './fixture.js';
import { childPids, freePort, peakRssMb, rssMb, start, waitForPort } from './procs.js';
import type { BenchRow } from './section.js';

/** One kind's figures (all null when its training or serving did not finish: `reason`). */
export interface ServedManyTags {
  system: string;
  rows: number;
  tags: number;
  reason?: string;
  model_tags?: number;
  idle_rss_mb?: number | null;
  rss_after_mb?: number | null;
  peak_rss_mb?: number | null;
  /** Per variant: p50 and p99 µs of one request, and the answer's bytes. */
  latency?: Record<Variant, { p50_us: number; p99_us: number; bytes: number }>;
}

type Variant = 'default' | 'all' | 'no_records';

/** The kinds served: Tagger's default and its scale kind, as bench/scale.ts trains them. */
export const SERVED_KINDS: readonly { system: string; args: Record<string, unknown> }[] = [
  { system: 'tagger default', args: {} },
  { system: 'tagger fasttext', args: { classifier: 'fasttext' } },
];

const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** RSS of a server and its workers (MB), or null. */
function treeMb(pid: number, read: (pid: number) => number | null): number | null {
  const all = [pid, ...childPids(pid)].map(read);
  return all.some((mb) => mb === null) ? null : all.reduce((a, b) => a! + b!, 0);
}

/** One single-text POST /predict: its wall time (µs) and answer bytes; throws unless 200. */
async function timeRequest(
  url: string,
  text: string,
  extra: Record<string, unknown>,
): Promise<{ us: number; bytes: number }> {
  const body = JSON.stringify({ texts: [{ text }], ...extra });
  const t0 = process.hrtime.bigint();
  const response = await fetch(`${url}/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body,
  });
  const answer = await response.text();
  const us = Number(process.hrtime.bigint() - t0) / 1e3;
  if (response.status !== 200)
    throw new Error(`POST /predict answered ${response.status}: ${answer.slice(0, 300)}`);
  return { us, bytes: Buffer.byteLength(answer) };
}

/** Serves `modelDir` twice (records on, as by default, and off) and measures both (stopped after). */
async function measureServer(
  modelDir: string,
  work: string,
  name: string,
  texts: readonly string[],
  requests: number,
  log: (message: string) => void,
): Promise<Omit<ServedManyTags, 'system' | 'rows' | 'tags' | 'model_tags'>> {
  const cli = resolveCli(log);
  const serve = async (flags: string[], label: string) => {
    const port = await freePort();
    const cwd = join(work, label);
    mkdirSync(cwd, { recursive: true });
    const proc = start(
      label,
      process.execPath,
      [
        ...serveExecArgv([]),
        cli,
        'serve',
        '--model',
        modelDir,
        '--port',
        String(port),
        '--workers',
        '1',
        ...flags,
      ],
      { cwd, logFile: join(work, `${label}.log`) },
    );
    try {
      await waitForPort(proc, port, 300_000);
    } catch (error) {
      await proc.stop();
      throw error;
    }
    return { proc, url: `http://127.0.0.1:${port}` };
  };
  const main = await serve([], `${name}-serve`);
  const idle = treeMb(main.proc.pid, rssMb);
  let quiet: Awaited<ReturnType<typeof serve>> | undefined;
  try {
    quiet = await serve(['--record-sample-rate', '0'], `${name}-no-records`);
    // The variants interleaved, request by request, so a busy machine slows them alike.
    const variants: [Variant, string, Record<string, unknown>][] = [
      ['default', main.url, {}],
      ['all', main.url, { probabilities: 'all' }],
      ['no_records', quiet.url, {}],
    ];
    const times = new Map<Variant, number[]>(variants.map(([variant]) => [variant, []]));
    const bytes = new Map<Variant, number>();
    for (let i = -Math.min(50, requests); i < requests; i++) {
      const text = texts[(i + texts.length) % texts.length]!;
      for (const [variant, url, extra] of variants) {
        const answer = await timeRequest(url, text, extra);
        if (i < 0) continue;
        times.get(variant)!.push(answer.us);
        bytes.set(variant, answer.bytes);
      }
    }
    const latency = Object.fromEntries(
      variants.map(([variant]) => {
        const sorted = times.get(variant)!.sort((a, b) => a - b);
        return [
          variant,
          { p50_us: quantile(sorted, 0.5), p99_us: quantile(sorted, 0.99), bytes: bytes.get(variant)! },
        ];
      }),
    ) as NonNullable<ServedManyTags['latency']>;
    return {
      idle_rss_mb: idle,
      rss_after_mb: treeMb(main.proc.pid, rssMb),
      peak_rss_mb: treeMb(main.proc.pid, peakRssMb),
      latency,
    };
  } finally {
    await main.proc.stop();
    await quiet?.proc.stop();
  }
}

/**
 * Trains each kind on the given files (through `train`: bench/scale.ts's child runner, which answers the
 * training's report or why there is none) and measures it served.
 */
export async function measureServedManyTags(input: {
  size: { rows: number; tags: number };
  kinds: readonly { system: string; args: Record<string, unknown> }[];
  work: string;
  texts: readonly string[];
  requests: number;
  train: (args: Record<string, unknown>, modelDir: string, out: string) => Promise<{ tags: number } | string>;
  log: (message: string) => void;
}): Promise<ServedManyTags[]> {
  const out: ServedManyTags[] = [];
  for (const kind of input.kinds) {
    const base = { system: kind.system, rows: input.size.rows, tags: input.size.tags };
    const slug = kind.system.replace(/\W+/g, '-');
    const modelDir = join(input.work, `${slug}-model`);
    input.log(`scale: serving ${kind.system} of ${input.size.tags} tags: training…`);
    const trained = await input.train(kind.args, modelDir, join(input.work, `${slug}-served.json`));
    if (typeof trained === 'string') {
      out.push({ ...base, reason: `training: ${trained}` });
      continue;
    }
    try {
      input.log(`scale: serving ${kind.system} of ${trained.tags} tags: measuring…`);
      const measured = await measureServer(
        modelDir,
        input.work,
        slug,
        input.texts,
        input.requests,
        input.log,
      );
      out.push({ ...base, model_tags: trained.tags, ...measured });
    } catch (error) {
      out.push({
        ...base,
        model_tags: trained.tags,
        reason: `serving: ${(error as Error).message.slice(0, 300)}`,
      });
    }
  }
  return out;
}

/** The table's rows of the served figures. */
export function servedRows(served: readonly ServedManyTags[]): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const s of served) {
    const label = `served ${s.rows / 1000}k x ${s.tags}: ${s.system}`;
    const row = (metric: string, unit: string, value: number | null, note?: string): BenchRow => ({
      section: 'scale',
      metric: `${label} ${metric}`,
      unit,
      tagger: value,
      reference: null,
      ...(note === undefined ? {} : { note }),
    });
    if (s.latency === undefined) {
      rows.push(row('RSS', 'MB', null, s.reason));
      continue;
    }
    const { latency } = s;
    rows.push(
      row(
        'RSS once listening',
        'MB',
        s.idle_rss_mb ?? null,
        `${s.model_tags} tags in the model; tagger serve --workers 1`,
      ),
      row('RSS after requests', 'MB', s.rss_after_mb ?? null, `peak ${s.peak_rss_mb?.toFixed(0) ?? '?'} MB`),
      row(
        'predict p50, 20 most probable',
        'µs/request',
        latency.default.p50_us,
        `p99 ${latency.default.p99_us.toFixed(0)} µs; ${latency.default.bytes} B answer`,
      ),
      row(
        'predict p50, every tag',
        'µs/request',
        latency.all.p50_us,
        `p99 ${latency.all.p99_us.toFixed(0)} µs; ${latency.all.bytes} B answer ("probabilities": "all")`,
      ),
      row(
        'predict p50, 20 most probable, no records',
        'µs/request',
        latency.no_records.p50_us,
        `p99 ${latency.no_records.p99_us.toFixed(0)} µs; --record-sample-rate 0`,
      ),
    );
  }
  return rows;
}
