/**
 * TypeBox schemas of the API: the single source of request validation, response serialisation, the
 * handlers' static types and the OpenAPI document. Field names follow the spec
 * (`../shared/spec/tag-prediction-api.md` from the repository root), including the dashed `status-code`.
 */

import Type, { type Static, type TSchema } from 'typebox';
import { EXPLAIN_TOP, ExplanationSchema } from './explanation-schemas.js';
import { ModelChoice } from './model-choice-schemas.js';
import { HTTP_DEFAULTS } from './options.js';
import { ProbabilitiesListed, ProbabilitiesOption } from './probability-schemas.js';

/** A number that may be null: JSON has no NaN, and training writes a NaN metric as null. */
const NullableNumber = (description: string) =>
  Type.Unsafe<number | null>({ type: ['number', 'null'], description });

const ENVELOPE_FIELDS = {
  message: Type.String({ description: 'HTTP status phrase of status-code', examples: ['OK'] }),
  method: Type.String({ description: 'HTTP method of the request', examples: ['GET'] }),
  'status-code': Type.Integer({
    description: 'HTTP status code, equal to the status of the response',
    examples: [200],
  }),
  timestamp: Type.String({
    description:
      'When the response was built: ISO 8601 UTC date-time without a zone designator, millisecond precision',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}$',
    examples: ['2026-11-21T21:19:00.123'],
  }),
  url: Type.String({
    description: 'Full URL of the request including the query string',
    examples: ['http://127.0.0.1:8000/'],
  }),
};

/** The success envelope around an endpoint's `data`. */
export const Envelope = <T extends TSchema>(
  data: T,
  title: string,
  description = 'OK: the envelope with `data`',
) => Type.Object({ ...ENVELOPE_FIELDS, data }, { title, description, additionalProperties: false });

/** Every error except request validation (422): the envelope with a human-readable `detail`. */
export const ErrorEnvelope = Type.Object(
  {
    ...ENVELOPE_FIELDS,
    detail: Type.String({ description: 'What went wrong and, where possible, what to do about it' }),
  },
  {
    title: 'ErrorEnvelope',
    additionalProperties: false,
    examples: [
      {
        message: 'Not Found',
        method: 'GET',
        'status-code': 404,
        timestamp: '2026-11-21T21:19:00.123',
        url: 'http://127.0.0.1:8000/runs/abc',
        detail: 'run "abc" is not a run of this experiment; GET /runs lists the runs',
      },
    ],
  },
);
export type ErrorEnvelope = Static<typeof ErrorEnvelope>;

/** One entry of a 422 body, pydantic v1 / FastAPI style. */
export const ValidationIssue = Type.Object(
  {
    loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), {
      description:
        'Path to the faulty part: starts with `body`, `query` or `path`; list indexes are integers',
    }),
    msg: Type.String(),
    type: Type.String({ description: 'Error kind, e.g. value_error.missing or type_error.str' }),
    ctx: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'Extra context, e.g. limit_value' }),
    ),
  },
  { title: 'ValidationIssue', additionalProperties: false },
);
export type ValidationIssue = Static<typeof ValidationIssue>;

/** The 422 body: the one response without the envelope, exactly as FastAPI (pydantic v1) shapes it. */
export const ValidationErrorBody = Type.Object(
  { detail: Type.Array(ValidationIssue) },
  {
    title: 'ValidationError',
    additionalProperties: false,
    examples: [
      {
        detail: [
          {
            loc: ['body', 'texts', 0, 'text'],
            msg: 'ensure this value has at least 1 characters',
            type: 'value_error.any_str.min_length',
            ctx: { limit_value: 1 },
          },
        ],
      },
    ],
  },
);
export type ValidationErrorBody = Static<typeof ValidationErrorBody>;

// ---- requests ------------------------------------------------------------------------------------

/** The largest `top_k` a client may ask for (far above any model's tag count). */
export const MAX_TOP_K = 10_000;

/**
 * One text. The spec's pydantic model defaults `text` to null, but a prediction needs a text, so an
 * entry without `text` is a 422 `field required` and `"text": null` a 422 `none is not an allowed value`.
 * The maximum length is the server's limit (TAGGER_MAX_TEXT_LENGTH), documented in the schema.
 */
export const textSchema = (maxLength: number) =>
  Type.Object(
    {
      text: Type.String({
        minLength: 1,
        maxLength,
        description: `Text to tag; at least 1 and at most ${maxLength} characters`,
      }),
    },
    { title: 'Text' },
  );

