/**
 * Model benchmark: Tagger's training time and holdout weighted f1 against scikit-learn's equivalent
 * pipeline (python/sklearn_train.py) on the same data and arguments, plus in-process prediction speed.
 * Trained on a stratified 85/15 train/validation split of dataset.csv (seed 42); scored on holdout.csv.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import { MemberTagModel } from '../src/model/classifiers/members/member-model.js';
import { SgdTagModel } from '../src/model/classifiers/sgd/sgd-model.js';
import {
  cleanText,
  DEFAULT_TRAINING_ARGS,
  evaluate,
  familyOf,
  type LabelledText,
  parseTrainingArgs,
  STOPWORDS,
  stratifiedSplit,
  type TagModel,
  type TrainingArgs,
  trainTagger,
} from '../src/model/index.js';
import { crossValidate, crossValidationFolds, meanStd } from '../src/train/cross-validate.js';
import { DATA_DIR as DATA, PYTHON } from './paths.js';
import { pythonAvailable, runPythonScript } from './python.js';
import { type BenchOptions, type BenchRow, rowsOf } from './section.js';

/** scikit-learn's reference for a classifier is chosen by its family: SGDClassifier for the SGD family. */
const usesSgd = (classifier: string): boolean => familyOf(classifier).name === 'sgd';

const SEED = 42;

function load(file: string): LabelledText[] {
  const rows = parse(readFileSync(resolve(DATA, file)), { columns: true }) as Record<string, string>[];
  return rows.map((r) => ({ text: `${r.title} ${r.description}`, tag: r.tag! }));
}

const quantile = (sorted: Float64Array, q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** A model whose features can be timed apart: the SGD model or the member classifiers' one. */
type PredictingModel = SgdTagModel | MemberTagModel;

/**
 * Where one prediction's CPU goes: cleaning the text, its n-gram features (vectorize) and the whole
 * predict call, each the best of `rounds` interleaved passes over the texts (CPU µs per text).
 */
function predictionParts(
  model: PredictingModel,
  texts: readonly string[],
  rounds: number,
): { cleaning: number; features: number; predict: number } {
  const clean = (text: string) => cleanText(text, model.args);
  const cleaned = texts.map(clean);
  const passes = {
    cleaning: () => {
      for (const text of texts) clean(text);
    },
    features: () => {
      for (const doc of cleaned) model.vectorizer.vectorize(doc);
    },
    predict: () => {
      for (const text of texts) model.predict([text]);
    },
  };
  const best = { cleaning: Infinity, features: Infinity, predict: Infinity };
  for (let round = 0; round < rounds; round++) {
    for (const part of ['cleaning', 'features', 'predict'] as const) {
      const cpu0 = process.cpuUsage();
      passes[part]();
      const cpu = process.cpuUsage(cpu0);
      best[part] = Math.min(best[part], (cpu.user + cpu.system) / texts.length);
    }
  }
  return best;
}

function sklearn(
  train: LabelledText[],
  validation: LabelledText[],
  test: LabelledText[],
  args: TrainingArgs = DEFAULT_TRAINING_ARGS,
  seed = SEED,
): { train_seconds: number; weighted_f1: number; n_features: number } | null {
  if (!pythonAvailable()) {
    console.error(
      `[bench/model] ${PYTHON} not found; skipping scikit-learn (set TAGGER_PYTHON or create .venv)`,
    );
    return null;
  }
  return runPythonScript('sklearn_train.py', {
    train,
    validation,
    test,
    args,
    stopwords: STOPWORDS,
    seed,
  });
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

  // scikit-learn's same configuration: SGDClassifier for the SGD defaults, the same members for a vote.
  const sk = usesSgd(DEFAULT_TRAINING_ARGS.classifier)
    ? sklearn(train!, validation!, holdout)
    : (sklearnMembers(
        [{ train: train!, validation: validation!, test: holdout, seed: SEED }],
        DEFAULT_TRAINING_ARGS,
      )?.[0] ?? null);

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

  // `explain` next to plain predict, interleaved per text so both see the same machine load.
  for (const text of texts) model.explain(text, 10);
  let plainMicros = 0;
  let explainMicros = 0;
  const explainRounds = opts.quick ? 2 : 10;
  for (let round = 0; round < explainRounds; round++) {
    for (const text of texts) {
      const t0 = process.hrtime.bigint();
      model.predict([text]);
      const t1 = process.hrtime.bigint();
      model.explain(text, 10);
      explainMicros += Number(process.hrtime.bigint() - t1) / 1000;
      plainMicros += Number(t1 - t0) / 1000;
    }
  }
  const explained = explainRounds * texts.length;
  const parts =
    model instanceof SgdTagModel || model instanceof MemberTagModel
      ? predictionParts(model, texts, opts.quick ? 3 : 12)
      : null;

  const row = rowsOf('model');
  const ref = `reference = scikit-learn 1.9 (TfidfVectorizer + ${usesSgd(DEFAULT_TRAINING_ARGS.classifier) ? 'SGDClassifier' : 'the same members: LinearSVC / liblinear / MultinomialNB, CalibratedClassifierCV'})`;
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
      `classifier=${DEFAULT_TRAINING_ARGS.classifier}, threshold=${threshold === null ? 'argmax' : threshold.toFixed(3)} (${DEFAULT_TRAINING_ARGS.threshold}); sklearn: argmax`,
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
      model instanceof SgdTagModel || model instanceof MemberTagModel ? model.vectorizer.size : null,
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
    row(
      'predict CPU, best pass: of which cleaning the text',
      'µs/text',
      parts?.cleaning ?? null,
      parts?.predict ?? null,
      'reference = the whole predict call, best of the same interleaved passes',
    ),
    row(
      'predict CPU, best pass: of which n-gram features (tf-idf)',
      'µs/text',
      parts?.features ?? null,
      parts?.predict ?? null,
      'the rest of predict: linear scores, probabilities, the answer object',
    ),
    row(
      'explain (top 10 features) vs predict, same texts interleaved',
      'µs/text',
      explainMicros / explained,
      plainMicros / explained,
      'reference = plain predict; an explained prediction costs both (predict + explain)',
    ),
  ];
}

