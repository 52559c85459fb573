/**
 * The shape of a run's `model_choice.json` (RUN_ARTIFACTS.modelChoice): how `tagger train` chose the
 * run's model on the validation split. src/train/model-choice/choose.ts writes it, src/served-models
 * reads it back (checked field by field) for GET /runs/{run_id} and the page: one shape for both.
 */

/** What the candidates were compared by (src/train/model-choice/rules.ts's FEW_OTHERS_SHARE decides). */
export type ChoiceObjective = 'weighted_f1' | 'balanced_other';

/** One row of the choice's table (logged in `model_choice.json`, served by GET /runs/{run_id}). */
export interface CandidateReport {
  name: string;
  summary: string;
  /** Its own training arguments (over the defaults), the clean-up chosen included. */
  args: Record<string, unknown>;
  status: 'chosen' | 'trained' | 'skipped' | 'failed';
  /** Why it was skipped or failed. */
  reason?: string;
  /** The plan's estimate of its validated fit (CPU seconds). */
  estimated_seconds: number;
  /** Its validated fit: wall and CPU seconds (the process's, every thread). */
  training_seconds?: number;
  training_cpu_seconds?: number;
  /**
   * Weighted f1 on the validation split, what the choice compares: argmax, or with the fallback threshold
   * when held-out halves say it helps (`threshold`); under the `balanced_other` objective always argmax's
   * (the threshold is placed for the balanced score, not for it); a cascade's routes its stages'
   * validated fits by its τ.
   */
  validation_f1?: number;
  /**
   * Under the `balanced_other` objective: the tags' accuracy and `other`'s recall, half each
   * (balancedOtherScore), of its answers with its fallback threshold (cross-fitted), or argmax's.
   */
  validation_balanced?: number;
  /** The argmax f1 beside it (single-label). */
  validation_f1_argmax?: number;
  /** The fallback threshold it would predict with (null: argmax). */
  threshold?: number | null;
  /** µs per text of one-text predictions (a sample of validation texts, the best of three passes), the model alone. */
  predict_us?: number;
  /** The encoder's forward pass per text on top of it, estimated from the texts' length. */
  encoder_predict_us?: number;
  /** The estimate of one prediction's µs (encoder included) that ties are broken by (src/train/model-choice/rules.ts's predictCost). */
  estimated_predict_us?: number;
  /** Its saved model's size (bytes). */
  model_bytes?: number;
}

/** What `tagger train` logs of a choice as `model_choice.json`. */
export interface ChoiceReport {
  method: 'validation_split';
  training_rows: number;
  validation_rows: number;
  budget_seconds: number;
  /** Where the budget came from: the default for the data's size, or --time-budget. */
  budget_source: 'default' | 'given';
  /**
   * `weighted_f1`; or where the validation split's rows of `other` are few (src/train/model-choice/rules.ts's FEW_OTHERS_SHARE)
   * `balanced_other`: the candidates compared by their argmax answers' weighted f1 and each one's
   * fallback threshold placed for the balanced score of the tags' accuracy and `other`'s recall.
   */
  objective: ChoiceObjective;
  /** The validation rows of `other` (texts that fit no tag): what a fallback threshold can get right. */
  other_rows: number;
  /** The clean-up steps: each variant tried with the first candidate, and the one kept (or why none was compared). */
  cleanup: { chosen: string; tried: CleanupTry[]; reason?: string };
  candidates: CandidateReport[];
  chosen: string;
  /** How the chosen one was picked, in words. */
  rule: string;
  /** CPU seconds from the start of the training to the end of the choice (the refit not included). */
  seconds: number;
}

/** One clean-up variant's score with the first candidate. */
export interface CleanupTry {
  name: string;
  validation_f1: number;
  validation_balanced?: number;
}