/** The predict body for the server's limits (most texts per request, longest text). */
export const predictPayload = (limits: { texts: number; textLength: number }) =>
  Type.Object(
    {
      texts: Type.Array(textSchema(limits.textLength), {
        minItems: 1,
        maxItems: limits.texts,
        description: `Texts to classify, at least one and at most ${limits.texts} (more is a 413); one prediction is returned per entry, in order`,
      }),
      explain: Type.Optional(
        Type.Boolean({
          description: `With \`true\`, each prediction also carries its \`explanation\`: the ${EXPLAIN_TOP} features that moved the predicted tag's score most, or for a soft vote how it combined its members' probabilities and each member's ${EXPLAIN_TOP} (not part of the original contract; clients that send nothing get the contract's shapes)`,
        }),
      ),
      top_k: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: MAX_TOP_K,
          description:
            "List at most this many tags in each prediction's `predicted_tags`, most probable first. Alone: the k most probable tags of a single-label model, at most k of a multi-label model's predicted tags; with `threshold`: at most k of the tags reaching it",
        }),
      ),
      threshold: Type.Optional(
        Type.Number({
          minimum: 0,
          maximum: 1,
          description:
            "List in `predicted_tags` every tag whose probability reaches this (instead of the model's own choice: its one tag, or for a multi-label model each tag's threshold chosen on validation data). `predicted_tag` is unchanged",
        }),
      ),
      probabilities: Type.Optional(ProbabilitiesOption),
      truncate: Type.Optional(
        Type.Boolean({
          description: `With \`true\`, a text longer than ${limits.textLength} characters is cut there and tagged, its prediction marked \`truncated\`, instead of a 422 for the whole request (not part of the original contract)`,
        }),
      ),
    },
    {
      title: 'PredictPayload',
      examples: [
        {
          texts: [
            { text: 'Transfer learning with transformers for text classification.' },
            { text: 'Generative adversarial networks in both PyTorch and TensorFlow.' },
          ],
        },
      ],
    },
  );

export const PredictPayload = predictPayload(HTTP_DEFAULTS.limits);
export type PredictPayload = Static<typeof PredictPayload>;

/**
 * Validation messages the spec words differently from the generic pydantic ones, keyed by
 * `<location>:<keyword>` (the location without list indexes).
 */
export const CUSTOM_VALIDATION_MESSAGES: Readonly<Record<string, { msg: string; type: string }>> = {
  'body.texts:minItems': { msg: 'List of texts to classify cannot be empty.', type: 'value_error' },
};

export const RunIdParams = Type.Object({
  run_id: Type.String({ description: 'Id of a run of the served experiment (see GET /runs)' }),
});

export const TopQuery = Type.Object({
  top: Type.Optional(
    Type.Integer({
      minimum: 0,
      // Far above any experiment's run count, and exact as a JSON/JS number.
      maximum: 1_000_000_000,
      description: 'Return only the first `top` runs (best first); omit for all runs',
    }),
  ),
});

export const PERFORMANCE_FILTERS = ['overall', 'class', 'slices', 'averages'] as const;

export const PerformanceQuery = Type.Object({
  filter: Type.Optional(
    Type.Enum([...PERFORMANCE_FILTERS], {
      description: 'Return only this part of the performance report; omit for all of it',
    }),
  ),
});

export const ParamParams = Type.Object({
  param: Type.String({ description: 'Name of a training argument, e.g. `alpha`' }),
});

// ---- responses -----------------------------------------------------------------------------------

export const Empty = Type.Object({}, { additionalProperties: false, title: 'Empty' });

/** Which model of a cascade run answered a text (absent for every other run). */
export const PredictionStage = Type.Union(
  [Type.Literal('fast'), Type.Literal('encoder'), Type.Literal('fast_degraded')],
  {
    description:
      "Cascade runs only (not part of the original contract; an added field, which clients ignore): which of the run's two models answered. `fast`: its fast TF-IDF model, sure enough of the text; `encoder`: its encoder model, for a text the fast model was unsure of; `fast_degraded`: a text the fast model was unsure of, answered by the fast model all the same because the encoder could not take it (its queue full, the request over its work limit, its thread failed, or its files missing on this server with `--allow-degraded`; `TAGGER_CASCADE_OVERLOAD=shed` refuses such a request instead)",
  },
);
export type PredictionStage = Static<typeof PredictionStage>;

