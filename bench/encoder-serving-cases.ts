/**
 * The cases of the encoder section's serving bench (bench/encoder-serving.ts), as Hono's router
 * benchmarks list theirs: the throughput comparisons (THROUGHPUT_CASES), the servers started with the
 * default settings and what is measured on each (SERVER_CASES, run in order), and the rows of the table
 * (ROW_CASES, in order), each named. bench/encoder-serving.ts runs them in one loop each.
 */

import { Agent } from 'node:http';
import type { LabelledText, TagModel, TrainEncoder, TrainingArgs } from '../src/model/index.js';
import { type Answer, body, probeLive, quantile, send, sendAll, waitForEmptyQueue } from './encoder-http.js';
import { longTexts } from './encoder-memory.js';
import { type LoadResult, runLoad } from './load.js';
import { type Proc, peakRssMb } from './procs.js';
import type { RowCase } from './section.js';

export interface Server {
  proc: Proc;
  url: string;
}

export interface ServingBenchInput {
  encoderName: string;
  embedded: TrainEncoder;
  chosen: TrainingArgs;
  dataset: LabelledText[];
  holdout: LabelledText[];
  quick: boolean;
}

/** What every case runs against: the served models, the CLI, the texts and how often to repeat. */
export interface Setup {
  input: ServingBenchInput;
  workDir: string;
  cli: string;
  /** Saved model directories: the CV-chosen encoder configuration and the TF-IDF default. */
  encoderDir: string;
  tfidfDir: string;
  encoderModel: TagModel;
  texts: string[];
  /** Interleaved rounds of the throughput cases (each target's best is the one least disturbed). */
  rounds: number;
  /** The single-text request body (the holdout text of median length), as a file for wrk. */
  singleFile: string;
  /** Seconds of each wrk load. */
  seconds: number;
  /** 1,000 holdout texts, cycling: the big request. */
  thousand: string[];
  breakage: string[];
}

/**
 * A throughput comparison, named by its label: Python onnxruntime, Tagger in-process and Tagger's server
 * on the same texts in the same batches with the same number of threads, in interleaved rounds.
 */
export interface ThroughputCase {
  label: string;
  threads: number;
  batch: number;
  /** Connections of the server's load. */
  connections: number;
  workload(setup: Setup): string[];
  /** Not with --quick. */
  full?: boolean;
}

/** The holdout texts, twice (once with --quick). */
const holdoutPasses = (setup: Setup) =>
  Array.from({ length: setup.input.quick ? 1 : 2 }, () => setup.texts).flat();

export const THROUGHPUT_CASES: ThroughputCase[] = [
  { label: 'batches of 32 texts, 1 thread', threads: 1, batch: 32, connections: 2, workload: holdoutPasses },
  // Two connections: the next text is queued when the encoder finishes one (no idle wake-up between
  // requests, which single-connection latency measures below).
  {
    label: 'one text per call, 1 thread',
    threads: 1,
    batch: 1,
    connections: 2,
    workload: (setup) => setup.texts.slice(0, setup.input.quick ? 24 : 64),
  },
  {
    label: 'batches of 32 texts, 2 threads',
    threads: 2,
    batch: 32,
    connections: 2,
    workload: holdoutPasses,
    full: true,
  },
];

/** Single-text latency at 1 and 10 connections, and /health/live idle and while the 10 load it. */
async function latency(setup: Setup, server: Server) {
  const { singleFile: bodyFile, seconds, workDir } = setup;
  const one = await runLoad({ url: `${server.url}/predict`, bodyFile, connections: 1, seconds }, workDir);
  const idleLive = await probeLive(server.url, new Promise((done) => setTimeout(done, 2_000)));
  const ten = runLoad({ url: `${server.url}/predict`, bodyFile, connections: 10, seconds }, workDir);
  // Probes start once the load has filled the queue.
  await new Promise((done) => setTimeout(done, 500));
  const live = await probeLive(server.url, ten);
  return { one, ten: await ten, live, idleLive };
}

/** 128 requests × 16 texts at once: 2,048 texts, eight times the default queue bound. */
async function burst(setup: Setup, server: Server) {
  const sixteen = body(setup.texts.slice(0, 16));
  const { answers, seconds } = await sendAll(
    server.url,
    Array.from({ length: 128 }, () => sixteen),
    128,
  );
  const served = answers.filter((a) => a.status === 200);
  const shed = answers.filter((a) => a.status === 503);
  return {
    served: served.length,
    shed: shed.length,
    other: answers.length - served.length - shed.length,
    retryAfter: shed[0]?.retryAfter ?? null,
    p99Served: quantile(
      served.map((a) => a.ms),
      0.99,
    ),
    p99Shed: quantile(
      shed.map((a) => a.ms),
      0.99,
    ),
    seconds,
  };
}

