/**
 * `tagger retrain [--promote [best|models:/<name>@<alias>]]`: the next model from a person's corrections.
 * It takes the run that is served (retrain-data.ts: its own training data read again, digest checked;
 * its test rows reproduced), merges every feedback label and label-issue fix into the training rows
 * (merge-corrections.ts), trains with the run's arguments and seed, tests on the very same test rows, and
 * scores both models on the held-out random share of live labels. The new run records its lineage and
 * is logged as a `candidate` — never served — until the promotion decides: promoted only when it beats
 * the served run on the same test rows by `--min-gain`, is no worse on the held-out live labels, and its
 * data checks raised no test-leak warning (`--allow-warnings`); then the alias moves (or, for the
 * experiment's best, the run's tag becomes `promoted`) as the last step, so nothing is half-promoted. One
 * retrain per experiment at a time (a lease in the record store).
 */
import { DEFAULT_TRAINING_ARGS, EVALUATION_TAGS, liveQuality, type TrainingArgs } from '../model/index.js';
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
import { choiceTable } from './choice-output.js';
import { embedForTraining, encoderArgs } from './embeddings.js';
import {
  type DataColumnFlags,
  dataColumnParams,
  defaultRunName,
  loadModelOfFlags,
  readArgs,
  servingGates,
  UsageError,
  withStore,
} from './inputs.js';
import type { CliIo } from './io.js';
import { prepareCommandChoice } from './model-choice.js';
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
import { holdLease } from './retrain-lease.js';
import { decide, pairedCounts, promote } from './retrain-promotion.js';
import { keptOutLine, keptOutWarning, servedNow } from './retrain-report.js';
import { labelIssuesAfterRun } from './run-label-issues.js';

