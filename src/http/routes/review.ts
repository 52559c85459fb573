/**
 * The review routes: `GET /review` — the served run's recorded predictions that most need a person (the
 * least confident first, mixed with a random share; src/monitoring/review.ts), each answered through
 * `POST /feedback` — and the training rows label-issue finding flagged, reviewed the same way: `GET
 * /review/label-issues` lists the rows no one has decided on, `POST /review/label-issues` records "keep"
 * or "fix to …" (a fix is a correction `tagger retrain` applies and `tagger feedback export` writes).
 */
import type { LabelReview, Monitoring } from '../../monitoring/index.js';
import { decided, RecordStoreError } from '../../monitoring/index.js';
import type { ServedLabelIssue, ServingState } from '../../served-models/index.js';
import { envelope } from '../envelope.js';
import { EXPLAIN_TOP } from '../explanation-schemas.js';
import { HttpError } from '../http-error.js';
import { monitoredRun, scopeOf } from '../monitored.js';
import type { HttpLimits } from '../options.js';
import { errorResponses } from '../responses.js';
import {
  DEFAULT_RANDOM_SHARE,
  LabelIssueDecisionsData,
  LabelIssuesReviewData,
  LabelIssuesReviewQuery,
  labelIssueDecisions,
  ReviewData,
  ReviewQuery,
} from '../review-schemas.js';
import { Envelope } from '../schemas.js';
import { servedNow } from '../served.js';
import type { TaggerApp } from '../types.js';

function need(monitoring: Monitoring | null): Monitoring {
  if (monitoring === null)
    throw new HttpError(404, 'this server keeps no prediction records (no monitoring set up)');
  return monitoring;
}

/** A record store that cannot be reached is a 503 with Retry-After, as for feedback. */
async function withStore<T>(work: () => Promise<T>, retryAfterSeconds: number): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RecordStoreError && error.code !== 'INVALID_ARGUMENT') {
      throw new HttpError(503, `${error.message}; retry later`, { 'retry-after': String(retryAfterSeconds) });
    }
    throw error;
  }
}

/** A label issue as the data gives the row and as the finder suggests it. */
function tagsOfIssue(issue: ServedLabelIssue): { given: string[]; suggested: string[] } {
  if (issue.kind === 'tag') {
    return { given: [issue.data_tag ?? issue.given_tag!], suggested: [issue.suggested_tag!] };
  }
  return { given: issue.given_tags ?? [], suggested: issue.suggested_tags ?? [] };
}

/** The run's label issues, one per text (the most unlikely first), with a text key each. */
async function issuesOf(state: ServingState, runId: string | undefined) {
  if (state.mode !== 'runs') {
    throw new HttpError(404, 'label issues belong to runs: this server serves one saved model (no runs)');
  }
  const id = runId ?? servedNow(state).runId;
  if (id === null) throw new HttpError(404, 'no run is served');
  const report = await state.servedRuns.current.labelIssues(id);
  if (report.issues.length > 0 && report.issues.every((issue) => issue.text_key === undefined)) {
    throw new HttpError(
      404,
      `the label_issues.json of run ${id} predates reviews (its rows carry no text_key): train it again to review its label issues`,
    );
  }
  const byKey = new Map<string, ServedLabelIssue>();
  for (const issue of report.issues) {
    if (issue.text_key !== undefined && !byKey.has(issue.text_key)) byKey.set(issue.text_key, issue);
  }
  return { runId: id, report, byKey };
}

