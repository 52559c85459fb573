/**
 * Cascade benchmark (`npm run bench -- --only cascade`, issue 33): the cascade run (the soft vote answers,
 * the encoder model takes the texts it is unsure of) beside its two stages alone — the soft vote (the
 * TF-IDF default) and the encoder kind — measured side by side in one run.
 *
 * Quality: holdout.csv weighted f1 of the three for training seeds 42..46 (one with --quick), each trained
 * as `tagger train --data dataset.csv --test-data holdout.csv --encoder minilm --cascade --seed N` trains
 * (85/15 split seeded N). A cascade's stages are exactly the other two models (the same args, split and
 * seed), so one cascade training per seed gives all three. The share of holdout texts routed.
 * Serving (seed 42's models, each by a real `tagger serve --model <dir> --workers 1` with the default
 * settings, one after the other): texts/s of single-text requests at 1 and 10 connections and of 1,000-text
 * requests; the latency of confident single texts (which the cascade's fast stage answers) while 10
 * connections of routed texts keep the encoder saturated, against the soft vote's latency on the same
 * texts; peak RSS of each serving process. Failed requests are counted (breakage), never sampled.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openEncoder } from '../src/encoder/index.js';
import {
  argsForEncoder,
  bindEmbeddings,
  type CascadeTagModel,
  encodeModel,
  evaluate,
  type LabelledText,
  parseTrainingArgs,
  stratifiedSplit,
  type TagModel,
  type TrainEncoder,
} from '../src/model/index.js';
import { serveExecArgv } from '../src/server/node-flags.js';
import { trainCascade } from '../src/train/cascade-training.js';
import { meanStd } from '../src/train/cross-validate.js';
import { textsToEmbed } from '../src/train/embeddings.js';
import { ENCODER, embeddingsOf, load } from './encoder.js';
import { type Answer, body, quantile, sendAll } from './encoder-http.js';
import { resolveCli } from './fixture.js';
import { REPO } from './paths.js';
import { freePort, installCleanup, peakRssMb, start, stopAll, waitForPort } from './procs.js';
import { type BenchOptions, type RowCase, rowsFrom, type SectionResult } from './section.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/cascade] ${message}\n`);
};

const KINDS = ['cascade', 'encoder', 'vote'] as const;
type Kind = (typeof KINDS)[number];
const KIND_NAMES: Record<Kind, string> = {
  cascade: 'cascade',
  encoder: 'encoder kind',
  vote: 'soft vote',
};

interface Quality {
  f1: Record<Kind, number[]>;
  routed: number[];
}

interface Serving {
  /** texts/s of single-text requests at 1 and 10 connections, and of 1,000-text requests. */
  one: number;
  ten: number;
  thousand: number;
  peakRssMb: number | null;
  failed: number;
}

interface Results {
  seeds: number;
  quality: Quality;
  serving: Partial<Record<Kind, Serving>>;
  /** Latency (ms) of confident single texts: the cascade's with its encoder saturated, the vote's alone. */
  confident: {
    cascade: { p50: number; p99: number };
    vote: { p50: number; p99: number };
    texts: number;
  } | null;
}

const mean = (values: readonly number[]): number => meanStd(values).mean;

/** The three models of one seed, scored on the holdout. */
function trainSeed(
  dataset: LabelledText[],
  holdout: LabelledText[],
  embedded: TrainEncoder,
  seed: number,
): { cascade: CascadeTagModel; f1: Record<Kind, number>; routed: number } {
  const args = argsForEncoder(
    parseTrainingArgs({ encoder: ENCODER, cascade: true }),
    new Set(['encoder', 'cascade']),
  );
  const [train, validation] = stratifiedSplit(dataset, (r) => r.tag, [0.85, 0.15], seed);
  const { model: cascade } = trainCascade(train!, validation!, args, { seed, encoder: embedded });
  const score = (model: TagModel) => evaluate(bindEmbeddings(model, embedded.embeddings), holdout).overall.f1;
  const routed = cascade.predictFast(holdout.map((r) => r.text)).routed.length / holdout.length;
  return {
    cascade,
    f1: { cascade: score(cascade), encoder: score(cascade.encoderModel), vote: score(cascade.fast) },
    routed,
  };
}

/** A saved model directory (args.json, performance.json, model/*), as `tagger serve --model` reads it. */
function saveModel(dir: string, model: TagModel, scored: TagModel, holdout: LabelledText[]): void {
  mkdirSync(join(dir, 'model'), { recursive: true });
  writeFileSync(join(dir, 'args.json'), JSON.stringify(model.args));
  writeFileSync(join(dir, 'performance.json'), JSON.stringify(evaluate(scored, holdout)));
  for (const [name, bytes] of Object.entries(encodeModel(model)))
    writeFileSync(join(dir, 'model', name), bytes);
}

