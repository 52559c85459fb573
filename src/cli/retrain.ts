/**
 * `tagger retrain [--promote [best|models:/<name>@<alias>]]`: the next model from a person's corrections.
 * It takes the run that is served (retrain-data.ts: its own training data read again, digest checked;
 * its test rows reproduced), merges every feedback label and label-issue fix into the training rows
 * (merge-corrections.ts), trains with the run's arguments and seed, tests on the very same test rows, and
 * scores both models on the held-out random share of live labels. The new run records its lineage and
 * is logged as a `candidate` — never served — until the promotion decides: promoted only when it beats
 * the served run on the same test rows by `--min-gain`, is no worse on the held-out live labels, and its
 * data checks raised no leak or duplicate warning (`--allow-warnings`); then the alias moves (or, for the
 * experiment's best, the run's tag becomes `promoted`) as the last step, so nothing is half-promoted. One
 * retrain per experiment at a time (a lease in the record store).
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import { EVALUATION_TAGS, liveQuality, type TrainingArgs } from '../model/index.js';
import type { RecordStore } from '../monitoring/index.js';
import { readRuns } from '../served-models/candidates.js';
import { servingVerdict } from '../served-models/gates.js';
import { resolveTrackingUri } from '../tracking/index.js';
import type { DatasetInput, TrackingStore } from '../tracking/store.js';
import { isMultiLabel } from '../train/data.js';
import { fileDigest, pythonJson } from '../train/dataset-input.js';
import { logTrainingRun } from '../train/log-run.js';
import { trainingCsv } from '../train/merge-corrections.js';
import { argsForData } from '../train/pipeline.js';
import { embedForTraining, encoderArgs } from './embeddings.js';
import {
  defaultRunName,
  loadModelOfFlags,
  parseInteger,
  readArgs,
  servingGates,
  trackingOption,
  UsageError,
  withStore,
} from './inputs.js';
import type { CliIo } from './io.js';
import { formatMetric } from './output.js';
import { trainReporting } from './reported-training.js';
import {
  findParent,
  type HeldOutLabel,
  openRecords,
  type Prepared,
  type PromotionTarget,
  prepare,
  promotionTarget,
} from './retrain-data.js';
import { decide, promote } from './retrain-promotion.js';

export interface RetrainFlags {
  experiment: string;
  runId?: string;
  data?: string;
  testData?: string;
  args?: string;
  seed?: number;
  trackingUri?: string;
  recordStore?: string;
  promote?: string | boolean;
  minGain: number;
  minLiveLabels: number;
  liveHoldout: number;
  allowWarnings?: boolean;
  runName?: string;
  labelIssues?: boolean;
  json?: boolean;
  quiet?: boolean;
  /** `--no-memory-check`: false. */
  memoryCheck?: boolean;
}

/** Run tags of a retrained run: its lineage (besides `tagger.promotion`). */
export const LINEAGE_TAGS = {
  parent: 'tagger.retrain.parent_run_id',
  feedbackRows: 'tagger.retrain.feedback_rows',
  fixRows: 'tagger.retrain.fix_rows',
  dataDigest: 'tagger.retrain.data_digest',
  parentDataDigest: 'tagger.retrain.parent_data_digest',
} as const;

/** Where a retrained run keeps the data it was trained and tested on (read again by the next retrain). */
const MERGED_TRAIN = 'retrain/train.csv';
const MERGED_TEST = 'retrain/test.csv';

/** One retrain per experiment: a lease in the record store, renewed while the retrain lasts. */
const LEASE_MS = 5 * 60_000;
const RENEW_MS = 60_000;

async function holdLease(records: RecordStore, name: string, experiment: string) {
  const holder = `${hostname()}:${process.pid}:${Date.now().toString(36)}`;
  const lease = await records.takeLease(name, holder, LEASE_MS, Date.now());
  if (lease.holder !== holder) {
    throw new UsageError(
      `retrain: another retrain of experiment '${experiment}' is running (${lease.holder}, since ${new Date(lease.acquiredMs).toISOString()}); one at a time, so this one stops without training (its lease ends by ${new Date(lease.expiresMs).toISOString()} if that one died)`,
    );
  }
  const timer = setInterval(() => {
    void records.takeLease(name, holder, LEASE_MS, Date.now()).catch(() => undefined);
  }, RENEW_MS);
  timer.unref();
  return {
    release: async () => {
      clearInterval(timer);
      await records.releaseLease(name, holder).catch(() => undefined);
    },
  };
}

