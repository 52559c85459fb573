/**
 * Section `real` (issue 39): Tagger on data nobody on the project wrote, side by side with what a user
 * would run instead. On each data set of bench/real-data.ts (the sample, BANKING77, CLINC150, generated
 * 50k × 4 and × 500, multi-label projects) every system trains in a process of its own, measured by
 * python/rusage.py (CPU seconds of the whole process, peak RSS): plain `tagger train` (label issues
 * included: the real command, from dist/ when it is built), every candidate of the model choice on its
 * own (`--candidates <one>`), scikit-learn's TF-IDF + LinearSVC and + LogisticRegression and fastText
 * (python/real_reference.py). Tagger's test predictions come from `tagger predict --run-id … --input`, in
 * a process not counted. One scorer (src/model's metrics) scores every system's predictions: weighted and
 * macro f1 (micro too for several tags per text), accuracy, and for CLINC150 in-scope accuracy and
 * out-of-scope recall (a prediction of `out_of_scope` or `other` is "out of scope"); the papers' results
 * are printed beside. One table, and the JSON in bench/results/.
 *
 *   npm run bench -- --only real [--real-datasets banking77,clinc150] [--real-systems plain,linearsvc]
 *                                [--real-timeout 3600]
 *   npm run bench -- --quick    # a few thousand rows of the sample, BANKING77 and the multi-label set
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CANDIDATES } from '../src/train/model-choice/rules.js';
import { PYTHON, REPO } from './paths.js';
import { pythonAvailable } from './python.js';
import { DATA_SETS, OUT_OF_SCOPE, type PreparedSet, PUBLISHED } from './real-data.js';
import { type Scores, scoreOf } from './real-score.js';
import { type BenchOptions, type BenchRow, rowsOf, type SectionResult } from './section.js';

const SECTION = 'real';
const row = rowsOf(SECTION);

interface System {
  /** What --real-systems calls it. */
  key: string;
  name: string;
  kind: 'tagger' | 'python';
  /** `tagger train`'s extra flags (a candidate alone), or the Python peer's system. */
  flags?: string[];
  python?: string;
  /** Run by `--quick`. */
  quick: boolean;
  /** Environment of its process beside the bench's (the machine it stands for). */
  env?: Record<string, string>;
}

const SYSTEMS: System[] = [
  { key: 'plain', name: 'tagger train', kind: 'tagger', flags: [], quick: true },
  {
    key: 'plain-tfidf',
    name: 'tagger train, no encoder installed',
    kind: 'tagger',
    flags: [],
    quick: false,
    // A machine without `npm run setup:encoder`: the model choice leaves the encoder candidates out.
    env: { TAGGER_ENCODERS_DIR: join(tmpdir(), 'tagger-bench-no-encoders') },
  },
  ...CANDIDATES.map(
    (candidate): System => ({
      key: candidate.name,
      name: `tagger ${candidate.name}`,
      kind: 'tagger',
      flags: ['--candidates', candidate.name],
      quick: false,
    }),
  ),
  { key: 'linearsvc', name: 'scikit-learn LinearSVC', kind: 'python', python: 'linearsvc', quick: true },
  { key: 'logreg', name: 'scikit-learn LogisticRegression', kind: 'python', python: 'logreg', quick: false },
  { key: 'fasttext-ref', name: 'fastText 0.9.3', kind: 'python', python: 'fasttext', quick: false },
];

export interface Outcome {
  data: string;
  system: string;
  key: string;
  finished: boolean;
  reason?: string;
  scores?: Scores;
  cpu_s?: number;
  peak_rss_mb?: number;
  model_bytes?: number;
  predict_us?: number;
  /** Tagger: what the choice kept, and the estimate of the encoder's share of a prediction. */
  chosen?: string;
  encoder_predict_us?: number;
}

const argValue = (name: string): string | undefined => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};

function selected<T extends { name?: string; key?: string; quick: boolean }>(
  all: readonly T[],
  flag: string,
  keyOf: (item: T) => string,
  quick: boolean,
): T[] {
  const given = argValue(flag);
  if (given === undefined) return all.filter((item) => !quick || item.quick);
  const keys = given.split(',');
  const unknown = keys.filter((key) => !all.some((item) => keyOf(item) === key));
  if (unknown.length > 0)
    throw new Error(`${flag} takes ${all.map(keyOf).join(', ')}, got ${unknown.join(', ')}`);
  return all.filter((item) => keys.includes(keyOf(item)));
}

