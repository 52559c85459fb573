/**
 * What `tagger train` shows while it chooses the model: one progress line for the whole training, its
 * share done counted in estimated seconds (the plan's estimates of every candidate, its refit and the
 * evaluation, each rescaled by how the candidates so far compared with theirs), so the ETA holds when the
 * candidates' costs differ by hundreds of times; the current candidate's own steps (its family's progress
 * plan) in the status; a line per candidate when it is done or skipped.
 */
import {
  type ClassesReport,
  type EpochReport,
  familyOf,
  type MemberReport,
  type ProgressStep,
} from '../model/index.js';
import type { CandidateReport, ChoiceEvent } from '../train/model-choice/choose.js';
import type { PlannedCandidate } from '../train/model-choice/plan.js';
import type { TrainingPhase } from '../train/pipeline.js';
import { createProgress, type ProgressStream } from '../train/progress.js';

/** The share of the whole work the evaluation, behavioural tests and reference profile are counted as. */
const AFTER_TRAINING_SHARE = 0.03;

export interface ChoiceProgress {
  onChoice(event: ChoiceEvent): void;
  onEpoch(report: EpochReport): void;
  onRefitEpoch(report: EpochReport): void;
  onMember(report: MemberReport): void;
  onClasses(report: ClassesReport): void;
  onPhase(phase: TrainingPhase): void;
  /** Where the training is, for a message: `candidate 2 of 4 (linear_svm)`. */
  where(): string;
  stop(): void;
}

const f1 = (value: number | undefined): string => (value === undefined ? '-' : value.toFixed(4));

/** The line a finished or skipped candidate gets. */
export function candidateLine(report: CandidateReport): string {
  if (report.status === 'skipped' || report.status === 'failed') {
    return `  ${report.name}: ${report.status} (${report.reason ?? ''})\n`;
  }
  return `  ${report.name}: validation f1 ${f1(report.validation_f1)} in ${report.training_seconds?.toFixed(1)} s\n`;
}