/** `loadModelOfFlags`'s flags for one run of the store of `flags`. */
const runFlags = (runId: string, flags: RetrainFlags) => ({
  runId,
  experiment: flags.experiment,
  ...(flags.trackingUri === undefined ? {} : { trackingUri: flags.trackingUri }),
});

/** Weighted f1 of a run on the held-out live labels (the live figures' own computation), or null. */
async function liveF1(
  runId: string,
  flags: RetrainFlags,
  labels: readonly HeldOutLabel[],
  io: CliIo,
): Promise<number | null> {
  if (labels.length === 0) return null;
  const loaded = await loadModelOfFlags(runFlags(runId, flags), io);
  try {
    const texts = labels.map((label) => label.text);
    const model = await loaded.predictor.prepare(texts);
    const predictions = model.predict(texts);
    const quality = liveQuality(
      predictions.map((prediction, i) => ({ predicted: prediction.predicted_tags, truth: labels[i]!.tags })),
      model.tags,
      model.args.multi_label,
    );
    return quality.overall.f1;
  } finally {
    await loaded.close();
  }
}

/**
 * The tags of the merged rows the replaced run did not know: how many training rows each has, and whether
 * the new model learnt it (min_freq and accepted_tags decide, on its training split) or folded it.
 */
function newTags(prepared: Prepared, parentTags: ReadonlySet<string>, learnt: ReadonlySet<string>) {
  const counts = new Map<string, number>();
  for (const row of prepared.merged.rows) {
    for (const tag of row.tags ?? [row.tag]) {
      if (!parentTags.has(tag)) counts.set(tag, (counts.get(tag) ?? 0) + 1);
    }
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([tag, rows]) => ({ tag, rows, learnt: learnt.has(tag) }));
}

function datasetOf(
  name: string,
  bytes: Uint8Array,
  rows: number,
  multiLabel: boolean,
  uri: string,
  context: string,
): DatasetInput {
  return {
    dataset: {
      name,
      digest: fileDigest(bytes),
      sourceType: 'local',
      source: pythonJson({ uri }),
      schema: pythonJson({
        mlflow_colspec: ['title', 'description', multiLabel ? 'tags' : 'tag'].map((column) => ({
          type: 'string',
          name: column,
          required: true,
        })),
      }),
      profile: pythonJson({ num_rows: rows }),
    },
    tags: { 'mlflow.data.context': context },
  };
}

async function retrainCommand(flags: RetrainFlags, io: CliIo): Promise<void> {
  const target = promotionTarget(flags.promote);
  const explicit = flags.args === undefined ? null : await readArgs(flags.args);
  const trackingUri = resolveTrackingUri(flags.trackingUri, process.env);
  const say = (line: string): void => {
    if (!flags.json) io.stdout.write(`${line}\n`);
  };
  await withStore(flags.trackingUri, async (store) => {
    const parent = await findParent(store, flags, target);
    const records = await openRecords(trackingUri, flags.recordStore);
    try {
      const lease = await holdLease(records, `retrain:${parent.scope}`, parent.experimentName);
      try {
        await retrainFrom(store, records, parent, target, explicit, flags, io, say);
      } finally {
        await lease.release();
      }
    } finally {
      await records.close();
    }
  });
}

