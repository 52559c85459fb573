/**
 * One arm of the loop bench (bench/loop.ts): a first model trained on a seed share, the rest of the
 * training file streamed as traffic, a simulated annotator labelling N texts a round from the review queue,
 * `tagger retrain --promote` each round. Everything runs as it does in production, in this process: the
 * served run is the one `tagger serve` would serve (the gates), its predictions are recorded as a server
 * records them (seeded ids and clock, so every run of the bench draws the same random share and holds out
 * the same labels), the queue is `reviewQueue` (what GET /review serves) and the labels go through
 * `receiveFeedback` (what POST /feedback runs), each with its item's selection.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../src/cli/index.js';
import type { CliIo } from '../src/cli/io.js';
import { createRng, evaluate, type LabelledText } from '../src/model/index.js';
import { receiveFeedback } from '../src/monitoring/feedback.js';
import { openRecordStore, type PredictionRecord, type RecordStore } from '../src/monitoring/index.js';
import { type ReviewOrder, reviewQueue } from '../src/monitoring/review.js';
import { loadServedModel } from '../src/served-models/artifacts.js';
import { readRuns } from '../src/served-models/candidates.js';
import { DEFAULT_GATES, servingVerdict } from '../src/served-models/gates.js';
import { openTrackingStore } from '../src/tracking/index.js';

const log = (message: string): void => {
  process.stderr.write(`[bench/loop] ${message}\n`);
};

/** Runs `tagger <args>` in this process; resolves with its stdout, or throws with its stderr. */
export async function tagger(args: string[]): Promise<string> {
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

export interface Point {
  round: number;
  labels: number;
  /** The served run's f1 on the data set's test file (after the promotion decided). */
  f1: number;
  /** The f1 of the run this round's retrain trained, promoted or not (the seed model's at round 0). */
  candidateF1: number;
  servedRunId: string;
  promoted: boolean;
  /** Items of the round's queue passed over as near copies of texts labelled or listed. */
  nearCopies: number;
}

export interface Arm {
  order: ReviewOrder;
  seed: number;
  points: Point[];
  promotions: number;
  seconds: number;
}

export interface ArmInput {
  order: ReviewOrder;
  /** Seeds the traffic: its order, ids and random draws (the seed share is the caller's). */
  seed: number;
  files: { seed: string; test: string };
  /** The texts streamed as traffic, with the tags the annotator gives. */
  stream: readonly LabelledText[];
  /** The data set's own test file: what every served run is scored on (it decides nothing). */
  scoring: readonly LabelledText[];
  perRound: number;
  maxRounds: number;
  /** Stop once the served run and a retrained one have both reached this f1 (null: run every round). */
  stopAt: number | null;
  args: string;
  randomShare: number;
  label: string;
}

/** The run `tagger serve` would serve now (or `runId`), scored on `scoring`. */
async function score(
  uri: string,
  scoring: readonly LabelledText[],
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
    return { runId: id, f1: evaluate(model.model, [...scoring]).overall.f1 };
  } finally {
    await store.close();
  }
}

/**
 * The simulated traffic's clock and ids, seeded: the review queue's random draws, and which labels of the
 * random share retrain holds out (a hash of the prediction id), are then the same in every run of the
 * bench (ids made by a server carry the time and random bits).
 */
class SimulatedTraffic {
  private readonly rng: () => number;
  private ms = Date.UTC(2026, 0, 1);
  constructor(seed: number) {
    this.rng = createRng(seed);
  }
  tick(): number {
    return ++this.ms;
  }
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
  /** `count` of `items` in a seeded random order (the traffic of a round). */
  sample<T>(items: readonly T[], count: number): T[] {
    const copy = [...items];
    const n = Math.min(count, copy.length);
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(this.rng() * (copy.length - i));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, n);
  }
}

