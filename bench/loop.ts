/**
 * Loop section of the benchmark (issue 32): the loop from a person's correction to a better model served,
 * simulated on dataset.csv, and the label-issue finder on planted errors.
 *
 * **The loop.** dataset.csv is split once (seeded): a stratified 15 % test file every run is tested on,
 * a small stratified seed share the first model is trained on (`tagger train --data seed.csv --test-data
 * test.csv`), and the rest streamed as live traffic. Each round, the served model predicts every text of
 * the stream not labelled yet (recorded as a server records them), a simulated annotator labels N texts
 * from the review queue (the same queue `GET /review` serves, answered through the same feedback code as
 * `POST /feedback`, each with its item's selection) with their dataset.csv tag, and `tagger retrain
 * --promote` runs as the CLI does (its defaults: margin 0.005 on the same test rows, half the random share
 * held out). Two arms side by side, alike but for the review queue's order: uncertainty (the least
 * confident first, the default) against random, both with the default 20 % random share. After each
 * round the served run — whatever the promotion decided — is scored on holdout.csv (weighted f1; the
 * holdout decides nothing), and the labels each arm needs to come within 0.01 of the model trained on all
 * of dataset.csv (scored the same way) are reported with their ratio.
 *
 * **Label issues.** dataset.csv with 20 tags flipped at random (flip seeds 2025, 7, 99; one with
 * --quick): the share of the flips in the finder's top 50 (≥ 0.8) and the share of the flagged rows that
 * are flips (≥ 0.4, counting only planted flips as right).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../src/cli/index.js';
import type { CliIo } from '../src/cli/io.js';
import {
  createRng,
  DEFAULT_TRAINING_ARGS,
  evaluate,
  type LabelledText,
  stratifiedSplit,
} from '../src/model/index.js';
import { receiveFeedback } from '../src/monitoring/feedback.js';
import { openRecordStore, type PredictionRecord, type RecordStore } from '../src/monitoring/index.js';
import { type ReviewOrder, reviewQueue } from '../src/monitoring/review.js';
import { loadServedModel } from '../src/served-models/artifacts.js';
import { readRuns } from '../src/served-models/candidates.js';
import { DEFAULT_GATES, servingVerdict } from '../src/served-models/gates.js';
import { openTrackingStore } from '../src/tracking/index.js';
import { type DatasetRow, readDataset } from '../src/train/data.js';
import { labelIssuesOf, outOfFoldProbabilities } from '../src/train/label-issues.js';
import { trainingCsv } from '../src/train/merge-corrections.js';
import { splitData, trainAndEvaluate } from '../src/train/pipeline.js';
import { flipTags } from '../test/support/label-noise.js';
import { DATA_DIR } from './paths.js';
import { type BenchOptions, type BenchRow, rowsOf, type SectionResult } from './section.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/loop] ${message}\n`);
};
const row = rowsOf('loop');
const SEED = 42;
/** The review queue's random share, as GET /review's default. */
const RANDOM_SHARE = 0.2;

/** Runs `tagger <args>` in this process; resolves with its stdout, or throws with its stderr. */
async function tagger(args: string[]): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => err.push(text) },
  };
  const code = await main(args, io);
  if (code !== 0) throw new Error(`tagger ${args[0]} failed (${code}): ${err.join('')}`);
  return out.join('');
}

interface Point {
  round: number;
  labels: number;
  /** The served run's holdout f1 (after the promotion decided). */
  f1: number;
  /** The holdout f1 of the run this round's retrain trained, promoted or not (the seed model's at round 0). */
  candidateF1: number;
  servedRunId: string;
  promoted: boolean;
}

interface Arm {
  order: ReviewOrder;
  points: Point[];
  promotions: number;
  seconds: number;
}

/** The run `tagger serve` would serve now (or `runId`), scored on the holdout. */
async function servedScore(
  uri: string,
  holdout: LabelledText[],
  runId?: string,
): Promise<{ runId: string; f1: number }> {
  const store = await openTrackingStore(uri, { readOnly: true });
  try {
    let id = runId;
    if (id === undefined) {
      const read = await readRuns(store, 'best');
      if (!read.ok) throw new Error(read.reason);
      const served = servingVerdict(read.runs, '', DEFAULT_GATES).served;
      if (served === undefined) throw new Error('no run is served');
      id = served.info.runId;
    }
    const model = await loadServedModel((path) => store.readArtifact(id, path));
    return { runId: id, f1: evaluate(model.model, holdout).overall.f1 };
  } finally {
    await store.close();
  }
}

/**
 * The simulated traffic's clock and ids, seeded: the review queue's random draws, and which labels of the
 * random share retrain holds out (a hash of the prediction id), are then the same in every run of the
 * bench (ids made by the server carry the time and random bits).
 */