/** The 1,000-text request, a few times (once with --quick), over one connection. */
const bigRequests = (setup: Setup, server: Server) =>
  sendAll(
    server.url,
    Array.from({ length: setup.input.quick ? 1 : 3 }, () => body(setup.thousand)),
    1,
  );

/** A probe's answer and when it was sent (seconds after the long requests). */
export interface Probe extends Answer {
  at: number;
}

/** What the overload case saw: the four long requests' answers and every probe's. */
export interface Overload {
  long: Answer[];
  probes: Probe[];
  /** Seconds until the last long request was answered. */
  seconds: number;
}

/** The most a probe may take, answered or refused (issue 42): 2 s. */
export const PROBE_BOUND_MS = 2_000;

/**
 * Four requests of 256 texts at the encoder's token limit at once (4 × ~65,536 estimated tokens: each at
 * TAGGER_ENCODER_MAX_REQUEST_TOKENS, together 32 times the queue's token bound), and a one-text request
 * every second until the four are answered (at most 10 minutes): each probe must be answered, or refused
 * with 503 + Retry-After, within 2 s.
 */
export async function overload(setup: Setup, server: Server): Promise<Overload> {
  const url = `${server.url}/predict`;
  const longBody = body(longTexts(setup.texts, 256));
  const probeBody = body([setup.texts[0]!]);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const started = performance.now();
  let finished = false;
  const long = Promise.all(Array.from({ length: 4 }, () => send(agent, url, 'POST', longBody))).finally(
    () => {
      finished = true;
    },
  );
  const longSeconds = long.then(() => (performance.now() - started) / 1000);
  const probes: Promise<Probe>[] = [];
  while (!finished && performance.now() - started < 600_000) {
    const at = (performance.now() - started) / 1000;
    probes.push(send(agent, url, 'POST', probeBody).then((answer) => ({ ...answer, at })));
    await Promise.race([new Promise((done) => setTimeout(done, 1_000)), long]);
  }
  try {
    return { long: await long, probes: await Promise.all(probes), seconds: await longSeconds };
  } finally {
    agent.destroy();
  }
}

/** Probes answered 200 / refused 503 with Retry-After / anything else, and the slowest of each. */
export function probeOutcome(result: Overload) {
  const answered = result.probes.filter((p) => p.status === 200);
  const refused = result.probes.filter((p) => p.status === 503 && p.retryAfter !== undefined);
  const slowest = (answers: readonly Answer[]) => Math.max(0, ...answers.map((a) => a.ms));
  return {
    answered: answered.length,
    refused: refused.length,
    other: result.probes.length - answered.length - refused.length,
    slowestAnswered: slowest(answered),
    slowestRefused: slowest(refused),
    slowest: slowest(result.probes),
  };
}

/** What the server cases measured (null: not measured, e.g. with --quick). */
export interface Measured {
  throughput: Record<string, Throughput>;
  defaults: Awaited<ReturnType<typeof latency>> | null;
  niceZero: Awaited<ReturnType<typeof latency>> | null;
  big: { answers: Answer[]; seconds: number } | null;
  encoderPeak: number | null;
  tfidfOne: LoadResult | null;
  tfidfPeak: number | null;
  bounded: Awaited<ReturnType<typeof burst>> | null;
  unbounded: Awaited<ReturnType<typeof burst>> | null;
  overload: Overload | null;
}

/**
 * A `tagger serve --workers 1` of one of the models, named (its log file), with its settings, and what
 * is measured on it. They run in this order, each server stopped before the next starts.
 */
export interface ServerCase {
  name: string;
  model: 'encoder' | 'tfidf';
  env?: Record<string, string>;
  /** Not with --quick. */
  full?: boolean;
  /** Logged before it, when it opens a phase. */
  phase?: string;
  measure(setup: Setup, server: Server): Promise<Partial<Measured>>;
}