/**
 * 5-fold cross-validation on dataset.csv only (the evidence for the defaults in src/model/README.md), with
 * `crossValidate` of src/train/cross-validate.ts (folds and splits seeded 42, training seeds 42, 43, …;
 * `seeds` > 1 averages each fold's f1 over them, which evens out SGD shuffle/oversampling order, alone ~0.01
 * per fold). `sklearn` also runs python/sklearn_train.py on the same folds, splits and seeds.
 */
export async function crossValidateBench(
  args: TrainingArgs,
  opts: { sklearn?: boolean; seeds?: number; workers?: number } = {},
): Promise<{ f1: number[]; sklearnF1: number[] | null; seconds: number }> {
  const dataset = load('dataset.csv');
  const trainingSeeds = Array.from({ length: opts.seeds ?? 1 }, (_, k) => SEED + k);
  const options = { folds: 5, seed: SEED, trainingSeeds };
  const cv = await crossValidate(dataset, args, {
    ...options,
    ...(opts.workers === undefined ? {} : { workers: opts.workers }),
  });
  if (!opts.sklearn) return { f1: cv.folds, sklearnF1: null, seconds: cv.trainingSeconds };
  const sk: number[] = [];
  for (const fold of crossValidationFolds(dataset, options.folds, SEED)) {
    const theirs: number[] = [];
    for (const seed of trainingSeeds) {
      // scikit-learn's same classifier: SGDClassifier, or the same members (sklearn_linear.py).
      const result = usesSgd(args.classifier)
        ? sklearn(fold.train, fold.validation, fold.test, args, seed)
        : (sklearnMembers([{ ...fold, seed }], args)?.[0] ?? null);
      if (result === null) return { f1: cv.folds, sklearnF1: null, seconds: cv.trainingSeconds };
      theirs.push(result.weighted_f1);
    }
    sk.push(meanStd(theirs).mean);
  }
  return { f1: cv.folds, sklearnF1: sk, seconds: cv.trainingSeconds };
}