export function choiceProgress(
  plan: readonly PlannedCandidate[],
  options: { stream: ProgressStream; silent: boolean; now?: () => number },
): ChoiceProgress {
  const now = options.now ?? Date.now;
  const kept = plan.filter((candidate) => candidate.skip === null);
  const byName = new Map(kept.map((candidate) => [candidate.name, candidate]));
  /**
   * Estimated seconds still to come per candidate, beyond the fit running now: its fits (the clean-up
   * variants' on a sample, then its own), each taken off when it starts; the embedding pass is done before.
   */
  const pending = new Map(
    kept.map((candidate) => [candidate.name, candidate.estimatedSeconds - candidate.embeddingSeconds]),
  );
  let actual = 0;
  let estimated = 0;
  let doneSeconds = 0;
  let best: { name: string; score: number } | null = null;
  let current: {
    name: string;
    index: number;
    of: number;
    estimate: number;
    startedAt: number;
    fraction: number;
    plan: ReturnType<ReturnType<typeof familyOf>['progress']> | null;
    /** The plan's steps before this fit's (a refit's plan counts the validated fit's first). */
    offset: number;
    refit: boolean;
  } | null = null;
  let status = '';
  let phase: TrainingPhase | null = null;
  /**
   * Seconds taken over seconds estimated, of the fits done and the one running: its own steps extrapolate
   * it once it is 5 % through, and one past its estimate counts at least what it has taken — so a machine
   * slower than the estimates (they are CPU seconds; the ETA is the wall clock's) or a kind estimated too
   * low moves the ETA while its first fit runs, not after it.
   */
  const scale = (): number => {
    let taken = actual;
    let expected = estimated;
    if (current !== null && current.estimate > 0) {
      const spent = (now() - current.startedAt) / 1000;
      if (current.fraction > 0.05 || spent > current.estimate) {
        taken += current.fraction > 0.05 ? spent / current.fraction : spent;
        expected += current.estimate;
      }
    }
    return expected > 0 ? Math.max(0.25, taken / expected) : 1;
  };
  /** A fit has ended: its seconds and its estimate count for the scale. */
  const ended = (fit: NonNullable<typeof current>): void => {
    const spent = (now() - fit.startedAt) / 1000;
    doneSeconds += spent;
    actual += spent;
    estimated += fit.estimate;
  };
  const progress = createProgress({
    label: 'training',
    total: 100,
    unit: '%',
    eta: true,
    stream: options.stream,
    silent: options.silent,
    ...(options.now ? { now: options.now } : {}),
  });
  /** The refit to come: the best so far's, or the running candidate's when longer (it may win). */
  const refitEstimate = (): number => {
    const of = (name: string | undefined): number =>
      name === undefined ? 0 : (byName.get(name)?.estimatedRefitSeconds ?? 0);
    return Math.max(of(best?.name ?? kept[0]?.name), current?.refit === false ? of(current.name) : 0);
  };
  /** The share done, of everything estimated to come (seconds done over seconds done plus to come). */
  const fraction = (): number => {
    const s = scale();
    let running = 0;
    let left = 0;
    if (current !== null) {
      const spent = (now() - current.startedAt) / 1000;
      running = spent;
      // What is left of it: its own steps say how far it is, else the estimate minus what it has taken.
      const expected =
        current.fraction > 0.05 ? spent / current.fraction : Math.max(spent, current.estimate * s);
      left += Math.max(0, expected - spent);
    }
    for (const seconds of pending.values()) left += seconds * s;
    if (current?.refit !== true && phase === null) left += refitEstimate() * s;
    const work = doneSeconds + running;
    const total = (work + left) / (1 - AFTER_TRAINING_SHARE);
    const shareAfter = phase === null ? 0 : AFTER_TRAINING_SHARE * 0.5;
    return total <= 0 ? 0 : Math.min(0.99, work / total + shareAfter);
  };
  const show = (minor = false): void => progress.update(100 * fraction(), status, minor);
  const step = (result: ProgressStep | null, minor = false): void => {
    if (result === null || current === null || current.plan === null) return;
    const steps = current.plan.total - current.offset;
    current.fraction = Math.min(1, Math.max(0, result.done - current.offset) / Math.max(1, steps));
    status = current.refit
      ? `chosen: ${current.name}: ${result.message}`
      : `candidate ${current.index} of ${current.of} ${current.name}: ${result.message}`;
    show(minor);
  };
  return {
    onChoice(event) {
      if (event.kind === 'start') {
        const planned = byName.get(event.name);
        // A clean-up variant's fit of the same candidate before it has ended.
        if (current !== null && current.name === event.name) ended(current);
        const estimate = event.estimatedSeconds;
        pending.set(event.name, Math.max(0, (pending.get(event.name) ?? 0) - estimate));
        current = {
          name: event.name,
          index: event.index,
          of: event.of,
          estimate,
          startedAt: now(),
          fraction: 0,
          plan:
            planned === undefined
              ? null
              : familyOf(planned.args.classifier).progress({ ...planned.args, refit: false }),
          offset: 0,
          refit: false,
        };
        status = `candidate ${event.index} of ${event.of} ${event.name}${event.variant === null ? '' : ` (clean-up: ${event.variant})`}: training`;
        show();
      } else if (event.kind === 'done' || event.kind === 'skip') {
        const { report } = event;
        if (current !== null && current.name === report.name) {
          ended(current);
          current = null;
        }
        pending.delete(report.name);
        if (report.validation_f1 !== undefined && (best === null || report.validation_f1 > best.score)) {
          best = { name: report.name, score: report.validation_f1 };
        }
        if (!options.silent) progress.log(candidateLine(report));
        show();
      } else {
        const planned = byName.get(event.name);
        current = {
          name: event.name,
          index: 0,
          of: 0,
          estimate: event.estimatedSeconds,
          startedAt: now(),
          fraction: 0,
          plan: planned === undefined ? null : familyOf(planned.args.classifier).progress(planned.args),
          offset:
            planned === undefined
              ? 0
              : familyOf(planned.args.classifier).progress({ ...planned.args, refit: false }).total,
          refit: true,
        };
        status = `refit ${event.name} on train + validation`;
        show();
      }
    },
    onEpoch: (report) => step(current?.plan?.onEpoch(report) ?? null),
    onRefitEpoch: (report) => step(current?.plan?.onRefitEpoch(report) ?? null),
    onMember: (report) => step(current?.plan?.onMember(report) ?? null),
    onClasses: (report) => step(current?.plan?.onClasses?.(report) ?? null, true),
    onPhase(next) {
      if (current !== null) {
        ended(current);
        current = null;
      }
      phase = next;
      status = next;
      show();
    },
    where: () =>
      phase !== null
        ? `the training, while ${phase}`
        : current === null
          ? 'the model choice'
          : current.refit
            ? `the refit of ${current.name}`
            : `candidate ${current.index} of ${current.of} (${current.name})`,
    stop: () => progress.stop(),
  };
}