export interface RetrainFlags extends DataColumnFlags {
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
  /** `--model-choice`: choose the model again instead of keeping the replaced run's kind. */
  modelChoice?: boolean;
  /** The model choice's budget (seconds), with --model-choice. */
  timeBudget?: number;
  /** The model choice's candidates (names), with --model-choice. */
  candidates?: string[];
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

/** What followed its texts from other experiments, for the corrections line ('' when nothing did). */
function followedLine(followed: { feedback: number; fixes: number; scopes: string[] }): string {
  if (followed.feedback === 0 && followed.fixes === 0) return '';
  return `; of them from other experiments, following their texts: ${followed.feedback} feedback label(s) of runs trained on the same data and ${followed.fixes} fix(es) of rows of this data (record scope(s) ${followed.scopes.join(', ')})`;
}

/** `loadModelOfFlags`'s flags for one run of the store of `flags`. */
const runFlags = (runId: string, flags: RetrainFlags) => ({
  runId,
  experiment: flags.experiment,
  ...(flags.trackingUri === undefined ? {} : { trackingUri: flags.trackingUri }),
});

/**
 * A run on the held-out live labels: its weighted f1 (the live figures' own computation) and, label by
 * label, whether it gave exactly the tags the person gave (for the paired comparison of two runs); null
 * when there are none.
 */
async function liveScore(
  runId: string,
  flags: RetrainFlags,
  labels: readonly HeldOutLabel[],
  io: CliIo,
): Promise<{ f1: number; right: boolean[] } | null> {
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
    const right = predictions.map((prediction, i) => {
      const truth = labels[i]!.tags;
      const given = prediction.predicted_tags;
      return given.length === truth.length && given.every((tag) => truth.includes(tag));
    });
    return { f1: quality.overall.f1, right };
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

export async function retrainCommand(flags: RetrainFlags, io: CliIo): Promise<void> {
  const target = promotionTarget(flags.promote);
  if (flags.modelChoice === true && flags.args !== undefined) {
    throw new UsageError(
      '--model-choice chooses the model, but --args names the one to train; drop one of them',
    );
  }
  if (flags.modelChoice !== true && (flags.timeBudget !== undefined || flags.candidates !== undefined)) {
    throw new UsageError(
      `${flags.timeBudget !== undefined ? '--time-budget' : '--candidates'} belongs to the model choice: add --model-choice (retrain keeps the replaced run's kind otherwise)`,
    );
  }
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
    `Corrections: ${labels.feedback} feedback label(s)${labels.heldOut.length > 0 ? ` (${labels.heldOut.length} of the random share held out, to score on)` : ''}${labels.hashedOnly > 0 ? `, ${labels.hashedOnly} without their text (TAGGER_RECORD_TEXT=hash), left out` : ''}; ${labels.fixes} label-issue fix(es)${labels.fixesNotFound > 0 ? `, ${labels.fixesNotFound} for rows no longer in the data, left out` : ''}${s.contradictions > 0 ? `; ${s.contradictions} text(s) had contradictory labels: the latest one was used for each` : ''}${followedLine(labels.followed)}.`,
  );
  if (s.nearContradiction !== undefined) {
    const [a, b] = s.nearContradiction.texts;
    const [ta, tb] = s.nearContradiction.tags;
    io.stderr.write(
      `tagger: WARNING: ${s.nearContradictions} pair(s) of corrected texts are near copies of each other with different tags, e.g. ${JSON.stringify(a.slice(0, 80))} → ${ta.join('|')} and ${JSON.stringify(b.slice(0, 80))} → ${tb.join('|')}: both are trained on as given; check those labels\n`,
    );
  }
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
      followed: {
        feedback: labels.followed.feedback,
        fixes: labels.followed.fixes,
        scopes: labels.followed.scopes,
      },
    },
    merged: {
      rows: merged.rows.length,
      relabelled: s.relabelled,
      added: s.added,
      confirmed: s.confirmed,
      test_corrections: s.testCorrections,
      near_test: s.nearTest,
      data_test_repeats: s.dataTestRepeats,
      near_contradictions: s.nearContradictions,
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
    `Training set: ${merged.rows.length} rows — ${data.pool.length} of run ${parentId}'s, ${s.relabelled.feedback + s.relabelled.label_issue} of them relabelled (feedback ${s.relabelled.feedback}, label-issue fixes ${s.relabelled.label_issue}), and ${s.added.feedback + s.added.label_issue} new (feedback ${s.added.feedback}, fixes ${s.added.label_issue}); ${s.confirmed} correction(s) agreed with the data${s.testCorrections > 0 ? `; ${s.testCorrections} correction(s) of test rows left out (the test rows stay as run ${parentId} was tested on)` : ''}${keptOutLine(s)}.`,
  );
  if (changed === 0) {
    result.reason = `the corrections change none of run ${parentId}'s training rows: nothing new to learn, nothing was trained`;
    say(`Nothing to retrain: ${result.reason}.`);
    finish({});
    return;
  }
  const base = explicit?.args ?? parent.args;
  const seed = flags.seed ?? parent.seed;
  // --model-choice chooses again on the merged rows, the replaced run's tag handling kept (its clean-up
  // is chosen again with the model); else the replaced run's kind, or --args.
  const chosen = flags.modelChoice
    ? await prepareCommandChoice(
        { ...flags, seed },
        {
          args: base,
          explicit: new Set(
            (['min_freq', 'accepted_tags'] as const).filter(
              (key) => base[key] !== DEFAULT_TRAINING_ARGS[key],
            ),
          ),
        },
        { data: merged.rows, testData: data.test },
        io,
      )
    : null;
  // The parent's data is already its subset; the merged rows are all to be trained on.
  const args: TrainingArgs = {
    ...(chosen?.args ??
      encoderArgs(
        argsForData(base, merged.rows, explicit?.explicit ?? new Set(Object.keys(base))),
        explicit?.explicit ?? new Set(Object.keys(base)),
      )),
    subset: null,
  };
  const parentTags = new Set(
    (await loadModelOfFlags(runFlags(parentId, flags), io).then(async (loaded) => {
      const tags = loaded.model.tags;
      await loaded.close();
      return tags;
    })) as readonly string[],
  );
  const multiLabel = args.multi_label || isMultiLabel(merged.rows);
  const encoder = chosen
    ? chosen.encoder
    : await embedForTraining(args, { data: merged.rows, testData: data.test }, io, flags.quiet === true);
  // The training runs in a worker thread, so SIGINT/SIGTERM stop it at once (and the lease is released).
  const outcome = await trainReporting(
    {
      data: merged.rows,
      testData: data.test,
      ...(encoder ? { encoder } : {}),
      ...(chosen ? { choice: chosen.choice } : {}),
      args,
      seed,
    },
    {
      io,
      quiet: flags.quiet === true || flags.json === true,
      memoryCheck: flags.memoryCheck !== false,
      kept: 'nothing was logged or promoted',
    },
  );
  // What the merge kept out for the test rows' sake is part of the run's data checks.
  const keptOut = keptOutWarning(s, parentId);
  if (keptOut !== null) {
    outcome.warnings = [...outcome.warnings, keptOut.message];
    outcome.dataWarnings = [...outcome.dataWarnings, keptOut];
  }
  if (outcome.choice !== undefined && !flags.json && flags.quiet !== true)
    io.stdout.write(choiceTable(outcome.choice));
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
    args: outcome.args,
    seed,
    outcome,
    source: 'tagger retrain',
    // The columns of the user's files, so evaluate and the next retrain's --data read them as the parent's.
    extraParams: {
      parent_run_id: parentId,
      data: MERGED_TRAIN,
      test_data: MERGED_TEST,
      ...dataColumnParams(parent.columns),
    },
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
    catchSignals: true,
  });
  const childId = logged.runId;
  // After the run is logged: the label issues of the merged data, on the validation rows the model never saw.
  await labelIssuesAfterRun(store, childId, {
    mode: flags.labelIssues === false ? false : 'validation',
    data: merged.rows,
    outcome,
    seed,
    ...(encoder ? { encoder } : {}),
    file: MERGED_TRAIN,
    io,
    quiet: flags.quiet === true || flags.json === true,
  });
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
  const [parentLive, childLive] = [
    await liveScore(parentId, flags, scored, io),
    await liveScore(childId, flags, scored, io),
  ];
  const live = {
    size: scored.length,
    parent: parentLive?.f1 ?? null,
    child: childLive?.f1 ?? null,
    ...pairedCounts(parentLive?.right, childLive?.right),
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
      `Not promoted (no --promote): run ${childId} stays a candidate, never served (${await servedNow(store, target, parent.experimentName)}). ${decision.promote ? `It would be promoted (${decision.checks.join('; ')})` : `It would not be: ${decision.reasons.join('; ')}`}.`,
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
    say(
      `NOT PROMOTED to ${targetName}: ${reason}. Nothing changed: ${await servedNow(store, target, parent.experimentName)}.`,
    );
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
