/**
 * TypeBox schemas of a prediction's `explanation` (`"explain": true`; kept apart from schemas.ts, which
 * holds the contract's own shapes): one linear score split exactly, or a soft vote described by its
 * members, each member's score split exactly. Validation, handler types and the OpenAPI document, as for
 * every schema.
 */
import Type from 'typebox';

/** How many contributions an explanation lists (the rest are summed). */
export const EXPLAIN_TOP = 10;

export const ContributionSchema = Type.Object(
  {
    feature: Type.String({
      description: 'The n-gram as the model sees it (cleaned, lower-cased, maybe stemmed)',
    }),
    analyzer: Type.Enum(['word', 'char', 'char_wb'], { description: 'Which vectorizer made it' }),
    value: Type.Number({ description: 'Its tf-idf value in this text' }),
    contribution: Type.Number({
      description: "weight × value: how far it moved the tag's score (negative: away from the tag)",
    }),
  },
  { additionalProperties: false },
);

/** The exact split of one linear score, shared by a linear model's explanation and a vote member's. */
const scoreSplit = {
  score: Type.Number({
    description: "The tag's linear score, before the link that turns scores into probabilities",
  }),
  bias: Type.Number({ description: "The tag's bias (intercept)" }),
  contributions: Type.Array(ContributionSchema, {
    description: `The ${EXPLAIN_TOP} largest contributions by absolute value, largest first`,
  }),
  rest: Type.Number({ description: 'The sum of every other feature’s contribution' }),
  features: Type.Integer({ description: 'How many of the model’s n-gram features the text has' }),
};

export const LinearExplanationSchema = Type.Object(
  {
    tag: Type.String({ description: 'The tag explained: the one with the highest score' }),
    ...scoreSplit,
    encoder: Type.Optional(
      Type.Number({
        description:
          "Encoder runs only: the sentence embedding's whole contribution to the score (Σ weight × value over its dimensions), one aggregate term: the embedding's dimensions have no meaning one by one",
      }),
    ),
  },
  {
    title: 'LinearExplanation',
    additionalProperties: false,
    description:
      'A linear model (SGD, or one member classifier alone): its score of the tag, split exactly, `bias + Σ contributions + rest = score`, and `bias + Σ contributions + rest + encoder = score` for an encoder run',
  },
);

export const MemberExplanationSchema = Type.Object(
  {
    classifier: Type.String({
      description: 'The member classifier, e.g. `linear_svm`, `nb_lr`, `multinomial_nb`',
    }),
    weight: Type.Number({ description: 'Its weight in the vote' }),
    inputs: Type.Enum(['tfidf', 'binary'], {
      description:
        'What it reads of the features: tf-idf values, or 1 per feature present (`binary`: NB-LR, NB-SVM)',
    }),
    link: Type.Enum(['ovr', 'sigmoid', 'softmax', 'platt'], {
      description:
        'How its scores become its probabilities: `ovr` (sigmoids normalised to sum to 1), `sigmoid` (multi-label: each tag its own), `softmax`, or `platt` (calibrated: 1 / (1 + exp(a·score + b)) per tag, normalised to sum to 1 for a single-label model)',
    }),
    platt: Type.Optional(
      Type.Object(
        { a: Type.Number(), b: Type.Number() },
        { additionalProperties: false, description: "The tag's Platt parameters, when `link` is `platt`" },
      ),
    ),
    probability: Type.Number({ description: 'Its probability of the tag' }),
    ...scoreSplit,
  },
  {
    title: 'MemberExplanation',
    additionalProperties: false,
    description: "One member's score of the tag, split exactly: `bias + Σ contributions + rest = score`",
  },
);

export const VoteExplanationSchema = Type.Object(
  {
    tag: Type.String({ description: 'The tag explained: the one with the highest vote probability' }),
    features: Type.Integer({
      description: 'How many of the model’s features the text has (the members share them)',
    }),
    vote: Type.Object(
      {
        rule: Type.Literal('weighted_mean', {
          description:
            "How the members' probabilities are combined: `probability = Σ weight · member probability / Σ weight`",
        }),
        probability: Type.Number({ description: "The vote's probability of the tag (the prediction's)" }),
        members: Type.Array(MemberExplanationSchema, {
          description: 'Each member, in the order of the training args',
        }),
      },
      { additionalProperties: false },
    ),
  },
  {
    title: 'VoteExplanation',
    additionalProperties: false,
    description:
      "A soft vote of several members. The vote's probability is not linear in the features, so it has no per-feature split and none is given: each member's own score is split exactly, and `vote.rule` says how their probabilities make the vote's",
  },
);

export const ExplanationSchema = Type.Union([LinearExplanationSchema, VoteExplanationSchema], {
  title: 'Explanation',
  description:
    'Why the model gave the tag: one linear score split exactly (`LinearExplanation`), or a soft vote described by its members (`VoteExplanation`, which has `vote`)',
});
