/**
 * What `tagger train` shows while it trains. An SGD model reports its epochs (the validated fit's, then the
 * refit's, with their losses). The member classifiers and the soft vote are solved exactly and have no
 * epochs, so their progress is the members: one step per member trained, in the validated fit and then the
 * refit, each named with its training time (a calibrated member is fitted once per calibration fold and
 * once on every row), and each fit's log loss when it is done. The steps of one kind of model take about
 * the same time, so the bar moves evenly.
 */
import { type EpochReport, isSgdClassifier, type MemberReport, type TrainingArgs } from '../model/index.js';
import { createProgress, type Progress, type ProgressOptions } from './progress.js';

export interface TrainingProgress {
  onEpoch(report: EpochReport): void;
  onRefitEpoch(report: EpochReport): void;
  onMember(report: MemberReport): void;
  /** Where the training is, for a message: `3 of 120 epochs`, `2 of 6 member fits`. */
  where(): string;
  stop(): void;
}

const REFIT = 'refit on train+validation';

export function trainingProgress(
  args: TrainingArgs,
  options: Omit<ProgressOptions, 'label' | 'total'>,
): TrainingProgress {
  const fits = args.refit ? 2 : 1;
  let done = 0;
  if (isSgdClassifier(args.classifier)) {
    // With refit the epochs run twice: the validated fit, then the fit on train + validation.
    const total = args.num_epochs * fits;
    const progress = createProgress({ ...options, label: 'training', total });
    return {
      onEpoch: (report) => {
        done = report.epoch;
        progress.update(
          done,
          `train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
        );
      },
      onRefitEpoch: (report) => {
        done = report.epochs + report.epoch;
        progress.update(done, `${REFIT}, train_loss=${report.trainLoss.toFixed(4)}`);
      },
      onMember: () => undefined,
      where: () => `${done} of ${total} epochs`,
      stop: () => progress.stop(),
    };
  }
  const members = args.classifier === 'soft_vote' ? (args.members?.length ?? 1) : 1;
  const total = members * fits;
  const progress: Progress = createProgress({ ...options, label: 'training', total });
  return {
    onMember: (report) => {
      const calibrated = report.fits > 1 ? `, calibrated: ${report.fits} fits` : '';
      const what = `${report.classifier} (member ${report.member}/${report.members}${calibrated}) trained in ${report.seconds.toFixed(2)} s`;
      done = (report.fit === 'refit' ? members : 0) + report.member;
      progress.update(done, report.fit === 'refit' ? `${REFIT}: ${what}` : `validated fit: ${what}`);
    },
    onEpoch: (report) =>
      progress.update(
        members,
        `validated fit done, train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
      ),
    onRefitEpoch: (report) =>
      progress.update(members * 2, `${REFIT} done, train_loss=${report.trainLoss.toFixed(4)}`),
    where: () => `${done} of ${total} member fits`,
    stop: () => progress.stop(),
  };
}