async function serve(cli: string, modelDir: string, workDir: string, name: string) {
  const port = await freePort();
  const proc = start(
    name,
    process.execPath,
    [...serveExecArgv([]), cli, 'serve', '--model', modelDir, '--port', String(port), '--workers', '1'],
    {
      cwd: workDir,
      env: {
        ...process.env,
        TAGGER_ENCODERS_DIR: process.env.TAGGER_ENCODERS_DIR ?? resolve(REPO, 'encoders'),
        TAGGER_LOG_LEVEL: 'warn',
      },
      logFile: join(workDir, `${name}.log`),
    },
  );
  await waitForPort(proc, port, 120_000);
  return { proc, url: `http://127.0.0.1:${port}` };
}

const failures = (answers: readonly Answer[]): number => answers.filter((a) => a.status !== 200).length;

/** Single-text and 1,000-text throughput and peak RSS of one kind's server. */
async function measureServer(url: string, pid: number, texts: string[], quick: boolean): Promise<Serving> {
  const singles = texts.map((text) => body([text]));
  // Warm-up: the first calls load and optimise.
  await sendAll(url, singles.slice(0, 8), 1);
  const one = await sendAll(url, singles, 1);
  const ten = await sendAll(url, singles, 10);
  const thousand = Array.from({ length: 1000 }, (_, i) => texts[i % texts.length]!);
  const big = await sendAll(
    url,
    Array.from({ length: quick ? 1 : 3 }, () => body(thousand)),
    1,
  );
  return {
    one: singles.length / one.seconds,
    ten: singles.length / ten.seconds,
    thousand: (1000 * big.answers.length) / big.seconds,
    peakRssMb: peakRssMb(pid),
    failed: failures(one.answers) + failures(ten.answers) + failures(big.answers),
  };
}

/** Each confident text `rounds` times as single-text requests over one connection (their latencies). */
async function confidentLatency(url: string, confident: string[], rounds: number): Promise<Answer[]> {
  const bodies = Array.from({ length: rounds }, () => confident.map((text) => body([text]))).flat();
  return (await sendAll(url, bodies, 1)).answers;
}

const ROWS: RowCase<Results>[] = [
  ...KINDS.map(
    (kind): RowCase<Results> => ({
      metric: (r) => `holdout weighted f1, ${KIND_NAMES[kind]}, mean of ${r.seeds} seed(s)`,
      unit: 'f1',
      tagger: (r) => mean(r.quality.f1[kind]),
      reference: (r) => (kind === 'encoder' ? null : mean(r.quality.f1.encoder)),
      note: (r) =>
        `${kind === 'encoder' ? '' : 'reference = the encoder kind; '}seeds ${r.quality.f1[kind].map((v) => v.toFixed(4)).join(' ')}`,
      ...(kind === 'cascade'
        ? {
            target: {
              text: 'within 0.005 of the encoder kind, or better',
              pass: (r) => mean(r.quality.f1.cascade) >= mean(r.quality.f1.encoder) - 0.005,
            },
          }
        : {}),
    }),
  ),
  {
    metric: 'holdout texts the cascade routes to the encoder',
    unit: '%',
    tagger: (r) => 100 * mean(r.quality.routed),
    reference: () => null,
    note: (r) => `per seed ${r.quality.routed.map((v) => (100 * v).toFixed(1)).join(' ')}`,
  },
  ...(['one', 'ten', 'thousand'] as const).flatMap((load) =>
    KINDS.map(
      (kind): RowCase<Results> => ({
        metric: `${KIND_NAMES[kind]}: ${load === 'thousand' ? '1,000-text requests' : `single-text requests, ${load === 'one' ? 1 : 10} connection${load === 'one' ? '' : 's'}`}`,
        unit: 'texts/s',
        when: (r) => r.serving[kind] !== undefined,
        tagger: (r) => r.serving[kind]![load],
        reference: (r) => (kind === 'encoder' ? null : (r.serving.encoder?.[load] ?? null)),
        note: () =>
          kind === 'encoder' ? 'tagger serve --workers 1, default settings' : 'reference = the encoder kind',
        ...(kind === 'cascade' && load === 'ten'
          ? {
              target: {
                text: '>= 3x the encoder kind',
                pass: (r) => r.serving.cascade!.ten >= 3 * r.serving.encoder!.ten,
                when: (r) => r.serving.encoder !== undefined,
              },
            }
          : {}),
      }),
    ),
  ),
  ...(['p50', 'p99'] as const).map(
    (q): RowCase<Results> => ({
      metric: `${q} latency of confident single texts, cascade with its encoder saturated`,
      unit: 'ms',
      when: (r) => r.confident !== null,
      tagger: (r) => r.confident!.cascade[q],
      reference: (r) => r.confident!.vote[q],
      note: (r) =>
        `reference = the soft vote's run on the same ${r.confident!.texts} texts, idle; load: 10 connections of routed texts`,
      target: {
        text: 'within 2 ms of the fast run',
        pass: (r) => r.confident!.cascade[q] <= r.confident!.vote[q] + 2,
        when: (r) => r.confident !== null,
      },
    }),
  ),
  ...KINDS.map(
    (kind): RowCase<Results> => ({
      metric: `peak RSS of the serving process, ${KIND_NAMES[kind]}`,
      unit: 'MB',
      when: (r) => r.serving[kind] !== undefined,
      tagger: (r) => r.serving[kind]!.peakRssMb,
      reference: (r) => (kind === 'encoder' ? null : (r.serving.encoder?.peakRssMb ?? null)),
      note: () => 'VmHWM after the loads above',
    }),
  ),
];

