/**
 * Feedback labels for recorded predictions (`POST /feedback`), judged item by item: each item gets its
 * own status and a sentence saying what happened — accepted (200; also for a tag the run does not know,
 * which is kept for retraining and said so), replacing earlier feedback (200), superseded by a later item
 * of the same request for the same prediction (409: the later one wins, counted once), an id no
 * prediction of this scope was recorded under (404: unknown, not sampled, or past retention), a record
 * that may still be on its way from the server that answered (503 `pending`: retry; see arrival.ts), or a
 * label that is not one (422: several tags for a single-label run, none at all, both `tag` and `tags`).
 * Only the scope's own records are looked up, so feedback never reaches another experiment's predictions.
 */
import { type ArrivalOptions, awaitArrivals } from './arrival.js';
import type { FeedbackEntry, FeedbackSelection, RecordedPrediction, RecordStore } from './record-store.js';

export interface FeedbackItem {
  prediction_id: string;
  tag?: string | undefined;
  tags?: readonly string[] | undefined;
  /** How the prediction was chosen for labelling (record-store.ts: FeedbackSelection); default unspecified. */
  selection?: FeedbackSelection | undefined;
}

export type FeedbackResult =
  | 'accepted'
  | 'replaced'
  | 'superseded'
  | 'unknown_prediction'
  | 'pending'
  | 'invalid';

export interface FeedbackOutcome {
  /** The item's position in the request. */
  index: number;
  prediction_id: string;
  status: 200 | 404 | 409 | 422 | 503;
  result: FeedbackResult;
  detail: string;
  /** The recorded prediction's run (when it was found). */
  run_id?: string;
  /** The tags stored (accepted and replaced items). */
  tags?: string[];
}

/** Prediction ids are the UUIDs the predict routes hand out. */
const PREDICTION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const quote = (value: string): string =>
  JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);

/** The tags an item gives, or why it gives none usable (before looking anything up). */
function givenTags(item: FeedbackItem): { tags: string[] } | { problem: string } {
  if (item.tag !== undefined && item.tags !== undefined) {
    return { problem: 'give either `tag` or `tags`, not both' };
  }
  if (item.tag === undefined && item.tags === undefined) {
    return { problem: 'give the right tag as `tag` (or `tags: [...]` for a multi-label run)' };
  }
  const tags = item.tags !== undefined ? [...new Set(item.tags)] : [item.tag!];
  if (tags.length === 0) return { problem: '`tags` must name at least one tag' };
  return { tags };
}

const runName = (recorded: RecordedPrediction): string =>
  recorded.runId === '' ? 'the served model' : `run ${recorded.runId}`;

/** Why a prediction cannot take these tags, or null when it can. */
function tagProblem(tags: readonly string[], recorded: RecordedPrediction): string | null {
  if (!recorded.multiLabel && tags.length !== 1) {
    return `${runName(recorded)} gives one tag per text (single-label): send one tag as \`tag\`, not ${tags.length}`;
  }
  return null;
}

/**
 * What is said of tags the run does not know: stored all the same (a person who names a tag the model
 * lacks is telling what the next model needs), kept for retraining, where it becomes a tag of its own once
 * it has `min_freq` rows; live metrics count such a label as a miss.
 */
function newTagsNote(tags: readonly string[], recorded: RecordedPrediction): string | null {
  const known = new Set(recorded.tags);
  const unknown = tags.filter((tag) => !known.has(tag));
  if (unknown.length === 0) return null;
  const list =
    recorded.tags.length > 30 ? `${recorded.tags.slice(0, 30).join(', ')}, …` : recorded.tags.join(', ');
  return `${unknown.map(quote).join(', ')} ${unknown.length === 1 ? 'is not a tag' : 'are not tags'} of ${runName(recorded)} (its tags are ${list}): kept for retraining, where a new tag is learnt once it has min_freq rows (tagger retrain says which)`;
}

export interface FeedbackContext {
  scope: string;
  /** For the message about ids that are not (or no longer) recorded. */
  retentionDays: number;
  sampleRate: number;
  now?: () => number;
  /** Wait for records still on their way (arrival.ts); without it an id not found is unknown at once. */
  arrival?: ArrivalOptions;
}