class SimulatedIds {
  private readonly rng: () => number;
  private ms = Date.UTC(2026, 0, 1);
  constructor(seed: number) {
    this.rng = createRng(seed);
  }
  /** The next millisecond of simulated traffic. */
  tick(): number {
    return ++this.ms;
  }
  /** A version-7 UUID of `ms` with seeded random bits. */
  id(ms: number): string {
    const hex = (digits: number) =>
      Array.from({ length: digits }, () => Math.floor(this.rng() * 16).toString(16)).join('');
    const time = ms.toString(16).padStart(12, '0');
    const variant = '89ab'[Math.floor(this.rng() * 4)]!;
    return `${time.slice(0, 8)}-${time.slice(8)}-7${hex(3)}-${variant}${hex(3)}-${hex(12)}`;
  }
  random(): number {
    return this.rng();
  }
}

/** Records the served model's predictions of `texts` as a server records them (the review queue's input). */
async function record(
  records: RecordStore,
  uri: string,
  runId: string,
  scope: string,
  texts: readonly string[],
  ids: SimulatedIds,
): Promise<void> {
  const store = await openTrackingStore(uri, { readOnly: true });
  let model: Awaited<ReturnType<typeof loadServedModel>>['model'];
  try {
    model = (await loadServedModel((path) => store.readArtifact(runId, path))).model;
  } finally {
    await store.close();
  }
  const predictions = model.predict([...texts]);
  const batch: PredictionRecord[] = predictions.map((prediction, i) => {
    const ms = ids.tick();
    return {
      predictionId: ids.id(ms),
      createdMs: ms,
      scope,
      runId,
      modelVersion: null,
      multiLabel: false,
      predictedTag: prediction.predicted_tag,
      predictedTags: prediction.predicted_tags,
      probabilities: prediction.probabilities,
      confidence: prediction.probabilities[prediction.predicted_tag] ?? 0,
      unseenShare: 0,
      textLength: texts[i]!.length,
      text: texts[i]!,
      textSha256: null,
    };
  });
  await records.append(batch);
}