export const SERVER_CASES: ServerCase[] = [
  // The server as configured by default (threads = the CPUs shared by the workers, nice 0).
  {
    name: 'tagger-encoder-default',
    model: 'encoder',
    phase: 'latency and memory with the default settings',
    measure: async (setup, server) => {
      const defaults = await latency(setup, server);
      await waitForEmptyQueue(server.url);
      const big = await bigRequests(setup, server);
      return { defaults, big, encoderPeak: peakRssMb(server.proc.pid) };
    },
  },
  {
    name: 'tagger-encoder-nice10',
    model: 'encoder',
    env: { TAGGER_ENCODER_NICE: '10' },
    full: true,
    measure: async (setup, server) => ({ niceZero: await latency(setup, server) }),
  },
  {
    name: 'tagger-tfidf-default',
    model: 'tfidf',
    measure: async (setup, server) => {
      const tfidfOne = await runLoad(
        { url: `${server.url}/predict`, bodyFile: setup.singleFile, connections: 1, seconds: setup.seconds },
        setup.workDir,
      );
      await bigRequests(setup, server);
      return { tfidfOne, tfidfPeak: peakRssMb(server.proc.pid) };
    },
  },
  // Shedding: a burst larger than the queue, with the default bound and without one.
  {
    name: 'tagger-encoder-queue-default',
    model: 'encoder',
    full: true,
    phase: 'shedding',
    measure: async (setup, server) => ({ bounded: await burst(setup, server) }),
  },
  {
    name: 'tagger-encoder-queue-0',
    model: 'encoder',
    // The queue is bounded in texts and in estimated tokens: "no bound" lifts both.
    env: { TAGGER_ENCODER_MAX_QUEUE: '0', TAGGER_ENCODER_MAX_QUEUE_TOKENS: '0' },
    full: true,
    measure: async (setup, server) => ({ unbounded: await burst(setup, server) }),
  },
  // The queue admits by true cost (issue 42): four requests at the request cap and probes behind them.
  {
    name: 'tagger-encoder-overload',
    model: 'encoder',
    full: true,
    phase: 'overload: 4 × 256 texts at the token limit, a probe every second',
    measure: async (setup, server) => ({ overload: await overload(setup, server) }),
  },
];

/** What the rows read: the measurements, those every run has as non-null. */
export type Results = Measured & {
  setup: Setup;
  defaults: NonNullable<Measured['defaults']>;
  big: NonNullable<Measured['big']>;
  tfidfOne: NonNullable<Measured['tfidfOne']>;
};

/** The two rows of a throughput case: the server against Python onnxruntime, and against in-process. */
const throughputRows = (c: ThroughputCase): RowCase<Results>[] => {
  const of = (r: Results) => r.throughput[c.label]!;
  const note = (r: Results) => {
    const m = of(r).medians;
    return `${c.workload(r.setup).length} holdout texts per round, best of ${r.setup.rounds} interleaved round(s) (medians: server ${m.server.toFixed(1)}, in-process ${m.inProcess.toFixed(1)}, Python ${m.python?.toFixed(1) ?? '-'}); server: ${c.connections} connection(s), ${c.batch}-text requests`;
  };
  return [
    {
      metric: `encoder throughput, ${c.label}: Tagger's server vs Python onnxruntime`,
      unit: 'texts/s',
      when: (r) => c.label in r.throughput,
      tagger: (r) => of(r).server,
      reference: (r) => of(r).python,
      note: (r) =>
        `${note(r)}; reference = python/ort_throughput.py (onnxruntime ${of(r).versions?.onnxruntime ?? '?'}), same ONNX file, tokenizer, batches and threads`,
      target: {
        text: '>= 1.0x',
        when: (r) => of(r).python !== null,
        pass: (r) => of(r).server >= of(r).python!,
      },
    },
    {
      metric: `encoder throughput, ${c.label}: Tagger's server vs Tagger in-process`,
      unit: 'texts/s',
      when: (r) => c.label in r.throughput,
      tagger: (r) => of(r).server,
      reference: (r) => of(r).inProcess,
      note: (r) => `${note(r)}; reference = SentenceEncoder.embed + predict on the bench's thread`,
      target: { text: '>= 0.9x (overhead <= 10 %)', pass: (r) => of(r).server >= 0.9 * of(r).inProcess },
    },
  ];
};