/**
 * Holdout weighted f1 of `args` for training seeds 42, 43, … (`seeds` of them), as `tagger train --data
 * dataset.csv --test-data holdout.csv --seed N` trains (split 85/15 with seed N, training seed N), and
 * scikit-learn's on the same splits and seeds. Only for configurations already chosen by CV: the holdout
 * must never choose anything.
 */
export function holdoutBench(
  args: TrainingArgs,
  seeds: number,
): { f1: number[]; sklearnF1: number[] | null } {
  const dataset = load('dataset.csv');
  const holdout = load('holdout.csv');
  const f1: number[] = [];
  const sk: number[] = [];
  for (let seed = SEED; seed < SEED + seeds; seed++) {
    const [train, validation] = stratifiedSplit(dataset, (r) => r.tag, [0.85, 0.15], seed);
    const { model } = trainTagger(train!, validation!, args, { seed });
    f1.push(evaluate(model, holdout).overall.f1);
    const theirs = sklearn(train!, validation!, holdout, args, seed);
    if (theirs !== null) sk.push(theirs.weighted_f1);
  }
  return { f1, sklearnF1: sk.length === seeds ? sk : null };
}

const formatMeanStd = (xs: number[]): string => {
  const { mean, std } = meanStd(xs);
  return `${mean.toFixed(4)} ± ${std.toFixed(4)}`;
};

// `node --import tsx bench/model.ts --cv '{"classifier":"softmax"}' [--sklearn] [--seeds N] [--workers N]`:
// one CV row per args JSON; `--holdout --seeds N '<args>'`: holdout f1 over training seeds, with sklearn's.
const cliMode = process.argv[1] === import.meta.filename;
if (cliMode && process.argv.includes('--holdout')) {
  const at = process.argv.indexOf('--seeds');
  const seeds = at < 0 ? 5 : Number(process.argv[at + 1]);
  if (!Number.isInteger(seeds) || seeds < 1) throw new Error('bench/model: --seeds needs a positive integer');
  for (const raw of process.argv.slice(2).filter((a) => a.startsWith('{'))) {
    const { f1, sklearnF1 } = holdoutBench(parseTrainingArgs(JSON.parse(raw)), seeds);
    const list = (xs: number[]): string => xs.map((v) => v.toFixed(4)).join(' ');
    const skText = sklearnF1 === null ? '' : `  sklearn ${formatMeanStd(sklearnF1)} [${list(sklearnF1)}]`;
    console.log(`${raw}  holdout f1 ${formatMeanStd(f1)}  [${list(f1)}]${skText}`);
  }
}
if (cliMode && process.argv.includes('--cv')) {
  const withSklearn = process.argv.includes('--sklearn');
  const flag = (name: string): number | undefined => {
    const at = process.argv.indexOf(name);
    if (at < 0) return undefined;
    const value = Number(process.argv[at + 1]);
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`bench/model: ${name} needs a positive integer`);
    return value;
  };
  const seeds = flag('--seeds') ?? 1;
  const workers = flag('--workers');
  for (const raw of process.argv.slice(2).filter((a) => a.startsWith('{'))) {
    const { f1, sklearnF1, seconds } = await crossValidateBench(parseTrainingArgs(JSON.parse(raw)), {
      sklearn: withSklearn,
      seeds,
      ...(workers === undefined ? {} : { workers }),
    });
    const folds = f1.map((v) => v.toFixed(4)).join(' ');
    const skText =
      sklearnF1 === null
        ? ''
        : `  sklearn ${formatMeanStd(sklearnF1)} [${sklearnF1.map((v) => v.toFixed(4)).join(' ')}]`;
    console.log(`${raw}  f1 ${formatMeanStd(f1)}  [${folds}]  train ${seconds.toFixed(1)}s${skText}`);
  }
}

