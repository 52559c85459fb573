/**
 * The cascade's training arguments (`cascade`, `cascade_tolerance`, `cascade_max_routed`,
 * `cascade_threshold`; training-args.ts documents them): their default and the combinations refused. A
 * leaf, so args.ts can declare them without a cycle through stages.ts (which needs args.ts's defaults).
 * The combinations are checked once every source of args is applied (`tagger train --args … --encoder …
 * --cascade`: a flag may complete what the args file lacks), not by parseTrainingArgs.
 */
import { ModelInputError } from '../errors.js';
import type { TrainingArgs } from '../training-args.js';

/**
 * The default rule's tolerance in weighted f1: 0.002, the margin under which the adoption rule
 * (docs/model-decisions.md) calls two models equal. Issue 33's cross-validation on dataset.csv chose τ 0.92
 * with it (37 % routed, CV 0.927 against the encoder's 0.928).
 */
export const CASCADE_TOLERANCE = 0.002;

type CascadeKeys = Pick<
  TrainingArgs,
  'cascade' | 'encoder' | 'cascade_max_routed' | 'cascade_threshold' | 'cascade_tolerance'
>;

/** Why these args cannot train (or describe) a cascade, in one line; null when they can or ask for none. */
export function cascadeArgsProblem(args: CascadeKeys): string | null {
  if (!args.cascade) {
    if (args.cascade_max_routed !== null || args.cascade_threshold !== null) {
      return '"cascade_max_routed" and "cascade_threshold" choose a cascade\'s threshold, but "cascade" is false; set "cascade": true (tagger train --cascade) or drop them';
    }
    return null;
  }
  if (args.encoder === null) {
    return 'a cascade sends the texts its fast model is unsure of to an encoder model, but no encoder is named; pass --encoder minilm (or "encoder" in the args)';
  }
  if (args.cascade_max_routed !== null && args.cascade_threshold !== null) {
    return '"cascade_max_routed" (a budget the threshold is chosen for) and "cascade_threshold" (the threshold itself) contradict each other; give one';
  }
  return null;
}

/** Throws a ModelInputError (one line) when the args cannot train a cascade they ask for (cascadeArgsProblem). */
export function checkCascadeArgs(args: CascadeKeys): void {
  const problem = cascadeArgsProblem(args);
  if (problem !== null) throw new ModelInputError(`model/args: ${problem}`);
}