export const ROW_CASES: RowCase<Results>[] = [
  ...THROUGHPUT_CASES.flatMap(throughputRows),
  {
    metric: 'single-text request latency, 1 connection, p50',
    unit: 'ms',
    tagger: (r) => r.defaults.one.p50Ms,
    reference: () => null,
    note: () =>
      'tagger serve --workers 1 with the default encoder settings (threads = CPUs allowed, nice 0, batches ≤ 32, no wait, queue ≤ 256 texts)',
  },
  {
    metric: 'single-text request latency, 1 connection, p99',
    unit: 'ms',
    tagger: (r) => r.defaults.one.p99Ms,
    reference: () => null,
  },
  {
    metric: 'single-text request latency, 10 connections, p50',
    unit: 'ms',
    tagger: (r) => r.defaults.ten.p50Ms,
    reference: () => null,
  },
  {
    metric: 'single-text request latency, 10 connections, p99',
    unit: 'ms',
    tagger: (r) => r.defaults.ten.p99Ms,
    reference: () => null,
  },
  {
    metric: 'single-text requests, 10 connections (dynamic batching)',
    unit: 'texts/s',
    tagger: (r) => r.defaults.ten.rps,
    reference: (r) => r.defaults.one.rps,
    note: () => 'reference = 1 connection (batches of 1)',
  },
  {
    metric: '1,000-text requests, 1 connection',
    unit: 'texts/s',
    tagger: (r) => (r.setup.thousand.length * r.big.answers.length) / r.big.seconds,
    reference: (r) => r.defaults.ten.rps,
    note: () => 'reference = single-text requests at 10 connections',
  },
  {
    metric: 'TF-IDF run for scale: single-text requests, 1 connection',
    unit: 'texts/s',
    tagger: (r) => r.tfidfOne.rps,
    reference: (r) => r.defaults.one.rps,
    note: () => 'reference = the encoder run',
  },
  {
    metric: 'peak RSS of the serving process, encoder run',
    unit: 'MB',
    tagger: (r) => r.encoderPeak,
    reference: (r) => r.tfidfPeak,
    note: () => 'VmHWM after all the loads above; reference = the same for a TF-IDF run',
  },
  {
    metric: '/health/live p99 while the encoder is saturated (10 connections)',
    unit: 'ms',
    tagger: (r) => quantile(r.defaults.live, 0.99),
    reference: (r) => quantile(r.defaults.idleLive, 0.99),
    note: (r) =>
      `${r.defaults.live.length} probes every 10 ms; reference = the same server idle; p50 ${quantile(r.defaults.live, 0.5).toFixed(2)} ms`,
    target: {
      text: '< single-text p50 (never waits for a batch)',
      pass: (r) => quantile(r.defaults.live, 0.99) < r.defaults.ten.p50Ms,
    },
  },
  {
    metric: '/health/live p99 while the encoder is saturated, encoder threads at nice 10',
    unit: 'ms',
    when: (r) => r.niceZero !== null,
    tagger: (r) => quantile(r.niceZero!.live, 0.99),
    reference: (r) => quantile(r.defaults.live, 0.99),
    note: ({ niceZero, defaults }) =>
      `reference = nice 0 (the default); single-text p50 at 10 connections ${niceZero!.ten.p50Ms.toFixed(1)} ms (nice 0: ${defaults.ten.p50Ms.toFixed(1)} ms), ${niceZero!.ten.rps.toFixed(1)} texts/s (nice 0: ${defaults.ten.rps.toFixed(1)})`,
  },
  {
    metric:
      'burst of 128 requests × 16 texts at once: p99 latency of the answered ones, default queue bound (256 texts)',
    unit: 'ms',
    when: (r) => r.bounded !== null && r.unbounded !== null,
    tagger: (r) => r.bounded!.p99Served,
    reference: (r) => r.unbounded!.p99Served,
    note: ({ bounded, unbounded }) =>
      `${bounded!.shed} of 128 shed at once with 503 (Retry-After ${bounded!.retryAfter} s, p99 ${bounded!.p99Shed.toFixed(1)} ms), ${bounded!.served} answered; reference = no bound (TAGGER_ENCODER_MAX_QUEUE=0, TAGGER_ENCODER_MAX_QUEUE_TOKENS=0): all answered, the last after ${unbounded!.seconds.toFixed(1)} s`,
  },
  {
    metric:
      'overload: 4 requests × 256 texts at the token limit at once, a one-text probe every second: slowest probe',
    unit: 'ms',
    when: (r) => r.overload !== null,
    tagger: (r) => probeOutcome(r.overload!).slowest,
    reference: () => null,
    note: ({ overload: o }) => {
      const p = probeOutcome(o!);
      const statuses = o!.long.map((a) => a.status).join(', ');
      return `${o!.probes.length} probes: ${p.answered} answered (slowest ${p.slowestAnswered.toFixed(0)} ms), ${p.refused} refused with 503 + Retry-After (slowest ${p.slowestRefused.toFixed(0)} ms), ${p.other} other; the long requests answered ${statuses} (the last after ${o!.seconds.toFixed(1)} s)`;
    },
    target: {
      text: `every probe answered or refused (503 + Retry-After) within ${PROBE_BOUND_MS} ms`,
      pass: (r) =>
        probeOutcome(r.overload!).other === 0 && probeOutcome(r.overload!).slowest <= PROBE_BOUND_MS,
    },
  },
];

/** A throughput case measured: each target's best round, the medians, and the embedding's parity with Python's. */
export interface Throughput {
  python: number | null;
  inProcess: number;
  server: number;
  medians: { python: number | null; inProcess: number; server: number };
  rounds: { python: number[]; inProcess: number[]; server: number[] };
  parity: number | null;
  versions: Record<string, string> | undefined;
}