async function runArm(
  order: ReviewOrder,
  trafficSeed: number,
  files: { seed: string; test: string },
  stream: readonly DatasetRow[],
  holdout: LabelledText[],
  perRound: number,
  rounds: number,
): Promise<Arm> {
  const started = performance.now();
  const dir = mkdtempSync(join(tmpdir(), `tagger-bench-loop-${order}-`));
  const uri = `sqlite:///${join(dir, 'mlflow.db')}`;
  const arm: Arm = { order, points: [], promotions: 0, seconds: 0 };
  try {
    const trained = JSON.parse(
      await tagger([
        'train',
        ...['--data', files.seed, '--test-data', files.test, '--tracking-uri', uri],
        ...['--seed', String(SEED), '--no-label-issues', '--quiet', '--json'],
      ]),
    ) as { run_id: string; experiment_id: string };
    const scope = trained.experiment_id;
    const truth = new Map(stream.map((row) => [row.text, row.tag]));
    const labelled = new Set<string>();
    const first = await servedScore(uri, holdout);
    arm.points.push({
      round: 0,
      labels: 0,
      f1: first.f1,
      candidateF1: first.f1,
      servedRunId: first.runId,
      promoted: false,
    });
    const records = await openRecordStore(uri);
    // The same seeded traffic for both arms.
    const ids = new SimulatedIds(trafficSeed);
    try {
      for (let round = 1; round <= rounds; round++) {
        const waiting = stream.filter((row) => !labelled.has(row.text)).map((row) => row.text);
        if (waiting.length === 0) break;
        const served = arm.points.at(-1)!.servedRunId;
        const since = ids.tick();
        await record(records, uri, served, scope, waiting, ids);
        // The annotator labels what the review queue lists, as the Review view sends it.
        const queue = await reviewQueue(records, {
          scope,
          runId: served,
          limit: perRound,
          order,
          randomShare: RANDOM_SHARE,
          sinceMs: since,
          random: () => ids.random(),
        });
        const outcomes = await receiveFeedback(
          records,
          queue.items.map((item) => ({
            prediction_id: item.predictionId,
            tag: truth.get(item.text ?? '')!,
            selection: item.selection,
          })),
          { scope, retentionDays: 30, sampleRate: 1 },
        );
        const refused = outcomes.filter((o) => o.status !== 200);
        if (refused.length > 0) throw new Error(`feedback refused: ${JSON.stringify(refused[0])}`);
        for (const item of queue.items) labelled.add(item.text ?? '');
        const answer = JSON.parse(
          await tagger([
            'retrain',
            ...['--promote', '--tracking-uri', uri, '--record-store', uri],
            ...['--no-label-issues', '--quiet', '--json'],
          ]),
        ) as {
          trained: boolean;
          run_id?: string;
          f1?: number;
          parent_f1?: number;
          promotion?: { promoted: boolean; reasons: string[] };
        };
        const promoted = answer.promotion?.promoted === true;
        if (!promoted)
          log(
            `${order}: round ${round} not promoted: ${answer.promotion?.reasons.join('; ') ?? 'nothing trained'}`,
          );
        if (promoted) arm.promotions++;
        const now = await servedScore(uri, holdout);
        const candidate =
          answer.run_id === undefined
            ? arm.points.at(-1)!.candidateF1
            : (await servedScore(uri, holdout, answer.run_id)).f1;
        arm.points.push({
          round,
          labels: labelled.size,
          f1: now.f1,
          candidateF1: candidate,
          servedRunId: now.runId,
          promoted,
        });
        log(
          `${order} (traffic seed ${trafficSeed}): round ${round}, ${labelled.size} labels, holdout f1 ${now.f1.toFixed(4)}${promoted ? ' (promoted)' : ''}`,
        );
      }
    } finally {
      await records.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  arm.seconds = (performance.now() - started) / 1000;
  return arm;
}

/** Labels given when the served model (or the latest candidate) first reached `target`; null: never. */
const labelsToReach = (arm: Arm, target: number, of: 'f1' | 'candidateF1' = 'f1'): number | null =>
  arm.points.find((point) => point[of] >= target)?.labels ?? null;

export async function run(opts: BenchOptions): Promise<SectionResult> {
  const dataset = await readDataset(join(DATA_DIR, 'dataset.csv'));
  const holdout = await readDataset(join(DATA_DIR, 'holdout.csv'));
  const rows: BenchRow[] = [];
  const notes: string[] = [];

  // The model trained on all of dataset.csv, scored on the holdout as every round's served run is.
  const all = trainAndEvaluate({ data: dataset, testData: holdout, args: DEFAULT_TRAINING_ARGS, seed: SEED });
  const allF1 = all.performance.overall.f1;
  const target = allF1 - 0.01;
  log(`all of dataset.csv: holdout f1 ${allF1.toFixed(4)} (target ${target.toFixed(4)})`);

  // One split for both arms: the test file, the seed share and the stream.
  const split = splitData(dataset, false, SEED);
  const rest = [...split.train, ...split.validation] as DatasetRow[];
  const seedShare = opts.quick ? 0.25 : 0.15;
  const [seedRows = [], stream = []] = stratifiedSplit(
    rest,
    (row) => row.tag,
    [seedShare, 1 - seedShare],
    SEED,
  );
  const perRound = opts.quick ? 100 : 40;
  const rounds = opts.quick ? 2 : Math.ceil(stream.length / perRound);
  const dir = mkdtempSync(join(tmpdir(), 'tagger-bench-loop-'));
  const files = { seed: join(dir, 'seed.csv'), test: join(dir, 'test.csv') };
  writeFileSync(files.seed, trainingCsv(seedRows, false));
  writeFileSync(files.test, trainingCsv(split.test, false));
  log(
    `seed ${seedRows.length} rows, stream ${stream.length}, test ${split.test.length}; ${perRound} labels a round, up to ${rounds} rounds`,
  );
  // Traffic seeds: the review queue's random draws and which random-share labels are held out.
  const trafficSeeds = opts.quick ? [SEED] : [SEED, SEED + 1, SEED + 2];
  const runs: { seed: number; uncertainty: Arm; random: Arm }[] = [];
  try {
    for (const seed of trafficSeeds) {
      const uncertainty = await runArm('uncertainty', seed, files, stream, holdout, perRound, rounds);
      const random = await runArm('random', seed, files, stream, holdout, perRound, rounds);
      runs.push({ seed, uncertainty, random });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const { uncertainty, random } = runs[0]!;

  rows.push(
    row(
      'holdout weighted f1, model on all of dataset.csv',
      'f1',
      allF1,
      null,
      'the level to come within 0.01 of',
    ),
  );
  rows.push(
    row(
      `holdout weighted f1, seed model (${seedRows.length} rows)`,
      'f1',
      uncertainty.points[0]!.f1,
      random.points[0]!.f1,
      'both arms start from the same model',
    ),
  );
  const roundsRun = Math.max(uncertainty.points.length, random.points.length);
  for (let r = 1; r < roundsRun; r++) {
    const u = uncertainty.points[r];
    const q = random.points[r];
    rows.push(
      row(
        `holdout weighted f1 after round ${r} (${u?.labels ?? q?.labels} labels; traffic seed ${SEED})`,
        'f1',
        u?.f1 ?? null,
        q?.f1 ?? null,
        'tagger = uncertainty sampling, reference = random sampling',
      ),
    );
  }
  const ratios: number[] = [];
  const candidateRatios: number[] = [];
  for (const { seed, uncertainty: u, random: q } of runs) {
    const reachedU = labelsToReach(u, target);
    const reachedR = labelsToReach(q, target);
    if (reachedU !== null && reachedR !== null) ratios.push(reachedU / reachedR);
    rows.push({
      ...row(
        `labels to come within 0.01 of the all-data model (traffic seed ${seed})`,
        'labels',
        reachedU,
        reachedR,
        reachedU === null || reachedR === null
          ? `not reached within ${Math.max(u.points.at(-1)!.labels, q.points.at(-1)!.labels)} labels by ${reachedU === null && reachedR === null ? 'either arm' : reachedU === null ? 'uncertainty sampling' : 'random sampling'}`
          : 'uncertainty / random',
      ),
      ...(reachedU !== null && reachedR !== null
        ? { target: { text: 'uncertainty needs fewer (ratio < 1)', pass: reachedU < reachedR } }
        : {}),
    });
    const candidateU = labelsToReach(u, target, 'candidateF1');
    const candidateR = labelsToReach(q, target, 'candidateF1');
    if (candidateU !== null && candidateR !== null) candidateRatios.push(candidateU / candidateR);
    rows.push(
      row(
        `labels until a retrained run (promoted or not) comes within 0.01 (traffic seed ${seed})`,
        'labels',
        candidateU,
        candidateR,
        candidateU === null || candidateR === null
          ? `not reached within ${Math.max(u.points.at(-1)!.labels, q.points.at(-1)!.labels)} labels by ${candidateU === null && candidateR === null ? 'either arm' : candidateU === null ? 'uncertainty sampling' : 'random sampling'}`
          : 'sampling alone, the promotion aside',
      ),
    );
    rows.push(
      row(
        `retrains promoted (traffic seed ${seed})`,
        'runs',
        u.promotions,
        q.promotions,
        `of ${u.points.length - 1} and ${q.points.length - 1} rounds (margin 0.005 on the same test rows)`,
      ),
    );
  }
  if (runs.length > 1) {
    rows.push(
      row(
        'labels needed, uncertainty / random, mean over traffic seeds',
        'ratio',
        ratios.length === 0 ? null : ratios.reduce((a, b) => a + b, 0) / ratios.length,
        null,
        `${ratios.length} of ${runs.length} seeds reached the level in both arms`,
      ),
    );
    rows.push(
      row(
        'labels needed by a retrained run (promoted or not), uncertainty / random, mean over traffic seeds',
        'ratio',
        candidateRatios.length === 0
          ? null
          : candidateRatios.reduce((a, b) => a + b, 0) / candidateRatios.length,
        null,
        `${candidateRatios.length} of ${runs.length} seeds reached the level in both arms`,
      ),
    );
  }
  rows.push(
    row('loop wall time', 's', uncertainty.seconds, random.seconds, 'each arm, its retrains included'),
  );
  if (opts.quick)
    notes.push(
      '--quick: 2 rounds of 100 labels from a 25 % seed share; the full run labels 40 a round until the stream is used up',
    );

  // Label issues on planted errors.
  const flipSeeds = opts.quick ? [2025] : [2025, 7, 99];
  for (const flipSeed of flipSeeds) {
    const { rows: noisy, flipped } = flipTags(dataset, 20, flipSeed);
    const options = { args: DEFAULT_TRAINING_ARGS, seed: SEED };
    const report = labelIssuesOf(noisy, outOfFoldProbabilities(noisy, options), options);
    const top = report.issues.slice(0, 50).filter((issue) => flipped.has(issue.row)).length;
    const hits = report.issues.filter((issue) => flipped.has(issue.row)).length;
    const recall = top / flipped.size;
    const precision = report.found === 0 ? 0 : hits / report.found;
    rows.push({
      ...row(
        `label issues, 20 flips (seed ${flipSeed}): recall of the flips in the top 50`,
        'share',
        recall,
        null,
      ),
      target: { text: '>= 0.8', pass: recall >= 0.8 },
    });
    rows.push({
      ...row(
        `label issues, 20 flips (seed ${flipSeed}): precision of the flagged rows`,
        'share',
        precision,
        null,
        `${hits} flips among ${report.found} flagged (${report.candidates} candidates)`,
      ),
      target: { text: '>= 0.4', pass: precision >= 0.4 },
    });
  }
  return {
    rows,
    notes,
    details: {
      allF1,
      target,
      seedRows: seedRows.length,
      streamRows: stream.length,
      testRows: split.test.length,
      perRound,
      runs,
    },
  };
}
