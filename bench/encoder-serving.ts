/**
 * The serving half of the encoder section (`npm run bench -- --only encoder`): an encoder run served by
 * the real `tagger serve` process, measured side by side in one run against
 * - Python's `onnxruntime` running the same ONNX file with the same tokenizer.json on the same texts in
 *   the same batches (python/ort_throughput.py; goal: the server at ≥ 1.0× its texts/s), and
 * - Tagger's own in-process batch (SentenceEncoder.embed + the model's predict on the bench's thread;
 *   goal: serving overhead ≤ 10 %, the server at ≥ 0.9× its texts/s),
 * in interleaved rounds (every target once per round; the median per target), with the same number of
 * ONNX Runtime threads and the same priority (nice 0) for the three. Then, with the
 * server's default settings: single-text latency at 1 and 10 connections (wrk), texts/s of 1,000-text
 * requests, peak RSS of the serving process beside a TF-IDF one's, /health/live while the encoder is
 * saturated (with the default nice value 0 and with 10), and what shedding does to a burst larger than
 * the queue. Ratios are what to read on a shared machine. What is measured and reported is a table of
 * named cases (bench/encoder-serving-cases.ts); this file trains the served models and runs the cases.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openEncoder, resolveEncoder } from '../src/encoder/index.js';
import {
  bindEmbeddings,
  DEFAULT_TRAINING_ARGS,
  encodeModel,
  evaluate,
  type LabelledText,
  stratifiedSplit,
  type TagModel,
  type TrainingArgs,
  trainTagger,
} from '../src/model/index.js';
import { serveExecArgv } from '../src/server/node-flags.js';
import { body, chunks, cosine, median, sendAll } from './encoder-http.js';
import {
  formatTable,
  MEMORY_VARIANTS,
  type MemoryResult,
  type MemoryVariant,
  measureServer,
  memoryRows,
  reportArgv,
  workload,
} from './encoder-memory.js';
import {
  type Measured,
  type Overload,
  type Results,
  ROW_CASES,
  SERVER_CASES,
  type Server,
  type ServingBenchInput,
  type Setup,
  THROUGHPUT_CASES,
  type Throughput,
  type ThroughputCase,
} from './encoder-serving-cases.js';
import { resolveCli } from './fixture.js';
import { PYTHON, REPO } from './paths.js';
import { childPids, freePort, installCleanup, start, stopAll, waitForPort } from './procs.js';
import { type BenchRow, rowsFrom } from './section.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/encoder] ${message}\n`);
};

// ---- the pieces -----------------------------------------------------------------------------------

/** A saved model directory (args.json, performance.json, model/*), as `tagger serve --model` reads it. */
export function saveModel(
  dir: string,
  args: TrainingArgs,
  model: TagModel,
  scored: TagModel,
  holdout: LabelledText[],
) {
  mkdirSync(join(dir, 'model'), { recursive: true });
  writeFileSync(join(dir, 'args.json'), JSON.stringify(args));
  writeFileSync(join(dir, 'performance.json'), JSON.stringify(evaluate(scored, holdout)));
  for (const [name, bytes] of Object.entries(encodeModel(model)))
    writeFileSync(join(dir, 'model', name), bytes);
}

/** `tagger serve --model <dir>` (one worker unless told), its log in the work folder; resolves once it listens. */
export async function startServer(
  cli: string,
  modelDir: string,
  workDir: string,
  name: string,
  env: Record<string, string>,
  { workers = 1, nodeArgs = [] }: { workers?: number; nodeArgs?: string[] } = {},
): Promise<Server> {
  const port = await freePort();
  const proc = start(
    name,
    process.execPath,
    [
      ...serveExecArgv(nodeArgs),
      cli,
      'serve',
      '--model',
      modelDir,
      '--port',
      String(port),
      '--workers',
      String(workers),
    ],
    {
      cwd: workDir,
      env: {
        ...process.env,
        // The build may run from a cache folder: the encoders are the checkout's (npm run setup:encoder).
        TAGGER_ENCODERS_DIR: process.env.TAGGER_ENCODERS_DIR ?? resolve(REPO, 'encoders'),
        TAGGER_LOG_LEVEL: 'warn',
        ...env,
      },
      logFile: join(workDir, `${name}.log`),
    },
  );
  await waitForPort(proc, port, 120_000);
  return { proc, url: `http://127.0.0.1:${port}` };
}

interface PythonRun {
  textsPerSecond: number;
  first: number[];
  versions: Record<string, string>;
}

