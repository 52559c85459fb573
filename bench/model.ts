/**
 * Model benchmark: Tagger's training time and holdout weighted f1 against scikit-learn's equivalent
 * pipeline (python/sklearn_train.py) on the same data and arguments, plus in-process prediction speed.
 * Trained on a stratified 85/15 train/validation split of dataset.csv (seed 42); scored on holdout.csv.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import {
  DEFAULT_TRAINING_ARGS,
  evaluate,
  type LabelledText,
  STOPWORDS,
  stratifiedSplit,
  trainTagger,
} from '../src/model/index.js';
import { LinearTagModel } from '../src/model/tagger.js';
import type { BenchOptions, BenchRow } from './run.js';

const REPO = resolve(import.meta.dirname, '..');
const DATA = process.env.TAGGER_DATA_DIR ?? resolve(REPO, '..', 'shared', 'data');
const PYTHON = process.env.TAGGER_PYTHON ?? resolve(REPO, '.venv', 'bin', 'python');
const SEED = 42;

function load(file: string): LabelledText[] {
  const rows = parse(readFileSync(resolve(DATA, file)), { columns: true }) as Record<string, string>[];
  return rows.map((r) => ({ text: `${r.title} ${r.description}`, tag: r.tag! }));
}

const quantile = (sorted: Float64Array, q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

function sklearn(
  train: LabelledText[],
  test: LabelledText[],
): { train_seconds: number; weighted_f1: number; n_features: number } | null {
  if (!existsSync(PYTHON)) {
    console.error(
      `[bench/model] ${PYTHON} not found; skipping scikit-learn (set TAGGER_PYTHON or create .venv)`,
    );
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'tagger-bench-'));
  try {
    writeFileSync(
      join(dir, 'in.json'),
      JSON.stringify({ train, test, args: DEFAULT_TRAINING_ARGS, stopwords: STOPWORDS, seed: SEED }),
    );
    execFileSync(
      PYTHON,
      [resolve(REPO, 'python', 'sklearn_train.py'), join(dir, 'in.json'), join(dir, 'out.json')],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    return JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const dataset = load('dataset.csv');
  const holdout = load('holdout.csv');
  const [train, validation] = stratifiedSplit(dataset, (r) => r.tag, [0.85, 0.15], SEED);

  // Training: best of N runs (the machine is shared, so the minimum is the least noisy estimate).
  const trainRuns = opts.quick ? 1 : 3;
  let trainSeconds = Infinity;
  let result = trainTagger(train!, validation!, DEFAULT_TRAINING_ARGS, { seed: SEED });
  for (let i = 0; i < trainRuns; i++) {
    const t0 = performance.now();
    result = trainTagger(train!, validation!, DEFAULT_TRAINING_ARGS, { seed: SEED });
    trainSeconds = Math.min(trainSeconds, (performance.now() - t0) / 1000);
  }
  const { model, threshold } = result;
  const perf = evaluate(model, holdout);
  // The same model with a validation-chosen threshold, to show what `threshold: auto` would do.
  const auto = trainTagger(
    train!,
    validation!,
    { ...DEFAULT_TRAINING_ARGS, threshold: 'auto' },
    { seed: SEED },
  );
  const autoF1 = evaluate(auto.model, holdout).overall.f1;

  const sk = sklearn(train!, holdout);

  // Prediction: one text per call, the way a request is served; warm up first so the JIT has settled.
  const texts = holdout.map((r) => r.text);
  for (let i = 0; i < 5; i++) model.predict(texts);
  const rounds = opts.quick ? 5 : 50;
  const times = new Float64Array(rounds * texts.length);
  let k = 0;
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let round = 0; round < rounds; round++) {
    for (const text of texts) {
      const t0 = process.hrtime.bigint();
      model.predict([text]);
      times[k++] = Number(process.hrtime.bigint() - t0) / 1000;
    }
  }
  const totalSeconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuMicros = (cpu.user + cpu.system) / times.length;
  times.sort();

  const row = (
    metric: string,
    unit: string,
    tagger: number | null,
    reference: number | null,
    note?: string,
  ): BenchRow =>
    note === undefined
      ? { section: 'model', metric, unit, tagger, reference }
      : { section: 'model', metric, unit, tagger, reference, note };
  const ref = 'reference = scikit-learn 1.9 (TfidfVectorizer + SGDClassifier)';
  return [
    row(
      'training time (dataset.csv train split, default args)',
      's',
      trainSeconds,
      sk?.train_seconds ?? null,
      `best of ${trainRuns}; ${ref}`,
    ),
    row(
      'holdout weighted f1 (default args)',
      'f1',
      perf.overall.f1,
      sk?.weighted_f1 ?? null,
      `threshold=${threshold === null ? 'argmax' : threshold.toFixed(3)} (${DEFAULT_TRAINING_ARGS.threshold}); sklearn: argmax`,
    ),
    row(
      'holdout weighted f1 (default args but threshold=auto)',
      'f1',
      autoF1,
      sk?.weighted_f1 ?? null,
      `auto chose ${auto.threshold === null ? 'argmax' : `threshold ${auto.threshold.toFixed(3)}`}`,
    ),
    row(
      'vocabulary size',
      'features',
      model instanceof LinearTagModel ? model.vectorizer.size : null,
      sk?.n_features ?? null,
    ),
    row(
      'predict throughput (1 text per call, 1 core)',
      'texts/s',
      times.length / totalSeconds,
      null,
      `${texts.length} holdout texts x ${rounds} rounds, after warm-up`,
    ),
    row('predict latency p50', 'µs/text', quantile(times, 0.5), null),
    row('predict latency p99', 'µs/text', quantile(times, 0.99), null),
    row(
      'predict CPU time (user + system)',
      'µs/text',
      cpuMicros,
      null,
      'least sensitive to other load on the machine',
    ),
  ];
}