interface Finished {
  stdout: string;
  stderr: string;
  usage: { cpu_s: number; peak_rss_mb: number; wall_s: number; code: number };
}

/** A command under python/rusage.py with a time limit: its output and what it used, or why it failed. */
function measured(
  argv: string[],
  timeoutS: number,
  env: Record<string, string> = {},
): Promise<Finished | string> {
  return new Promise((done) => {
    const child = spawn(PYTHON, [resolve(REPO, 'python', 'rusage.py'), ...argv], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, MLFLOW_TRACKING_URI: '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-20_000);
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }, timeoutS * 1000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') return done(`did not finish in ${timeoutS} s`);
      const line = /^RUSAGE (\{.*\})$/m.exec(stderr)?.[1];
      const usage = line === undefined ? null : (JSON.parse(line) as Finished['usage']);
      if (code !== 0 || usage === null || usage.code !== 0) {
        const last = stderr
          .split('\n')
          .filter((l) => l.trim() !== '' && !l.startsWith('RUSAGE'))
          .at(-1);
        return done(`exited ${usage?.code ?? code ?? signal}: ${last ?? ''}`);
      }
      done({ stdout, stderr, usage });
    });
  });
}

/** Tagger's command line: dist/ when it is built (what a user runs), else the sources through tsx. */
function taggerCommand(): { argv: string[]; note: string } {
  const node = process.execPath;
  if (existsSync(resolve(REPO, 'dist', 'cli', 'main.js'))) {
    return { argv: [node, resolve(REPO, 'bin', 'tagger.js')], note: 'tagger from dist/' };
  }
  return {
    argv: [node, '--import', 'tsx', resolve(REPO, 'src', 'cli', 'main.ts')],
    note: 'tagger from the sources through tsx (npm run build for dist/): its CPU includes the compile',
  };
}

async function runTagger(set: PreparedSet, system: System, dir: string, timeoutS: number): Promise<Outcome> {
  const base = { data: set.name, system: system.name, key: system.key };
  const { argv } = taggerCommand();
  const store = `sqlite:///${join(dir, `${set.name}-${system.key}.db`)}`;
  const train = await measured(
    [
      ...argv,
      'train',
      '--data',
      set.taggerTrain ?? set.train,
      '--test-data',
      set.taggerTest ?? set.test,
      ...set.taggerColumns,
      '--tracking-uri',
      store,
      '--experiment',
      'real',
      '--threads',
      '1',
      '--json',
      '--quiet',
      ...(system.flags ?? []),
    ],
    timeoutS,
    system.env,
  );
  if (typeof train === 'string') return { ...base, finished: false, reason: train };
  const answer = JSON.parse(train.stdout.trim().split('\n').at(-1)!) as {
    run_id: string;
    model_choice?: {
      chosen: string;
      candidates: {
        name: string;
        status: string;
        predict_us?: number;
        encoder_predict_us?: number;
        model_bytes?: number;
      }[];
    };
  };
  const chosen = answer.model_choice?.candidates.find((c) => c.status === 'chosen');
  const output = join(dir, `${set.name}-${system.key}-predictions.jsonl`);
  const textColumn = set.taggerColumns.includes('--text-column')
    ? ['--text-column', set.taggerColumns[set.taggerColumns.indexOf('--text-column') + 1]!]
    : [];
  const predicted = await measured(
    [
      ...argv,
      'predict',
      '--run-id',
      answer.run_id,
      '--tracking-uri',
      store,
      '--input',
      set.taggerTest ?? set.test,
      ...textColumn,
      '--output',
      output,
      '--probabilities',
      '1',
      '--quiet',
    ],
    timeoutS,
    system.env,
  );
  if (typeof predicted === 'string') return { ...base, finished: false, reason: `predict: ${predicted}` };
  const lines = readFileSync(output, 'utf8').trim().split('\n');
  const predictions = lines.map((line) => {
    const p = JSON.parse(line) as { predicted_tag: string; predicted_tags?: string[] };
    return set.labels === 'multi' ? (p.predicted_tags ?? [p.predicted_tag]) : p.predicted_tag;
  });
  return {
    ...base,
    finished: true,
    scores: scoreOf(set, predictions),
    cpu_s: train.usage.cpu_s,
    peak_rss_mb: train.usage.peak_rss_mb,
    ...(chosen?.model_bytes === undefined ? {} : { model_bytes: chosen.model_bytes }),
    ...(chosen?.predict_us === undefined ? {} : { predict_us: chosen.predict_us }),
    ...(answer.model_choice ? { chosen: answer.model_choice.chosen } : {}),
    ...(chosen?.encoder_predict_us === undefined ? {} : { encoder_predict_us: chosen.encoder_predict_us }),
  };
}

