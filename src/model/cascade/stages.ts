/**
 * The two models of a cascade run and their arguments. The encoder stage is the run's args as an encoder
 * run trains them (without `cascade`); the fast stage is the default TF-IDF model — the soft vote the
 * issue's measurements chose — over the same text features and labels: the args an encoder run changes
 * (ENCODER_DEFAULT_ARGS: the classifier, oversampling, the embeddings' weight) go back to the TF-IDF
 * defaults, and the encoder is dropped.
 */
import { DEFAULT_TRAINING_ARGS, ENCODER_DEFAULT_ARGS, parseTrainingArgs } from '../args.js';
import type { TrainingArgs } from '../training-args.js';

export const CASCADE_STAGES = ['fast', 'encoder'] as const;
/** Which model of a cascade answered a text. */
export type CascadeStage = (typeof CASCADE_STAGES)[number];

/** What turns a cascade's args into a plain model's: no cascade, no cascade rule. */
const NOT_A_CASCADE = {
  cascade: false,
  cascade_max_routed: null,
  cascade_threshold: null,
  cascade_tolerance: DEFAULT_TRAINING_ARGS.cascade_tolerance,
} as const;

/** The encoder stage's args: the run's, without the cascade. */
export function encoderStageArgs(args: TrainingArgs): TrainingArgs {
  return parseTrainingArgs({ ...args, ...NOT_A_CASCADE });
}

/** The fast stage's args: the run's features and labels with the default TF-IDF classifier, no encoder. */
export function fastStageArgs(args: TrainingArgs): TrainingArgs {
  const tfidfDefaults = Object.fromEntries(
    Object.keys(ENCODER_DEFAULT_ARGS).map((key) => [key, DEFAULT_TRAINING_ARGS[key as keyof TrainingArgs]]),
  );
  return parseTrainingArgs({
    ...args,
    ...tfidfDefaults,
    ...NOT_A_CASCADE,
    encoder: null,
    encoder_weight: DEFAULT_TRAINING_ARGS.encoder_weight,
    encoder_normalize: DEFAULT_TRAINING_ARGS.encoder_normalize,
  });
}
