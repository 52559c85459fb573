/**
 * TypeBox schemas of `POST /feedback` and `GET /monitoring` (kept apart from schemas.ts, which holds the
 * contract's own shapes): validation, handler types and the OpenAPI document, as for every route.
 */
import Type from 'typebox';
import { DRIFT_SIGNALS } from '../model/index.js';
import { FEEDBACK_SELECTIONS } from '../monitoring/index.js';
import { HTTP_DEFAULTS } from './options.js';
import { Metrics } from './schemas.js';

/** The largest tag list one feedback item may carry (far above any model's tag count). */
export const MAX_FEEDBACK_TAGS = 10_000;

const TagName = Type.String({
  minLength: 1,
  maxLength: 1_000,
  description: 'A tag of the run that made the prediction',
});

export const feedbackPayload = (limits: { texts: number }) =>
  Type.Object(
    {
      feedback: Type.Array(
        Type.Object(
          {
            prediction_id: Type.String({
              minLength: 1,
              maxLength: 100,
              description: 'The `prediction_id` of a prediction this server (or another replica) answered',
            }),
            tag: Type.Optional({
              ...TagName,
              description: 'The right tag (single-label runs; also accepted for multi-label ones)',
            }),
            tags: Type.Optional(
              Type.Array(TagName, {
                maxItems: MAX_FEEDBACK_TAGS,
                description: 'The right tags (multi-label runs; a single-label run takes exactly one)',
              }),
            ),
            selection: Type.Optional(
              Type.Enum([...FEEDBACK_SELECTIONS], {
                description:
                  'How the prediction was chosen for labelling: `random_share` (drawn at random: the review queue’s random share, or your own random sample — the only labels live precision / recall / f1 are computed from), `margin` / `uncertainty` / `drift` / `newest` / `random` (the review queue’s orders: give its item’s `selection`), `correction` (a person flagging an answer as wrong), `unspecified` (the default). Every label feeds retraining.',
              }),
            ),
          },
          {
            title: 'FeedbackItem',
            description: 'One label: give `tag` or `tags` (not both). Extra fields are ignored.',
          },
        ),
        {
          minItems: 1,
          maxItems: limits.texts,
          description: `Labels for recorded predictions, at least one and at most ${limits.texts} (more is a 413)`,
        },
      ),
    },
    {
      title: 'FeedbackPayload',
      examples: [{ feedback: [{ prediction_id: '0d6f0c9e-4e0b-4c55-9b7e-2b0c61e2c0a1', tag: 'mlops' }] }],
    },
  );

export const FeedbackPayload = feedbackPayload(HTTP_DEFAULTS.limits);

const FeedbackOutcome = Type.Object(
  {
    index: Type.Integer({ minimum: 0, description: "The item's position in the request" }),
    prediction_id: Type.String(),
    status: Type.Union(
      [Type.Literal(200), Type.Literal(404), Type.Literal(409), Type.Literal(422), Type.Literal(503)],
      {
        description:
          "The item's own status: 200 stored (also for a tag the run does not know: kept for retraining, said in `detail`); 404 no such prediction recorded for what this server serves (unknown id, not sampled, or past retention); 409 a later item of this request labels the same prediction (the later one wins); 422 a label that is not one (several tags for a single-label run, none); 503 the prediction is recent and its record may still be on its way from the server that answered it: send the item again (the response carries Retry-After)",
      },
    ),
    result: Type.Enum(['accepted', 'replaced', 'superseded', 'unknown_prediction', 'pending', 'invalid'], {
      description:
        'accepted (first label), replaced (it replaces an earlier label), or why it was not stored (pending: retry)',
    }),
    detail: Type.String({ description: 'What happened, for a person' }),
    run_id: Type.Optional(
      Type.String({ description: 'The run that made the prediction (when it was found)' }),
    ),
    tags: Type.Optional(Type.Array(Type.String(), { description: 'The tags stored' })),
  },
  { title: 'FeedbackOutcome', additionalProperties: false },
);

export const FeedbackData = Type.Object(
  {
    accepted: Type.Integer({ minimum: 0, description: 'Items stored (accepted or replaced)' }),
    rejected: Type.Integer({ minimum: 0, description: 'Items not stored' }),
    feedback: Type.Array(FeedbackOutcome, { description: 'One answer per item, in order' }),
  },
  { title: 'FeedbackData', additionalProperties: false },
);

const DriftResult = Type.Object(
  {
    value: Type.Union([Type.Number(), Type.Null()], {
      description:
        'Population stability index of the window against the test split; null while it cannot be judged (`reason`)',
    }),
    p_value: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
      description: 'Chance of a difference this large with no drift (χ² approximation of the PSI)',
    }),
    threshold: Type.Number({ description: 'PSI at which a significant shift counts as drift' }),
    drifted: Type.Boolean({ description: 'PSI at or above the threshold, and p_value below 0.01' }),
    live: Type.Integer({ minimum: 0, description: 'Predictions compared' }),
    reference: Type.Integer({ minimum: 0, description: 'Test rows compared with' }),
    reason: Type.Optional(
      Type.String({
        description:
          'Why there is no value; or, for a PSI at or above the threshold that is not drift, why not (the shift is not significant with this many predictions)',
      }),
    ),
  },
  { title: 'DriftResult', additionalProperties: false },
);

const IsoOrNull = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

