/**
 * TypeBox schema of `GET /runs/{run_id}/cascade` (kept apart from schemas.ts, which holds the contract's
 * own shapes): a cascade run's `cascade_curve.json` as the inspection page draws it.
 */
import Type from 'typebox';

const Share = (description: string) => Type.Number({ minimum: 0, maximum: 1, description });

const CurvePoint = Type.Object(
  {
    threshold: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1,
      description: 'τ: texts whose fast-model confidence is below it go to the encoder model',
    }),
    routed: Share('Share of the training rows routed to the encoder model at this τ (out of fold)'),
    f1: Share('Weighted f1 of the combined out-of-fold answers at this τ'),
  },
  { additionalProperties: false },
);

export const RunCascadeData = Type.Object(
  {
    run_id: Type.String(),
    rule: Type.Union(
      [
        Type.Object(
          { kind: Type.Literal('tolerance'), tolerance: Type.Number() },
          { additionalProperties: false },
        ),
        Type.Object(
          { kind: Type.Literal('budget'), maxRouted: Type.Number() },
          { additionalProperties: false },
        ),
        Type.Object(
          { kind: Type.Literal('fixed'), threshold: Type.Number() },
          { additionalProperties: false },
        ),
      ],
      {
        description:
          'How τ was chosen: `tolerance` (the fewest rows routed within it of the encoder model’s CV f1; the default), `budget` (`cascade_max_routed`), `fixed` (`cascade_threshold`)',
      },
    ),
    reason: Type.String({ description: 'The rule’s choice in a sentence' }),
    chosen: CurvePoint,
    cv: Type.Object(
      {
        rows: Type.Integer({ minimum: 0, description: 'Training rows predicted out of fold' }),
        fast_f1: Share('The fast model alone, out of fold'),
        encoder_f1: Share('The encoder model alone, out of fold'),
      },
      { additionalProperties: false },
    ),
    test: Type.Object(
      {
        routed: Share('Share of the test split routed to the encoder model'),
        fast_f1: Share('The fast model alone on the test split'),
        encoder_f1: Share('The encoder model alone on the test split (the cascade’s is the run’s f1)'),
      },
      { additionalProperties: false },
    ),
    points: Type.Array(CurvePoint, { description: 'The curve at τ = 0.01, 0.02, … 1' }),
  },
  { additionalProperties: false },
);
