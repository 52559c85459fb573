/**
 * The member classifiers' family: each member classifier alone (`linear_svm`, `nb_lr`, …; member-table.ts)
 * and `soft_vote`, the weighted mean of several members' probabilities over one shared vocabulary. Solved
 * exactly or in closed form, so training reports members, not epochs; `tagger optimize` draws a lone member
 * or a vote of 2–4 distinct members, each with its own hyper-parameters.
 */
import { drawFrom } from '../../arg-checks.js';
import { csrBytes, type DataShape, formatCount, type MemoryPart } from '../../data-shape.js';
import { ModelInputError } from '../../errors.js';
import type { TrainingArgs } from '../../training-args.js';
import type { ClassifierFamily, ProgressPlan } from '../family.js';
import { MEMBER_HYPER_PARAM_NAMES, MEMBER_HYPER_PARAMS } from './hyper-params.js';
import type { MemberDefinition } from './member.js';
import { DEFAULT_VOTE_MEMBERS, parseMembers } from './member-args.js';
import { decodeMemberModel, encodeMemberModel } from './member-artifact.js';
import {
  MEMBER_CLASSIFIERS,
  MEMBER_DEFINITIONS,
  type MemberClassifier,
  memberDefinition,
} from './member-table.js';
import { trainMemberTagger } from './train-members.js';

/** The classifier that combines several members; the others are one member alone. */
export const SOFT_VOTE = 'soft_vote';
/** The member classifiers that read an encoder run's embeddings. */
const READERS = MEMBER_DEFINITIONS.filter((d) => d.readsEmbeddings).map((d) => d.name);
/** How many distinct members a vote drawn by `tagger optimize` has. */
const VOTE_SIZE: readonly [number, number] = [2, 4];
const REFIT = 'refit on train+validation';

/**
 * One fit's members at once (the validated fit is released before the refit): a discriminative member's
 * weights are dense in practice (every feature of a support vector gets a weight in every tag), Float64
 * while training and a Float32 copy when saved; naive Bayes keeps only the features each tag has seen.
 * The dual solvers hold a weight row and the rows' multipliers per thread; the rows are TF-IDF matrices
 * (train + validation, stacked again for the refit).
 */
function memoryParts(shape: DataShape, args: TrainingArgs, threads: number): MemoryPart[] {
  const classifiers: string[] = args.members?.map((member) => member.classifier) ?? [args.classifier];
  const naiveBayes = classifiers.filter(
    (name) => MEMBER_DEFINITIONS.find((definition) => definition.name === name)?.kind === 'naive Bayes',
  ).length;
  const discriminative = classifiers.length - naiveBayes;
  const weights = shape.features * shape.tags;
  const parts: MemoryPart[] = [{ what: 'TF-IDF rows', bytes: 2 * csrBytes(shape.nonZeros, shape.rows) }];
  if (discriminative > 0) {
    parts.push({
      what: `${discriminative} dense member weights: ${formatCount(shape.features)} features x ${formatCount(shape.tags)} tags`,
      bytes: discriminative * weights * (weights > 2 ** 20 ? 12 : 8),
    });
    parts.push({
      what: `solver state of ${threads} threads`,
      bytes: threads * 8 * (shape.rows + shape.features),
    });
  }
  if (naiveBayes > 0) {
    parts.push({
      what: `${naiveBayes} naive Bayes member weights (seen features only)`,
      bytes: naiveBayes * 12 * Math.min(weights, shape.nonZeros),
    });
  }
  return parts;
}

