/**
 * What `tagger train` shows while it trains: the steps of the classifier's family (an SGD model's epochs,
 * the validated fit's then the refit's, with their losses; the member classifiers' members, each named
 * with its training time, and each fit's log loss when it is done — the family's ProgressPlan says which)
 * on one progress bar. The steps of one kind of model take about the same time, so the bar moves evenly.
 */
import {
  type ClassesReport,
  type EpochReport,
  familyOf,
  type MemberReport,
  type ProgressStep,
  type TrainingArgs,
} from '../model/index.js';
import { createProgress, type ProgressOptions } from './progress.js';

export interface TrainingProgress {
  onEpoch(report: EpochReport): void;
  onRefitEpoch(report: EpochReport): void;
  onMember(report: MemberReport): void;
  onClasses(report: ClassesReport): void;
  /** Where the training is, for a message: `3 of 120 epochs`, `2 of 6 member fits`. */
  where(): string;
  /** Prints whole lines beside the bar (progress.ts's Progress.log). */
  log(text: string): void;
  stop(): void;
}

export function trainingProgress(
  args: TrainingArgs,
  options: Omit<ProgressOptions, 'label' | 'total'>,
): TrainingProgress {
  const plan = familyOf(args.classifier).progress(args);
  const progress = createProgress({ ...options, label: 'training', total: plan.total, eta: true });
  let done = 0;
  const show = (step: ProgressStep | null, minor = false): void => {
    if (step === null) return;
    done = step.done;
    progress.update(step.done, step.message, minor);
  };
  return {
    onEpoch: (report) => show(plan.onEpoch(report)),
    onRefitEpoch: (report) => show(plan.onRefitEpoch(report)),
    onMember: (report) => show(plan.onMember(report)),
    onClasses: (report) => show(plan.onClasses?.(report) ?? null, true),
    where: () => `${Math.floor(done)} of ${plan.total} ${plan.unit}`,
    log: (text) => progress.log(text),
    stop: () => progress.stop(),
  };
}