async function retrainFrom(
  store: TrackingStore,
  records: RecordStore,
  parent: Awaited<ReturnType<typeof findParent>>,
  target: PromotionTarget,
  explicit: Awaited<ReturnType<typeof readArgs>> | null,
  flags: RetrainFlags,
  io: CliIo,
  say: (line: string) => void,
): Promise<void> {
  const parentId = parent.run.info.runId;
  const prepared = await prepare(store, records, parent, flags);
  const { data, labels, merged } = prepared;
  const s = merged.summary;
  say(
    `Retraining run ${parentId} (${parent.chosen}, experiment '${parent.experimentName}'): its training data ${data.training.where} (digest ${data.training.digest}, as recorded)${data.testing ? ` and test data ${data.testing.where}` : ''}; ${data.pool.length} training and ${data.test.length} test rows (the same test rows, digest checked).`,
  );
  say(
    `Corrections: ${labels.feedback} feedback label(s)${labels.heldOut.length > 0 ? ` (${labels.heldOut.length} of the random share held out, to score on)` : ''}${labels.hashedOnly > 0 ? `, ${labels.hashedOnly} without their text (TAGGER_RECORD_TEXT=hash), left out` : ''}; ${labels.fixes} label-issue fix(es)${labels.fixesNotFound > 0 ? `, ${labels.fixesNotFound} for rows no longer in the data, left out` : ''}${s.contradictions > 0 ? `; ${s.contradictions} text(s) had contradictory labels: the latest one was used for each` : ''}.`,
  );
  const result = {
    parent_run_id: parentId,
    experiment: parent.experimentName,
    trained: false as boolean,
    reason: null as string | null,
    corrections: {
      feedback: labels.feedback,
      held_out: labels.heldOut.length,
      hashed_only: labels.hashedOnly,
      fixes: labels.fixes,
      fixes_not_found: labels.fixesNotFound,
      contradictions: s.contradictions,
    },
    merged: {
      rows: merged.rows.length,
      relabelled: s.relabelled,
      added: s.added,
      confirmed: s.confirmed,
      test_corrections: s.testCorrections,
    },
  };
  const finish = (extra: Record<string, unknown>): void => {
    if (flags.json) io.stdout.write(`${JSON.stringify({ ...result, ...extra })}\n`);
  };
  if (labels.corrections.length === 0) {
    result.reason = `no feedback label or label-issue fix to learn from in experiment '${parent.experimentName}'${labels.heldOut.length > 0 ? ` (the ${labels.heldOut.length} held-out labels only score)` : ''}: nothing was trained`;
    say(`Nothing to retrain: ${result.reason}.`);
    finish({});
    return;
  }
  const changed = s.relabelled.feedback + s.relabelled.label_issue + s.added.feedback + s.added.label_issue;
  say(
    `Training set: ${merged.rows.length} rows — ${data.pool.length} of run ${parentId}'s, ${s.relabelled.feedback + s.relabelled.label_issue} of them relabelled (feedback ${s.relabelled.feedback}, label-issue fixes ${s.relabelled.label_issue}), and ${s.added.feedback + s.added.label_issue} new (feedback ${s.added.feedback}, fixes ${s.added.label_issue}); ${s.confirmed} correction(s) agreed with the data${s.testCorrections > 0 ? `; ${s.testCorrections} correction(s) of test rows left out (the test rows stay as run ${parentId} was tested on)` : ''}.`,
  );
  if (changed === 0) {
    result.reason = `the corrections change none of run ${parentId}'s training rows: nothing new to learn, nothing was trained`;
    say(`Nothing to retrain: ${result.reason}.`);
    finish({});
    return;
  }
  const base = explicit?.args ?? parent.args;
  // The parent's data is already its subset; the merged rows are all to be trained on.
  const args: TrainingArgs = {
    ...encoderArgs(
      argsForData(base, merged.rows, explicit?.explicit ?? new Set(Object.keys(base))),
      explicit?.explicit ?? new Set(Object.keys(base)),
    ),
    subset: null,
  };
  const parentTags = new Set(
    (await loadModelOfFlags(runFlags(parentId, flags), io).then(async (loaded) => {
      const tags = loaded.model.tags;
      await loaded.close();
      return tags;
    })) as readonly string[],
  );
  const seed = flags.seed ?? parent.seed;
  const multiLabel = args.multi_label || isMultiLabel(merged.rows);
  const encoder = await embedForTraining(
    args,
    { data: merged.rows, testData: data.test },
    io,
    flags.quiet === true,
  );
  // The training runs in a worker thread, so SIGINT/SIGTERM stop it at once (and the lease is released).
  const outcome = await trainReporting(
    {
      data: merged.rows,
      testData: data.test,
      ...(encoder ? { encoder } : {}),
      args,
      seed,
      labelIssues: flags.labelIssues !== false,
    },
    {
      io,
      quiet: flags.quiet === true || flags.json === true,
      memoryCheck: flags.memoryCheck !== false,
      kept: 'nothing was logged or promoted',
    },
  );
  const fresh = newTags(prepared, parentTags, new Set(outcome.model.tags));
  if (fresh.length > 0) {
    say(
      `New tags: ${fresh.map((t) => `${t.tag} (${t.rows} row${t.rows === 1 ? '' : 's'}: ${t.learnt ? 'learnt' : `folded into other by min_freq ${args.min_freq}${args.accepted_tags === null ? '' : ' / accepted_tags'}`})`).join(', ')}.`,
    );
  }
  const trainBytes = new TextEncoder().encode(trainingCsv(merged.rows, multiLabel));
  const testBytes = new TextEncoder().encode(trainingCsv(data.test, multiLabel));
  const feedbackRows = s.relabelled.feedback + s.added.feedback;
  const fixRows = s.relabelled.label_issue + s.added.label_issue;
  const parentF1 = parent.run.metrics.f1;
  const runName = flags.runName ?? defaultRunName('retrain');
  const logged = await logTrainingRun(store, {
    experiment: parent.experimentName,
    runName,
    args,
    seed,
    outcome,
    source: 'tagger retrain',
    extraParams: { parent_run_id: parentId, data: MERGED_TRAIN, test_data: MERGED_TEST },
    extraTags: {
      // Never served before the promotion decides (the gates hold candidates back).
      [EVALUATION_TAGS.promotion]: 'candidate',
      [LINEAGE_TAGS.parent]: parentId,
      [LINEAGE_TAGS.feedbackRows]: String(feedbackRows),
      [LINEAGE_TAGS.fixRows]: String(fixRows),
      [LINEAGE_TAGS.dataDigest]: fileDigest(trainBytes),
      [LINEAGE_TAGS.parentDataDigest]: data.training.digest,
    },
    datasets: (runId) => [
      datasetOf(
        'train.csv',
        trainBytes,
        merged.rows.length,
        multiLabel,
        `runs:/${runId}/${MERGED_TRAIN}`,
        'training',
      ),
      datasetOf(
        'test.csv',
        testBytes,
        data.test.length,
        multiLabel,
        `runs:/${runId}/${MERGED_TEST}`,
        'testing',
      ),
    ],
    extraArtifacts: [
      [MERGED_TRAIN, trainBytes],
      [MERGED_TEST, testBytes],
      [
        'retrain/lineage.json',
        new TextEncoder().encode(
          `${JSON.stringify(
            {
              parent_run_id: parentId,
              parent_data: {
                name: data.training.name,
                digest: data.training.digest,
                where: data.training.where,
              },
              corrections: result.corrections,
              merged: result.merged,
              new_tags: fresh,
            },
            null,
            2,
          )}\n`,
        ),
      ],
    ],
    ...(outcome.labelIssues ? { labelIssues: outcome.labelIssues } : {}),
    catchSignals: true,
  });
  const childId = logged.runId;
  const f1 = outcome.performance.overall.f1;
  say(
    `Logged run ${childId} (${runName}) to experiment '${parent.experimentName}': parent ${parentId}, ${feedbackRows} row(s) from feedback, ${fixRows} from label-issue fixes, training data digest ${fileDigest(trainBytes)}.`,
  );
  for (const warning of outcome.warnings) io.stderr.write(`tagger: WARNING: ${warning}\n`);
  say(
    `Same test rows (${data.test.length}): f1 ${parentF1 === undefined ? '?' : formatMetric(parentF1)} (run ${parentId}) → ${formatMetric(f1)} (run ${childId}).`,
  );
  // Held-out live labels whose text the new run trained on (another prediction of it was labelled) would
  // score it on what it learnt: left out.
  const trained = new Set(merged.rows.map((row) => row.text.toLowerCase().replace(/\s+/g, ' ').trim()));
  const scored = labels.heldOut.filter(
    (label) => !trained.has(label.text.toLowerCase().replace(/\s+/g, ' ').trim()),
  );
  const live = {
    size: scored.length,
    parent: await liveF1(parentId, flags, scored, io),
    child: await liveF1(childId, flags, scored, io),
  };
  if (scored.length > 0) {
    say(
      `Held-out live labels (${scored.length}, random share): f1 ${formatMetric(live.parent!)} (run ${parentId}) → ${formatMetric(live.child!)} (run ${childId}).`,
    );
  } else {
    say('Held-out live labels: none (the random share of the review queue gives them).');
  }
  const metrics: Record<string, number> = {
    parent_test_f1: parentF1 ?? Number.NaN,
    live_holdout_size: scored.length,
  };
  if (live.parent !== null) metrics.parent_live_holdout_f1 = live.parent;
  if (live.child !== null) metrics.live_holdout_f1 = live.child;
  await store.logBatch(childId, {
    metrics: Object.entries(metrics).map(([key, value]) => ({ key, value, timestamp: Date.now(), step: 0 })),
  });
  // The gates tagger serve applies, other than the promotion tag itself.
  const read = await readRuns(store, parent.experimentName);
  const runs = read.ok
    ? read.runs.map((run) =>
        run.info.runId === childId
          ? { ...run, tags: { ...run.tags, [EVALUATION_TAGS.promotion]: 'promoted' } }
          : run,
      )
    : [];
  const gate = read.ok ? servingVerdict(runs, childId, servingGates()).heldBack : null;
  const decision = decide(flags, outcome, parentF1, live, gate);
  const targetName =
    target.kind === 'alias' ? target.uri : `the best run of experiment '${parent.experimentName}'`;
  let promoted: string | null = null;
  if (flags.promote === undefined) {
    say(
      `Not promoted (no --promote): run ${childId} stays a candidate, never served. ${decision.promote ? `It would be promoted (${decision.checks.join('; ')})` : `It would not be: ${decision.reasons.join('; ')}`}.`,
    );
  } else if (decision.promote) {
    promoted = await promote(store, childId, target, parent.experimentName);
    say(`PROMOTED to ${targetName}: ${decision.checks.join('; ')}. ${promoted}.`);
  } else {
    const reason = decision.reasons.join('; ');
    await store.logBatch(childId, {
      tags: {
        [EVALUATION_TAGS.promotion]: 'rejected',
        [EVALUATION_TAGS.promotionReason]: reason.slice(0, 5_000),
      },
    });
    say(`NOT PROMOTED to ${targetName}: ${reason}. Nothing changed: run ${parentId} stays served.`);
  }
  result.trained = true;
  finish({
    run_id: childId,
    run_name: runName,
    test_rows: data.test.length,
    f1,
    parent_f1: parentF1 ?? null,
    live_holdout: { size: live.size, f1: live.child, parent_f1: live.parent },
    new_tags: fresh,
    warnings: outcome.warnings,
    promotion: {
      asked: flags.promote !== undefined,
      target: target.kind === 'alias' ? target.uri : 'best',
      promoted: promoted !== null,
      reasons: decision.reasons,
      checks: decision.checks,
    },
  });
}