/** One round of Python's onnxruntime over `texts` in batches of `batch`. */
function pythonRound(
  texts: readonly string[],
  batch: number,
  threads: number,
  workDir: string,
): PythonRun | null {
  if (!existsSync(PYTHON)) return null;
  const files = resolveEncoderFiles();
  const input = join(workDir, 'ort-in.json');
  const output = join(workDir, 'ort-out.json');
  writeFileSync(
    input,
    JSON.stringify({
      model: files.model,
      tokenizer: files.tokenizer,
      texts,
      batch,
      threads,
      rounds: 1,
      max_tokens: files.maxTokens,
    }),
  );
  try {
    execFileSync(PYTHON, [resolve(REPO, 'python', 'ort_throughput.py'), input, output], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  } catch (error) {
    log(
      `python onnxruntime failed (${(error as Error).message.split('\n')[0]}); pip install -r python/requirements.txt`,
    );
    return null;
  }
  const out = JSON.parse(readFileSync(output, 'utf8')) as {
    seconds: number[];
    texts: number;
    first: number[];
    versions: Record<string, string>;
  };
  return { textsPerSecond: out.texts / out.seconds[0]!, first: out.first, versions: out.versions };
}

let encoderFiles: { model: string; tokenizer: string; maxTokens: number } | undefined;
const resolveEncoderFiles = () => {
  if (encoderFiles === undefined) throw new Error('bench/encoder: encoder files not resolved');
  return encoderFiles;
};

/** Trains and saves the served models (seed 42) and writes the request bodies. */
function prepare(input: ServingBenchInput, workDir: string, breakage: string[]): Setup {
  const { quick, holdout, embedded, chosen } = input;
  log('training the served models');
  const encoderDir = join(workDir, 'encoder-model');
  const tfidfDir = join(workDir, 'tfidf-model');
  const [train, validation] = stratifiedSplit(input.dataset, (r) => r.tag, [0.85, 0.15], 42);
  const { model: encoderModel } = trainTagger(train!, validation!, chosen, { seed: 42, encoder: embedded });
  saveModel(encoderDir, chosen, encoderModel, bindEmbeddings(encoderModel, embedded.embeddings), holdout);
  const { model: tfidfModel } = trainTagger(train!, validation!, DEFAULT_TRAINING_ARGS, { seed: 42 });
  saveModel(tfidfDir, DEFAULT_TRAINING_ARGS, tfidfModel, tfidfModel, holdout);
  const texts = holdout.map((r) => r.text);
  const holdoutLengths = [...texts].sort((a, b) => a.length - b.length);
  const singleFile = join(workDir, 'single.json');
  writeFileSync(singleFile, body([holdoutLengths[holdoutLengths.length >> 1]!]));
  return {
    input,
    workDir,
    cli: resolveCli(log),
    encoderDir,
    tfidfDir,
    encoderModel,
    texts,
    rounds: quick ? 1 : 5,
    singleFile,
    seconds: quick ? 4 : 10,
    thousand: Array.from({ length: 1000 }, (_, i) => texts[i % texts.length]!),
    breakage,
  };
}
/** One throughput case, measured: the best round of each target, the medians, and Python's parity. */
async function compare(setup: Setup, c: ThroughputCase): Promise<Throughput> {
  const { threads, batch, connections } = c;
  const workload = c.workload(setup);
  const server = await startServer(
    setup.cli,
    setup.encoderDir,
    setup.workDir,
    `tagger-t${threads}-b${batch}`,
    {
      TAGGER_ENCODER_THREADS: String(threads),
      TAGGER_ENCODER_NICE: '0',
      TAGGER_ENCODER_MAX_BATCH: String(Math.max(batch, 1)),
      TAGGER_ENCODER_MAX_WAIT_MS: '0',
    },
  );
  const encoder = await openEncoder(setup.input.encoderName, { threads });
  const bodies = chunks(workload, batch).map(body);
  // Warm-up: the first calls load and optimise (both sides).
  await sendAll(server.url, bodies.slice(0, 2), 1);
  for (const chunk of chunks(workload, batch).slice(0, 2)) await encoder.embed(chunk);
  const measured = { python: [] as number[], inProcess: [] as number[], server: [] as number[] };
  let python: PythonRun | null = null;
  const targets = {
    python: async () => {
      python = pythonRound(workload, batch, threads, setup.workDir);
      if (python) measured.python.push(python.textsPerSecond);
    },
    inProcess: async () => {
      const started = performance.now();
      for (const chunk of chunks(workload, batch))
        setup.encoderModel.predict(chunk, await encoder.embed(chunk));
      measured.inProcess.push(workload.length / ((performance.now() - started) / 1000));
    },
    server: async () => {
      const { answers, seconds } = await sendAll(server.url, bodies, connections);
      const failed = answers.filter((a) => a.status !== 200).length;
      if (failed > 0)
        setup.breakage.push(
          `${failed} of ${answers.length} encoder requests failed (threads ${threads}, batch ${batch})`,
        );
      measured.server.push(workload.length / seconds);
    },
  };
  const order = Object.keys(targets) as (keyof typeof targets)[];
  for (let round = 0; round < setup.rounds; round++) {
    for (let k = 0; k < order.length; k++) await targets[order[(round + k) % order.length]!]();
  }
  // The same computation: Tagger's embedding of the first text against Python's.
  const [ours] = await encoder.embed(workload.slice(0, 1));
  const parity = python ? cosine(ours!, (python as PythonRun).first) : null;
  await encoder.close();
  await server.proc.stop();
  const best = (values: number[]) => Math.max(...values);
  const result = {
    python: measured.python.length ? best(measured.python) : null,
    inProcess: best(measured.inProcess),
    server: best(measured.server),
    medians: {
      python: measured.python.length ? median(measured.python) : null,
      inProcess: median(measured.inProcess),
      server: median(measured.server),
    },
    rounds: measured,
    parity,
    versions: (python as PythonRun | null)?.versions,
  };
  log(`threads ${threads}, batch ${batch}: ${JSON.stringify(result)}`);
  return result;
}

/** Waits until `workers` cluster workers have loaded the run (for the encoder run: mapped ONNX Runtime). */
async function waitForWorkers(server: Server, workers: number, encoder: boolean): Promise<void> {
  const loaded = (pid: number) => {
    try {
      return !encoder || readFileSync(`/proc/${pid}/maps`, 'utf8').includes('onnxruntime');
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    const pids = workers > 1 ? childPids(server.proc.pid) : [server.proc.pid];
    if (pids.length >= workers && pids.every(loaded)) break;
    if (Date.now() > deadline) throw new Error(`bench/encoder: ${workers} workers did not load the run`);
    await new Promise((done) => setTimeout(done, 100));
  }
  // Each has listened once /health/ready answers as often as there are workers (round-robin).
  await sendAll(
    server.url,
    Array.from({ length: workers * 2 }, () => body(['warm-up'])),
    1,
  );
}

/**
 * The memory variants (bench/encoder-memory.ts) on the encoder run, each started, loaded, measured and
 * stopped in turn: the same requests for all.
 */
export async function memoryTrial(setup: Setup, variants: readonly MemoryVariant[]): Promise<MemoryResult[]> {
  const work = workload(setup.texts, setup.input.quick);
  const out = [];
  for (const variant of variants) {
    const reports = join(setup.workDir, `reports-${out.length}`);
    const name = `tagger-memory-${out.length}`;
    const dir = variant.model === 'encoder' ? setup.encoderDir : setup.tfidfDir;
    const server = await startServer(setup.cli, dir, setup.workDir, name, variant.env ?? {}, {
      workers: variant.workers,
      nodeArgs: reportArgv(reports),
    });
    await waitForWorkers(server, variant.workers, variant.model === 'encoder');
    const phases = await measureServer(server.proc, server.url, work, reports);
    await server.proc.stop();
    for (const phase of phases)
      if (phase.failed > 0)
        setup.breakage.push(`${variant.label}: ${phase.failed} requests failed (${phase.phase})`);
    log(
      `memory, ${variant.label}: ${JSON.stringify(phases.map((p) => [p.phase, p.processes.map((x) => x.rss)]))}`,
    );
    out.push({ variant, phases });
  }
  return out;
}

/** Finds the encoder's files for the runs that follow (encoderFiles). */
async function findEncoderFiles(input: ServingBenchInput): Promise<void> {
  const files = await resolveEncoder(input.encoderName);
  encoderFiles = {
    model: files.model,
    tokenizer: files.tokenizer,
    maxTokens: input.embedded.spec.max_tokens,
  };
}

/** Trains the served models and runs only the memory variants (bench/encoder.ts --memory). */
export async function memoryOnly(
  input: ServingBenchInput,
  variants: readonly MemoryVariant[],
): Promise<MemoryResult[]> {
  installCleanup();
  await findEncoderFiles(input);
  const workDir = mkdtempSync(join(tmpdir(), 'tagger-bench-encoder-memory-'));
  try {
    const setup = prepare(input, workDir, []);
    const results = await memoryTrial(setup, variants);
    if (setup.breakage.length > 0) log(`breakage: ${setup.breakage.join('; ')}`);
    return results;
  } finally {
    await stopAll();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/**
 * Trains the served models and runs only the overload case (bench/encoder.ts --overload): its answers,
 * and its row.
 */
export async function overloadOnly(
  input: ServingBenchInput,
): Promise<{ overload: Overload; row: BenchRow[] }> {
  installCleanup();
  await findEncoderFiles(input);
  const workDir = mkdtempSync(join(tmpdir(), 'tagger-bench-encoder-overload-'));
  try {
    const setup = prepare(input, workDir, []);
    const c = SERVER_CASES.find((x) => x.name === 'tagger-encoder-overload')!;
    const server = await startServer(setup.cli, setup.encoderDir, workDir, c.name, c.env ?? {});
    const { overload } = await c.measure(setup, server);
    await server.proc.stop();
    const rows = ROW_CASES.filter(
      (row) => typeof row.metric === 'string' && row.metric.startsWith('overload:'),
    );
    return {
      overload: overload!,
      row: rowsFrom('encoder', rows, { overload } as unknown as Results),
    };
  } finally {
    await stopAll();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** Throws when a measurement every run makes is missing (a case table that lost it). */
function required<T>(value: T | null, what: string): T {
  if (value === null) throw new Error(`bench/encoder: ${what} was not measured`);
  return value;
}

export async function servingRows(input: ServingBenchInput): Promise<{
  rows: BenchRow[];
  breakage: string[];
  details: unknown;
}> {
  installCleanup();
  await findEncoderFiles(input);
  const workDir = mkdtempSync(join(tmpdir(), 'tagger-bench-encoder-serving-'));
  const breakage: string[] = [];
  try {
    const setup = prepare(input, workDir, breakage);
    const measured: Measured = {
      throughput: {},
      defaults: null,
      niceZero: null,
      big: null,
      encoderPeak: null,
      tfidfOne: null,
      tfidfPeak: null,
      bounded: null,
      unbounded: null,
      overload: null,
    };
    for (const c of THROUGHPUT_CASES) {
      if (c.full && input.quick) continue;
      const result = await compare(setup, c);
      measured.throughput[c.label] = result;
      if (result.parity !== null && result.parity < 0.9999) {
        breakage.push(`Tagger's embedding differs from Python onnxruntime's (cosine ${result.parity})`);
      }
    }
    for (const c of SERVER_CASES) {
      if (c.full && input.quick) continue;
      if (c.phase) log(c.phase);
      const dir = c.model === 'encoder' ? setup.encoderDir : setup.tfidfDir;
      const server = await startServer(setup.cli, dir, workDir, c.name, c.env ?? {});
      Object.assign(measured, await c.measure(setup, server));
      await server.proc.stop();
    }

    // Where the memory goes, the serve malloc settings against glibc's, 1 process against 2 workers.
    log('memory: where it goes (bench/encoder-memory.ts)');
    const memory = await memoryTrial(setup, MEMORY_VARIANTS);
    process.stderr.write(`${formatTable(memory)}\n`);

    const results: Results = {
      ...measured,
      setup,
      defaults: required(measured.defaults, 'the default latency'),
      big: required(measured.big, 'the 1,000-text request'),
      tfidfOne: required(measured.tfidfOne, 'the TF-IDF run'),
    };
    for (const [what, result] of [
      ['encoder', results.defaults],
      ['encoder, nice 10', results.niceZero],
    ] as const) {
      if (result && (result.one.failures > 0 || result.ten.failures > 0))
        breakage.push(`${what}: failed single-text requests`);
    }
    const bigFailures = results.big.answers.filter((a) => a.status !== 200).map((a) => a.status);
    if (bigFailures.length > 0)
      breakage.push(`a 1,000-text encoder request failed (HTTP ${bigFailures.join(', ')})`);
    const { bounded, unbounded } = results;
    if (bounded && unbounded && (bounded.other + unbounded.other > 0 || unbounded.shed > 0))
      breakage.push('shedding: unexpected statuses');

    return {
      rows: [
        ...rowsFrom('encoder', ROW_CASES, results),
        ...memoryRows(memory).map((row) => ({ section: 'encoder', ...row })),
      ],
      breakage,
      details: {
        throughput: results.throughput,
        defaults: {
          defaults: results.defaults,
          niceZero: results.niceZero,
          big: { seconds: results.big.seconds, requests: results.big.answers.length },
          encoderPeak: results.encoderPeak,
          tfidfPeak: results.tfidfPeak,
          tfidfOne: results.tfidfOne,
        },
        ...(bounded && unbounded ? { shedding: { bounded, unbounded } } : {}),
        memory,
      },
    };
  } finally {
    await stopAll();
    rmSync(workDir, { recursive: true, force: true });
  }
}