// ---- member classifiers and soft votes (issue 25): CV over split seeds, scikit-learn's same configuration ----

/**
 * scikit-learn's version of the member classifiers / soft vote of `args` (python/sklearn_linear.py, kind
 * "train"), one Python process for every (train, validation, test, seed) case; null without the venv.
 */
function sklearnMembers(
  cases: { train: LabelledText[]; validation: LabelledText[]; test: LabelledText[]; seed: number }[],
  args: TrainingArgs,
): { train_seconds: number; weighted_f1: number; n_features: number; predictions: string[] }[] | null {
  if (!pythonAvailable()) {
    console.error(
      `[bench/model] ${PYTHON} not found; skipping scikit-learn (set TAGGER_PYTHON or create .venv)`,
    );
    return null;
  }
  return runPythonScript(
    'sklearn_linear.py',
    cases.map((c) => ({ kind: 'train', ...c, args, stopwords: STOPWORDS })),
  );
}

/**
 * 5-fold cross-validation on dataset.csv repeated over `splitSeeds` fold assignments (seeds 42, 43, …; each
 * split seed also seeds its folds' train/validation splits and the training), as issue 25's evidence was
 * gathered: one f1 per (split seed, fold). `sklearn` adds scikit-learn's same configuration on the same
 * folds (python/sklearn_linear.py for the member classifiers, python/sklearn_train.py for SGD).
 */
export async function crossValidateSplitsBench(
  args: TrainingArgs,
  opts: { splitSeeds: number; sklearn?: boolean; workers?: number },
): Promise<{ f1: number[][]; sklearnF1: number[][] | null; seconds: number }> {
  const dataset = load('dataset.csv');
  const f1: number[][] = [];
  const sk: number[][] = [];
  let seconds = 0;
  for (let seed = SEED; seed < SEED + opts.splitSeeds; seed++) {
    const cv = await crossValidate(dataset, args, {
      folds: 5,
      seed,
      trainingSeeds: [seed],
      ...(opts.workers === undefined ? {} : { workers: opts.workers }),
    });
    f1.push(cv.folds);
    seconds += cv.trainingSeconds;
    if (!opts.sklearn) continue;
    const folds = crossValidationFolds(dataset, 5, seed);
    if (usesSgd(args.classifier)) {
      const theirs = folds.map((fold) => sklearn(fold.train, fold.validation, fold.test, args, seed));
      if (theirs.every((t) => t !== null)) sk.push(theirs.map((t) => t!.weighted_f1));
      continue;
    }
    const theirs = sklearnMembers(
      folds.map((fold) => ({ ...fold, seed })),
      args,
    );
    if (theirs !== null) sk.push(theirs.map((t) => t.weighted_f1));
  }
  return { f1, sklearnF1: sk.length === opts.splitSeeds ? sk : null, seconds };
}

/**
 * Holdout weighted f1 of `args` for training seeds 42, 43, … as `tagger train --data dataset.csv
 * --test-data holdout.csv --seed N` trains, and scikit-learn's same configuration (sklearn_linear.py for
 * the member classifiers); plus the model part of a prediction, CPU µs per holdout text (best of `rounds`
 * passes of `predict([text])` per text after warm-up, with cleaning and n-gram features apart). Only for
 * configurations already chosen by CV: the holdout never chooses anything.
 */