export function registerRetrain(program: Command, io: CliIo): void {
  const between =
    (name: string, low: number) =>
    (value: string): number => {
      const parsed = Number(value);
      if (value.trim() === '' || !Number.isFinite(parsed) || parsed < low || parsed > 1) {
        throw new InvalidArgumentError(`${name} must be a number from ${low} to 1, got '${value}'`);
      }
      return parsed;
    };
  program
    .command('retrain')
    .description(
      "Train the next model from people's corrections: the served run's own training data plus every feedback label and label-issue fix, tested on the same test rows; --promote serves it only when it is better",
    )
    .option('--experiment <name>', 'the experiment tagger serve serves (the new run joins it)', 'best')
    .option(
      '--run-id <id>',
      'the run to retrain from (default: the run tagger serve serves, or the one --promote’s alias points at)',
    )
    .option(
      '--data <file>',
      "the replaced run's training data, when it is no longer where the run recorded it (its digest must match)",
    )
    .option('--test-data <file>', "the replaced run's test file, likewise")
    .option('--args <json>', "training arguments instead of the replaced run's (a JSON file or inline JSON)")
    .option('--seed <n>', "random seed (default: the replaced run's)", parseInteger('--seed', 0))
    .option(
      '--promote [target]',
      "promote the new run if it beats the served one: 'best' (the default: the experiment's best run) or models:/<name>@<alias>",
    )
    .addOption(
      new Option(
        '--min-gain <f1>',
        'the margin on the same test rows the new run must beat the served one by (negative: accept one up to that much worse)',
      )
        .default(0.005)
        .argParser(between('--min-gain', -1)),
    )
    .addOption(
      new Option('--min-live-labels <n>', 'held-out live labels needed to judge "no worse on live labels"')
        .default(20)
        .argParser(parseInteger('--min-live-labels', 0)),
    )
    .addOption(
      new Option(
        '--live-holdout <share>',
        'share of the random-share labels held out of training, to score both models on',
      )
        .default(0.5)
        .argParser(between('--live-holdout', 0)),
    )
    .option(
      '--allow-warnings',
      'promote even when the data checks warned of a leaked test set or repeated rows',
    )
    .addOption(trackingOption())
    .addOption(
      new Option(
        '--record-store <uri>',
        'where tagger serve keeps records, feedback and label-issue decisions (as its setting; default beside the tracking store)',
      ).env('TAGGER_RECORD_STORE'),
    )
    .option('--run-name <name>', 'run name (default: retrain-<timestamp>)')
    .option('--no-label-issues', "don't look for label issues in the merged data")
    .option('--json', 'print one JSON object: the corrections, the merge, the scores and the promotion')
    .option(
      '--no-memory-check',
      "train even when the estimate of the training's memory is over what this process may use (it may then be killed)",
    )
    .option('--quiet', 'no progress')
    .action((flags: RetrainFlags) => retrainCommand(flags, io));
}