export const MonitoringReport = Type.Object(
  {
    run_id: Type.Union([Type.String(), Type.Null()], {
      description: 'The served run; null in single-model mode',
    }),
    computed_at: Type.String({ format: 'date-time', description: 'When these figures were computed (UTC)' }),
    window: Type.Object(
      {
        since: Type.String({ format: 'date-time', description: 'The oldest prediction the window may hold' }),
        seconds: Type.Integer({ description: 'TAGGER_MONITORING_WINDOW_S' }),
        max_predictions: Type.Integer({
          description: 'TAGGER_MONITORING_WINDOW: the most recent predictions counted',
        }),
        feedback_seconds: Type.Integer({
          description: 'TAGGER_FEEDBACK_WINDOW_S: feedback received within it counts',
        }),
      },
      { additionalProperties: false },
    ),
    predictions: Type.Integer({
      minimum: 0,
      description: "The served run's predictions in the window (every replica's)",
    }),
    tags: Type.Array(
      Type.Object(
        {
          tag: Type.String(),
          count: Type.Integer({ minimum: 0 }),
          share: Type.Number({ description: 'Share of the window’s predictions' }),
          reference: Type.Union([Type.Number(), Type.Null()], {
            description: 'Share of the test split’s predictions; null without a reference profile',
          }),
        },
        { additionalProperties: false },
      ),
      { description: 'The predicted-tag distribution beside the reference' },
    ),
    feedback: Type.Integer({ minimum: 0, description: 'Labelled predictions the live figures come from' }),
    last_feedback_at: IsoOrNull('When feedback on the served run last arrived; null: never'),
    live: Type.Union([Metrics, Type.Null()], {
      description:
        'Precision, recall, f1 (weighted over tags) and num_samples from the labels of the random share (`live_basis`), computed as training computes the test metrics; null without such labels',
    }),
    live_basis: Type.Object(
      {
        sample: Type.Literal('random_share', {
          description:
            'What `live` is computed from: labels of predictions drawn at random (feedback with `selection: random_share`), an unbiased sample of the traffic',
        }),
        num_samples: Type.Integer({ minimum: 0, description: 'Labels of the random share in the window' }),
        other_labels: Type.Integer({
          minimum: 0,
          description:
            'Labels chosen otherwise (uncertainty, drift, corrections, unspecified): a biased sample, left out of `live` (they feed retraining)',
        }),
        reason: Type.Optional(Type.String({ description: 'Why `live` is null' })),
      },
      { additionalProperties: false, title: 'LiveBasis' },
    ),
    live_all: Type.Union([Metrics, Type.Null()], {
      description:
        'The same figures over every label in the window, however chosen: biased (least-confident predictions and corrections are mistakes more often), for comparison only; null without feedback',
    }),
    live_class: Type.Object(
      {},
      { additionalProperties: Metrics, description: 'Live metrics of each tag (random share)' },
    ),
    live_by_stage: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: Metrics,
          description:
            'A cascade run: live metrics of each stage’s answers — `fast`, `encoder`, `fast_degraded` (routed, answered by the fast model while the encoder was full) — from the random share’s labels; only stages with labels',
        },
      ),
    ),
    routing: Type.Optional(
      Type.Object(
        {
          routed: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
            description:
              'Share of the window’s predictions routed to the encoder model (answered `encoder` or `fast_degraded`); null without predictions',
          }),
          expected: Type.Number({
            minimum: 0,
            maximum: 1,
            description: 'The training curve’s share routed at the chosen threshold (out of fold)',
          }),
          stages: Type.Object(
            {},
            {
              additionalProperties: Type.Integer({ minimum: 0 }),
              description: 'The window’s predictions by stage',
            },
          ),
          drift: DriftResult,
        },
        {
          additionalProperties: false,
          title: 'CascadeRouting',
          description:
            'A cascade run: how its texts were routed in the window against its training curve; `drift` judges the routed share as the drift signals are judged (a share drifting means the traffic is harder or easier for the fast model than the training data was)',
        },
      ),
    ),
    test: Metrics,
    drift: Type.Object(Object.fromEntries(DRIFT_SIGNALS.map((signal) => [signal, DriftResult])), {
      additionalProperties: false,
      description:
        'Per signal: the predicted tag, the answer’s probability (confidence), the share of words never seen in training (unseen_ngrams) and the text length',
    }),
    history: Type.Array(
      Type.Object(
        {
          time: Type.String({ format: 'date-time' }),
          predictions: Type.Integer({ minimum: 0 }),
          feedback: Type.Integer({ minimum: 0 }),
          f1: Type.Union([Type.Number(), Type.Null()]),
          drift: Type.Object(
            Object.fromEntries(
              DRIFT_SIGNALS.map((signal) => [signal, Type.Union([Type.Number(), Type.Null()])]),
            ),
            { additionalProperties: false },
          ),
        },
        { additionalProperties: false },
      ),
      {
        description:
          'The figures at each refresh since the served run was (re)loaded by this process, oldest first',
      },
    ),
    recording: Type.Object(
      {
        store: Type.String({ description: 'Where records are kept (credentials masked)' }),
        sample_rate: Type.Number({ minimum: 0, maximum: 1 }),
        text: Type.Enum(['full', 'hash']),
        retention_days: Type.Integer({ minimum: 1 }),
      },
      { additionalProperties: false },
    ),
    problems: Type.Array(Type.String(), { description: 'What keeps the figures from meaning much' }),
  },
  { title: 'MonitoringReport', additionalProperties: false },
);

export const MonitoringData = Type.Object(
  { monitoring: MonitoringReport },
  { title: 'MonitoringData', additionalProperties: false },
);