async function runPython(set: PreparedSet, system: System, dir: string, timeoutS: number): Promise<Outcome> {
  const base = { data: set.name, system: system.name, key: system.key };
  const out = join(dir, `${set.name}-${system.key}.json`);
  const result = await measured(
    [
      PYTHON,
      resolve(REPO, 'python', 'real_reference.py'),
      system.python!,
      set.train,
      set.test,
      out,
      ...set.pythonColumns,
    ],
    timeoutS,
  );
  if (typeof result === 'string') return { ...base, finished: false, reason: result };
  const answer = JSON.parse(readFileSync(out, 'utf8')) as {
    predicted: (string | string[])[];
    model_bytes: number;
    predict_us: number;
  };
  return {
    ...base,
    finished: true,
    scores: scoreOf(set, answer.predicted),
    cpu_s: result.usage.cpu_s,
    peak_rss_mb: result.usage.peak_rss_mb,
    model_bytes: answer.model_bytes,
    predict_us: answer.predict_us,
  };
}

const fmt = (value: number | undefined, digits = 4): string =>
  value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);

/** The section's own table: a row per (data set, system). */
function table(outcomes: readonly Outcome[]): string[] {
  const header = [
    'data',
    'system',
    'weighted f1',
    'macro f1',
    'accuracy / micro',
    'in-scope / oos',
    'CPU s',
    'peak MB',
    'model MB',
    'predict µs',
    'note',
  ];
  const body = outcomes.map((o) => [
    o.data,
    o.system,
    fmt(o.scores?.weightedF1),
    fmt(o.scores?.macroF1),
    fmt(o.scores?.microF1 ?? o.scores?.accuracy),
    o.scores?.inScopeAccuracy === undefined
      ? ''
      : `${(100 * o.scores.inScopeAccuracy).toFixed(1)} / ${(100 * o.scores.outOfScopeRecall!).toFixed(1)}`,
    fmt(o.cpu_s, 1),
    fmt(o.peak_rss_mb, 0),
    o.model_bytes === undefined ? '-' : (o.model_bytes / 2 ** 20).toFixed(1),
    o.predict_us === undefined
      ? '-'
      : `${Math.round(o.predict_us)}${o.encoder_predict_us ? ` + ~${Math.round(o.encoder_predict_us)}` : ''}`,
    o.finished ? (o.chosen === undefined ? '' : `chose ${o.chosen}`) : (o.reason ?? ''),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)];
}