export const PredictionItem = Type.Object(
  {
    prediction_id: Type.String({
      format: 'uuid',
      description:
        'Names this prediction for `POST /feedback` (not part of the original contract; an added field, which clients ignore)',
    }),
    stage: Type.Optional(PredictionStage),
    no_known_features: Type.Optional(
      Type.Literal(true, {
        description:
          "Present (true) only when the model knew none of the text's features — none of its words or character n-grams is in the model's vocabulary, and the run takes no sentence embedding — so `predicted_tag` and the probabilities are the model's prior, what it answers for any such text (a whitespace-only text, or one in a script the training data did not have); treat the tag as a guess (not part of the original contract; an added field, which clients ignore)",
      }),
    ),
    input_text: Type.String({ description: 'The submitted text' }),
    predicted_tag: Type.String({
      description:
        "The predicted tag: a single-label model's answer; for a multi-label model the most probable of its predicted tags, or `other` when it predicts none",
    }),
    predicted_tags: Type.Array(Type.String(), {
      description:
        'The tags given to the text, most probable first: `[predicted_tag]` for a single-label model, every tag reaching its threshold for a multi-label one (possibly none); `top_k` and `threshold` change the list (not part of the original contract)',
    }),
    predicted_probabilities: Type.Object(
      {},
      {
        additionalProperties: Type.Number(),
        description:
          "Probability of every tag the model knows (they sum to 1 for a single-label model; a multi-label model's are each tag's own), or of the most probable ones when `probabilities_listed` is present (see the request's `probabilities`)",
        examples: [
          { 'natural-language-processing': 0.91, 'computer-vision': 0.03, mlops: 0.02, other: 0.04 },
        ],
      },
    ),
    probabilities_listed: Type.Optional(ProbabilitiesListed),
    truncated: Type.Optional(
      Type.Literal(true, {
        description:
          'Present when the request asked to `truncate` and this text was longer than the limit: it was tagged cut there',
      }),
    ),
    explanation: Type.Optional(ExplanationSchema),
  },
  { title: 'Prediction', additionalProperties: false },
);
export type PredictionItem = Static<typeof PredictionItem>;

/** Registry mode (`--model-uri`): the registered model version that answers. */
export const ModelVersionRef = Type.Object(
  {
    name: Type.String({ description: 'Registered model name' }),
    version: Type.Integer({ minimum: 1, description: 'Version number' }),
    model_uri: Type.String({
      description: 'The model URI the server follows, e.g. `models:/tagger@champion`',
      examples: ['models:/tagger@champion'],
    }),
  },
  {
    title: 'ModelVersionRef',
    additionalProperties: false,
    description: 'Present when the server serves a registered model version (`tagger serve --model-uri`)',
  },
);
export type ModelVersionRef = Static<typeof ModelVersionRef>;

const Predictions = Type.Array(PredictionItem, {
  description: 'One prediction per submitted text, in order',
});

export const PredictData = Type.Object(
  {
    run_id: Type.Optional(
      Type.String({
        description: 'The run whose model answered (present in run-based mode, absent in single-model mode)',
      }),
    ),
    model_version: Type.Optional(ModelVersionRef),
    predictions: Predictions,
  },
  { title: 'PredictData', additionalProperties: false },
);

export const RunPredictData = Type.Object(
  { run_id: Type.String(), predictions: Predictions },
  { title: 'RunPredictData', additionalProperties: false },
);

export const Metrics = Type.Object(
  {
    precision: NullableNumber('null when undefined (NaN at training time)'),
    recall: NullableNumber('null when undefined (NaN at training time)'),
    f1: NullableNumber('null when undefined (NaN at training time)'),
    num_samples: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: 'Number of samples' }),
  },
  { title: 'Metrics', additionalProperties: false },
);

const MetricsByName = (title: string, description: string) =>
  Type.Object({}, { additionalProperties: Metrics, title, description });

export const Averages = Type.Object(
  { micro: Metrics, macro: Metrics, weighted: Metrics },
  {
    title: 'Averages',
    additionalProperties: false,
    description:
      "scikit-learn's micro, macro and weighted averages over the tags (weighted = overall; for a multi-label run micro counts every tag decision, macro weighs the tags equally)",
  },
);

export const Performance = Type.Object(
  {
    overall: Metrics,
    class: MetricsByName('ClassPerformance', 'Metrics of each tag'),
    slices: MetricsByName('SlicePerformance', 'Metrics of each data slice'),
    averages: Type.Optional(Averages),
  },
  { title: 'Performance', additionalProperties: false },
);