/** Records the served model's predictions of `texts` as a server records them (the review queue's input). */
async function record(
  records: RecordStore,
  uri: string,
  runId: string,
  scope: string,
  texts: readonly string[],
  traffic: SimulatedTraffic,
): Promise<void> {
  const store = await openTrackingStore(uri, { readOnly: true });
  let model: Awaited<ReturnType<typeof loadServedModel>>['model'];
  try {
    model = (await loadServedModel((path) => store.readArtifact(runId, path))).model;
  } finally {
    await store.close();
  }
  const predictions = model.predict([...texts], undefined, { probabilities: 20 });
  const batch: PredictionRecord[] = predictions.map((prediction, i) => {
    const ms = traffic.tick();
    return {
      predictionId: traffic.id(ms),
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

/** Unlabelled recorded predictions the review queue chooses from each round (as REVIEW_CANDIDATES). */
const TRAFFIC_PER_ROUND = 5_000;

export async function runArm(input: ArmInput): Promise<Arm> {
  const started = performance.now();
  const dir = mkdtempSync(join(tmpdir(), `tagger-bench-loop-${input.order}-`));
  const uri = `sqlite:///${join(dir, 'mlflow.db')}`;
  const arm: Arm = { order: input.order, seed: input.seed, points: [], promotions: 0, seconds: 0 };
  try {
    const trained = JSON.parse(
      await tagger([
        'train',
        ...['--data', input.files.seed, '--test-data', input.files.test, '--tracking-uri', uri],
        ...['--args', input.args, '--seed', String(input.seed), '--no-label-issues', '--quiet', '--json'],
      ]),
    ) as { run_id: string; experiment_id: string };
    const scope = trained.experiment_id;
    const truth = new Map<string, string>();
    for (const row of input.stream) if (!truth.has(row.text)) truth.set(row.text, row.tag);
    const labelled = new Set<string>();
    const first = await score(uri, input.scoring);
    arm.points.push({
      round: 0,
      labels: 0,
      f1: first.f1,
      candidateF1: first.f1,
      servedRunId: first.runId,
      promoted: false,
      nearCopies: 0,
    });
    const records = await openRecordStore(uri);
    const traffic = new SimulatedTraffic(input.seed);
    const reached = (of: 'f1' | 'candidateF1') =>
      input.stopAt !== null && arm.points.some((point) => point[of] >= input.stopAt!);
    try {
      for (let round = 1; round <= input.maxRounds; round++) {
        if (reached('f1') && reached('candidateF1')) break;
        const waiting = [...truth.keys()].filter((text) => !labelled.has(text));
        if (waiting.length === 0) break;
        const served = arm.points.at(-1)!.servedRunId;
        const since = traffic.tick();
        await record(records, uri, served, scope, traffic.sample(waiting, TRAFFIC_PER_ROUND), traffic);
        // The annotator labels what the review queue lists, as the Review view sends it.
        const queue = await reviewQueue(records, {
          scope,
          runId: served,
          limit: input.perRound,
          order: input.order,
          randomShare: input.randomShare,
          sinceMs: since,
          random: () => traffic.random(),
        });
        const outcomes = await receiveFeedback(
          records,
          queue.items.map((item) => ({
            prediction_id: item.predictionId,
            tag: truth.get(item.text ?? '')!,
            selection: item.selection,
          })),
          { scope, retentionDays: 36_500, sampleRate: 1 },
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
        ) as { run_id?: string; promotion?: { promoted: boolean; reasons: string[] } };
        const promoted = answer.promotion?.promoted === true;
        if (promoted) arm.promotions++;
        else
          log(
            `${input.label} ${input.order} seed ${input.seed}: round ${round} not promoted: ${answer.promotion?.reasons.join('; ') ?? 'nothing trained'}`,
          );
        const now = await score(uri, input.scoring);
        const candidate =
          answer.run_id === undefined
            ? arm.points.at(-1)!.candidateF1
            : answer.run_id === now.runId
              ? now.f1
              : (await score(uri, input.scoring, answer.run_id)).f1;
        arm.points.push({
          round,
          labels: labelled.size,
          f1: now.f1,
          candidateF1: candidate,
          servedRunId: now.runId,
          promoted,
          nearCopies: queue.nearCopies,
        });
        log(
          `${input.label} ${input.order} seed ${input.seed}: round ${round}, ${labelled.size} labels, served f1 ${now.f1.toFixed(4)}, retrained ${candidate.toFixed(4)}${promoted ? ' (promoted)' : ''}${queue.nearCopies > 0 ? `, ${queue.nearCopies} near copies passed over` : ''}`,
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

/** Labels given when the served run (or a retrained one) first reached `target`; null: never. */
export const labelsToReach = (arm: Arm, target: number, of: 'f1' | 'candidateF1' = 'f1'): number | null =>
  arm.points.find((point) => point[of] >= target)?.labels ?? null;