/** The issue's targets, judged on what ran (a target whose systems did not run is not judged). */
function targets(outcomes: readonly Outcome[]): BenchRow[] {
  const rows: BenchRow[] = [];
  const of = (data: string, key: string) =>
    outcomes.find((o) => o.data === data && o.key === key && o.finished);
  for (const data of [...new Set(outcomes.map((o) => o.data))]) {
    const plain = of(data, 'plain');
    const references = ['linearsvc', 'logreg', 'fasttext-ref']
      .map((key) => of(data, key))
      .filter((o) => o !== undefined);
    const svc = of(data, 'linearsvc');
    if (plain?.scores && references.length > 0) {
      const best = Math.max(...references.map((o) => o.scores!.weightedF1));
      rows.push({
        ...row(`${data}: plain train weighted f1 vs the best reference`, 'f1', plain.scores.weightedF1, best),
        target: {
          text: '≥ the best of LinearSVC, LogisticRegression, fastText',
          pass: plain.scores.weightedF1 >= best,
        },
      });
    }
    if (plain?.cpu_s !== undefined && svc?.cpu_s !== undefined) {
      rows.push({
        ...row(`${data}: plain train CPU vs LinearSVC`, 's', plain.cpu_s, svc.cpu_s),
        target: { text: '≤ 2× LinearSVC', pass: plain.cpu_s <= 2 * svc.cpu_s },
      });
    }
    if (data === 'clinc150' && plain?.scores?.inScopeAccuracy !== undefined) {
      rows.push({
        ...row(
          'clinc150: plain train in-scope accuracy',
          '%',
          100 * plain.scores.inScopeAccuracy,
          93.5,
          'MLP on USE: 93.5',
        ),
        target: { text: '≥ 93.5', pass: 100 * plain.scores.inScopeAccuracy >= 93.5 },
      });
      rows.push({
        ...row(
          'clinc150: plain train out-of-scope recall',
          '%',
          100 * plain.scores.outOfScopeRecall!,
          50,
          'BERT: 40.3 / 52.3',
        ),
        target: { text: '≥ 50', pass: 100 * plain.scores.outOfScopeRecall! >= 50 },
      });
    }
    if (data === 'banking77' && plain?.scores) {
      rows.push({
        ...row(
          'banking77: plain train accuracy',
          '%',
          100 * plain.scores.accuracy,
          93,
          'dual encoders ≈ 93.4',
        ),
        target: { text: '≥ 93', pass: 100 * plain.scores.accuracy >= 93 },
      });
    }
    if (data === 'generated-50k-x500' && plain?.scores && plain.cpu_s !== undefined) {
      rows.push({
        ...row(
          'generated-50k-x500: plain train',
          's',
          plain.cpu_s,
          300,
          `weighted f1 ${plain.scores.weightedF1.toFixed(4)}`,
        ),
        target: {
          text: '≤ 300 CPU s at weighted f1 ≥ 0.84',
          pass: plain.cpu_s <= 300 && plain.scores.weightedF1 >= 0.84,
        },
      });
    }
    if (
      data === 'multilabel' &&
      plain?.scores &&
      svc?.scores &&
      plain.cpu_s !== undefined &&
      svc.cpu_s !== undefined
    ) {
      rows.push({
        ...row(
          'multilabel: plain train micro f1 vs OneVsRest(LinearSVC)',
          'f1',
          plain.scores.microF1!,
          svc.scores.microF1!,
        ),
        target: {
          text: '≥ its micro f1, within 2× its CPU',
          pass: plain.scores.microF1! >= svc.scores.microF1! && plain.cpu_s <= 2 * svc.cpu_s,
        },
      });
    }
  }
  return rows;
}

export async function run(opts: BenchOptions): Promise<SectionResult> {
  const notes: string[] = [];
  if (!pythonAvailable()) {
    return {
      rows: [],
      notes: [`no Python at ${PYTHON}: the real section needs it (bash scripts/setup-python.sh)`],
    };
  }
  const sets = selected(DATA_SETS, '--real-datasets', (d) => d.name, opts.quick);
  const systems = selected(SYSTEMS, '--real-systems', (s) => s.key, opts.quick);
  const timeoutS = Number(argValue('--real-timeout') ?? (opts.quick ? 600 : 7200));
  const dir = join(tmpdir(), `tagger-bench-real-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  notes.push(taggerCommand().note);
  const outcomes: Outcome[] = [];
  try {
    for (const definition of sets) {
      const set = definition.prepare(dir, opts.quick);
      if (set === null) continue;
      for (const system of systems) {
        process.stderr.write(`real: ${set.name}: ${system.name}…\n`);
        const outcome =
          system.kind === 'tagger'
            ? await runTagger(set, system, dir, timeoutS)
            : await runPython(set, system, dir, timeoutS);
        process.stderr.write(
          `real: ${set.name}: ${system.name}: ${outcome.finished ? `weighted f1 ${fmt(outcome.scores?.weightedF1)}, ${fmt(outcome.cpu_s, 1)} CPU s` : outcome.reason}\n`,
        );
        outcomes.push(outcome);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = table(outcomes);
  console.log(
    `\nreal data (${opts.quick ? 'quick sizes' : 'full sizes'}; CPU s of the whole training process, one thread):`,
  );
  for (const line of lines) console.log(line);
  const published = PUBLISHED.filter((p) => outcomes.some((o) => o.data === p.data));
  if (published.length > 0) {
    console.log('\npublished results on the same splits (../shared/data/real/SOURCES.md):');
    for (const p of published) console.log(`  ${p.data}: ${p.system}: ${p.figure}`);
  }
  notes.push(
    `CLINC150: Tagger trains with the ${OUT_OF_SCOPE} rows labelled other (its answer for a text that fits no tag); every system's out_of_scope or other counts as out of scope`,
  );
  const breakage = outcomes
    .filter((o) => !o.finished && o.key === 'plain')
    .map((o) => `real: plain tagger train on ${o.data} failed: ${o.reason}`);
  return {
    rows: targets(outcomes),
    notes,
    details: { outcomes, published },
    ...(breakage.length ? { breakage } : {}),
  };
}