export const PerformanceData = Type.Object(
  {
    performance: Type.Union(
      [
        Performance,
        Metrics,
        MetricsByName('PerformancePart', 'Metrics by tag (filter=class) or by slice (filter=slices)'),
        Averages,
      ],
      {
        description:
          'The whole report without `filter`; with `filter=overall` the overall metrics; with `class` or `slices` that map; with `averages` the micro, macro and weighted averages',
      },
    ),
  },
  { title: 'PerformanceData', additionalProperties: false },
);

const RunWarnings = Type.Array(Type.String(), {
  description:
    'The data checks’ warnings of its training (repeated rows, a test set leaked into the training data, folded tags, a tiny test split, …): its metrics mislead as they say. A run whose test rows leaked is not served unless TAGGER_ALLOW_TEST_LEAK',
});

const Promotion = Type.Enum(['candidate', 'promoted', 'rejected'], {
  description:
    'A run trained by `tagger retrain`: `candidate` (not promoted yet: not served), `promoted`, or `rejected` (not served; `not_served_because` says why)',
});

export const RunPerformanceData = Type.Object(
  {
    run_id: Type.String(),
    performance: Performance,
    warnings: Type.Optional(RunWarnings),
    promotion: Type.Optional(Promotion),
    model_choice: Type.Optional(ModelChoice),
    loaded: Type.Optional(
      Type.Literal(false, {
        description:
          'Present (false) for a run logged in the served experiment since this server last read it: the report is the tracking store’s, and the run is not in GET /runs, nor servable, until the next reload',
      }),
    ),
    next_poll_in_s: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
        description:
          'With `loaded: false`: seconds until this server re-reads the experiment (TAGGER_RELOAD_INTERVAL_MS); null when it does not poll (a SIGHUP reloads it)',
      }),
    ),
  },
  { title: 'RunPerformanceData', additionalProperties: false },
);

export const NON_FINITE_METRICS = ['NaN', 'Infinity', '-Infinity'] as const;

export const RunRecord = Type.Object(
  {
    run_id: Type.String(),
    run_name: Type.String(),
    status: Type.Enum(['RUNNING', 'SCHEDULED', 'FINISHED', 'FAILED', 'KILLED'], {
      description: 'MLflow run status',
    }),
    start_time: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'Start of the run, ISO 8601 in UTC (with `Z`); null if the store has no valid start time',
      examples: ['2026-11-21T21:19:00.123Z'],
    }),
    end_time: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'End of the run, ISO 8601 in UTC (with `Z`); null while the run has not ended',
    }),
    metrics: Type.Object(
      {},
      {
        additionalProperties: Type.Union([Type.Number(), Type.Enum([...NON_FINITE_METRICS])]),
        description:
          'Latest value of each metric. JSON has no NaN or infinities, so those are the strings "NaN", "Infinity" and "-Infinity" (as in protobuf\'s JSON mapping, which MLflow uses)',
        examples: [{ f1: 0.83, precision: 0.85, recall: 0.82 }],
      },
    ),
    params: Type.Object(
      {},
      { additionalProperties: Type.String(), description: 'Logged params (strings, as MLflow stores them)' },
    ),
    unused_params: Type.Array(Type.String(), {
      description:
        "The names among `params` that this run's kind does not use: another classifier family's hyper-parameters (`ft_*` for a soft vote, SGD's `learning_rate` for a member classifier), a member's that are not its own, `members` of anything but a vote, encoder and cascade arguments of a run without them. A run records every training argument with its default; the inspection page lists these apart (not part of the original contract)",
    }),
    served: Type.Boolean({ description: 'True for the run that answers /predict now' }),
    warnings: RunWarnings,
    promotion: Type.Optional(Promotion),
    mlflow_url: Type.Optional(
      Type.String({
        description:
          "The run in MLflow's UI, when the tracking store is an MLflow tracking server (its UI lives at the tracking URI)",
      }),
    ),
    model_version: Type.Optional(ModelVersionRef),
    not_served_because: Type.Optional(
      Type.String({
        description:
          'For a run ranked above the served one: why it is not served (a promotion gate, or artifacts that cannot be loaded)',
      }),
    ),
  },
  { title: 'Run', additionalProperties: false },
);
export type RunRecord = Static<typeof RunRecord>;