/** Judges and stores feedback items; resolves with one outcome per item, in order. */
export async function receiveFeedback(
  store: RecordStore,
  items: readonly FeedbackItem[],
  context: FeedbackContext,
): Promise<FeedbackOutcome[]> {
  const outcomes: (FeedbackOutcome | undefined)[] = new Array(items.length);
  const wanted: { index: number; tags: string[] }[] = [];
  items.forEach((item, index) => {
    const base = { index, prediction_id: item.prediction_id };
    if (!PREDICTION_ID.test(item.prediction_id)) {
      outcomes[index] = {
        ...base,
        status: 422,
        result: 'invalid',
        detail: `prediction_id ${quote(item.prediction_id)} is not one: send the \`prediction_id\` of a predict answer (a UUID)`,
      };
      return;
    }
    const given = givenTags(item);
    if ('problem' in given)
      outcomes[index] = { ...base, status: 422, result: 'invalid', detail: given.problem };
    else wanted.push({ index, tags: given.tags });
  });

  const recorded = await store.find(
    context.scope,
    wanted.map(({ index }) => items[index]!.prediction_id.toLowerCase()),
  );
  const missing = [
    ...new Set(
      wanted.map(({ index }) => items[index]!.prediction_id.toLowerCase()).filter((id) => !recorded.has(id)),
    ),
  ];
  const arrivals =
    missing.length > 0 && context.arrival
      ? await awaitArrivals(store, context.scope, missing, context.arrival)
      : { found: new Map<string, RecordedPrediction>(), pending: new Map<string, string>() };
  for (const [id, prediction] of arrivals.found) recorded.set(id, prediction);
  const accepted: { index: number; tags: string[]; prediction: RecordedPrediction }[] = [];
  for (const { index, tags } of wanted) {
    const id = items[index]!.prediction_id;
    const prediction = recorded.get(id.toLowerCase());
    const pending = arrivals.pending.get(id.toLowerCase());
    if (prediction === undefined && pending !== undefined) {
      outcomes[index] = {
        index,
        prediction_id: id,
        status: 503,
        result: 'pending',
        detail: `not stored yet: no prediction ${id} is recorded so far, but ${pending}; send this item again in a few seconds`,
      };
      continue;
    }
    if (prediction === undefined) {
      const sampled = context.sampleRate < 1 ? ', was not sampled (TAGGER_RECORD_SAMPLE_RATE)' : '';
      outcomes[index] = {
        index,
        prediction_id: id,
        status: 404,
        result: 'unknown_prediction',
        detail: `no prediction ${id} is recorded for what this server serves: the id is unknown${sampled}, or it is older than the records kept (${context.retentionDays} days)`,
      };
      continue;
    }
    const problem = tagProblem(tags, prediction);
    if (problem !== null) {
      outcomes[index] = {
        index,
        prediction_id: id,
        status: 422,
        result: 'invalid',
        detail: problem,
        run_id: prediction.runId,
      };
      continue;
    }
    accepted.push({ index, tags, prediction });
  }

  // The later item for one prediction wins; earlier ones are answered as superseded and not stored.
  const last = new Map<string, number>();
  for (const { index, prediction } of accepted) last.set(prediction.predictionId, index);
  const winners = accepted.filter(({ index, prediction }) => last.get(prediction.predictionId) === index);
  for (const { index, prediction } of accepted) {
    const winner = last.get(prediction.predictionId)!;
    if (winner === index) continue;
    outcomes[index] = {
      index,
      prediction_id: items[index]!.prediction_id,
      status: 409,
      result: 'superseded',
      detail: `item ${winner} of this request labels the same prediction; the later one wins`,
      run_id: prediction.runId,
    };
  }

  const receivedMs = (context.now ?? Date.now)();
  const entries: FeedbackEntry[] = winners.map(({ index, tags, prediction }) => ({
    predictionId: prediction.predictionId,
    scope: context.scope,
    runId: prediction.runId,
    tags,
    receivedMs,
    selection: items[index]!.selection ?? 'unspecified',
  }));
  const replaced = entries.length > 0 ? await store.putFeedback(entries) : new Set<string>();
  for (const { index, tags, prediction } of winners) {
    const again = replaced.has(prediction.predictionId);
    const note = newTagsNote(tags, prediction);
    outcomes[index] = {
      index,
      prediction_id: items[index]!.prediction_id,
      status: 200,
      result: again ? 'replaced' : 'accepted',
      detail: `${again ? 'stored; it replaces the feedback given before for this prediction' : 'stored'}${note === null ? '' : `; ${note}`}`,
      run_id: prediction.runId,
      tags,
    };
  }
  return outcomes as FeedbackOutcome[];
}
