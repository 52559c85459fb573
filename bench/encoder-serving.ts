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
 * the queue. Ratios are what to read on a shared machine.
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
  type TrainEncoder,
  type TrainingArgs,
  trainTagger,
} from '../src/model/index.js';
import { serveExecArgv } from '../src/serve/node-flags.js';
import {
  body,
  chunks,
  cosine,
  median,
  probeLive,
  quantile,
  sendAll,
  waitForEmptyQueue,
} from './encoder-http.js';
import { resolveCli } from './fixture.js';
import { runLoad } from './load.js';
import { PYTHON, REPO } from './paths.js';
import { freePort, installCleanup, type Proc, peakRssMb, start, stopAll, waitForPort } from './procs.js';
import type { BenchRow } from './section.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/encoder] ${message}\n`);
};

// ---- the pieces -----------------------------------------------------------------------------------

/** A saved model directory (args.json, performance.json, model/*), as `tagger serve --model` reads it. */
function saveModel(
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

interface Server {
  proc: Proc;
  url: string;
}

async function startServer(
  cli: string,
  modelDir: string,
  workDir: string,
  name: string,
  env: Record<string, string>,
): Promise<Server> {
  const port = await freePort();
  const proc = start(
    name,
    process.execPath,
    [...serveExecArgv([]), cli, 'serve', '--model', modelDir, '--port', String(port), '--workers', '1'],
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

export interface ServingBenchInput {
  encoderName: string;
  embedded: TrainEncoder;
  chosen: TrainingArgs;
  dataset: LabelledText[];
  holdout: LabelledText[];
  quick: boolean;
  row: (
    metric: string,
    unit: string,
    tagger: number | null,
    reference: number | null,
    note?: string,
  ) => BenchRow;
}

export async function servingRows(input: ServingBenchInput): Promise<{
  rows: BenchRow[];
  breakage: string[];
  details: unknown;
}> {
  const { row, quick, holdout, embedded, chosen } = input;
  installCleanup();
  const files = await resolveEncoder(input.encoderName);
  encoderFiles = { model: files.model, tokenizer: files.tokenizer, maxTokens: embedded.spec.max_tokens };
  const workDir = mkdtempSync(join(tmpdir(), 'tagger-bench-encoder-serving-'));
  const rows: BenchRow[] = [];
  const breakage: string[] = [];
  const details: Record<string, unknown> = {};
  try {
    // The served models: the CV-chosen encoder configuration and the TF-IDF default, seed 42.
    log('training the served models');
    const encoderDir = join(workDir, 'encoder-model');
    const tfidfDir = join(workDir, 'tfidf-model');
    const [train, validation] = stratifiedSplit(input.dataset, (r) => r.tag, [0.85, 0.15], 42);
    const { model: encoderModel } = trainTagger(train!, validation!, chosen, { seed: 42, encoder: embedded });
    saveModel(encoderDir, chosen, encoderModel, bindEmbeddings(encoderModel, embedded.embeddings), holdout);
    const { model: tfidfModel } = trainTagger(train!, validation!, DEFAULT_TRAINING_ARGS, { seed: 42 });
    saveModel(tfidfDir, DEFAULT_TRAINING_ARGS, tfidfModel, tfidfModel, holdout);
    const cli = resolveCli(log);
    const texts = holdout.map((r) => r.text);
    // The machine is shared: each target's best round is the one least disturbed by others' work.
    const rounds = quick ? 1 : 5;
    const passes = quick ? 1 : 2;

    // 1. Throughput, side by side: Python onnxruntime, Tagger in-process, Tagger's server; same threads.
    const compare = async (threads: number, batch: number, workload: string[], connections: number) => {
      const server = await startServer(cli, encoderDir, workDir, `tagger-t${threads}-b${batch}`, {
        TAGGER_ENCODER_THREADS: String(threads),
        TAGGER_ENCODER_NICE: '0',
        TAGGER_ENCODER_MAX_BATCH: String(Math.max(batch, 1)),
        TAGGER_ENCODER_MAX_WAIT_MS: '0',
      });
      const encoder = await openEncoder(input.encoderName, { threads });
      const bodies = chunks(workload, batch).map(body);
      // Warm-up: the first calls load and optimise (both sides).
      await sendAll(server.url, bodies.slice(0, 2), 1);
      for (const chunk of chunks(workload, batch).slice(0, 2)) await encoder.embed(chunk);
      const measured = { python: [] as number[], inProcess: [] as number[], server: [] as number[] };
      let python: PythonRun | null = null;
      const targets = {
        python: async () => {
          python = pythonRound(workload, batch, threads, workDir);
          if (python) measured.python.push(python.textsPerSecond);
        },
        inProcess: async () => {
          const started = performance.now();
          for (const chunk of chunks(workload, batch))
            encoderModel.predict(chunk, await encoder.embed(chunk));
          measured.inProcess.push(workload.length / ((performance.now() - started) / 1000));
        },
        server: async () => {
          const { answers, seconds } = await sendAll(server.url, bodies, connections);
          const failed = answers.filter((a) => a.status !== 200).length;
          if (failed > 0)
            breakage.push(
              `${failed} of ${answers.length} encoder requests failed (threads ${threads}, batch ${batch})`,
            );
          measured.server.push(workload.length / seconds);
        },
      };
      const order = Object.keys(targets) as (keyof typeof targets)[];
      for (let round = 0; round < rounds; round++) {
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
    };

    const workload32 = Array.from({ length: passes }, () => texts).flat();
    const single = texts.slice(0, quick ? 24 : 64);
    const configs: {
      threads: number;
      batch: number;
      workload: string[];
      connections: number;
      label: string;
    }[] = [
      { threads: 1, batch: 32, workload: workload32, connections: 2, label: 'batches of 32 texts, 1 thread' },
      // Two connections: the next text is queued when the encoder finishes one (no idle wake-up between
      // requests, which single-connection latency measures below).
      { threads: 1, batch: 1, workload: single, connections: 2, label: 'one text per call, 1 thread' },
      ...(quick
        ? []
        : [
            {
              threads: 2,
              batch: 32,
              workload: workload32,
              connections: 2,
              label: 'batches of 32 texts, 2 threads',
            },
          ]),
    ];
    const throughput: Record<string, unknown> = {};
    for (const config of configs) {
      const result = await compare(config.threads, config.batch, config.workload, config.connections);
      throughput[config.label] = result;
      const m = result.medians;
      const note = `${config.workload.length} holdout texts per round, best of ${rounds} interleaved round(s) (medians: server ${m.server.toFixed(1)}, in-process ${m.inProcess.toFixed(1)}, Python ${m.python?.toFixed(1) ?? '-'}); server: ${config.connections} connection(s), ${config.batch}-text requests`;
      rows.push({
        ...row(
          `encoder throughput, ${config.label}: Tagger's server vs Python onnxruntime`,
          'texts/s',
          result.server,
          result.python,
          `${note}; reference = python/ort_throughput.py (onnxruntime ${result.versions?.onnxruntime ?? '?'}), same ONNX file, tokenizer, batches and threads`,
        ),
        ...(result.python === null
          ? {}
          : { target: { text: '>= 1.0x', pass: result.server >= result.python } }),
      });
      rows.push({
        ...row(
          `encoder throughput, ${config.label}: Tagger's server vs Tagger in-process`,
          'texts/s',
          result.server,
          result.inProcess,
          `${note}; reference = SentenceEncoder.embed + predict on the bench's thread`,
        ),
        target: { text: '>= 0.9x (overhead <= 10 %)', pass: result.server >= 0.9 * result.inProcess },
      });
      if (result.parity !== null && result.parity < 0.9999) {
        breakage.push(`Tagger's embedding differs from Python onnxruntime's (cosine ${result.parity})`);
      }
    }
    details.throughput = throughput;

    // 2. The server as configured by default (threads = the CPUs shared by the workers, nice 0).
    log('latency and memory with the default settings');
    const holdoutLengths = [...texts].sort((a, b) => a.length - b.length);
    const typical = holdoutLengths[holdoutLengths.length >> 1]!;
    const singleFile = join(workDir, 'single.json');
    writeFileSync(singleFile, body([typical]));
    const seconds = quick ? 4 : 10;
    const serveDefault = async (name: string, dir: string, env: Record<string, string> = {}) =>
      startServer(cli, dir, workDir, name, env);
    const latency = async (server: Server) => {
      const one = await runLoad(
        { url: `${server.url}/predict`, bodyFile: singleFile, connections: 1, seconds },
        workDir,
      );
      const idleLive = await probeLive(server.url, new Promise((done) => setTimeout(done, 2_000)));
      const ten = runLoad(
        { url: `${server.url}/predict`, bodyFile: singleFile, connections: 10, seconds },
        workDir,
      );
      // Probes start once the load has filled the queue.
      await new Promise((done) => setTimeout(done, 500));
      const live = await probeLive(server.url, ten);
      return { one, ten: await ten, live, idleLive };
    };
    const encoderServer = await serveDefault('tagger-encoder-default', encoderDir);
    const defaults = await latency(encoderServer);
    const thousand = Array.from({ length: 1000 }, (_, i) => texts[i % texts.length]!);
    await waitForEmptyQueue(encoderServer.url);
    const big = await sendAll(
      encoderServer.url,
      Array.from({ length: quick ? 1 : 3 }, () => body(thousand)),
      1,
    );
    const encoderPeak = peakRssMb(encoderServer.proc.pid);
    await encoderServer.proc.stop();
    let niceZero: Awaited<ReturnType<typeof latency>> | null = null;
    if (!quick) {
      const server = await serveDefault('tagger-encoder-nice10', encoderDir, { TAGGER_ENCODER_NICE: '10' });
      niceZero = await latency(server);
      await server.proc.stop();
    }
    const tfidfServer = await serveDefault('tagger-tfidf-default', tfidfDir);
    const tfidfOne = await runLoad(
      { url: `${tfidfServer.url}/predict`, bodyFile: singleFile, connections: 1, seconds },
      workDir,
    );
    await sendAll(
      tfidfServer.url,
      Array.from({ length: quick ? 1 : 3 }, () => body(thousand)),
      1,
    );
    const tfidfPeak = peakRssMb(tfidfServer.proc.pid);
    await tfidfServer.proc.stop();
    for (const [what, result] of [
      ['encoder', defaults],
      ['encoder, nice 10', niceZero],
    ] as const) {
      if (result && (result.one.failures > 0 || result.ten.failures > 0))
        breakage.push(`${what}: failed single-text requests`);
    }
    const bigFailures = big.answers.filter((a) => a.status !== 200).map((a) => a.status);
    if (bigFailures.length > 0)
      breakage.push(`a 1,000-text encoder request failed (HTTP ${bigFailures.join(', ')})`);
    const defaultNote =
      'tagger serve --workers 1 with the default encoder settings (threads = CPUs allowed, nice 0, batches ≤ 32, no wait, queue ≤ 256 texts)';
    rows.push(
      row('single-text request latency, 1 connection, p50', 'ms', defaults.one.p50Ms, null, defaultNote),
      row('single-text request latency, 1 connection, p99', 'ms', defaults.one.p99Ms, null),
      row('single-text request latency, 10 connections, p50', 'ms', defaults.ten.p50Ms, null),
      row('single-text request latency, 10 connections, p99', 'ms', defaults.ten.p99Ms, null),
      row(
        'single-text requests, 10 connections (dynamic batching)',
        'texts/s',
        defaults.ten.rps,
        defaults.one.rps,
        'reference = 1 connection (batches of 1)',
      ),
      row(
        '1,000-text requests, 1 connection',
        'texts/s',
        (thousand.length * big.answers.length) / big.seconds,
        defaults.ten.rps,
        'reference = single-text requests at 10 connections',
      ),
      row(
        'TF-IDF run for scale: single-text requests, 1 connection',
        'texts/s',
        tfidfOne.rps,
        defaults.one.rps,
        'reference = the encoder run',
      ),
      row(
        'peak RSS of the serving process, encoder run',
        'MB',
        encoderPeak,
        tfidfPeak,
        'VmHWM after all the loads above; reference = the same for a TF-IDF run',
      ),
      {
        ...row(
          '/health/live p99 while the encoder is saturated (10 connections)',
          'ms',
          quantile(defaults.live, 0.99),
          quantile(defaults.idleLive, 0.99),
          `${defaults.live.length} probes every 10 ms; reference = the same server idle; p50 ${quantile(defaults.live, 0.5).toFixed(2)} ms`,
        ),
        target: {
          text: '< single-text p50 (never waits for a batch)',
          pass: quantile(defaults.live, 0.99) < defaults.ten.p50Ms,
        },
      },
    );
    if (niceZero) {
      rows.push(
        row(
          '/health/live p99 while the encoder is saturated, encoder threads at nice 10',
          'ms',
          quantile(niceZero.live, 0.99),
          quantile(defaults.live, 0.99),
          `reference = nice 0 (the default); single-text p50 at 10 connections ${niceZero.ten.p50Ms.toFixed(1)} ms (nice 0: ${defaults.ten.p50Ms.toFixed(1)} ms), ${niceZero.ten.rps.toFixed(1)} texts/s (nice 0: ${defaults.ten.rps.toFixed(1)})`,
        ),
      );
    }
    details.defaults = {
      defaults,
      niceZero,
      big: { seconds: big.seconds, requests: big.answers.length },
      encoderPeak,
      tfidfPeak,
      tfidfOne,
    };

    // 3. Shedding: a burst larger than the queue, with a bound and without.
    if (!quick) {
      log('shedding');
      // 128 requests × 16 texts at once: 2,048 texts, eight times the default queue bound.
      const burst = async (maxQueue: number | null) => {
        const server = await serveDefault(
          `tagger-encoder-queue-${maxQueue ?? 'default'}`,
          encoderDir,
          // The queue is bounded in texts and in estimated tokens: "no bound" lifts both.
          maxQueue === null
            ? {}
            : {
                TAGGER_ENCODER_MAX_QUEUE: String(maxQueue),
                TAGGER_ENCODER_MAX_QUEUE_TOKENS: String(maxQueue),
              },
        );
        const sixteen = body(texts.slice(0, 16));
        const { answers, seconds: took } = await sendAll(
          server.url,
          Array.from({ length: 128 }, () => sixteen),
          128,
        );
        await server.proc.stop();
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
          seconds: took,
        };
      };
      const bounded = await burst(null);
      const unbounded = await burst(0);
      if (bounded.other + unbounded.other > 0 || unbounded.shed > 0)
        breakage.push('shedding: unexpected statuses');
      rows.push(
        row(
          'burst of 128 requests × 16 texts at once: p99 latency of the answered ones, default queue bound (256 texts)',
          'ms',
          bounded.p99Served,
          unbounded.p99Served,
          `${bounded.shed} of 128 shed at once with 503 (Retry-After ${bounded.retryAfter} s, p99 ${bounded.p99Shed.toFixed(1)} ms), ${bounded.served} answered; reference = no bound (TAGGER_ENCODER_MAX_QUEUE=0, TAGGER_ENCODER_MAX_QUEUE_TOKENS=0): all answered, the last after ${unbounded.seconds.toFixed(1)} s`,
        ),
      );
      details.shedding = { bounded, unbounded };
    }
  } finally {
    await stopAll();
    rmSync(workDir, { recursive: true, force: true });
  }
  return { rows, breakage, details };
}
