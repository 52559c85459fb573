/**
 * The schema of a run's model choice (Tagger's own, beside the contract's shapes): `model_choice.json` as
 * GET /runs/{run_id} answers it and the inspection page shows it (src/served-models/model-choice.ts reads it).
 */
import { Type } from 'typebox';

const seconds = (description: string) => Type.Number({ minimum: 0, description });

export const ModelChoiceCandidate = Type.Object(
  {
    name: Type.String({
      description:
        'The candidate kind (src/train/model-choice/rules.ts): linear_svm_words, linear_svm, soft_vote, fasttext, encoder, cascade',
    }),
    summary: Type.String({ description: 'What it is, in one line' }),
    args: Type.Record(Type.String(), Type.Unknown(), {
      description: 'Its own training arguments, over the defaults',
    }),
    status: Type.Union(
      [Type.Literal('chosen'), Type.Literal('trained'), Type.Literal('skipped'), Type.Literal('failed')],
      {
        description:
          'chosen (the run’s model), trained (compared, not kept), skipped or failed (`reason` says why)',
      },
    ),
    reason: Type.Optional(Type.String({ description: 'Why it was skipped or failed' })),
    estimated_seconds: seconds("The plan's estimate of its validated fit (CPU seconds)"),
    training_seconds: Type.Optional(seconds('Its validated fit: wall seconds')),
    training_cpu_seconds: Type.Optional(seconds('Its validated fit: CPU seconds of the process')),
    validation_f1: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          'Weighted f1 on the validation split, what the choice compared: with its fallback threshold, if any (argmax under the balanced_other objective)',
      }),
    ),
    validation_balanced: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          "Under the balanced_other objective: the tags' accuracy and other's recall, half each, of its answers with the fallback threshold placed for it",
      }),
    ),
    validation_f1_argmax: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'The same without a fallback threshold' }),
    ),
    threshold: Type.Optional(
      Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
        description: 'The fallback threshold it predicts with (below it: other), null for argmax',
      }),
    ),
    predict_us: Type.Optional(
      seconds('CPU µs of one one-text prediction, measured on validation texts, the model alone'),
    ),
    encoder_predict_us: Type.Optional(
      seconds("The encoder's forward pass on top of it (estimated from the texts' length)"),
    ),
    estimated_predict_us: Type.Optional(seconds('The estimate ties are broken by')),
    model_bytes: Type.Optional(Type.Integer({ minimum: 0, description: 'Its saved model’s size' })),
  },
  { title: 'ModelChoiceCandidate', additionalProperties: false },
);

export const ModelChoice = Type.Object(
  {
    method: Type.Literal('validation_split'),
    training_rows: Type.Integer({ minimum: 0 }),
    validation_rows: Type.Integer({ minimum: 0, description: 'The rows the candidates were compared on' }),
    budget_seconds: seconds(
      'The CPU seconds the choice could take (--time-budget, or the default for the data’s size)',
    ),
    budget_source: Type.Union([Type.Literal('default'), Type.Literal('given')]),
    objective: Type.Union([Type.Literal('weighted_f1'), Type.Literal('balanced_other')], {
      description:
        "weighted_f1, or balanced_other where the validation split's rows of other are few (at least 10, at most 5 %): the candidates compared by their argmax answers' weighted f1, each one's fallback threshold placed for the balanced score (the tags' accuracy and other's recall, half each)",
    }),
    other_rows: Type.Integer({
      minimum: 0,
      description: 'The validation rows of other (texts that fit no tag)',
    }),
    cleanup: Type.Object(
      {
        chosen: Type.String({
          description: 'The clean-up kept: none (lower-casing only) or tagifai (stopwords, ASCII only, URLs)',
        }),
        tried: Type.Array(
          Type.Object(
            {
              name: Type.String(),
              validation_f1: Type.Number(),
              validation_balanced: Type.Optional(Type.Number()),
            },
            { additionalProperties: false },
          ),
        ),
        reason: Type.Optional(Type.String({ description: 'Why no clean-up variant was compared' })),
      },
      { additionalProperties: false },
    ),
    candidates: Type.Array(ModelChoiceCandidate, {
      description: 'In the order they were tried (cheapest first)',
    }),
    chosen: Type.String({ description: 'The candidate the run’s model is' }),
    rule: Type.String({ description: 'How it was picked, in words' }),
    seconds: seconds('CPU seconds the choice took, up to the refit of the chosen candidate'),
  },
  { title: 'ModelChoice', additionalProperties: false },
);
