/**
 * The model choice's progress line (src/cli/choice-progress.ts) on a clock of its own: when every fit
 * takes three times its estimate (a busy machine, or a kind estimated too low), the ETA it prints once a
 * tenth of the work is done is within 2× of the time really left, and the share done never goes back.
 */
import { describe, expect, it } from 'vitest';
import { choiceProgress } from '../../src/cli/choice-progress.js';
import { parseTrainingArgs } from '../../src/model/index.js';
import type { CandidateReport } from '../../src/train/model-choice/choose.js';
import type { PlannedCandidate } from '../../src/train/model-choice/plan.js';

const planned = (name: string, fit: number, cleanup: number, refit: number): PlannedCandidate => ({
  name,
  summary: name,
  ruleArgs: {},
  args: parseTrainingArgs({ classifier: 'linear_svm' }),
  needsEncoder: false,
  estimatedPredictUs: 1,
  servingRank: 1,
  estimatedSeconds: fit + cleanup,
  embeddingSeconds: 0,
  cleanupSeconds: cleanup,
  estimatedRefitSeconds: refit,
  skip: null,
});

const parseEta = (line: string): number | null => {
  const match = /\(ETA (?:(\d+) h )?(?:(\d+) min )?(?:(\d+) s)?\)/.exec(line);
  if (match === null) return null;
  const [, h, m, s] = match;
  return 3600 * Number(h ?? 0) + 60 * Number(m ?? 0) + Number(s ?? 0);
};

describe('choiceProgress', () => {
  it('says the time left within 2× once a tenth is done, when every fit takes 3× its estimate', () => {
    const SLOW = 3;
    const plan = [planned('fasttext', 10, 4, 12), planned('linear_svm', 40, 0, 46)];
    let clock = 0;
    const lines: { at: number; line: string }[] = [];
    const progress = choiceProgress(plan, {
      stream: { write: (text: string) => lines.push({ at: clock, line: text }) },
      silent: false,
      now: () => clock * 1000,
    });
    // The fits as they happen, each SLOW × its estimate: the clean-up variants on a sample, the first
    // candidate's fit, the second's, then the refit of the second (the better one).
    const fits: { name: string; variant: string | null; seconds: number }[] = [
      { name: 'fasttext', variant: 'none, on 2,000 rows', seconds: 2 },
      { name: 'fasttext', variant: 'tagifai, on 2,000 rows', seconds: 2 },
      { name: 'fasttext', variant: null, seconds: 10 },
      { name: 'linear_svm', variant: null, seconds: 40 },
    ];
    const report = (name: string, f1: number, seconds: number): CandidateReport => ({
      name,
      summary: name,
      args: {},
      status: 'trained',
      estimated_seconds: 0,
      training_seconds: seconds,
      validation_f1: f1,
    });
    const total = SLOW * (2 + 2 + 10 + 40 + 46);
    const classes = (fit: 'validated' | 'refit', quarter: number) => ({
      fit,
      member: 1,
      members: 1,
      classifier: 'linear_svm',
      done: quarter,
      total: 4,
    });
    for (const [i, fit] of fits.entries()) {
      progress.onChoice({
        kind: 'start',
        name: fit.name,
        variant: fit.variant,
        index: fit.name === 'fasttext' ? 1 : 2,
        of: 2,
        estimatedSeconds: fit.seconds,
      });
      // The fit's one-vs-rest problems, a quarter at a time, as the SVM reports them.
      for (let quarter = 1; quarter <= 4; quarter++) {
        clock += (SLOW * fit.seconds) / 4;
        if (quarter < 4) progress.onClasses(classes('validated', quarter));
      }
      const next = fits[i + 1];
      if (next === undefined || next.name !== fit.name) {
        progress.onChoice({
          kind: 'done',
          report: report(fit.name, fit.name === 'fasttext' ? 0.8 : 0.9, SLOW * fit.seconds),
        });
      }
    }
    progress.onChoice({ kind: 'refit', name: 'linear_svm', estimatedSeconds: 46 });
    for (let quarter = 1; quarter <= 4; quarter++) {
      clock += (SLOW * 46) / 4;
      if (quarter < 4) progress.onClasses(classes('refit', quarter));
    }
    progress.onPhase('evaluating the test split');
    progress.stop();
    let lastShare = 0;
    for (const { at, line } of lines) {
      const share = /^training: (\d+)%/.exec(line);
      if (share === null) continue;
      expect(Number(share[1]), line).toBeGreaterThanOrEqual(lastShare);
      lastShare = Number(share[1]);
      const eta = parseEta(line);
      // From a tenth of the fits on, up to their end (the evaluation after them is a few seconds more).
      if (eta === null || at < total / 10 || at >= total) continue;
      const left = total - at;
      expect(eta, `${line.trim()} at ${at} s of ${total} s`).toBeGreaterThanOrEqual(left / 2);
      expect(eta, `${line.trim()} at ${at} s of ${total} s`).toBeLessThanOrEqual(left * 2);
    }
  });
});
