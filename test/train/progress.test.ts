/** Progress lines say how long is left, at the pace of the steps done so far, in words a person reads. */
import { describe, expect, it } from 'vitest';
import { createProgress, formatDuration } from '../../src/train/progress.js';

describe('createProgress', () => {
  it('adds the time left to plain lines, from the pace so far; none before the first step or after the last', () => {
    let clock = 1_000;
    const lines: string[] = [];
    const progress = createProgress({
      label: 'training',
      total: 4,
      stream: { write: (text: string) => lines.push(text) },
      plainIntervalMs: 0,
      eta: true,
      now: () => clock,
    });
    progress.update(0, 'starting');
    clock += 30_000;
    progress.update(1, 'member 1');
    clock += 60_000;
    progress.update(3, 'member 3');
    clock += 10_000;
    progress.update(4, 'done');
    expect(lines).toEqual([
      'training: 0/4 starting\n',
      // 30 s for one step: three more take 90 s.
      'training: 1/4 member 1 (ETA 1 min 30 s)\n',
      // 90 s for three steps: one more takes 30 s.
      'training: 3/4 member 3 (ETA 30 s)\n',
      'training: 4/4 done\n',
    ]);
    // Without `eta` (batch tagging says its own, by rows), none.
    const plain: string[] = [];
    const quiet = createProgress({
      label: 'tagging',
      total: 2,
      stream: { write: (text: string) => plain.push(text) },
      plainIntervalMs: 0,
    });
    quiet.update(1, 'half');
    expect(plain).toEqual(['tagging: 1/2 half\n']);
  });
});

describe('minor updates (progress within a step)', () => {
  it('print only after a quiet interval, and never hold back the next step', () => {
    let clock = 0;
    const lines: string[] = [];
    const progress = createProgress({
      label: 'training',
      total: 2,
      stream: { write: (text: string) => lines.push(text.trimEnd()) },
      plainIntervalMs: 1000,
      now: () => clock,
    });
    clock = 5_000;
    progress.update(0.1, 'a tenth', true);
    clock += 100;
    progress.update(0.2, 'a fifth', true); // within the interval: not printed
    clock += 100;
    progress.update(1, 'step one'); // a step: printed although a minor line just was
    clock += 100;
    progress.update(1.5, 'half of two', true); // within the interval: not printed
    clock += 2_000;
    progress.update(1.9, 'nearly', true);
    expect(lines).toEqual(['training: 0/2 a tenth', 'training: 1/2 step one', 'training: 1/2 nearly']);
  });
});

describe('formatDuration', () => {
  it('reads as seconds, minutes and seconds, or hours and minutes', () => {
    expect(formatDuration(0)).toBe('0 s');
    expect(formatDuration(12_400)).toBe('12 s');
    expect(formatDuration(185_000)).toBe('3 min 05 s');
    expect(formatDuration(7_800_000)).toBe('2 h 10 min');
    expect(formatDuration(-5)).toBe('0 s');
  });
});