export function holdoutMembersBench(
  args: TrainingArgs,
  seeds: number,
  rounds = 20,
): {
  f1: number[];
  sklearnF1: number[] | null;
  microseconds: { cleaning: number; features: number; predict: number };
  trainSeconds: number;
} {
  const dataset = load('dataset.csv');
  const holdout = load('holdout.csv');
  const f1: number[] = [];
  const cases: { train: LabelledText[]; validation: LabelledText[]; test: LabelledText[]; seed: number }[] =
    [];
  let model: TagModel | null = null;
  let trainSeconds = Infinity;
  for (let seed = SEED; seed < SEED + seeds; seed++) {
    const [train, validation] = stratifiedSplit(dataset, (r) => r.tag, [0.85, 0.15], seed);
    const started = performance.now();
    const trained = trainTagger(train!, validation!, args, { seed });
    trainSeconds = Math.min(trainSeconds, (performance.now() - started) / 1000);
    model ??= trained.model;
    f1.push(evaluate(trained.model, holdout).overall.f1);
    cases.push({ train: train!, validation: validation!, test: holdout, seed });
  }
  const theirs = usesSgd(args.classifier)
    ? cases.map((c) => sklearn(c.train, c.validation, c.test, args, c.seed))
    : sklearnMembers(cases, args);
  const sklearnF1 =
    theirs === null || theirs.some((t) => t === null) ? null : theirs.map((t) => t!.weighted_f1);
  const texts = holdout.map((r) => r.text);
  for (let i = 0; i < 5; i++) model!.predict(texts);
  const microseconds = predictionParts(model as PredictingModel, texts, rounds);
  return { f1, sklearnF1, microseconds, trainSeconds };
}

const list = (xs: number[]): string => xs.map((v) => v.toFixed(4)).join(' ');

// `node --import tsx bench/model.ts --cv-splits 3 [--sklearn] [--workers N] '<args>' …`: one row per args
// JSON, 5-fold CV over 3 split seeds; `--holdout-members --seeds 5 '<args>'`: holdout f1 (with sklearn's)
// and the model's µs per text, for the configuration CV chose.
if (cliMode && process.argv.includes('--cv-splits')) {
  const at = process.argv.indexOf('--cv-splits');
  const splitSeeds = Number(process.argv[at + 1]);
  if (!Number.isInteger(splitSeeds) || splitSeeds < 1)
    throw new Error('bench/model: --cv-splits needs a positive integer');
  const workersAt = process.argv.indexOf('--workers');
  const workers = workersAt < 0 ? undefined : Number(process.argv[workersAt + 1]);
  for (const raw of process.argv.slice(2).filter((a) => a.startsWith('{'))) {
    const { f1, sklearnF1, seconds } = await crossValidateSplitsBench(parseTrainingArgs(JSON.parse(raw)), {
      splitSeeds,
      sklearn: process.argv.includes('--sklearn'),
      ...(workers === undefined ? {} : { workers }),
    });
    const all = f1.flat();
    const perSplit = f1.map((folds) => meanStd(folds).mean.toFixed(4)).join(' ');
    const skText =
      sklearnF1 === null
        ? ''
        : `  sklearn ${formatMeanStd(sklearnF1.flat())} [splits ${sklearnF1.map((folds) => meanStd(folds).mean.toFixed(4)).join(' ')}] [${list(sklearnF1.flat())}]`;
    console.log(
      `${raw}  f1 ${formatMeanStd(all)}  [splits ${perSplit}]  [${list(all)}]  train ${seconds.toFixed(1)}s${skText}`,
    );
  }
}
if (cliMode && process.argv.includes('--holdout-members')) {
  const at = process.argv.indexOf('--seeds');
  const seeds = at < 0 ? 5 : Number(process.argv[at + 1]);
  for (const raw of process.argv.slice(2).filter((a) => a.startsWith('{'))) {
    const { f1, sklearnF1, microseconds, trainSeconds } = holdoutMembersBench(
      parseTrainingArgs(JSON.parse(raw)),
      seeds,
    );
    const skText = sklearnF1 === null ? '' : `  sklearn ${formatMeanStd(sklearnF1)} [${list(sklearnF1)}]`;
    const us = `cleaning ${microseconds.cleaning.toFixed(1)} + features ${microseconds.features.toFixed(1)}, whole predict ${microseconds.predict.toFixed(1)} µs CPU/text`;
    console.log(
      `${raw}  holdout f1 ${formatMeanStd(f1)}  [${list(f1)}]${skText}  ${us}  train ${trainSeconds.toFixed(2)}s (best)`,
    );
  }
}
