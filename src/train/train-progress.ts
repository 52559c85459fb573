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
  stop(): void;
}

const REFIT = 'refit on train+validation';

export function trainingProgress(
  args: TrainingArgs,
  options: Omit<ProgressOptions, 'label' | 'total'>,
): TrainingProgress {
  const fits = args.refit ? 2 : 1;
  if (isSgdClassifier(args.classifier)) {
    // With refit the epochs run twice: the validated fit, then the fit on train + validation.
    const progress = createProgress({ ...options, label: 'training', total: args.num_epochs * fits });
    return {
      onEpoch: (report) =>
        progress.update(
          report.epoch,
          `train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
        ),
      onRefitEpoch: (report) =>
        progress.update(report.epochs + report.epoch, `${REFIT}, train_loss=${report.trainLoss.toFixed(4)}`),
      onMember: () => undefined,
      stop: () => progress.stop(),
    };
  }
  const members = args.classifier === 'soft_vote' ? (args.members?.length ?? 1) : 1;
  const progress: Progress = createProgress({ ...options, label: 'training', total: members * fits });
  return {
    onMember: (report) => {
      const calibrated = report.fits > 1 ? `, calibrated: ${report.fits} fits` : '';
      const what = `${report.classifier} (member ${report.member}/${report.members}${calibrated}) trained in ${report.seconds.toFixed(2)} s`;
      progress.update(
        (report.fit === 'refit' ? members : 0) + report.member,
        report.fit === 'refit' ? `${REFIT}: ${what}` : `validated fit: ${what}`,
      );
    },
    onEpoch: (report) =>
      progress.update(
        members,
        `validated fit done, train_loss=${report.trainLoss.toFixed(4)} val_loss=${report.valLoss.toFixed(4)}`,
      ),
    onRefitEpoch: (report) =>
      progress.update(members * 2, `${REFIT} done, train_loss=${report.trainLoss.toFixed(4)}`),
    stop: () => progress.stop(),
  };
}