export const RunsData = Type.Object(
  {
    runs: Type.Array(RunRecord, {
      description: 'Runs ordered by metric f1, highest first (NaN, then no f1, last)',
    }),
  },
  { title: 'RunsData', additionalProperties: false },
);

const HistoryPoint = Type.Object(
  { step: Type.Integer({ description: 'The epoch (MLflow step)' }), value: Type.Number() },
  { title: 'HistoryPoint', additionalProperties: false },
);

export const RunHistoryData = Type.Object(
  {
    run_id: Type.String(),
    history: Type.Object(
      {
        train_loss: Type.Array(HistoryPoint, {
          description: "Training loss per epoch (of the saved model's fit)",
        }),
        val_loss: Type.Array(HistoryPoint, { description: 'Validation loss per epoch' }),
      },
      {
        title: 'TrainingHistory',
        additionalProperties: false,
        description: 'Per-epoch metrics in step order; empty for runs that did not log them',
      },
    ),
  },
  { title: 'RunHistoryData', additionalProperties: false },
);

const Mistake = Type.Object(
  {
    text: Type.String({ description: 'The test text (long texts are cut, ending with …)' }),
    true_tag: Type.String(),
    predicted_tag: Type.String(),
    confidence: Type.Number({ minimum: 0, maximum: 1, description: "The predicted tag's probability" }),
    true_tags: Type.Optional(Type.Array(Type.String(), { description: 'Multi-label runs: the true tags' })),
    predicted_tags: Type.Optional(
      Type.Array(Type.String(), {
        description: 'Multi-label runs: the predicted tags, most probable first (possibly none)',
      }),
    ),
  },
  { title: 'Mistake', additionalProperties: false },
);

export const RunErrorsData = Type.Object(
  {
    run_id: Type.String(),
    labels: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description: 'Tags in the order of the matrix rows and columns; null for a multi-label run',
    }),
    matrix: Type.Union([Type.Array(Type.Array(Type.Integer({ minimum: 0 }))), Type.Null()], {
      description:
        'Confusion matrix of the test split: matrix[t][p] rows of true tag t predicted as p; null for a multi-label run',
    }),
    total: Type.Integer({ minimum: 0, description: 'Misclassified test rows in all' }),
    mistakes: Type.Array(Mistake, {
      description: 'The most confident mistakes, most confident first (at most 1,000 are logged per run)',
    }),
  },
  { title: 'RunErrorsData', additionalProperties: false },
);

export const Args = Type.Object(
  {
    shuffle: Type.Boolean(),
    subset: Type.Union([Type.Integer(), Type.Null()]),
    min_freq: Type.Integer(),
    lower: Type.Boolean(),
    stem: Type.Boolean(),
    analyzer: Type.String(),
    ngram_max_range: Type.Integer(),
    alpha: Type.Number(),
    learning_rate: Type.Number(),
    power_t: Type.Number(),
  },
  {
    title: 'TrainingArgs',
    additionalProperties: true,
    description:
      "The spec's ten training arguments plus any others the model was trained with (num_epochs, ...)",
  },
);

export const ArgsData = Type.Object(
  {
    args: Args,
    unused_args: Type.Array(Type.String(), {
      description:
        "The names among `args` that this model's kind does not use (another classifier family's hyper-parameters, a member's that are not its own, encoder and cascade arguments of a model without them), which the inspection page lists apart (not part of the original contract)",
    }),
  },
  { title: 'ArgsData', additionalProperties: false },
);

export const ArgData = Type.Object(
  {},
  {
    title: 'ArgData',
    additionalProperties: true,
    description: 'One key, the requested argument name, whose value is that argument',
    examples: [{ alpha: 0.0001 }],
  },
);

export const LiveData = Type.Object(
  { status: Type.Literal('live') },
  { title: 'LiveData', additionalProperties: false },
);

export const ReadyData = Type.Object(
  {
    status: Type.Literal('ready'),
    run_id: Type.Optional(
      Type.String({
        description: 'The run that answers /predict (run-based mode; absent in single-model mode)',
      }),
    ),
    problems: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'What is wrong while the served run keeps answering (still 200: the replica can serve): the last reload could not read the tracking store, better-ranked runs are held back by the promotion gates or cannot be loaded, or prediction records cannot be written (the record store down, locked or full). Folders of paths are masked. Absent when there is nothing to report.',
        maxItems: 23,
      }),
    ),
  },
  { title: 'ReadyData', additionalProperties: false },
);