export async function run(opts: BenchOptions): Promise<SectionResult> {
  const dataset = load('dataset.csv');
  const holdout = load('holdout.csv');
  let embedded: TrainEncoder;
  try {
    const encoder = await openEncoder(ENCODER, { threads: Math.min(4, availableParallelism()) });
    try {
      embedded = await embeddingsOf(encoder, textsToEmbed({ data: dataset, testData: holdout }));
    } finally {
      await encoder.close();
    }
  } catch (error) {
    return { rows: [], notes: [`skipped: ${(error as Error).message}`] };
  }
  installCleanup();
  const seeds = opts.quick ? 1 : 5;
  const quality: Quality = { f1: { cascade: [], encoder: [], vote: [] }, routed: [] };
  let first: CascadeTagModel | undefined;
  for (let seed = 42; seed < 42 + seeds; seed++) {
    log(`training seed ${seed}`);
    const trained = trainSeed(dataset, holdout, embedded, seed);
    first ??= trained.cascade;
    for (const kind of KINDS) quality.f1[kind].push(trained.f1[kind]);
    quality.routed.push(trained.routed);
  }
  const cascade = first!;
  const workDir = mkdtempSync(join(tmpdir(), 'tagger-bench-cascade-'));
  const breakage: string[] = [];
  const serving: Results['serving'] = {};
  let confident: Results['confident'] = null;
  try {
    const cli = resolveCli(log);
    const texts = holdout.map((r) => r.text);
    const { routed } = cascade.predictFast(texts);
    const routedTexts = routed.map((i) => texts[i]!);
    const confidentTexts = texts.filter((_, i) => !routed.includes(i));
    const models: Record<Kind, TagModel> = { cascade, encoder: cascade.encoderModel, vote: cascade.fast };
    const workload = Array.from({ length: opts.quick ? 1 : 2 }, () => texts).flat();
    for (const kind of KINDS) {
      const dir = join(workDir, kind);
      saveModel(dir, models[kind], bindEmbeddings(models[kind], embedded.embeddings), holdout);
      const server = await serve(cli, dir, workDir, `tagger-${kind}`);
      try {
        log(`serving the ${KIND_NAMES[kind]}`);
        if (kind === 'cascade') {
          // The encoder saturated by 10 connections of routed texts while one connection sends confident ones.
          const rounds = opts.quick ? 2 : 5;
          const saturate = Array.from({ length: opts.quick ? 300 : 800 }, (_, i) =>
            body([routedTexts[i % routedTexts.length]!]),
          );
          const background = sendAll(server.url, saturate, 10);
          await new Promise((done) => setTimeout(done, 300));
          const foreground = await confidentLatency(server.url, confidentTexts, rounds);
          const loaded = await background;
          breakage.push(
            ...(failures(foreground) + failures(loaded.answers) > 0
              ? [
                  `cascade under saturation: ${failures(foreground)} confident and ${failures(loaded.answers)} routed requests failed`,
                ]
              : []),
          );
          const ms = foreground.map((a) => a.ms);
          confident = {
            cascade: { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99) },
            vote: { p50: Number.NaN, p99: Number.NaN },
            texts: foreground.length,
          };
        }
        if (kind === 'vote' && confident !== null) {
          const alone = (await confidentLatency(server.url, confidentTexts, opts.quick ? 2 : 5)).map(
            (a) => a.ms,
          );
          confident.vote = { p50: quantile(alone, 0.5), p99: quantile(alone, 0.99) };
        }
        const measured = await measureServer(server.url, server.proc.pid, workload, opts.quick);
        if (measured.failed > 0) breakage.push(`${KIND_NAMES[kind]}: ${measured.failed} requests failed`);
        serving[kind] = measured;
        log(`${kind}: ${JSON.stringify(measured)}`);
      } finally {
        await server.proc.stop();
      }
    }
  } finally {
    await stopAll();
    rmSync(workDir, { recursive: true, force: true });
  }
  const results: Results = { seeds, quality, serving, confident };
  return {
    rows: rowsFrom('cascade', ROWS, results),
    ...(breakage.length > 0 ? { breakage } : {}),
    details: {
      threshold: cascade.routingThreshold,
      choice: cascade.choice,
      quality,
      serving,
      confident,
    },
  };
}
