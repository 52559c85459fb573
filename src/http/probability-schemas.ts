/**
 * TypeBox schemas of which tags' probabilities a prediction lists (kept apart from schemas.ts, which
 * holds the contract's own shapes): the request's `probabilities` option and the answer's
 * `probabilities_listed`, present only when a prediction does not list every tag. The contract shows no
 * probabilities at all; a model of at most DEFAULT_LISTED_PROBABILITIES tags answers as it always did.
 */
import Type from 'typebox';
import { DEFAULT_LISTED_PROBABILITIES } from '../model/prediction.js';

/** The largest count of probabilities a client may ask for (far above any model's tag count). */
export const MAX_LISTED_PROBABILITIES = 10_000;

export const ProbabilitiesOption = Type.Union(
  [Type.Literal('all'), Type.Integer({ minimum: 1, maximum: MAX_LISTED_PROBABILITIES })],
  {
    description: `Whose probabilities each prediction's \`predicted_probabilities\` lists: \`"all"\` tags, or the n most probable (always with the tags of \`predicted_tag\` and \`predicted_tags\`). Omitted: every tag for a model of at most ${DEFAULT_LISTED_PROBABILITIES} tags (the contract's answer), the ${DEFAULT_LISTED_PROBABILITIES} most probable for a larger one, and \`probabilities_listed\` says how many of how many (not part of the original contract)`,
    examples: ['all', 5],
  },
);

export const ProbabilitiesListed = Type.Object(
  {
    listed: Type.Integer({ minimum: 1, description: 'How many tags `predicted_probabilities` lists' }),
    of: Type.Integer({ minimum: 1, description: 'How many tags the model knows' }),
  },
  {
    title: 'ProbabilitiesListed',
    additionalProperties: false,
    description: `Present only when \`predicted_probabilities\` lists some of the model's tags, not all: the most probable ones (the request's \`probabilities\`, else the ${DEFAULT_LISTED_PROBABILITIES} most probable of a model of more than ${DEFAULT_LISTED_PROBABILITIES} tags) with the predicted ones. Ask for \`"probabilities": "all"\` for every tag (not part of the original contract)`,
    examples: [{ listed: 20, of: 500 }],
  },
);