export function reviewRoutes(
  app: TaggerApp,
  current: () => ServingState,
  limits: HttpLimits,
  retryAfterSeconds: number,
  /** Label issues belong to runs: their routes exist in run-based mode only. */
  mode: ServingState['mode'],
): void {
  app.get(
    '/review',
    {
      schema: {
        tags: ['Monitoring'],
        summary: 'Recorded predictions that most need a person',
        description:
          'The served run’s recorded predictions (in the feedback window) that have no label yet, for a person to label through POST /feedback: by default the least confident first (uncertainty sampling), mixed with a share drawn at random (`random_share`, default 0.2, spread evenly through the list) — the labels the live figures are computed from; each item says which (`selection`: send it with the label). Other orders: `drift` (texts with the most words training never saw first), `newest`, `random`. Each text is listed once (the random share excepted), texts that already have a label are left out, and with `explain` (the default) each item carries the explanation of its predicted tag.',
        querystring: ReviewQuery,
        response: { 200: Envelope(ReviewData, 'ReviewResponse'), ...errorResponses(404, 422, 500, 503) },
      },
    },
    async (request) => {
      const monitoring = need(request.server.taggerMonitoring);
      const state = current();
      const run = monitoredRun(state);
      if (run === null) throw new HttpError(503, 'no model is served yet', { 'retry-after': '1' });
      const limit = request.query.limit ?? 20;
      const order = request.query.order ?? 'uncertainty';
      const randomShare = request.query.random_share ?? DEFAULT_RANDOM_SHARE;
      const queue = await withStore(
        () => monitoring.review(run, { limit, order, randomShare }),
        retryAfterSeconds,
      );
      const explain = request.query.explain ?? true;
      const { served } = servedNow(state);
      const texts = queue.items.map((item) => item.text ?? '');
      // Explained by the model that answers each text (a cascade's stage), as the encoder can take them now:
      // no degraded answers here, a full queue is a 503.
      const explained = explain
        ? await served.predictor.predict(texts, { probabilities: 1, overload: 'shed' })
        : undefined;
      return envelope(request, 200, {
        run_id: run.runId === '' ? null : run.runId,
        order,
        random_share: randomShare,
        random_items: queue.randomItems,
        candidates: queue.candidates,
        tags: [...run.tags],
        items: queue.items.map((item, i) => ({
          prediction_id: item.predictionId,
          created_at: new Date(item.createdMs).toISOString(),
          text: item.text ?? '',
          predicted_tag: item.predictedTag,
          predicted_tags: item.predictedTags,
          predicted_probabilities: item.probabilities,
          confidence: item.confidence,
          unseen_share: item.unseenShare,
          selection: item.selection,
          // Explained by the served model, which made the prediction (the queue is the served run's); a
          // cascade's by the stage that answers the text (the records do not keep which stage did).
          ...(explained === undefined ? {} : { explanation: explained.explain(i, EXPLAIN_TOP) }),
        })),
      });
    },
  );

  if (mode !== 'runs') return;

  app.get(
    '/review/label-issues',
    {
      schema: {
        tags: ['Monitoring'],
        summary: 'Training rows whose tag is probably wrong, not decided yet',
        description:
          'The rows a run’s label-issue finding flagged (label_issues.json; the served run’s unless `run_id`), one per text, the most unlikely first, leaving out the rows a person already decided on: fixed, or kept with the tags they still have. Answer each with POST /review/label-issues.',
        querystring: LabelIssuesReviewQuery,
        response: {
          200: Envelope(LabelIssuesReviewData, 'LabelIssuesReviewResponse'),
          ...errorResponses(404, 409, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const monitoring = need(request.server.taggerMonitoring);
      const state = current();
      const { runId, report, byKey } = await issuesOf(state, request.query.run_id);
      const reviews = await withStore(() => monitoring.labelReviews(scopeOf(state)), retryAfterSeconds);
      const byText = new Map(reviews.map((review) => [review.textKey, review]));
      const limit = request.query.limit ?? 20;
      let decidedRows = 0;
      const items = [];
      for (const [key, issue] of byKey) {
        const { given, suggested } = tagsOfIssue(issue);
        if (decided(byText, key, given) !== null) {
          decidedRows++;
          continue;
        }
        if (items.length < limit) {
          items.push({
            text_key: key,
            rank: issue.rank,
            line: issue.line,
            text: issue.text,
            given_tags: given,
            suggested_tags: suggested,
            given_probability: issue.given_probability,
            suggested_probability: issue.suggested_probability,
          });
        }
      }
      return envelope(request, 200, {
        run_id: runId,
        multi_label: report.multi_label,
        tags: report.tags,
        found: report.found,
        decided: decidedRows,
        items,
      });
    },
  );

  app.post(
    '/review/label-issues',
    {
      schema: {
        tags: ['Monitoring'],
        summary: 'Decide on training rows whose tag is probably wrong',
        description:
          'Records a person’s decision on rows a run’s label-issue finding listed (by `run_id` and the row’s `text_key`): `keep` (the given tags are right: the row is not listed again while it keeps them) or `fix` with the right `tag` (or `tags`): a correction `tagger retrain` applies to the training data and `tagger feedback export` writes. A later decision on the same text replaces an earlier one. Each decision is answered on its own: 200 recorded, 404 the run lists no such row, 422 not a decision.',
        body: labelIssueDecisions(limits),
        response: {
          200: Envelope(LabelIssueDecisionsData, 'LabelIssueDecisionsResponse'),
          ...errorResponses(400, 404, 409, 413, 415, 422, 500, 503),
        },
      },
    },
    async (request) => {
      const monitoring = need(request.server.taggerMonitoring);
      const state = current();
      const scope = scopeOf(state);
      const runs = new Map<string, Awaited<ReturnType<typeof issuesOf>>>();
      for (const decision of request.body.decisions) {
        if (!runs.has(decision.run_id)) runs.set(decision.run_id, await issuesOf(state, decision.run_id));
      }
      const now = Date.now();
      type Outcome = {
        index: number;
        text_key: string;
        status: 200 | 404 | 422;
        result: 'kept' | 'fixed' | 'unknown_row' | 'invalid';
        detail: string;
        tags?: string[];
      };
      // Each decision judged on its own first; of the valid ones for the same row the later one wins.
      const judged = request.body.decisions.map((decision, index): Outcome | LabelReview => {
        const base = { index, text_key: decision.text_key };
        const { runId, report, byKey } = runs.get(decision.run_id)!;
        const issue = byKey.get(decision.text_key);
        const refuse = (status: 404 | 422, detail: string): Outcome => ({
          ...base,
          status,
          result: status === 404 ? 'unknown_row' : 'invalid',
          detail,
        });
        if (issue === undefined)
          return refuse(404, `run ${runId} lists no label issue with text_key ${decision.text_key}`);
        const { given } = tagsOfIssue(issue);
        let tags = given;
        if (decision.decision === 'fix') {
          if ((decision.tag === undefined) === (decision.tags === undefined)) {
            return refuse(
              422,
              'a fix gives the right tag as `tag` (or `tags: [...]` for a multi-label run), not both',
            );
          }
          tags = decision.tags !== undefined ? [...new Set(decision.tags)] : [decision.tag!];
          if (tags.length === 0) return refuse(422, 'a fix names at least one tag');
          if (!report.multi_label && tags.length !== 1) {
            return refuse(422, `run ${runId} gives one tag per text: fix to one tag, not ${tags.length}`);
          }
        } else if (decision.tag !== undefined || decision.tags !== undefined) {
          return refuse(422, '`keep` takes no tag: it keeps the row’s given tags (use `fix` to change them)');
        }
        return {
          scope,
          textKey: decision.text_key,
          text: issue.text,
          givenTags: given,
          decision: decision.decision,
          tags,
          runId,
          receivedMs: now,
        };
      });
      const last = new Map<string, number>();
      judged.forEach((entry, index) => {
        if ('scope' in entry) last.set(entry.textKey, index);
      });
      const reviews: LabelReview[] = [];
      const outcomes = judged.map((entry, index): Outcome => {
        if (!('scope' in entry)) return entry;
        const later = last.get(entry.textKey)!;
        if (later === index) reviews.push(entry);
        const known = new Set(runs.get(entry.runId)!.report.tags);
        const fresh = entry.tags.filter((tag) => !known.has(tag));
        return {
          index,
          text_key: entry.textKey,
          status: 200,
          result: entry.decision === 'keep' ? 'kept' : 'fixed',
          detail:
            (later === index
              ? 'recorded'
              : `replaced by item ${later} of this request (the later one wins)`) +
            (fresh.length > 0
              ? `; ${fresh.map((tag) => JSON.stringify(tag)).join(', ')} ${fresh.length === 1 ? 'is not a tag' : 'are not tags'} of run ${entry.runId}: tagger retrain learns ${fresh.length === 1 ? 'it' : 'them'} once there are min_freq rows`
              : ''),
          tags: entry.tags,
        };
      });
      await withStore(() => monitoring.putLabelReviews(reviews), retryAfterSeconds);
      const recorded = outcomes.filter((outcome) => outcome.status === 200).length;
      return envelope(request, 200, { recorded, rejected: outcomes.length - recorded, decisions: outcomes });
    },
  );
}
