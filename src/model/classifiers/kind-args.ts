/**
 * Which training arguments a run's kind uses. A run records every argument (about 55, the defaults of
 * every family included), so a vote's table listed `ft_*` and the SGD's `learning_rate`, and `tagger
 * optimize` printed SGD parameters for a soft vote. Here, from the families' own tables: a family's
 * hyper-parameters are another kind's unless the run's classifier is of that family (a lone member
 * classifier uses only its own; a vote's members carry theirs in `members`); encoder and cascade
 * arguments belong to runs with an encoder or a cascade.
 */
import type { TrainingArgs } from '../training-args.js';
import { CLASSIFIER_FAMILIES, familyOf } from './families.js';
import { MEMBER_HYPER_PARAM_NAMES } from './members/hyper-params.js';
import { MEMBER_DEFINITIONS } from './members/member-table.js';
import { SOFT_VOTE } from './members/members-family.js';

const ENCODER_ONLY = ['encoder_weight', 'encoder_normalize'] as const;
const CASCADE_ONLY = ['cascade_tolerance', 'cascade_max_routed', 'cascade_threshold'] as const;

/** The part of a run's arguments that decides its kind. */
export interface KindOfArgs {
  classifier: string;
  encoder: string | null;
  cascade: boolean;
}

/**
 * The arguments a run of this kind does not use: other families' hyper-parameters, a member's that are
 * not its own, `members` of anything but a vote, encoder and cascade arguments of a run without them.
 * @example unusedArgs({ classifier: 'soft_vote', encoder: null, cascade: false }).includes('ft_dim') // true
 */
export function unusedArgs(kind: KindOfArgs): string[] {
  let family: string | undefined;
  try {
    family = familyOf(kind.classifier).name;
  } catch {
    family = undefined; // an unknown classifier (an older or foreign run): nothing is hidden for it
  }
  if (family === undefined) return [];
  const unused = new Set<string>();
  for (const other of CLASSIFIER_FAMILIES) {
    if (other.name !== family) for (const key of Object.keys(other.hyperParams)) unused.add(key);
  }
  const member = MEMBER_DEFINITIONS.find((definition) => definition.name === kind.classifier);
  for (const key of MEMBER_HYPER_PARAM_NAMES) {
    if (member === undefined || !(member.params as readonly string[]).includes(key)) unused.add(key);
  }
  if (kind.classifier !== SOFT_VOTE) unused.add('members');
  if (kind.encoder === null) for (const key of ENCODER_ONLY) unused.add(key);
  if (!kind.cascade) for (const key of CASCADE_ONLY) unused.add(key);
  return [...unused];
}

/**
 * The kind of the arguments a run logged as MLflow params (strings: JSON for all but plain strings),
 * or null when they do not say (no classifier param).
 */
export function kindOfParams(params: Readonly<Record<string, string>>): KindOfArgs | null {
  const classifier = params.classifier;
  if (classifier === undefined) return null;
  const text = (value: string | undefined): string | null =>
    value === undefined || value === '' || value === 'null' ? null : value.replace(/^"(.*)"$/, '$1');
  return {
    classifier: text(classifier) ?? classifier,
    encoder: text(params.encoder),
    cascade: params.cascade === 'true',
  };
}

/**
 * A trial's own arguments, as `tagger optimize`'s table shows them: the hyper-parameters of its
 * classifier's family that the search draws (a lone member: its own), or a vote's members with theirs.
 */
export function ownSearchedArgs(args: TrainingArgs): string {
  const family = familyOf(args.classifier);
  const unused = new Set(
    unusedArgs({ classifier: args.classifier, encoder: args.encoder, cascade: args.cascade }),
  );
  // Compact: numbers as key=value (3 significant digits), a choice as its value, no calibration as nothing.
  const shown = (values: Record<string, unknown>, keys: readonly string[]): string =>
    keys
      .filter((key) => values[key] !== undefined && !(key === 'calibration' && values[key] === 'none'))
      .map((key) => {
        const value = values[key];
        return typeof value === 'number' ? `${key}=${Number(value.toPrecision(3))}` : String(value);
      })
      .join(' ');
  if (args.classifier === SOFT_VOTE && args.members) {
    return args.members
      .map((member) => {
        const definition = MEMBER_DEFINITIONS.find((d) => d.name === member.classifier);
        const own = shown(member as unknown as Record<string, unknown>, definition?.params ?? []);
        return own === '' ? member.classifier : `${member.classifier}(${own})`;
      })
      .join(' + ');
  }
  const searched = Object.entries(family.hyperParams)
    .filter(([key, param]) => param.search !== undefined && !unused.has(key))
    .map(([key]) => key);
  return shown(args as unknown as Record<string, unknown>, searched);
}
