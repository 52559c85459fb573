/**
 * TypeBox schemas of `GET /runs/{run_id}/label-issues` (kept apart from schemas.ts, which holds the
 * contract's own shapes): a run's `label_issues.json` as the inspection page reads it.
 */
import Type from 'typebox';

const LabelIssue = Type.Object(
  {
    rank: Type.Integer({ minimum: 1, description: '1: the most unlikely given label' }),
    line: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'The line of the training data file the row starts on (null when the rows had none)',
    }),
    text: Type.String({ description: 'The row’s text (long texts are cut, ending with …)' }),
    text_key: Type.Optional(
      Type.String({
        pattern: '^[0-9a-f]{64}$',
        description:
          'SHA-256 of the row’s whole text, case and spacing aside: names the row for `POST /review/label-issues` (absent in runs logged before reviews existed)',
      }),
    ),
    kind: Type.Enum(['tag', 'extra_tag', 'missing_tag'], {
      description:
        '`tag`: the row’s tag is probably wrong; multi-label rows, one of their tags: `extra_tag` (listed, probably does not apply) or `missing_tag` (not listed, probably applies)',
    }),
    margin: Type.Optional(
      Type.Number({
        description:
          'Single-label runs: the given tag’s probability minus the best other tag’s (negative: another is likelier); issues are ranked by it, lowest first',
      }),
    ),
    given_probability: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        'The out-of-fold probability of the label as given (multi-label: of the tag being listed or not, as given)',
    }),
    suggested_probability: Type.Number({
      minimum: 0,
      maximum: 1,
      description: 'The out-of-fold probability of the suggested label',
    }),
    confident: Type.Boolean({
      description:
        'The suggested label reached its per-tag threshold (confident learning’s confident joint); false: no label did, and it is the most probable one',
    }),
    given_tag: Type.Optional(
      Type.String({
        description: 'Single-label runs: the tag as given, as the models know it (`other` for a folded tag)',
      }),
    ),
    data_tag: Type.Optional(
      Type.String({
        description:
          'Single-label runs, only when it differs from `given_tag`: the row’s tag as written in the data, folded into `other` by `min_freq` or `accepted_tags`',
      }),
    ),
    suggested_tag: Type.Optional(Type.String({ description: 'Single-label runs: the suggested tag' })),
    tag: Type.Optional(Type.String({ description: 'Multi-label runs: the tag the issue is about' })),
    given_tags: Type.Optional(
      Type.Array(Type.String(), { description: 'Multi-label runs: the tags as given' }),
    ),
    suggested_tags: Type.Optional(
      Type.Array(Type.String(), { description: 'Multi-label runs: the tags with the suggested fix' }),
    ),
  },
  { title: 'LabelIssue', additionalProperties: false },
);

export const RunLabelIssuesData = Type.Object(
  {
    run_id: Type.String(),
    multi_label: Type.Boolean(),
    rows: Type.Integer({ minimum: 0, description: 'Training data rows looked at' }),
    sampled_from: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Present when the rows looked at were a sample of the training data (its validation split, or a seeded sample of 20,000 rows with --label-issues folds on more): how many rows the data had',
      }),
    ),
    source: Type.Optional(
      Type.Union([Type.Literal('folds'), Type.Literal('validation_split')], {
        description:
          "Where the held-out probabilities came from: `folds` (every row by a model of the other folds: tagger label-issues, tagger train --label-issues folds) or `validation_split` (tagger train's default: the rows of its validation split, by the chosen model's validated fit; `folds` is then 0). Absent in older runs (folds).",
      }),
    ),
    folds: Type.Integer({
      minimum: 0,
      description: 'Cross-validation folds of the out-of-fold models (0: the validation split)',
    }),
    seed: Type.Integer({ minimum: 0, description: 'The seed of the folds and their training' }),
    tags: Type.Array(Type.String(), { description: 'The tags as the models know them' }),
    found: Type.Integer({
      minimum: 0,
      description:
        'Issues found in all: as many as the confident joint estimates are mislabelled (single-label runs), the most unlikely candidates',
    }),
    candidates: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Rows whose suggested tag differs from the given one, flagged or not (absent in older runs)',
      }),
    ),
    issues: Type.Array(LabelIssue, {
      description: 'The most unlikely given labels first (at most 1,000 are logged per run)',
    }),
  },
  { title: 'RunLabelIssuesData', additionalProperties: false },
);