function progress(args: TrainingArgs): ProgressPlan {
  const members = args.members?.length ?? 1;
  const total = members * (args.refit ? 2 : 1);
  return {
    total,
    unit: 'member fits',
    onMember: (report) => {
      const calibrated = report.fits > 1 ? `, calibrated: ${report.fits} fits` : '';
      const what = `${report.classifier} (member ${report.member}/${report.members}${calibrated}) trained in ${report.seconds.toFixed(2)} s`;
      return {
        done: (report.fit === 'refit' ? members : 0) + report.member,
        message: report.fit === 'refit' ? `${REFIT}: ${what}` : `validated fit: ${what}`,
      };
    },
    onClasses: (report) => ({
      done: (report.fit === 'refit' ? members : 0) + report.member - 1 + report.done / report.total,
      message: `${report.fit === 'refit' ? REFIT : 'validated fit'}: ${report.classifier} (member ${report.member}/${report.members}) ${Math.round((100 * report.done) / report.total)}% of its one-vs-rest problems`,
    }),
    onEpoch: (report) => ({
      done: members,
      message: `validated fit done, train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
    }),
    onRefitEpoch: (report) => ({
      done: members * 2,
      message: `${REFIT} done, train_loss=${report.trainLoss.toFixed(4)}`,
    }),
  };
}

/**
 * One member's drawn hyper-parameters: every member hyper-parameter is drawn (so the random stream does
 * not depend on the classifier), the classifier keeps its own, and its calibration follows its search rule.
 */
function drawMember(
  definition: MemberDefinition,
  random: () => number,
  inVote: boolean,
): Record<string, unknown> {
  const drawn = Object.fromEntries(
    MEMBER_HYPER_PARAM_NAMES.map((key) => [key, drawFrom(MEMBER_HYPER_PARAMS[key].search!, random)]),
  );
  const rule = definition.searchCalibration;
  drawn.calibration = inVote ? rule.inVote : rule.alone === 'draw' ? drawn.calibration : 'none';
  const own: Record<string, unknown> = { classifier: definition.name };
  for (const key of definition.params) own[key] = drawn[key];
  return own;
}

export const MEMBERS_FAMILY: ClassifierFamily = {
  name: 'members',
  classifiers: [...MEMBER_CLASSIFIERS, SOFT_VOTE],
  learnsSeveralTags: () => true,
  since: 'tagger-model/1.4',
  takesEmbeddings: true,
  hyperParams: MEMBER_HYPER_PARAMS,
  resolveArgs(args, raw) {
    if (args.ensemble > 1) {
      throw new ModelInputError(
        `model/args: "ensemble" (${args.ensemble}) averages SGD runs that differ in their random order; ${JSON.stringify(args.classifier)} is solved exactly, so its runs would not differ — use "ensemble": 1, or "classifier": "soft_vote" to combine different classifiers`,
      );
    }
    const resolved: TrainingArgs =
      args.classifier !== SOFT_VOTE
        ? { ...args, members: null }
        : {
            ...args,
            members: parseMembers(
              (Object.hasOwn(raw, 'members') ? raw.members : undefined) ?? DEFAULT_VOTE_MEMBERS,
              args,
            ),
          };
    const classifiers = resolved.members?.map((m) => m.classifier) ?? [resolved.classifier];
    if (
      args.encoder !== null &&
      !classifiers.some((c) => memberDefinition(c as MemberClassifier).readsEmbeddings)
    ) {
      throw new ModelInputError(
        `model/args: "encoder" needs a classifier that reads embeddings — ${READERS.join(', ')} (alone or in a soft_vote's members), or ovr / softmax (SGD) — but ${classifiers.join(', ')} ${classifiers.length === 1 ? 'reads' : 'read'} the TF-IDF features only`,
      );
    }
    return resolved;
  },
  train: trainMemberTagger,
  encode: encodeMemberModel,
  decode: decodeMemberModel,
  progress,
  memoryParts,
  search: {
    choices: [...MEMBER_CLASSIFIERS, SOFT_VOTE],
    draw(choice, base, random) {
      if (choice !== SOFT_VOTE)
        return drawMember(memberDefinition(choice as (typeof MEMBER_CLASSIFIERS)[number]), random, false);
      const [low, high] = VOTE_SIZE;
      const count = low + Math.floor(random() * (high - low + 1));
      // An encoder run's vote needs a member that reads the embeddings: its first member is drawn from those.
      const readers = MEMBER_DEFINITIONS.filter((d) => d.readsEmbeddings);
      const pool: MemberDefinition[] = [...MEMBER_DEFINITIONS];
      const members = Array.from({ length: count }, (_, i) => {
        const from = i === 0 && base.encoder !== null ? readers.filter((d) => pool.includes(d)) : pool;
        const definition = from[Math.floor(random() * from.length)]!;
        pool.splice(pool.indexOf(definition), 1);
        return drawMember(definition, random, true);
      });
      return { classifier: SOFT_VOTE, members };
    },
    allows: (choice, base) =>
      base.encoder === null ||
      choice === SOFT_VOTE ||
      memberDefinition(choice as MemberClassifier).readsEmbeddings,
  },
};
