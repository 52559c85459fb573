/**
 * TypeBox schemas of the review routes (`GET /review`, `GET /review/label-issues`, `POST
 * /review/label-issues`): what a person is asked to label, and their decisions on training rows that
 * label-issue finding flagged.
 */
import Type from 'typebox';
import { DEFAULT_REVIEW_ORDER, REVIEW_ORDERS } from '../monitoring/index.js';
import { ExplanationSchema } from './explanation-schemas.js';
import { HTTP_DEFAULTS } from './options.js';

/** Items one review request lists at most. */
export const MAX_REVIEW_ITEMS = 200;
/** The random share when none is asked for. */
export const DEFAULT_RANDOM_SHARE = 0.2;

export const ReviewQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_REVIEW_ITEMS, default: 20, description: 'Items to list' }),
  ),
  order: Type.Optional(
    Type.Enum([...REVIEW_ORDERS], {
      default: DEFAULT_REVIEW_ORDER,
      description:
        'How the items other than the random share are chosen: `margin` (the smallest margin between the best and the second-best tag first; for a multi-label run the tag closest to its threshold: the default), `uncertainty` (the least confident first), `drift` (the largest share of words training never saw first), `newest`, `random`',
    }),
  ),
  random_share: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: 1,
      default: DEFAULT_RANDOM_SHARE,
      description:
        'Share of the items listed that are drawn at random from the same predictions (their `selection` is `random_share`): the labels live precision / recall / f1 are computed from',
    }),
  ),
  explain: Type.Optional(
    Type.Boolean({ default: true, description: 'Give each item the explanation of its predicted tag' }),
  ),
});

const ReviewItem = Type.Object(
  {
    prediction_id: Type.String({ description: 'Send it with the label to POST /feedback' }),
    created_at: Type.String({ format: 'date-time' }),
    text: Type.String(),
    predicted_tag: Type.String(),
    predicted_tags: Type.Array(Type.String()),
    predicted_probabilities: Type.Object(
      {},
      { additionalProperties: Type.Number(), description: 'Every tag’s probability, as recorded' },
    ),
    confidence: Type.Number({ description: 'The answer’s probability (multi-label: the highest)' }),
    unseen_share: Type.Number({ description: 'Share of the text’s words never seen in training' }),
    selection: Type.Enum(['random_share', ...REVIEW_ORDERS], {
      description:
        'How it was chosen: send it as the feedback’s `selection` (random_share labels make the live figures)',
    }),
    explanation: Type.Optional(ExplanationSchema),
  },
  { title: 'ReviewItem', additionalProperties: false },
);

export const ReviewData = Type.Object(
  {
    run_id: Type.Union([Type.String(), Type.Null()], {
      description: 'The served run; null in single-model mode',
    }),
    order: Type.Enum([...REVIEW_ORDERS]),
    random_share: Type.Number({ description: 'The share asked for' }),
    random_items: Type.Integer({ minimum: 0, description: 'Items of the random share listed' }),
    candidates: Type.Integer({
      minimum: 0,
      description: 'Unlabelled recorded predictions of the run (in the feedback window) chosen from',
    }),
    near_copies: Type.Integer({
      minimum: 0,
      description:
        'Predictions passed over because their text is the same as or a near copy of one already labelled or listed (character 4-grams at least 80 % alike)',
    }),
    tags: Type.Array(Type.String(), { description: 'The tags the run knows (one answer button each)' }),
    items: Type.Array(ReviewItem),
  },
  { title: 'ReviewData', additionalProperties: false },
);

export const LabelIssuesReviewQuery = Type.Object({
  run_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Whose label issues (default: the served run)',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_REVIEW_ITEMS, default: 20 })),
});

const IssueToReview = Type.Object(
  {
    text_key: Type.String({ description: 'Names the row in the decision' }),
    rank: Type.Integer({ minimum: 1 }),
    line: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'The row’s line in the training data file',
    }),
    text: Type.String({ description: 'The row’s text (long texts are cut, ending with …)' }),
    given_tags: Type.Array(Type.String(), { description: 'The row’s tags as the data gives them' }),
    suggested_tags: Type.Array(Type.String(), { description: 'The tags label-issue finding suggests' }),
    given_probability: Type.Number(),
    suggested_probability: Type.Number(),
  },
  { title: 'IssueToReview', additionalProperties: false },
);

export const LabelIssuesReviewData = Type.Object(
  {
    run_id: Type.String(),
    multi_label: Type.Boolean(),
    tags: Type.Array(Type.String(), { description: 'The tags of the run' }),
    found: Type.Integer({ minimum: 0, description: 'Issues the run found' }),
    decided: Type.Integer({
      minimum: 0,
      description: 'Of its listed rows, those a person decided on already',
    }),
    items: Type.Array(IssueToReview, { description: 'Rows not decided yet, the most unlikely first' }),
  },
  { title: 'LabelIssuesReviewData', additionalProperties: false },
);

const TagName = Type.String({ minLength: 1, maxLength: 1_000 });

export const labelIssueDecisions = (limits: { texts: number }) =>
  Type.Object(
    {
      decisions: Type.Array(
        Type.Object(
          {
            run_id: Type.String({ minLength: 1, maxLength: 100, description: 'The run that listed the row' }),
            text_key: Type.String({ minLength: 1, maxLength: 100, description: 'The row’s `text_key`' }),
            decision: Type.Enum(['keep', 'fix'], {
              description: '`keep`: the given tags are right; `fix`: the right tag is `tag` (or `tags`)',
            }),
            tag: Type.Optional(TagName),
            tags: Type.Optional(Type.Array(TagName, { maxItems: 10_000 })),
          },
          { title: 'LabelIssueDecision' },
        ),
        { minItems: 1, maxItems: limits.texts },
      ),
    },
    { title: 'LabelIssueDecisions' },
  );

export const LabelIssueDecisions = labelIssueDecisions(HTTP_DEFAULTS.limits);

const DecisionOutcome = Type.Object(
  {
    index: Type.Integer({ minimum: 0 }),
    text_key: Type.String(),
    status: Type.Union([Type.Literal(200), Type.Literal(404), Type.Literal(422)], {
      description: '200 recorded; 404 the run lists no such row; 422 not a decision (a fix without a tag…)',
    }),
    result: Type.Enum(['kept', 'fixed', 'unknown_row', 'invalid']),
    detail: Type.String(),
    tags: Type.Optional(Type.Array(Type.String(), { description: 'The tags recorded as right' })),
  },
  { title: 'LabelIssueDecisionOutcome', additionalProperties: false },
);

export const LabelIssueDecisionsData = Type.Object(
  {
    recorded: Type.Integer({ minimum: 0 }),
    rejected: Type.Integer({ minimum: 0 }),
    decisions: Type.Array(DecisionOutcome),
  },
  { title: 'LabelIssueDecisionsData', additionalProperties: false },
);
