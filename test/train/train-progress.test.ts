/**
 * What `tagger train` shows while it trains: an SGD model's epochs with their losses, and for the member
 * classifiers and the soft vote (no epochs) one step per member trained, in the validated fit and the
 * refit, and each fit's log loss.
 */
import { describe, expect, it } from 'vitest';
import { parseTrainingArgs, trainTagger } from '../../src/model/index.js';
import { trainingProgress } from '../../src/train/train-progress.js';
import { TRAIN, VALIDATION } from '../model/fixtures.js';

/** A plain stream (not a terminal) that keeps every line; interval 0 prints every update. */
function captured(classes = false) {
  const lines: string[] = [];
  // The time left (progress.test.ts checks it) depends on the clock: left out here.
  // A member fit's progress among its classes (the last test checks it) is left out unless asked for.
  const write = (text: string) => {
    const line = text.trimEnd().replace(/ \(ETA [^)]*\)$/, '');
    if (classes || !line.endsWith('of its one-vs-rest problems')) lines.push(line);
  };
  return { lines, stream: { write } };
}

describe('trainingProgress', () => {
  it("counts an SGD model's epochs, the validated fit's then the refit's", () => {
    const args = parseTrainingArgs({ classifier: 'ovr', num_epochs: 3, min_freq: 1 });
    const { lines, stream } = captured();
    const progress = trainingProgress(args, { stream, plainIntervalMs: 0 });
    trainTagger(TRAIN, VALIDATION, args, { seed: 1, ...progress });
    progress.stop();
    expect(lines).toHaveLength(6);
    expect(lines[0]).toMatch(/^training: 1\/6 train_loss=\d+\.\d{4} val_loss=\d+\.\d{4}$/);
    expect(lines[5]).toMatch(/^training: 6\/6 refit on train\+validation, train_loss=\d+\.\d{4}$/);
  });

  it('counts a vote by its members: each named when trained, then each fit done with its log loss', () => {
    const args = parseTrainingArgs({ min_freq: 1, calibration_folds: 2 });
    const { lines, stream } = captured();
    const progress = trainingProgress(args, { stream, plainIntervalMs: 0 });
    trainTagger(TRAIN, VALIDATION, args, { seed: 1, ...progress });
    progress.stop();
    const s = '\\d+\\.\\d\\d s';
    expect(lines.map((line) => line.replace(/\d+\.\d+/g, 'N'))).toEqual([
      'training: 1/6 validated fit: linear_svm (member 1/3, calibrated: 3 fits) trained in N s',
      'training: 2/6 validated fit: nb_lr (member 2/3) trained in N s',
      'training: 3/6 validated fit: multinomial_nb (member 3/3) trained in N s',
      'training: 3/6 validated fit done, train_loss=N val_loss=N',
      'training: 4/6 refit on train+validation: linear_svm (member 1/3, calibrated: 3 fits) trained in N s',
      'training: 5/6 refit on train+validation: nb_lr (member 2/3) trained in N s',
      'training: 6/6 refit on train+validation: multinomial_nb (member 3/3) trained in N s',
      'training: 6/6 refit on train+validation done, train_loss=N',
    ]);
    expect(lines[0]).toMatch(new RegExp(`trained in ${s}$`));
  });

  it('counts a lone member classifier as one step per fit', () => {
    const args = parseTrainingArgs({ classifier: 'nb_lr', min_freq: 1, refit: false });
    const { lines, stream } = captured();
    const progress = trainingProgress(args, { stream, plainIntervalMs: 0 });
    trainTagger(TRAIN, VALIDATION, args, { seed: 1, ...progress });
    progress.stop();
    expect(lines.map((line) => line.replace(/\d+\.\d+/g, 'N'))).toEqual([
      'training: 1/1 validated fit: nb_lr (member 1/1) trained in N s',
      'training: 1/1 validated fit done, train_loss=N val_loss=N',
    ]);
  });

  it("shows a member fit's progress among its classes, the calibration's folds as one sweep", () => {
    const args = parseTrainingArgs({
      classifier: 'linear_svm',
      calibration: 'sigmoid',
      calibration_folds: 2,
      min_freq: 1,
      refit: false,
    });
    const { lines, stream } = captured(true);
    const progress = trainingProgress(args, { stream, plainIntervalMs: 0 });
    trainTagger(TRAIN, VALIDATION, args, { seed: 1, ...progress });
    progress.stop();
    const shares = lines
      .map((line) =>
        /^training: [01]\/1 validated fit: linear_svm \(member 1\/1\) (\d+)% of its one-vs-rest problems$/.exec(
          line,
        ),
      )
      .filter((match) => match !== null)
      .map((match) => Number(match[1]));
    // Every class of each of the three fits (two folds, then every row), in order, up to 100 %.
    expect(shares.length).toBeGreaterThanOrEqual(3 * 4);
    expect(shares).toEqual([...shares].sort((a, b) => a - b));
    expect(shares.at(-1)).toBe(100);
    expect(shares.filter((share) => share === 100)).toHaveLength(1);
    expect(lines.at(-2)).toMatch(
      /^training: 1\/1 validated fit: linear_svm \(member 1\/1, calibrated: 3 fits\) trained in/,
    );
  });
});
